/// The Protocol Buffers wire format, as much as `profile.proto` and OTLP's
/// trace messages need: varints, fixed 64-bit fields, length-delimited
/// fields (strings, bytes, nested messages, packed repeated integers). Written by hand: the format is small and SwiftPM can
/// fetch no protobuf package here.
struct ProtobufWriter {
    private(set) var bytes: [UInt8] = []

    private enum WireType: UInt64 {
        case varint = 0
        case fixed64 = 1
        case lengthDelimited = 2
    }

    private mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    private mutating func tag(_ field: Int, _ type: WireType) {
        varint(UInt64(field) << 3 | type.rawValue)
    }

    /// An unsigned integer field; zero is the default and is not written.
    mutating func uint(_ field: Int, _ value: UInt64) {
        guard value != 0 else { return }
        tag(field, .varint)
        varint(value)
    }

    /// A signed (`int64`) field: negative values take ten bytes, as the format says.
    mutating func int(_ field: Int, _ value: Int64) {
        uint(field, UInt64(bitPattern: value))
    }

    mutating func bool(_ field: Int, _ value: Bool) {
        uint(field, value ? 1 : 0)
    }

    /// A string field, written even when empty (`repeated string` entries count).
    mutating func string(_ field: Int, _ value: String) {
        tag(field, .lengthDelimited)
        varint(UInt64(value.utf8.count))
        bytes += value.utf8
    }

    /// A member of a `oneof` (OTLP's `AnyValue`): written even when zero,
    /// since being present is what says which member it is.
    mutating func oneofVarint(_ field: Int, _ value: UInt64) {
        tag(field, .varint)
        varint(value)
    }

    /// A `fixed64` field (OTLP's nanosecond times); zero is not written.
    mutating func fixed64(_ field: Int, _ value: UInt64) {
        guard value != 0 else { return }
        tag(field, .fixed64)
        littleEndian(value)
    }

    private mutating func littleEndian(_ value: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    /// A `bytes` field (trace and span ids); nothing when empty.
    mutating func data(_ field: Int, _ value: [UInt8]) {
        guard !value.isEmpty else { return }
        tag(field, .lengthDelimited)
        varint(UInt64(value.count))
        bytes += value
    }

    /// An embedded message, built by `body`.
    mutating func message(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        var inner = ProtobufWriter()
        body(&inner)
        tag(field, .lengthDelimited)
        varint(UInt64(inner.bytes.count))
        bytes += inner.bytes
    }

    /// A packed `repeated uint64`/`int64` field; nothing when empty.
    mutating func packed(_ field: Int, _ values: [UInt64]) {
        guard !values.isEmpty else { return }
        var inner = ProtobufWriter()
        for value in values { inner.varint(value) }
        tag(field, .lengthDelimited)
        varint(UInt64(inner.bytes.count))
        bytes += inner.bytes
    }
}
