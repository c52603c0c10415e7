import Foundation

/// Writes a parsed JSON document (what `JSONSerialization` returned, with
/// Swift values added) back as JSON text, keys sorted by their UTF-8 bytes.
///
/// `JSONSerialization` spent 85% of `coldstart symbolize` (1.3 s for a
/// 3 MB timeline), over a third of it sorting keys with locale-aware string
/// comparison; this writer produces the same JSON about ten times faster,
/// and the same bytes for the same document on every run.
enum DocumentWriter {
    struct UnsupportedValue: Error, CustomStringConvertible {
        var description: String
    }

    static func data(_ document: Any) throws -> Data {
        var out: [UInt8] = []
        out.reserveCapacity(1 << 20)
        try write(document, to: &out)
        out.append(0x0A)
        return Data(out)
    }

    // Dispatches on the exact type first: a conditional cast of a Swift
    // array to a class (NSNumber) bridges the whole array to NSArray just to
    // fail, which cost more than JSONSerialization itself.
    private static func write(_ value: Any, to out: inout [UInt8]) throws {
        let type = type(of: value)
        if type == String.self {
            writeString(value as! String, to: &out)
        } else if type == [String: Any].self {
            try writeObject(value as! [String: Any], to: &out)
        } else if type == [Any].self {
            try writeArray(value as! [Any], to: &out)
        } else if type == Bool.self {
            out += Array(((value as! Bool) ? "true" : "false").utf8)
        } else if let number = value as? NSNumber {
            out += Array(numberText(number).utf8)
        } else if value is NSNull {
            out += Array("null".utf8)
        } else if let string = value as? String {
            writeString(string, to: &out)
        } else if let object = value as? [String: Any] {
            try writeObject(object, to: &out)
        } else if let array = value as? [Any] {
            try writeArray(array, to: &out)
        } else {
            throw UnsupportedValue(description: "cannot write a \(type) as JSON")
        }
    }

    private static func writeObject(_ object: [String: Any], to out: inout [UInt8]) throws {
        out.append(UInt8(ascii: "{"))
        for (index, key) in object.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            writeString(key, to: &out)
            out.append(UInt8(ascii: ":"))
            try write(object[key]!, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    private static func writeArray(_ array: [Any], to out: inout [UInt8]) throws {
        out.append(UInt8(ascii: "["))
        for (index, element) in array.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            try write(element, to: &out)
        }
        out.append(UInt8(ascii: "]"))
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

    private static func writeString(_ string: String, to out: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        out.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20: out += [UInt8(ascii: "\\"), UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
