import Foundation

/// The four arrays of small objects that most of a phases-only timeline is
/// (`phases`, `marks`, `spans`, `rusage`), read straight from their bytes:
/// through `JSONDecoder` they were over half of `coldstart aggregate`'s CPU
/// (a container, a key dictionary and generic calls per object and field).
///
/// Only the plainest form is read here: strings without escapes, integers
/// without a fraction or exponent, each key once, every field present with
/// its type. Anything else gives nil, and the caller leaves that section to
/// the `JSONDecoder` pass, which reads it or says what is wrong: the same
/// values either way, and the same errors. The bytes have passed
/// `TimelineScanner`, so they are JSON.
enum PlainSections {
    /// A value of one of these objects: they hold no arrays, and no numbers
    /// but integers.
    private enum Value {
        case integer(negative: Bool, magnitude: UInt64)
        case string(String)
        case bool(Bool)
        case null
        case object([String: Value])
    }

    static func phases(_ bytes: Data) -> [Timeline.Phase]? {
        objects(bytes) { fields in
            guard let name = fields.string("name"), let kind = fields.string("kind"), let startNs = fields.int64("startNs"),
                  let endNs = fields.int64("endNs"), let rusage = fields.optionalRusage("rusage") else { return nil }
            return Timeline.Phase(name: name, kind: kind, startNs: startNs, endNs: endNs, rusage: rusage)
        }
    }

    static func marks(_ bytes: Data) -> [Timeline.Mark]? {
        objects(bytes) { fields in
            guard let name = fields.string("name"), let ns = fields.int64("ns"), let tid = fields.int("tid"),
                  let threadCpuNs = fields.optionalUInt64("threadCpuNs"), let phaseBoundary = fields.bool("phaseBoundary"),
                  let extended = fields.bool("extended"), let rusage = fields.optionalRusage("rusage") else { return nil }
            return Timeline.Mark(name: name, ns: ns, tid: tid, threadCpuNs: threadCpuNs, phaseBoundary: phaseBoundary,
                                 extended: extended, rusage: rusage)
        }
    }

    static func spans(_ bytes: Data) -> [Timeline.Span]? {
        objects(bytes) { fields in
            guard let name = fields.string("name"), let beginNs = fields.int64("beginNs"), let endNs = fields.int64("endNs"),
                  let tid = fields.int("tid"), let endTid = fields.int("endTid"),
                  let beginThreadCpuNs = fields.optionalUInt64("beginThreadCpuNs"),
                  let endThreadCpuNs = fields.optionalUInt64("endThreadCpuNs"), let unfinished = fields.bool("unfinished"),
                  let extended = fields.optionalBool("extended"), let rusage = fields.optionalRusage("rusage") else { return nil }
            return Timeline.Span(name: name, beginNs: beginNs, endNs: endNs, tid: tid, endTid: endTid, beginThreadCpuNs: beginThreadCpuNs,
                                 endThreadCpuNs: endThreadCpuNs, unfinished: unfinished, extended: extended, rusage: rusage)
        }
    }

    /// The process-wide snapshots: `at`, `ns` and the counters, flat.
    static func rusage(_ bytes: Data) -> [Timeline.RusageSnapshot]? {
        objects(bytes) { fields in
            guard let at = fields.string("at"), let ns = fields.int64("ns"), let usage = Fields.rusage(fields.values) else { return nil }
            return Timeline.RusageSnapshot(at: at, ns: ns, usage: usage)
        }
    }

    /// An array of objects, each made by `make`; nil when the bytes are
    /// anything else or `make` refuses one.
    private static func objects<T>(_ bytes: Data, _ make: (Fields) -> T?) -> [T]? {
        bytes.withUnsafeBytes { raw -> [T]? in
            var reader = Reader(bytes: raw.bindMemory(to: UInt8.self))
            guard reader.take(UInt8(ascii: "[")) else { return nil }
            var result: [T] = []
            if reader.take(UInt8(ascii: "]")) { return reader.atEnd ? result : nil }
            repeat {
                guard case .object(let values)? = reader.value(depth: 0), let made = make(Fields(values: values)) else { return nil }
                result.append(made)
            } while reader.take(UInt8(ascii: ","))
            return reader.take(UInt8(ascii: "]")) && reader.atEnd ? result : nil
        }
    }

    /// An object's fields as `JSONDecoder` would read them for a Swift
    /// property: nil when it would throw. An optional field's getter gives
    /// `.some(nil)` when the key is absent or null.
    private struct Fields {
        let values: [String: Value]

        func string(_ key: String) -> String? {
            guard case .string(let text)? = values[key] else { return nil }
            return text
        }

        func bool(_ key: String) -> Bool? {
            guard case .bool(let flag)? = values[key] else { return nil }
            return flag
        }

        func int64(_ key: String) -> Int64? {
            guard case .integer(let negative, let magnitude)? = values[key] else { return nil }
            if negative { return magnitude <= UInt64(Int64.max) ? -Int64(magnitude) : magnitude == UInt64(Int64.max) + 1 ? .min : nil }
            return Int64(exactly: magnitude)
        }

        func int(_ key: String) -> Int? { int64(key).flatMap { Int(exactly: $0) } }

        func uint64(_ key: String) -> UInt64? {
            guard case .integer(false, let magnitude)? = values[key] else { return nil }
            return magnitude
        }

        private func isAbsent(_ key: String) -> Bool {
            guard let value = values[key] else { return true }
            if case .null = value { return true }
            return false
        }

        func optionalUInt64(_ key: String) -> UInt64?? { isAbsent(key) ? .some(nil) : uint64(key).map { $0 } }
        func optionalBool(_ key: String) -> Bool?? { isAbsent(key) ? .some(nil) : bool(key).map { $0 } }

        func optionalRusage(_ key: String) -> Timeline.Rusage?? {
            if isAbsent(key) { return .some(nil) }
            guard case .object(let counters)? = values[key] else { return nil }
            return Self.rusage(counters).map { $0 }
        }

        static func rusage(_ counters: [String: Value]) -> Timeline.Rusage? {
            let fields = Fields(values: counters)
            guard let minorFaults = fields.uint64("minorFaults"), let majorFaults = fields.uint64("majorFaults"),
                  let voluntarySwitches = fields.uint64("voluntarySwitches"), let involuntarySwitches = fields.uint64("involuntarySwitches"),
                  let userNs = fields.uint64("userNs"), let systemNs = fields.uint64("systemNs") else { return nil }
            return Timeline.Rusage(minorFaults: minorFaults, majorFaults: majorFaults, voluntarySwitches: voluntarySwitches,
                                   involuntarySwitches: involuntarySwitches, userNs: userNs, systemNs: systemNs)
        }
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var at = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        var atEnd: Bool {
            mutating get {
                skipSpace()
                return at == bytes.count
            }
        }

        mutating func skipSpace() {
            while at < bytes.count, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[at]) { at += 1 }
        }

        /// Skips `byte` (after any space) if it is next.
        mutating func take(_ byte: UInt8) -> Bool {
            skipSpace()
            guard at < bytes.count, bytes[at] == byte else { return false }
            at += 1
            return true
        }

        mutating func word(_ text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard at + count <= bytes.count else { return false }
            for offset in 0..<count where bytes[at + offset] != text.utf8Start[offset] { return false }
            at += count
            return true
        }

        /// One value; nil for what these objects do not hold (an array, a
        /// fraction, an escape) or a nesting deeper than a counter object
        /// (depth 0: an element of the array, 1: its fields).
        mutating func value(depth: Int) -> Value? {
            skipSpace()
            guard at < bytes.count else { return nil }
            switch bytes[at] {
            case UInt8(ascii: "\""): return string().map(Value.string)
            case UInt8(ascii: "t"): return word("true") ? .bool(true) : nil
            case UInt8(ascii: "f"): return word("false") ? .bool(false) : nil
            case UInt8(ascii: "n"): return word("null") ? .null : nil
            case UInt8(ascii: "{"): return depth < 2 ? object(depth: depth + 1) : nil
            default: return integer()
            }
        }

        private mutating func string() -> String? {
            at += 1
            let start = at
            while at < bytes.count, bytes[at] != UInt8(ascii: "\"") {
                if bytes[at] == UInt8(ascii: "\\") { return nil }
                at += 1
            }
            guard at < bytes.count else { return nil }
            at += 1
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at - 1]), as: UTF8.self)
        }

        private mutating func integer() -> Value? {
            let negative = bytes[at] == UInt8(ascii: "-")
            if negative { at += 1 }
            let start = at
            var magnitude: UInt64 = 0
            while at < bytes.count, bytes[at] >= UInt8(ascii: "0"), bytes[at] <= UInt8(ascii: "9") {
                let (times, overflowTimes) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, overflowSum) = times.addingReportingOverflow(UInt64(bytes[at] - UInt8(ascii: "0")))
                if overflowTimes || overflowSum { return nil }
                magnitude = sum
                at += 1
            }
            guard at > start else { return nil }
            // A fraction or an exponent: JSONDecoder's to read.
            if at < bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[at]) { return nil }
            return .integer(negative: negative, magnitude: magnitude)
        }

        private mutating func object(depth: Int) -> Value? {
            at += 1
            var values: [String: Value] = [:]
            if take(UInt8(ascii: "}")) { return .object(values) }
            repeat {
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: "\""), let key = string(), take(UInt8(ascii: ":")),
                      let value = value(depth: depth) else { return nil }
                // A repeated key: which one counts is JSONDecoder's to say.
                guard values.updateValue(value, forKey: key) == nil else { return nil }
            } while take(UInt8(ascii: ","))
            return take(UInt8(ascii: "}")) ? .object(values) : nil
        }
    }
}
