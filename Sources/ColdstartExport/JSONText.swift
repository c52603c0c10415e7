/// JSON text built by appending, for exports with hundreds of thousands of
/// numbers (JSONSerialization boxes each one). Strings are escaped so the
/// text can also sit inside an HTML `<script>` element: `/` is written `\/`,
/// so neither `</script>` nor `//` can appear, and `<`, `>`, `&` and the
/// line separators U+2028/9 are written as `\u` escapes, as is one character
/// of anything that reads like a reference (`http`, `src=`, `url(`, `@import`).
struct JSONText {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 1 << 16) { bytes.reserveCapacity(capacity) }

    mutating func raw(_ text: String) { bytes += text.utf8 }

    mutating func int<T: BinaryInteger>(_ value: T) { bytes += String(value).utf8 }

    /// A finite number with at most `decimals` decimals, trailing zeros cut.
    mutating func number(_ value: Double, decimals: Int = 3) {
        guard value.isFinite else { return raw("null") }
        let scale = pow10(decimals)
        let rounded = (value * scale).rounded() / scale
        if rounded == rounded.rounded(), abs(rounded) < 1e15 { return int(Int64(rounded)) }
        raw(String(rounded))
    }

    private func pow10(_ n: Int) -> Double { (0..<n).reduce(1.0) { value, _ in value * 10 } }

    mutating func string(_ value: String) {
        let hex = Array("0123456789abcdef".utf8)
        let scalars = Array(value.unicodeScalars)
        bytes.append(UInt8(ascii: "\""))
        for (index, scalar) in scalars.enumerated() {
            if HTMLTable.looksLikeReference(scalars, at: index) {
                let v = scalar.value
                bytes += [0x5C, UInt8(ascii: "u"), hex[Int(v >> 12 & 0xF)], hex[Int(v >> 8 & 0xF)], hex[Int(v >> 4 & 0xF)], hex[Int(v & 0xF)]]
                continue
            }
            switch scalar {
            case "\"": bytes += [0x5C, 0x22]
            case "\\": bytes += [0x5C, 0x5C]
            case "/": bytes += [0x5C, 0x2F]
            case "\n": bytes += [0x5C, UInt8(ascii: "n")]
            case "\r": bytes += [0x5C, UInt8(ascii: "r")]
            case "\t": bytes += [0x5C, UInt8(ascii: "t")]
            case "<", ">", "&", "\u{2028}", "\u{2029}", "\u{0}"..."\u{1F}":
                let v = scalar.value
                bytes += [0x5C, UInt8(ascii: "u"), hex[Int(v >> 12 & 0xF)], hex[Int(v >> 8 & 0xF)], hex[Int(v >> 4 & 0xF)], hex[Int(v & 0xF)]]
            default: bytes += String(scalar).utf8
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// `[a,b,c]` of integers.
    mutating func ints<S: Sequence>(_ values: S) where S.Element: BinaryInteger {
        bytes.append(UInt8(ascii: "["))
        var first = true
        for value in values {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            int(value)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    var text: String { String(decoding: bytes, as: UTF8.self) }
}
