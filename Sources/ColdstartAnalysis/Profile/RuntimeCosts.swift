import Foundation

/// One frame of a symbolized stack, as the runtime-cost table matches it.
package struct NamedFrame: Equatable, Sendable {
    /// The name a report shows (demangled, shortened).
    package var function: String
    /// The linkage name when it differs (`$s…`, `_Z…`); perf prints these.
    package var linkageName: String?
    /// The file name of the module (`libswiftCore.so`, `[kernel.kallsyms]`).
    package var module: String

    package init(function: String, linkageName: String? = nil, module: String) {
        self.function = function
        self.linkageName = linkageName
        self.module = module
    }
}

/// What the Swift runtime, the loader or the kernel was doing in a sample,
/// grouped by what a developer would change about it.
package enum RuntimeCostKind: String, CaseIterable, Codable, Sendable {
    case lazyBinding = "lazy-binding"
    case loader
    case conformanceScan = "conformance-scan"
    case metadataLookup = "metadata-lookup"
    case dynamicCast = "dynamic-cast"
    case reflection
    case foundationInit = "foundation-init"
    case arcAndAllocation = "arc-allocation"
    case lazyGlobal = "lazy-global"
    case kernel

    package var title: String {
        switch self {
        case .lazyBinding: "Loader: lazy symbol binding after main"
        case .loader: "Loader: loading and relocating libraries"
        case .conformanceScan: "Protocol-conformance scans"
        case .metadataLookup: "Type metadata and type-by-name look-ups"
        case .dynamicCast: "Dynamic casts (as?, as!, is)"
        case .reflection: "Reflection (Mirror, String(describing:))"
        case .foundationInit: "Foundation and ICU initialisation"
        case .arcAndAllocation: "ARC and allocation"
        case .lazyGlobal: "Lazy global initialisation (swift_once)"
        case .kernel: "Kernel (system calls, page faults)"
        }
    }

    /// The title inside a sentence (a finding's): lower case, but for the
    /// names that keep their capitals (Foundation, ARC).
    /// A few words for a function's name (`RuntimeCostClassifier.displayName`).
    var noun: String {
        switch self {
        case .lazyBinding: "lazy binding"
        case .loader: "loader"
        case .conformanceScan: "conformance scan"
        case .metadataLookup: "metadata look-up"
        case .dynamicCast: "dynamic cast"
        case .reflection: "reflection"
        case .foundationInit: "Foundation set-up"
        case .arcAndAllocation: "allocation"
        case .lazyGlobal: "lazy global"
        case .kernel: "kernel"
        }
    }

    var titleInSentence: String {
        switch self {
        case .foundationInit, .arcAndAllocation: title
        default: title.prefix(1).lowercased() + title.dropFirst()
        }
    }

    /// What to try, in one line; the report puts the measured figures and
    /// the app frames in front of it.
    package var advice: String {
        switch self {
        case .lazyBinding:
            "first calls into shared libraries resolve symbols on demand; fewer libraries or static linking (-static-stdlib) remove it"
        case .loader:
            "the loader maps and relocates every library before any code runs; link fewer libraries, or the Swift runtime statically (-static-stdlib)"
        case .conformanceScan:
            "each first `as? Protocol`, `is`, generic requirement or `String(describing:)` on a type scans every conformance record; test concrete types, or cache the result"
        case .metadataLookup:
            "types built from mangled names or generic arguments at first use; fewer generic instantiations on the start-up path, or specialise them (@inlinable, concrete types)"
        case .dynamicCast:
            "casts that cannot be decided at compile time; cast to a concrete type or keep the static type"
        case .reflection:
            "Mirror walks a value's fields through metadata; avoid `String(describing:)`, `print(value)` or `dump` of non-CustomStringConvertible values at start-up"
        case .foundationInit:
            "Foundation's and ICU's one-time set-up (locales, calendars, collation); defer formatters and locale-dependent work off the start-up path, to where they are first needed"
        case .arcAndAllocation:
            "retain/release and heap allocation; fewer class instances and copies on the start-up path, or reserve capacity"
        case .lazyGlobal:
            "a global's initializer ran on first use; make it cheaper, or move its first use off the critical path"
        case .kernel:
            "time in the kernel on the program's behalf: system calls and page faults (touching new memory and file pages)"
        }
    }
}

extension String {
    /// Whether `needle`'s UTF-8 occurs in this string's (false for an empty
    /// needle, as Foundation's `contains`): a byte search, where Foundation's
    /// bridges both strings to `NSString` on every call.
    func containsBytes(_ needle: String) -> Bool {
        var haystack = self, needle = needle
        return haystack.withUTF8 { bytes in
            needle.withUTF8 { part in
                guard let first = part.first, bytes.count >= part.count else { return false }
                for start in 0...(bytes.count - part.count) where bytes[start] == first {
                    if memcmp(bytes.baseAddress! + start, part.baseAddress!, part.count) == 0 { return true }
                }
                return false
            }
        }
    }
}

/// How one table entry recognises a frame.
package enum FramePattern: Sendable {
    /// The function's display or linkage name is exactly this.
    case name(String)
    /// The function's display or linkage name starts with this.
    case prefix(String)
    /// The display or linkage name contains this.
    case contains(String)
    /// The linkage name ends with this (Swift mangling suffixes: `WZ`).
    case linkageSuffix(String)
    /// The module's file name starts with this.
    case module(String)

    func matches(_ frame: NamedFrame) -> Bool {
        switch self {
        case .name(let text):
            frame.function == text || frame.linkageName == text
        case .prefix(let text):
            frame.function.hasPrefix(text) || frame.linkageName?.hasPrefix(text) == true
        case .contains(let text):
            frame.function.containsBytes(text) || frame.linkageName?.containsBytes(text) == true
        case .linkageSuffix(let text):
            (frame.linkageName ?? frame.function).hasPrefix("$s") && (frame.linkageName ?? frame.function).hasSuffix(text)
        case .module(let text):
            frame.module.hasPrefix(text)
        }
    }
}

/// One row of the table.
package struct RuntimeCostRule: Sendable {
    package var kind: RuntimeCostKind
    var patterns: [FramePattern]
    /// Matches only the sampled frame itself (the loader's own code, which
    /// also sits at the root of every stack through `_dl_init`).
    fileprivate var leafOnly = false
    /// The frame that names the cost is the innermost match (a global's own
    /// initializer, inside `swift_once`), not the outermost (the runtime
    /// entry point the app called).
    fileprivate var innermostNamesIt = false
}

/// Classifies a sample's stack by the table `rules`: the sample is the
/// kind of the first rule in the table that matches any of its frames.
///
/// The order is a precedence, most specific cost first: a conformance scan
/// under a type-by-name look-up, or under `Mirror`, counts as a scan; an
/// allocation under `Mirror` counts as reflection; a page fault under any
/// of them counts as that; a global's initializer (which runs the app's own
/// code) only when nothing else matched inside it.
package enum RuntimeCostClassifier {
    /// The table, in precedence order (see the type's comment).
    package static let rules: [RuntimeCostRule] = [
        RuntimeCostRule(kind: .lazyBinding, patterns: [.prefix("_dl_runtime_resolve"), .prefix("_dl_fixup"), .prefix("_dl_profile_fixup")]),
        RuntimeCostRule(kind: .loader, patterns: [
            // Not `_dl_start_user`: it calls the constructors.
            .name("_dl_start"), .name("_dl_start_final"), .prefix("_dl_sysdep_start"), .prefix("dl_main"), .prefix("_dl_relocate_object"),
            .prefix("_dl_map_object"), .prefix("dlopen"), .prefix("_dl_open"), .prefix("dl_open_worker"),
        ]),
        RuntimeCostRule(kind: .conformanceScan, patterns: [
            .prefix("swift_conformsToProtocol"), .contains("swift::_conformsToProtocol"), .contains("swift::_checkGenericRequirements"),
            .contains("ConformanceState"), .contains("searchInConformanceCache"), .contains("_registerProtocolConformances"),
        ]),
        RuntimeCostRule(kind: .metadataLookup, patterns: [
            .prefix("swift_getTypeByMangledName"), .contains("swift::_getTypeByMangledName"), .prefix("swift_getTypeByMangledNode"),
            .prefix("swift_instantiateConcreteTypeFromMangledName"), .prefix("__swift_instantiateConcreteTypeFromMangledName"),
            .contains("swift_getGenericMetadata"), .contains("swift_instantiateGenericMetadata"),
            .contains("swift_instantiateCanonicalPrespecializedGenericMetadata"), .prefix("swift_getCanonicalSpecializedMetadata"), .prefix("swift_checkMetadataState"),
            .prefix("swift_getTupleTypeMetadata"), .prefix("swift_getFunctionTypeMetadata"), .prefix("swift_getExistentialTypeMetadata"),
            .prefix("swift_initClassMetadata"), .prefix("swift_initStructMetadata"), .prefix("swift_initEnumMetadata"),
            .prefix("swift_allocateGenericClassMetadata"), .prefix("swift_allocateGenericValueMetadata"),
            .prefix("swift_getWitnessTable"), .prefix("swift_getAssociatedTypeWitness"), .prefix("swift_getAssociatedConformanceWitness"),
            .prefix("swift_getForeignTypeMetadata"), .prefix("swift_getTypeName"), .prefix("swift_getMangledTypeName"),
            .contains("swift::TypeDecoder"), .contains("swift::Demangle::"),
        ]),
        RuntimeCostRule(kind: .dynamicCast, patterns: [
            .prefix("swift_dynamicCast"), .contains("swift::tryCast"), .prefix("tryCast"),
            // Emitted into the app by the compiler for `as? any P`.
            .prefix("dynamic_cast_existential"),
        ]),
        RuntimeCostRule(kind: .reflection, patterns: [
            .prefix("swift_reflectionMirror"), .prefix("Mirror."), .prefix("Mirror("), .prefix("$ss6MirrorV"),
            .prefix("_adHocPrint_unlocked"), .prefix("$sSS10describing"), .prefix("String.init<A>(describing:"), .prefix("$ss20_adHocPrint_unlocked"), .prefix("dump<"), .prefix("$ss4dump"),
        ]),
        RuntimeCostRule(kind: .foundationInit, patterns: [
            .module("lib_FoundationICU"), .module("libicu"), .prefix("__CFInitialize"), .prefix("__CFStringInitialize"),
        ]),
        RuntimeCostRule(kind: .arcAndAllocation, patterns: [
            .prefix("swift_retain"), .prefix("swift_release"), .prefix("swift_bridgeObjectRetain"), .prefix("swift_bridgeObjectRelease"),
            .prefix("swift_unknownObjectRetain"), .prefix("swift_unknownObjectRelease"), .prefix("_swift_release_dealloc"),
            .prefix("swift_allocObject"), .prefix("swift_deallocObject"), .prefix("swift_deallocClassInstance"),
            .prefix("swift_allocBox"), .prefix("swift_slowAlloc"), .prefix("swift_slowDealloc"), .prefix("swift_arrayInitWithCopy"),
            .prefix("swift_arrayDestroy"), .name("malloc"), .name("free"), .name("calloc"), .name("realloc"),
            .prefix("_int_malloc"), .prefix("_int_free"), .prefix("_int_realloc"), .name("malloc_consolidate"),
            .contains("__libc_malloc"), .contains("__libc_free"), .contains("__libc_calloc"), .contains("__libc_realloc"), .name("cfree"),
            .prefix("operator new"), .prefix("operator delete"), .prefix("_Znwm"), .prefix("_ZdlPv"),
        ]),
        // The loader's other work (TLS look-ups, `_dl_init` calling a
        // constructor) when nothing above matched.
        RuntimeCostRule(kind: .loader, patterns: [.module("ld-linux"), .module("ld.so"), .module("ld64.so")], leafOnly: true),
        RuntimeCostRule(kind: .kernel, patterns: [.module("[kernel"), .prefix("entry_SYSCALL"), .prefix("asm_exc_page_fault")]),
        RuntimeCostRule(kind: .lazyGlobal, patterns: [
            // Not the runtime's own `once_slow`: libraries use it for their
            // internal one-time set-up too.
            .prefix("swift_once"), .prefix("one-time initialization function for "), .linkageSuffix("WZ"),
        ], innermostNamesIt: true),
    ]

    /// A classified stack: the kind and the index (leaf first) of the frame
    /// that decided it.
    package struct Match: Equatable, Sendable {
        package var kind: RuntimeCostKind
        package var depth: Int
    }

    /// The kind of a stack (leaf first), or nil when it is the app's own
    /// work (or a library's, outside every rule).
    package static func classify(_ stack: [NamedFrame]) -> Match? {
        match(depths: stack.count) { rule(for: stack[$0], isLeaf: $0 == 0) }
    }

    /// The first rule (an index into `rules`; `rules.count` for none) that
    /// matches `frame`, as the sampled frame itself (`isLeaf`) or further out.
    static func rule(for frame: NamedFrame, isLeaf: Bool) -> Int {
        rules.firstIndex { (isLeaf || !$0.leafOnly) && $0.patterns.contains { $0.matches(frame) } } ?? rules.count
    }

    /// The match of a stack of `depths` frames (leaf first) whose rules
    /// `rule(depth)` gives.
    static func match(depths: Int, rule: (Int) -> Int) -> Match? {
        var best = rules.count
        var depthOfBest = 0
        for depth in 0..<depths {
            let rule = rule(depth)
            // Leaf first: the last match kept is the outermost, unless the
            // rule is named by its innermost frame.
            if rule < best || (rule == best && rule < rules.count && !rules[rule].innermostNamesIt) {
                best = rule
                depthOfBest = depth
            }
        }
        return best < rules.count ? Match(kind: rules[best].kind, depth: depthOfBest) : nil
    }

    /// The kinds with a frame anywhere on a stack of `depths` frames
    /// (`rule` as for `match`).
    static func kinds(depths: Int, rule: (Int) -> Int) -> Set<RuntimeCostKind> {
        Set((0..<depths).compactMap { depth in
            let rule = rule(depth)
            return rule < rules.count ? rules[rule].kind : nil
        })
    }

    /// The app's frame that led to the matched one: the nearest frame at
    /// or above it (towards the root) in one of the app's own modules that
    /// is not itself runtime work (`__swift_instantiateConcreteTypeFromMangledName`
    /// is emitted into every binary) and names a function in code
    /// (`Symbolizer.namesFunction`: a bad unwind's `App+0xbf70 (not code)`
    /// is passed over for the real caller above it).
    static func appFrame(in stack: [NamedFrame], from depth: Int, isAppModule: (String) -> Bool) -> NamedFrame? {
        appFrameDepth(depths: stack.count, from: depth, isApp: { isAppModule(stack[$0].module) && Symbolizer.namesFunction(stack[$0].function) },
                      rule: { rule(for: stack[$0], isLeaf: false) }).map { stack[$0] }
    }

    /// `appFrame`'s depth, for a stack of `depths` frames whose frames
    /// `isApp` says are the app's code and whose rules away from the leaf `rule` gives.
    static func appFrameDepth(depths: Int, from depth: Int, isApp: (Int) -> Bool, rule: (Int) -> Int) -> Int? {
        guard depth < depths else { return nil }
        for index in depth..<depths where isApp(index) {
            let rule = rule(index)
            if rule == rules.count || rules[rule].innermostNamesIt { return index }
        }
        return nil
    }
}

/// The table's rule of each function of one launch, matched once per
/// function (as the sampled frame and further out) whatever the number of
/// samples: stacks are given as function ids.
struct FrameRules {
    private let frame: (Int) -> NamedFrame
    /// Per function id: its rule as the leaf, and further out; -1 until matched.
    private var leaf: [Int32]
    private var inner: [Int32]
    /// How many times a frame was matched against the table.
    private(set) var framesMatched = 0

    /// `frame(id)` is function `id` as the table reads it, for ids `0..<functions`.
    init(functions: Int, frame: @escaping (Int) -> NamedFrame) {
        self.frame = frame
        leaf = [Int32](repeating: -1, count: functions)
        inner = leaf
    }

    mutating func rule(_ function: Int, isLeaf: Bool) -> Int {
        let known = isLeaf ? leaf[function] : inner[function]
        if known >= 0 { return Int(known) }
        framesMatched += 1
        let rule = RuntimeCostClassifier.rule(for: frame(function), isLeaf: isLeaf)
        if isLeaf { leaf[function] = Int32(rule) } else { inner[function] = Int32(rule) }
        return rule
    }

    /// `RuntimeCostClassifier.classify` of a stack of function ids, leaf first.
    mutating func classify(_ stack: [Int]) -> RuntimeCostClassifier.Match? {
        RuntimeCostClassifier.match(depths: stack.count) { rule(stack[$0], isLeaf: $0 == 0) }
    }

    /// `RuntimeCostClassifier.kinds` of a stack of function ids.
    mutating func kinds(_ stack: [Int]) -> Set<RuntimeCostKind> {
        RuntimeCostClassifier.kinds(depths: stack.count) { rule(stack[$0], isLeaf: $0 == 0) }
    }

    /// `RuntimeCostClassifier.appFrame` of a stack of function ids (`isApp`:
    /// the app's code): the app's function, named as the table reads it.
    mutating func appFrame(in stack: [Int], from depth: Int, isApp: (Int) -> Bool) -> NamedFrame? {
        RuntimeCostClassifier.appFrameDepth(depths: stack.count, from: depth, isApp: { isApp(stack[$0]) },
                                            rule: { rule(stack[$0], isLeaf: false) }).map { frame(stack[$0]) }
    }
}

/// Samples grouped by runtime-cost kind, with the app frames that led there.
package struct RuntimeCostSummary: Codable, Sendable {
    package struct Caller: Codable, Equatable, Sendable {
        package var function: String
        package var samples: Int
    }

    package struct Row: Codable, Sendable {
        package var kind: RuntimeCostKind
        package var samples: Int
        /// `samples × nsPerSample`, in ms.
        package var ms: Double
        /// Of all the samples given, in %.
        package var percent: Double
        /// The samples with a frame of this kind anywhere on the stack,
        /// under another kind's frames too (perf's "children" share): a
        /// type-by-name look-up whose time is a conformance scan inside it
        /// is on the stack, not its kind.
        package var onStackSamples: Int
        package var onStackMs: Double
        package var onStackPercent: Double
        /// The app frames that led there, most samples first (at most five).
        package var callers: [Caller]
    }

    /// Kinds with at least one sample on the stack, most samples of the kind first.
    package var rows: [Row]
    package var totalSamples: Int
    /// Which samples these are (`CriticalPathScope`), as the report's
    /// heading names them.
    package var scope = CriticalPathScope.mainThread.rawValue

    /// `stacks` are the samples (leaf first), each standing for
    /// `nsPerSample` of CPU time.
    package init(stacks: [[NamedFrame]], nsPerSample: Double, isAppModule: (String) -> Bool) {
        var onStack: [RuntimeCostKind: Int] = [:]
        for stack in stacks {
            for kind in RuntimeCostClassifier.kinds(depths: stack.count, rule: { RuntimeCostClassifier.rule(for: stack[$0], isLeaf: $0 == 0) }) {
                onStack[kind, default: 0] += 1
            }
        }
        self.init(classified: stacks.compactMap { stack in
            RuntimeCostClassifier.classify(stack).map { match in
                (match.kind, RuntimeCostClassifier.appFrame(in: stack, from: match.depth, isAppModule: isAppModule)?.function, 1)
            }
        }, onStack: onStack, totalSamples: stacks.count, nsPerSample: nsPerSample)
    }

    /// From stacks already classified: each one's kind, the app function
    /// that led there, and how many of the `totalSamples` samples had it;
    /// `onStack`: the samples with each kind anywhere on the stack.
    init(classified: [(kind: RuntimeCostKind, caller: String?, samples: Int)], onStack: [RuntimeCostKind: Int], totalSamples: Int,
         nsPerSample: Double) {
        var samples: [RuntimeCostKind: Int] = [:]
        var callers: [RuntimeCostKind: [String: Int]] = [:]
        for (kind, caller, count) in classified {
            samples[kind, default: 0] += count
            callers[kind, default: [:]][caller ?? "(no frame in the app)", default: 0] += count
        }
        self.totalSamples = totalSamples
        let total = Double(max(totalSamples, 1))
        // A kind only ever under another (casts inside scans) still has its row.
        rows = Set(samples.keys).union(onStack.keys).map { kind in
            let count = samples[kind] ?? 0, stacked = max(onStack[kind] ?? 0, count)
            return Row(
                kind: kind, samples: count, ms: Double(count) * nsPerSample / 1e6, percent: Double(count) * 100 / total,
                onStackSamples: stacked, onStackMs: Double(stacked) * nsPerSample / 1e6, onStackPercent: Double(stacked) * 100 / total,
                callers: (callers[kind] ?? [:]).map { Caller(function: $0.key, samples: $0.value) }
                    .sorted { ($0.samples, $1.function) > ($1.samples, $0.function) }.prefix(5).map { $0 })
        }.sorted { ($0.samples, $0.onStackSamples, $1.kind.rawValue) > ($1.samples, $1.onStackSamples, $0.kind.rawValue) }
    }
}

/// Which samples stand for the launch's critical path in the findings and
/// the runtime costs.
package enum CriticalPathScope: String, Sendable {
    /// The off-CPU watcher's path: at each moment the thread carrying the launch.
    case path = "the critical path's samples until the launch's end"
    case mainThread = "main thread's samples until the launch's end"
    /// No path known and the main thread ran under half of the samples after
    /// `main` (an async main parks it): the work ran on other threads.
    case everyThread = "every thread's samples after main (the main thread had under half), the main thread's before"
}

extension RuntimeCostClassifier {
    /// A C++ lambda read as what it does, innermost first, with the runtime
    /// kind its enclosing function is classified as (the table above):
    /// libswiftCore's `swift_conformsToProtocolMaybeInstantiateSuperclasses(…)::$_2::operator()(…) const::{lambda(…)#1}::operator()(…) const`
    /// reads "conformance scan: lambda #1 in $_2 in swift_conformsToProtocolMaybeInstantiateSuperclasses",
    /// where a name clipped to a table cell kept `…onst::{lambda(…)#1}::operator()(…) const`,
    /// which says neither. Any other name is returned as it is.
    package static func displayName(_ name: String) -> String {
        guard name.containsBytes("::operator()"), name.containsBytes("{lambda(") || name.containsBytes("::$_") else { return name }
        let parts = scopes(name)
        guard let first = parts.firstIndex(where: isLambda), first > 0 else { return name }
        let enclosing = parts[..<first].joined(separator: "::")
        let function = String(enclosing.prefix { $0 != "(" })
        let lambdas = parts[first...].filter(isLambda).reversed().map { part -> String in
            // "{lambda(…)#1}" → "lambda #1"; "$_2" stays.
            guard part.hasPrefix("{lambda("), let hash = part.lastIndex(of: "#") else { return part }
            return "lambda " + part[hash...].dropLast()
        }
        let kind = rules.first { rule in !rule.leafOnly && rule.patterns.contains { $0.matches(NamedFrame(function: enclosing, module: "")) } }?.kind
        return (kind.map { $0.noun + ": " } ?? "") + (lambdas + [function]).joined(separator: " in ")
    }

    private static func isLambda(_ part: String) -> Bool { part.hasPrefix("$_") || part.hasPrefix("{lambda(") }

    /// `name` split at each `::` outside brackets (a parameter list, a
    /// template's arguments, a lambda's braces).
    private static func scopes(_ name: String) -> [String] {
        var parts: [String] = [], current = "", depth = 0
        var previous: Character?
        for character in name {
            switch character {
            case "(", "<", "{", "[": depth += 1
            case ")", ">", "}", "]": depth = max(depth - 1, 0)
            default: break
            }
            if character == ":", previous == ":", depth == 0 {
                current.removeLast()
                parts.append(current)
                current = ""
                previous = nil
                continue
            }
            current.append(character)
            previous = character
        }
        return parts + [current]
    }
}
