import Foundation

/// `coldstart.rawStacks` (docs/timeline-format.md): the registers and the
/// stack copy the kernel took at each sample of a launch recorded with
/// `COLDSTART_UNWINDER=offline`, which the reader unwinds
/// (`OfflineUnwinding`). Read straight from the bytes the scanner noted: the
/// registers are 64-bit unsigned values, which `JSONSerialization` would
/// turn into doubles past 2^63.
package struct RawStacks: Sendable {
    /// The recorder's architecture ("x86_64", "aarch64"): the registers' order.
    package var arch: String
    package var stacks: [Stack]

    package struct Stack: Sendable {
        /// Its sample's index in `coldstart.samples`.
        package var sample: Int
        /// perf's `sample_regs_user` order for `arch`.
        package var registers: [UInt64]
        /// The copy, from the stack pointer up.
        package var bytes: Data
    }

    /// Why the bytes are not a `rawStacks` value (one phrase).
    struct Malformed: Error { var problem: String }

    /// Parses `{"arch": "…", "stacks": [[sample, [registers…], "base64"], …],
    /// "packed": [[sample, [registers…], "base64 of a packed copy"], …]}`
    /// (other keys skipped; `packed` absent in older files, `stacks` empty in
    /// newer ones). At most `TimelineLimits.maxSamples` stacks of at most 64
    /// registers each.
    static func parse(_ bytes: Data) throws -> RawStacks {
        try bytes.withUnsafeBytes { raw in
            var reader = Reader(bytes: raw.bindMemory(to: UInt8.self))
            return try reader.object()
        }
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var at = 0

        var current: UInt8? { at < bytes.count ? bytes[at] : nil }

        mutating func space() {
            while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { at += 1 }
        }

        mutating func expect(_ byte: UInt8) throws {
            space()
            guard current == byte else { throw Malformed(problem: "expected '\(Character(UnicodeScalar(byte)))' at byte \(at)") }
            at += 1
        }

        /// Whether the next byte is `byte` (consumed if so).
        mutating func take(_ byte: UInt8) -> Bool {
            space()
            guard current == byte else { return false }
            at += 1
            return true
        }

        /// A string without escapes (the recorder writes none here).
        mutating func string() throws -> UnsafeBufferPointer<UInt8> {
            try expect(UInt8(ascii: "\""))
            let start = at
            while let byte = current, byte != UInt8(ascii: "\"") {
                guard byte != UInt8(ascii: "\\") else { throw Malformed(problem: "an escaped string") }
                at += 1
            }
            guard current != nil else { throw Malformed(problem: "a string cut short") }
            at += 1
            return UnsafeBufferPointer(rebasing: bytes[start..<at - 1])
        }

        mutating func unsigned() throws -> UInt64 {
            space()
            var value: UInt64 = 0
            let start = at
            while let byte = current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                let (times, o1) = value.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
                guard !o1, !o2 else { throw Malformed(problem: "a number past 2^64") }
                value = sum
                at += 1
            }
            guard at > start else { throw Malformed(problem: "expected an unsigned number at byte \(start)") }
            return value
        }

        /// Skips any value (the scanner checked the syntax already).
        mutating func skip() throws {
            space()
            switch current {
            case UInt8(ascii: "\""):
                at += 1
                while let byte = current, byte != UInt8(ascii: "\"") { at += byte == UInt8(ascii: "\\") ? 2 : 1 }
                at += 1
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                var depth = 0
                repeat {
                    guard let byte = current else { throw Malformed(problem: "a value cut short") }
                    if byte == UInt8(ascii: "\"") { try skip(); continue }
                    if byte == UInt8(ascii: "[") || byte == UInt8(ascii: "{") { depth += 1 }
                    if byte == UInt8(ascii: "]") || byte == UInt8(ascii: "}") { depth -= 1 }
                    at += 1
                } while depth > 0
            default:
                while let byte = current, !",]} \n\r\t".utf8.contains(byte) { at += 1 }
            }
        }

        mutating func object() throws -> RawStacks {
            try expect(UInt8(ascii: "{"))
            var arch: String?
            var stacks: [Stack]?
            var packed: [Stack] = []
            if !take(UInt8(ascii: "}")) {
                repeat {
                    let key = String(decoding: try string(), as: UTF8.self)
                    try expect(UInt8(ascii: ":"))
                    switch key {
                    case "arch": arch = String(decoding: try string(), as: UTF8.self)
                    case "stacks": stacks = try stackRows(packed: false)
                    case "packed": packed = try stackRows(packed: true)
                    default: try skip()
                    }
                } while take(UInt8(ascii: ","))
                try expect(UInt8(ascii: "}"))
            }
            guard let arch, var stacks else { throw Malformed(problem: "no \"arch\" or no \"stacks\"") }
            if !packed.isEmpty {
                guard stacks.count + packed.count <= TimelineLimits.maxSamples else {
                    throw Malformed(problem: "more than \(TimelineLimits.maxSamples) stacks")
                }
                stacks += packed
                stacks.sort { $0.sample < $1.sample }
            }
            return RawStacks(arch: arch, stacks: stacks)
        }

        /// `packed`: the copies are `RawStacks.unpack`'s, each against the rows
        /// before it.
        mutating func stackRows(packed: Bool) throws -> [Stack] {
            try expect(UInt8(ascii: "["))
            var rows: [Stack] = []
            if take(UInt8(ascii: "]")) { return rows }
            repeat {
                guard rows.count < TimelineLimits.maxSamples else {
                    throw Malformed(problem: "more than \(TimelineLimits.maxSamples) stacks")
                }
                try expect(UInt8(ascii: "["))
                let sample = try unsigned()
                guard sample < UInt64(TimelineLimits.maxSamples) else { throw Malformed(problem: "sample index \(sample)") }
                try expect(UInt8(ascii: ","))
                try expect(UInt8(ascii: "["))
                var registers: [UInt64] = []
                if !take(UInt8(ascii: "]")) {
                    repeat {
                        guard registers.count < 64 else { throw Malformed(problem: "more than 64 registers") }
                        registers.append(try unsigned())
                    } while take(UInt8(ascii: ","))
                    try expect(UInt8(ascii: "]"))
                }
                try expect(UInt8(ascii: ","))
                let text = try string()
                guard var copy = Data(base64Encoded: Data(text)) else { throw Malformed(problem: "stack \(rows.count) is not base64") }
                if packed { copy = try RawStacks.unpack(copy, row: rows.count, rows: rows) }
                try expect(UInt8(ascii: "]"))
                rows.append(Stack(sample: Int(sample), registers: registers, bytes: copy))
            } while take(UInt8(ascii: ","))
            try expect(UInt8(ascii: "]"))
            return rows
        }
    }

    /// The copy `packed` holds (`cs_raw_pack`, docs/timeline-format.md
    /// "rawStacks"): a mode byte (0: elided words are zero; 1: they are the
    /// reference's; 2: a second bitmap says which), the copy's length, with
    /// a reference its distance in rows back and its word offset (zigzag),
    /// then a bit per word (1: a literal follows), mode 2's bit per elided
    /// word (1: the reference's), the literal words, and the last `len % 8`
    /// bytes. `rows`: the rows before it, `row` its own index.
    static func unpack(_ packed: Data, row: Int, rows: [Stack]) throws -> Data {
        let bytes = [UInt8](packed)
        var at = 0
        func bad(_ what: String) -> Malformed { Malformed(problem: "packed stack \(row): \(what)") }
        func varint() throws -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                guard at < bytes.count, shift < 64 else { throw bad("a number cut short") }
                let byte = bytes[at]
                at += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { return value }
                shift += 7
            }
        }
        guard let mode = bytes.first, mode <= 2 else { throw bad("unknown mode") }
        at = 1
        let len = try varint()
        guard len <= 1 << 20 else { throw bad("a copy of \(len) bytes") }
        let words = Int(len / 8)
        var reference: [UInt8] = []
        var offset = 0
        if mode != 0 {
            let distance = try varint()
            guard distance >= 1, distance <= UInt64(rows.count) else { throw bad("no row \(distance) back") }
            reference = [UInt8](rows[rows.count - Int(distance)].bytes)
            let zigzag = try varint()
            guard zigzag <= 1 << 40 else { throw bad("an offset past the stack") }
            offset = zigzag & 1 == 0 ? Int(zigzag >> 1) : -Int(zigzag >> 1) - 1
        }
        let literalBits = at
        at += (words + 7) / 8
        guard at <= bytes.count else { throw bad("cut short") }
        var elided = 0
        for j in 0..<words where bytes[literalBits + j / 8] & (1 << (j % 8)) == 0 { elided += 1 }
        let sourceBits = at
        if mode == 2 { at += (elided + 7) / 8 }
        guard at <= bytes.count else { throw bad("cut short") }
        var copy = [UInt8](repeating: 0, count: Int(len))
        var k = 0
        for j in 0..<words {
            if bytes[literalBits + j / 8] & (1 << (j % 8)) != 0 {
                guard at + 8 <= bytes.count else { throw bad("cut short") }
                copy.replaceSubrange(8 * j..<8 * j + 8, with: bytes[at..<at + 8])
                at += 8
                continue
            }
            let fromReference = mode == 1 || (mode == 2 && bytes[sourceBits + k / 8] & (1 << (k % 8)) != 0)
            k += 1
            guard fromReference else { continue }
            let r = j + offset
            guard r >= 0, 8 * r + 8 <= reference.count else { throw bad("word \(j) outside its reference") }
            copy.replaceSubrange(8 * j..<8 * j + 8, with: reference[8 * r..<8 * r + 8])
        }
        guard at + Int(len % 8) == bytes.count else { throw bad("\(bytes.count - at) bytes where \(len % 8) were due") }
        copy.replaceSubrange(8 * words..<Int(len), with: bytes[at...])
        return Data(copy)
    }
}
