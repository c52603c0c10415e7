import Foundation

/// Input N of seed S is the same bytes on every machine and run.
extension SplitMix64 {
    init(seed: UInt64, iteration: UInt64) { self.init(seed: seed &* 0x9E37_79B9_7F4A_7C15 ^ iteration &* 0xD1B5_4A32_D192_ED03) }

    /// 0..<bound (bound > 0).
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

    mutating func pick<T>(_ values: [T]) -> T { values[below(values.count)] }
}

/// Mutations of a timeline (JSON text) and of an ELF file: few, aimed at
/// the values a reader computes with, plus plain byte damage.
enum FuzzMutator {
    /// Numbers that break arithmetic and conversions.
    static let numbers = [
        "0", "-1", "1", "2", "255", "65536", "2147483648", "4294967296", "-2147483649",
        "9007199254740992", "9007199254740993", "9223372036854775807", "-9223372036854775808",
        "18446744073709551615", "18446744073709551616", "1e-300", "1e308", "1e400", "-1e308", "0.5", "-0", "1.5e3",
    ]
    /// Strings that break escaping, text layout and limits.
    static let strings = [
        "\"\"", "\"</script><script>alert(1)</script>\"", "\"\\u2028\\u2029\"", "\"a;b\\\\c\\nd\"", "\"\\u0000\"",
        "\"http://x.invalid/@import url(a)\"", "\"\\ud800\"", "\"" + String(repeating: "é", count: 300) + "\"",
        "\"/dev/zero\"", "\"/proc/self/mem\"", "\".\"",
    ]
    static let values = ["null", "[]", "{}", "true", "[[]]", "[0,0,[-1,0]]", "{\"a\":1}"]

    /// The byte ranges of number and string tokens of JSON text.
    static func tokens(_ text: [UInt8]) -> (numbers: [Range<Int>], strings: [Range<Int>]) {
        var numbers: [Range<Int>] = [], strings: [Range<Int>] = []
        var index = 0
        while index < text.count {
            let byte = text[index]
            if byte == UInt8(ascii: "\"") {
                let start = index
                index += 1
                while index < text.count, text[index] != UInt8(ascii: "\"") { index += text[index] == UInt8(ascii: "\\") ? 2 : 1 }
                index += 1
                strings.append(start..<min(index, text.count))
            } else if byte == UInt8(ascii: "-") || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) {
                let start = index
                while index < text.count, "-+.eE0123456789".utf8.contains(text[index]) { index += 1 }
                numbers.append(start..<index)
            } else {
                index += 1
            }
        }
        return (numbers, strings)
    }

    /// One to four mutations of a timeline.
    static func timeline(_ seed: [UInt8], _ random: inout SplitMix64) -> [UInt8] {
        var text = seed
        for _ in 0...random.below(4) {
            let (numbers, strings) = tokens(text)
            switch random.below(10) {
            case 0...3 where !numbers.isEmpty:
                text.replaceSubrange(random.pick(numbers), with: Array(random.pick(Self.numbers).utf8))
            case 4...5 where !strings.isEmpty:
                text.replaceSubrange(random.pick(strings), with: Array(random.pick(Self.strings).utf8))
            case 6 where !(numbers + strings).isEmpty:
                text.replaceSubrange(random.pick(numbers + strings), with: Array(random.pick(values).utf8))
            case 7 where !text.isEmpty:
                // Duplicate a stretch (more rows, more frames, repeated keys).
                let start = random.below(text.count), length = min(text.count - start, 1 + random.below(200))
                text.insert(contentsOf: text[start..<start + length], at: start)
            default:
                bytes(&text, &random)
            }
        }
        return text
    }

    /// Damage to any bytes: flips, interesting bytes, deletions, truncation.
    static func bytes(_ data: inout [UInt8], _ random: inout SplitMix64) {
        guard !data.isEmpty else { data = [UInt8(random.below(256))]; return }
        let at = random.below(data.count)
        switch random.below(5) {
        case 0: data[at] ^= UInt8(1) << UInt8(random.below(8))
        case 1: data[at] = random.pick([0, 0x7F, 0x80, 0xFF, UInt8(ascii: "\""), UInt8(ascii: "["), UInt8(ascii: "{"), UInt8(ascii: "\\")])
        case 2: data.removeSubrange(at..<min(data.count, at + 1 + random.below(64)))
        case 3: data.removeSubrange(at...)
        default: data.insert(contentsOf: (0..<1 + random.below(16)).map { _ in UInt8(random.below(256)) }, at: at)
        }
    }

    /// One to eight mutations of an ELF file, mostly in its headers and
    /// tables (offsets, sizes, counts), where a reader trusts the file.
    static func elf(_ seed: [UInt8], _ random: inout SplitMix64) -> [UInt8] {
        var data = seed
        func u64(_ at: Int) -> Int { at + 8 <= data.count ? Int(truncatingIfNeeded: (0..<8).reduce(UInt64(0)) { $0 | UInt64(data[at + $1]) << (8 * $1) }) : 0 }
        let sectionTable = u64(40), programTable = u64(32)
        // The dynamic section (PT_DYNAMIC): what SharedLibraries reads.
        var dynamic: Range<Int>?
        if programTable > 0, programTable < data.count {
            for entry in stride(from: programTable, to: min(data.count - 56, programTable + 56 * 16), by: 56)
            where data[entry] == 2 && data[entry + 1] == 0 && data[entry + 2] == 0 && data[entry + 3] == 0 {
                let start = u64(entry + 8)
                if start > 0, start < data.count { dynamic = start..<min(data.count, start + 512) }
            }
        }
        for _ in 0...random.below(8) {
            guard !data.isEmpty else { break }
            var regions = [0..<min(64, data.count)]
            for table in [sectionTable, programTable] where table > 0 && table < data.count {
                regions.append(table..<min(data.count, table + 64 * 40))
            }
            if let dynamic, dynamic.upperBound <= data.count { regions.append(dynamic) }
            let region = random.pick(regions)
            let at = region.lowerBound + random.below(max(1, region.count))
            switch random.below(6) {
            case 0, 1:
                // A field-sized interesting value: 0, all ones, huge, just past the end.
                let width = random.pick([1, 2, 4, 8])
                let value: UInt64 = random.pick([0, 1, .max, UInt64(data.count), UInt64(data.count) + 1, 1 << 31, 1 << 63, 64, 56])
                for offset in 0..<width where at + offset < data.count { data[at + offset] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(offset))) }
            case 2: data[at] = UInt8(random.below(256))
            default: bytes(&data, &random)
            }
        }
        return data
    }
}
