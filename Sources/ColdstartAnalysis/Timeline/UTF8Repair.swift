import Foundation

/// Well-formed UTF-8 (RFC 3629) for JSON text that should be and may not be.
enum UTF8Repair {
    /// `json` with every byte that is not part of a well-formed UTF-8
    /// sequence (a stray continuation byte, a truncated or overlong
    /// sequence, a surrogate, past U+10FFFF) replaced by U+FFFD, one per
    /// byte, as the recorder writes them, and every `\u` escape of an
    /// unpaired surrogate (which JSONSerialization refuses too) replaced by
    /// `\uFFFD`; and how many were replaced. Valid text (the usual case) is
    /// returned as it is, after one pass. Backslashes are only ever inside
    /// strings in JSON, so the escapes are found without parsing.
    static func replacingInvalidBytes(_ json: Data) -> (Data, replaced: UInt64) {
        json.withUnsafeBytes { raw -> (Data, replaced: UInt64) in
            let bytes = raw.bindMemory(to: UInt8.self)
            var at = plainEnd(bytes, from: 0)
            while at < bytes.count, let length = validLength(bytes, at) { at = plainEnd(bytes, from: at + length) }
            guard at < bytes.count else { return (json, 0) }
            var repaired = Data(capacity: bytes.count + 64)
            repaired.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[..<at]))
            var replaced: UInt64 = 0
            while at < bytes.count {
                if let length = validLength(bytes, at) {
                    repaired.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[at..<at + length]))
                    at += length
                } else if bytes[at] == UInt8(ascii: "\\") {
                    repaired.append(contentsOf: Array(#"\uFFFD"#.utf8))
                    replaced += 1
                    at += 6
                } else {
                    repaired.append(contentsOf: [0xEF, 0xBF, 0xBD])
                    replaced += 1
                    at += 1
                }
            }
            return (repaired, replaced)
        }
    }

    /// Where the run of plain ASCII (no backslash) from `start` ends, eight
    /// bytes at a time: a call of `validLength` per byte was a fifth of
    /// reading a big timeline.
    @inline(__always)
    private static func plainEnd(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var at = start
        if let base = bytes.baseAddress {
            let raw = UnsafeRawPointer(base)
            while at + 8 <= bytes.count {
                let word = raw.loadUnaligned(fromByteOffset: at, as: UInt64.self)
                // Non-zero when a byte of `word ^ 0x5C…` is zero: a backslash.
                let other = word ^ 0x5C5C_5C5C_5C5C_5C5C
                let backslash = (other &- 0x0101_0101_0101_0101) & ~other & 0x8080_8080_8080_8080
                if (word & 0x8080_8080_8080_8080) | backslash != 0 { break }
                at += 8
            }
        }
        while at < bytes.count, bytes[at] < 0x80, bytes[at] != UInt8(ascii: "\\") { at += 1 }
        return at
    }

    /// The length of the well-formed piece at `at` (a character, an escape,
    /// a surrogate pair's two escapes), or nil for a bad byte or an unpaired
    /// surrogate's escape (always 6 bytes).
    private static func validLength(_ bytes: UnsafeBufferPointer<UInt8>, _ at: Int) -> Int? {
        let lead = bytes[at]
        if lead == UInt8(ascii: "\\") {
            guard at + 1 < bytes.count else { return 1 }
            guard bytes[at + 1] == UInt8(ascii: "u"), let unit = hex4(bytes, at + 2), (0xD800...0xDFFF).contains(unit) else { return 2 }
            if unit < 0xDC00, at + 11 < bytes.count, bytes[at + 6] == UInt8(ascii: "\\"), bytes[at + 7] == UInt8(ascii: "u"),
               let low = hex4(bytes, at + 8), (0xDC00...0xDFFF).contains(low) {
                return 12
            }
            return nil
        }
        if lead < 0x80 { return 1 }
        // The second byte's range depends on the lead (RFC 3629's table):
        // that excludes overlong forms, surrogates and values past U+10FFFF.
        let length: Int, second: ClosedRange<UInt8>
        switch lead {
        case 0xC2...0xDF: (length, second) = (2, 0x80...0xBF)
        case 0xE0: (length, second) = (3, 0xA0...0xBF)
        case 0xE1...0xEC, 0xEE...0xEF: (length, second) = (3, 0x80...0xBF)
        case 0xED: (length, second) = (3, 0x80...0x9F)
        case 0xF0: (length, second) = (4, 0x90...0xBF)
        case 0xF1...0xF3: (length, second) = (4, 0x80...0xBF)
        case 0xF4: (length, second) = (4, 0x80...0x8F)
        default: return nil
        }
        guard at + length <= bytes.count, second.contains(bytes[at + 1]) else { return nil }
        for index in at + 2 ..< at + length where !(0x80...0xBF).contains(bytes[index]) { return nil }
        return length
    }

    /// Four hex digits at `at` as a number, or nil.
    private static func hex4(_ bytes: UnsafeBufferPointer<UInt8>, _ at: Int) -> UInt32? {
        guard at + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for index in at ..< at + 4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }
}
