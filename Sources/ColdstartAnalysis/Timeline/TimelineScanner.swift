import Foundation

/// One pass over a timeline's bytes, the only one over the whole file.
///
/// It checks the JSON syntax (refusing all that `JSONSerialization` refuses,
/// so that the document it leaves can be parsed later, when asked for),
/// every string's length and the nesting depth against `TimelineLimits`,
/// and reads `coldstart.samples` (nearly all of a big timeline) straight
/// from the bytes into `Timeline.Sample`s: through `JSONSerialization` each
/// number was an `NSNumber` and each row an `NSArray`, 1.4 GB and 15 s for
/// an 83 MB file. It notes where the `coldstart` section and each of its
/// values lie, so that the reader decodes that section alone and parses
/// the whole document (`Timeline.parsedDocument`) only for the tools that
/// read more: two parses of every file were most of `coldstart aggregate`.
struct TimelineScanner {
    /// What `scan` found.
    struct Scan {
        var samples: [Timeline.Sample]
        /// The highest module index a frame of `samples` names; -1 for none.
        var maxModule: Int
        /// The document with every `coldstart.samples` and
        /// `coldstart.rawStacks` value replaced by `[]`.
        var rest: Data
        /// The last `coldstart.rawStacks` value's bytes in the scanned data
        /// (the offline unwinder's stack copies: `RawStacks`); nil when absent.
        var rawStacks: Range<Int>?
        /// The top-level value's first byte (`{` for an object).
        var root: UInt8
        /// The `coldstart` object's bytes in `rest`; nil when the document
        /// has no such key or its value is not an object.
        var section: Range<Int>?
        /// Each key of that object and its value's bytes in the scanned
        /// data (not `rest`); keys longer than 16 bytes are left out.
        var sectionValues: [String: Range<Int>]
        /// The keys of `sectionValues` the section has more than once (the
        /// last value is the one noted), and "" when it has a key left out
        /// (which could be one of them, escaped).
        var repeatedSectionKeys: Set<String>
    }

    /// Why the bytes are not a timeline; `truncated` when they end mid-value.
    enum Failure: Error {
        case syntax(truncated: Bool)
        case limit(String)
    }

    let bytes: UnsafeBufferPointer<UInt8>
    private(set) var at = 0
    /// Every `coldstart.samples` and `coldstart.rawStacks` value, as byte
    /// ranges (in order), and the samples' parsed rows.
    private(set) var samplesRanges: [Range<Int>] = []
    private(set) var rawStacks: Range<Int>?
    private(set) var samples: [Timeline.Sample] = []
    private(set) var maxModule = -1
    private var section: Range<Int>?
    private var sectionValues: [String: Range<Int>] = [:]
    private var repeatedSectionKeys: Set<String> = []
    /// The row being read's frames, reused from row to row.
    private var frames: [Timeline.Frame] = []

    private init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// Scans `data`, throwing `Failure` or `MalformedSample`.
    static func scan(_ data: Data) throws -> Scan {
        try data.withUnsafeBytes { raw in
            var scanner = TimelineScanner(raw.bindMemory(to: UInt8.self))
            scanner.skipSpace()
            let root = scanner.current ?? 0
            try scanner.value(depth: 0, context: .root)
            scanner.skipSpace()
            guard scanner.at == scanner.bytes.count else { throw Failure.syntax(truncated: false) }
            // Where `at` of the scanned bytes is once the samples before it are `[]`.
            func inRest(_ at: Int) -> Int {
                scanner.samplesRanges.reduce(at) { $1.upperBound <= at ? $0 - ($1.count - 2) : $0 }
            }
            let section = scanner.section.map { inRest($0.lowerBound)..<inRest($0.upperBound) }
            guard !scanner.samplesRanges.isEmpty else {
                return Scan(samples: scanner.samples, maxModule: scanner.maxModule, rest: data, rawStacks: scanner.rawStacks, root: root, section: section, sectionValues: scanner.sectionValues,
                            repeatedSectionKeys: scanner.repeatedSectionKeys)
            }
            var rest = Data()
            var from = 0
            for range in scanner.samplesRanges {
                rest.append(contentsOf: UnsafeBufferPointer(rebasing: scanner.bytes[from..<range.lowerBound]))
                rest.append(contentsOf: Array("[]".utf8))
                from = range.upperBound
            }
            rest.append(contentsOf: UnsafeBufferPointer(rebasing: scanner.bytes[from...]))
            return Scan(samples: scanner.samples, maxModule: scanner.maxModule, rest: rest, rawStacks: scanner.rawStacks, root: root, section: section, sectionValues: scanner.sectionValues,
                        repeatedSectionKeys: scanner.repeatedSectionKeys)
        }
    }

    /// Where a value sits: only `coldstart.samples` is read here.
    private enum Context { case root, section, other }

    var current: UInt8? { at < bytes.count ? bytes[at] : nil }

    private func fail() -> Failure { .syntax(truncated: at >= bytes.count) }

    mutating func skipSpace() {
        while at < bytes.count, bytes[at] == 0x20 || bytes[at] == 0x0A || bytes[at] == 0x0D || bytes[at] == 0x09 { at += 1 }
    }

    private mutating func expect(_ byte: UInt8) throws {
        skipSpace()
        guard current == byte else { throw fail() }
        at += 1
    }

    private mutating func value(depth: Int, context: Context) throws {
        guard depth < TimelineLimits.maxDepth else {
            throw Failure.limit("nested more than \(TimelineLimits.maxDepth) levels deep")
        }
        skipSpace()
        switch current {
        case UInt8(ascii: "{"): try object(depth: depth + 1, context: context)
        case UInt8(ascii: "["): try array(depth: depth + 1)
        case UInt8(ascii: "\""): _ = try string()
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        default: try number()
        }
    }

    private mutating func object(depth: Int, context: Context) throws {
        at += 1
        skipSpace()
        if current == UInt8(ascii: "}") { at += 1; return }
        while true {
            skipSpace()
            guard current == UInt8(ascii: "\"") else { throw fail() }
            let key = try string()
            try expect(UInt8(ascii: ":"))
            skipSpace()
            let start = at
            switch (context, key) {
            case (.root, "coldstart"):
                // A repeated key: the last one counts, as for JSONSerialization.
                (samples, maxModule, sectionValues, repeatedSectionKeys, rawStacks) = ([], -1, [:], [], nil)
                let isObject = current == UInt8(ascii: "{")
                try value(depth: depth, context: .section)
                section = isObject ? start..<at : nil
            case (.section, "samples") where current == UInt8(ascii: "["):
                samples = try sampleRows()
                samplesRanges.append(start..<at)
            case (.section, "rawStacks") where current == UInt8(ascii: "{"):
                // Megabytes of stack copies: checked here, read by `RawStacks`
                // from these bytes, and no part of what the decoder reads.
                try value(depth: depth, context: .other)
                rawStacks = start..<at
                samplesRanges.append(start..<at)
            default:
                try value(depth: depth, context: .other)
            }
            if context == .section {
                if let key {
                    if sectionValues.updateValue(start..<at, forKey: key) != nil { repeatedSectionKeys.insert(key) }
                } else {
                    repeatedSectionKeys.insert("")
                }
            }
            skipSpace()
            guard let next = current else { throw fail() }
            at += 1
            if next == UInt8(ascii: "}") { return }
            guard next == UInt8(ascii: ",") else { throw fail() }
        }
    }

    private mutating func array(depth: Int) throws {
        at += 1
        skipSpace()
        if current == UInt8(ascii: "]") { at += 1; return }
        while true {
            try value(depth: depth, context: .other)
            skipSpace()
            guard let next = current else { throw fail() }
            at += 1
            if next == UInt8(ascii: "]") { return }
            guard next == UInt8(ascii: ",") else { throw fail() }
        }
    }

    /// Skips a string, checking its escapes and length; returns it only when
    /// it is short enough to be a key this scanner looks for.
    private mutating func string() throws -> String? {
        at += 1
        let start = at
        var escaped = false
        while true {
            guard let byte = current else { throw fail() }
            if byte == UInt8(ascii: "\"") { break }
            guard byte >= 0x20 else { throw fail() }
            if byte == UInt8(ascii: "\\") {
                escaped = true
                at += 1
                guard let kind = current else { throw fail() }
                if kind == UInt8(ascii: "u") {
                    guard at + 4 < bytes.count, (1...4).allSatisfy({ Self.isHexDigit(bytes[at + $0]) }) else { throw fail() }
                    at += 4
                } else if !"\"\\/bfnrt".utf8.contains(kind) {
                    throw fail()
                }
            }
            at += 1
            if at - start > TimelineLimits.maxStringBytes {
                throw Failure.limit("a string longer than \(TimelineLimits.maxStringBytes) bytes")
            }
        }
        let end = at
        at += 1
        guard end - start <= 16 else { return nil }
        let raw = UnsafeBufferPointer(rebasing: bytes[start - 1...end])
        if !escaped { return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self) }
        return (try? JSONSerialization.jsonObject(with: Data(raw), options: [.fragmentsAllowed])) as? String
    }

    private mutating func literal(_ word: String) throws {
        for byte in word.utf8 {
            guard current == byte else { throw fail() }
            at += 1
        }
    }

    private mutating func number() throws {
        let start = at
        if current == UInt8(ascii: "-") { at += 1 }
        let first = at
        let whole = try digits()
        // JSON has no leading zeros (`01`), and JSONSerialization refuses them.
        guard whole > 0, whole == 1 || bytes[first] != UInt8(ascii: "0") else { throw fail() }
        if current == UInt8(ascii: ".") {
            at += 1
            guard try digits() > 0 else { throw fail() }
        }
        var exponent = false
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            exponent = true
            at += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { at += 1 }
            guard try digits() > 0 else { throw fail() }
        }
        if at - start > 400 { throw Failure.limit("a number of more than 400 characters") }
        // JSONSerialization refuses a number beyond Double's range (1e400).
        if exponent || whole > 308 {
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
            guard Double(text)?.isFinite == true else { throw fail() }
        }
    }

    private mutating func digits() throws -> Int {
        let start = at
        while let byte = current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { at += 1 }
        return at - start
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "f"))
    }
}

/// `coldstart.samples` read from the bytes: `[[ns, tid, [module, address, …]], …]`,
/// every number an integer in range.
extension TimelineScanner {
    struct MalformedSample: Error {
        var row: Int
        var why: String
    }

    private mutating func sampleRows() throws -> [Timeline.Sample] {
        var samples: [Timeline.Sample] = []
        maxModule = -1
        at += 1
        skipSpace()
        if current == UInt8(ascii: "]") { at += 1; return samples }
        // The shortest row, `[0,0,[]],`, is 9 bytes: the bytes left bound
        // the rows, and the array never grows by copying (pages not used
        // are never touched).
        samples.reserveCapacity(min(TimelineLimits.maxSamples, (bytes.count - at) / 9 + 1))
        while true {
            guard samples.count < TimelineLimits.maxSamples else {
                throw Failure.limit("more than \(TimelineLimits.maxSamples) samples (the recorder writes at most that many)")
            }
            samples.append(try row(samples.count, after: samples.last?.frames))
            guard let next = separator(samples.count - 1) else { throw Failure.syntax(truncated: true) }
            if next == UInt8(ascii: "]") { return samples }
        }
    }

    /// `,` or the closing bracket after an element; nil at the end of the bytes.
    private mutating func separator(_ row: Int) -> UInt8? {
        skipSpace()
        guard let byte = current else { return nil }
        at += 1
        return byte
    }

    private mutating func expect(_ byte: UInt8, _ row: Int) throws {
        skipSpace()
        guard current == byte else { throw malformed(row) }
        at += 1
    }

    private func malformed(_ row: Int) -> Error {
        at >= bytes.count ? Failure.syntax(truncated: true)
            : MalformedSample(row: row, why: "is not [ns, tid, [module, address, …]]")
    }

    private mutating func row(_ index: Int, after previous: [Timeline.Frame]?) throws -> Timeline.Sample {
        try expect(UInt8(ascii: "["), index)
        let ns = try integer(index, range: 0...Int64(TimelineLimits.maxOffsetNs), what: "time")
        try expect(UInt8(ascii: ","), index)
        let tid = try integer(index, range: Int64(Int32.min)...Int64(Int32.max), what: "thread id")
        try expect(UInt8(ascii: ","), index)
        try expect(UInt8(ascii: "["), index)
        frames.removeAll(keepingCapacity: true)
        skipSpace()
        if current == UInt8(ascii: "]") {
            at += 1
        } else {
            while true {
                guard frames.count < TimelineLimits.maxFrames else {
                    throw Failure.limit("sample \(index) has more than \(TimelineLimits.maxFrames) frames")
                }
                let module = try integer(index, range: -1...Int64(Int32.max), what: "module")
                try expect(UInt8(ascii: ","), index)
                let address = try unsigned(index)
                frames.append(Timeline.Frame(module: Int(module), address: address))
                maxModule = max(maxModule, Int(module))
                guard let next = separator(index) else { throw malformed(index) }
                if next == UInt8(ascii: "]") { break }
                guard next == UInt8(ascii: ",") else { throw malformed(index) }
            }
        }
        try expect(UInt8(ascii: "]"), index)
        // A stack repeated by the next sample (the same work still running,
        // or another thread's sample between) shares its array: a million
        // samples are mostly repeats, and the analysis compares by identity first.
        if let previous, previous == frames {
            return Timeline.Sample(ns: Int64(ns), tid: Int(tid), frames: previous)
        }
        // A copy of its own, of its length: `Array(frames)` shared the row
        // buffer, so the next row's `removeAll(keepingCapacity:)` made a new
        // one as large as the deepest stack yet, and each sample kept that
        // (1,000,000 samples: 64,000 of the 110,000 page faults of reading it).
        return Timeline.Sample(ns: Int64(ns), tid: Int(tid), frames: frames.withUnsafeBufferPointer { Array($0) })
    }

    /// A decimal integer within `range`.
    private mutating func integer(_ row: Int, range: ClosedRange<Int64>, what: String) throws -> Int64 {
        skipSpace()
        let negative = current == UInt8(ascii: "-")
        if negative { at += 1 }
        let magnitude = try unsigned(row)
        guard magnitude <= UInt64(Int64.max) else {
            throw MalformedSample(row: row, why: "has a \(what) out of range (\(negative ? "-" : "")\(magnitude))")
        }
        let value = negative ? -Int64(magnitude) : Int64(magnitude)
        guard range.contains(value) else { throw MalformedSample(row: row, why: "has a \(what) out of range (\(value))") }
        return value
    }

    private mutating func unsigned(_ row: Int) throws -> UInt64 {
        skipSpace()
        let start = at
        var value: UInt64 = 0
        while at < bytes.count, case let digit = bytes[at] &- UInt8(ascii: "0"), digit < 10 {
            // 19 digits always fit: no overflow check for them (this loop,
            // checking each step, was a sixth of reading a big timeline).
            if at - start < 19 {
                value = value &* 10 &+ UInt64(digit)
            } else {
                let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times10.addingReportingOverflow(UInt64(digit))
                guard !overflow1, !overflow2 else { throw MalformedSample(row: row, why: "has a number over 2^64") }
                value = sum
            }
            at += 1
        }
        guard at > start else { throw malformed(row) }
        if let byte = current, byte == UInt8(ascii: ".") || byte | 0x20 == UInt8(ascii: "e") {
            throw MalformedSample(row: row, why: "has a number that is not an integer")
        }
        return value
    }
}

extension TimelineScanner {
    /// The scan's failure as the one-line problem `TimelineError` carries.
    static func problem(_ error: Error, data: Data) -> String {
        switch error {
        case Failure.limit(let what): return "beyond what coldstart reads: \(what)"
        case let malformed as MalformedSample: return "malformed timeline: sample \(malformed.row) \(malformed.why)"
        case Failure.syntax(let truncated):
            let looksCut = truncated && data.first == UInt8(ascii: "{")
            return looksCut ? "truncated JSON (the file ends mid-way)" : "not JSON"
        default: return "not JSON"
        }
    }
}
