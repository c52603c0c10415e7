// A Swift program with many protocol conformances (Types.swift), a C++
// static constructor (StaticConstructors) and no Foundation.
//
// `ManyConformances --measure`: times the first, uncached conformance check
// of each of its 400 types (each scans every conformance record the runtime
// has registered), then against other protocols after dlopen of
// Foundation has registered thousands more records, and prints the two
// medians of five passes' means in ns per look-up as JSON: what `coldstart inspect`'s
// conformance-scan estimate is fitted to (docs/inspect.md).
import Glibc
import StaticConstructors

// Protocols no type conforms to: each pass checks every type against a
// fresh one, so every check misses the runtime's cache.
protocol Unrelated1 {}
protocol Unrelated2 {}
protocol Unrelated3 {}
protocol Unrelated4 {}
protocol Unrelated5 {}
protocol Unrelated6 {}
protocol Unrelated7 {}
protocol Unrelated8 {}
protocol Unrelated9 {}
protocol Unrelated10 {}

func nanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// Mean ns per uncached `is P` check over every value.
func meanCheck(_ check: (Any) -> Bool) -> Double {
    var hits = 0
    let start = nanoseconds()
    for value in allValues where check(value) { hits += 1 }
    let elapsed = nanoseconds() - start
    precondition(hits == 0, "no type conforms")
    return Double(elapsed) / Double(allValues.count)
}

if CommandLine.arguments.dropFirst().first == "--measure" {
    // The median of five passes: one pass is 400 checks, a few ms, easily
    // disturbed on a busy machine.
    func median(_ passes: [Double]) -> Double { passes.sorted()[passes.count / 2] }
    let before = median([meanCheck { $0 is Unrelated1 }, meanCheck { $0 is Unrelated2 }, meanCheck { $0 is Unrelated3 },
                         meanCheck { $0 is Unrelated4 }, meanCheck { $0 is Unrelated5 }])
    guard dlopen("libFoundation.so", RTLD_NOW | RTLD_GLOBAL) != nil else {
        fputs("ManyConformances: dlopen libFoundation.so failed: \(String(cString: dlerror()))\n", stderr)
        exit(1)
    }
    let after = median([meanCheck { $0 is Unrelated6 }, meanCheck { $0 is Unrelated7 }, meanCheck { $0 is Unrelated8 },
                        meanCheck { $0 is Unrelated9 }, meanCheck { $0 is Unrelated10 }])
    print("{\"types\": \(allValues.count), \"beforeNs\": \(before), \"afterFoundationNs\": \(after)}")
} else {
    let sides = allValues.reduce(0) { $0 + (($1 as? any Shape)?.sides ?? 0) }
    print("\(allValues.count) shapes, \(sides) sides, \(static_constructors_entries()) registry entries")
}
