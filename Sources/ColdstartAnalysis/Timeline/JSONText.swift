import Foundation

/// JSON text built by appending: the one JSON writer of the analysis side,
/// for the symbolized timeline (a whole parsed document, `document`) and for
/// exports with hundreds of thousands of numbers (JSONSerialization boxes
/// each one, and spent 85% of `coldstart symbolize`, over a third of it
/// sorting keys with locale-aware comparison).
///
/// With `.scriptSafe` escaping strings can also sit inside an HTML
/// `<script>` element: `/` is written `\/`, so neither `</script>` nor `//`
/// can appear, and `<`, `>`, `&` and the line separators U+2028/9 are
/// written as `\u` escapes, as is one character of anything that reads like
/// a reference (`http`, `src=`, `url(`, `@import`).
package struct JSONText {
    /// How strings are escaped.
    package enum Escaping: Sendable {
        /// JSON's own escapes only (quote, backslash, control characters).
        case plain
        /// Also safe inside an HTML `<script>` element (see the type's note).
        case scriptSafe
    }

    struct UnsupportedValue: Error, CustomStringConvertible {
        var description: String
    }

    package private(set) var bytes: [UInt8] = []
    private let escaping: Escaping

    package init(capacity: Int = 1 << 16, escaping: Escaping) {
        bytes.reserveCapacity(capacity)
        self.escaping = escaping
    }

    package mutating func raw(_ text: String) { bytes += text.utf8 }

    /// One byte: a separator between a flattened table's numbers, without
    /// a `String`'s UTF-8 view per comma (a tenth of the HTML page's data).
    package mutating func byte(_ byte: UInt8) { bytes.append(byte) }

    package mutating func int<T: BinaryInteger>(_ value: T) {
        guard let value = Int64(exactly: value) else { return bytes += String(value).utf8 }
        int(value)
    }

    /// The common case without the generic one's conversion: called from
    /// another module, the generic `int` is not specialized, and its
    /// `BinaryInteger` witness calls were a tenth of the HTML page's data.
    package mutating func int(_ value: Int) { int(Int64(value)) }

    package mutating func int(_ value: Int64) {
        // Digits written straight into the bytes, lowest first, then put in
        // order: `String(value)` of a generic integer was most of a big
        // profile's speedscope export, and a temporary buffer appended
        // through the generic `append(contentsOf:)` a tenth of the HTML
        // page's data.
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var low = bytes.count
        repeat {
            bytes.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        var high = bytes.count - 1
        while low < high {
            bytes.swapAt(low, high)
            low += 1
            high -= 1
        }
    }

    /// A finite number with at most `decimals` decimals, trailing zeros cut.
    package mutating func number(_ value: Double, decimals: Int = 3) {
        guard value.isFinite else { return raw("null") }
        let scale = pow10(decimals)
        let rounded = (value * scale).rounded() / scale
        if rounded == rounded.rounded(), abs(rounded) < 1e15 { return int(Int64(rounded)) }
        raw(String(rounded))
    }

    private func pow10(_ n: Int) -> Double { (0..<n).reduce(1.0) { value, _ in value * 10 } }

    package mutating func string(_ value: String) {
        guard escaping == .scriptSafe else { return plainString(value) }
        let hex = Array("0123456789abcdef".utf8)
        let scalars = Array(value.unicodeScalars)
        bytes.append(UInt8(ascii: "\""))
        for (index, scalar) in scalars.enumerated() {
            if Self.looksLikeReference(scalars, at: index) {
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
    package mutating func ints<S: Sequence>(_ values: S) where S.Element: BinaryInteger {
        bytes.append(UInt8(ascii: "["))
        var first = true
        for value in values {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            int(value)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    package var text: String { String(decoding: bytes, as: UTF8.self) }

    /// A parsed JSON document (what `JSONSerialization` returned, with Swift
    /// values added), keys sorted by their UTF-8 bytes: the same bytes for
    /// the same document on every run. Throws on a value JSON cannot hold.
    package mutating func document(_ value: Any) throws {
        try write(value)
    }

    // Dispatches on the exact type first: a conditional cast of a Swift
    // array to a class (NSNumber) bridges the whole array to NSArray just to
    // fail, which cost more than JSONSerialization itself.
    private mutating func write(_ value: Any) throws {
        let type = type(of: value)
        if type == String.self {
            plainString(value as! String)
        } else if type == [String: Any].self {
            try writeObject(value as! [String: Any])
        } else if type == [Any].self {
            try writeArray(value as! [Any])
        } else if type == Bool.self {
            bytes += Array(((value as! Bool) ? "true" : "false").utf8)
        } else if type == Int.self {
            int(value as! Int)
        } else if type == Int64.self {
            int(value as! Int64)
        } else if type == UInt64.self {
            int(value as! UInt64)
        } else if type == Double.self {
            let double = value as! Double
            raw(double.isFinite ? "\(double)" : "null")
        } else if let number = value as? NSNumber {
            bytes += Array(Self.numberText(number).utf8)
        } else if value is NSNull {
            bytes += Array("null".utf8)
        } else if let string = value as? String {
            plainString(string)
        } else if let object = value as? [String: Any] {
            try writeObject(object)
        } else if let array = value as? [Any] {
            try writeArray(array)
        } else {
            throw UnsupportedValue(description: "cannot write a \(type) as JSON")
        }
    }

    private mutating func writeObject(_ object: [String: Any]) throws {
        bytes.append(UInt8(ascii: "{"))
        for (index, key) in object.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            plainString(key)
            bytes.append(UInt8(ascii: ":"))
            try write(object[key]!)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    private mutating func writeArray(_ array: [Any]) throws {
        bytes.append(UInt8(ascii: "["))
        for (index, element) in array.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            try write(element)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// Booleans parsed by `JSONSerialization` are NSNumbers of type "c"; its
    /// integers come back as integers, its other numbers as doubles.
    private static func numberText(_ number: NSNumber) -> String {
        switch String(cString: number.objCType) {
        case "c", "B": return number.boolValue ? "true" : "false"
        case "d", "f":
            let double = number.doubleValue
            return double.isFinite ? "\(double)" : "null"
        case "Q", "L", "I", "S": return String(number.uint64Value)
        default: return String(number.int64Value)
        }
    }

    /// A string with JSON's own escapes, byte by byte (the fast path).
    private mutating func plainString(_ string: String) {
        let hex = Array("0123456789abcdef".utf8)
        bytes.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Whether the character at `index` makes `http`, `src=`, `url(` or
    /// `@import` (any case): the one character escapers write as a reference.
    package static func looksLikeReference(_ scalars: [Unicode.Scalar], at index: Int) -> Bool {
        func matches(_ word: String, from start: Int) -> Bool {
            let letters = Array(word.unicodeScalars)
            guard start >= 0, start + letters.count <= scalars.count else { return false }
            return letters.indices.allSatisfy { String(scalars[start + $0]).lowercased() == String(letters[$0]) }
        }
        switch scalars[index] {
        case "h", "H": return matches("http", from: index)
        case "=": return matches("src=", from: index - 3)
        case "(": return matches("url(", from: index - 3)
        case "@": return matches("@import", from: index)
        default: return false
        }
    }
}
