import CZlib

/// gzip (RFC 1952) compression through zlib, for pprof's `profile.pb.gz`.
///
/// zlib rather than a hand-written "stored" gzip: pprof profiles are mostly
/// repeated varints and names, which deflate shrinks several times over, and
/// libz.so.1 is on every Debian system (zlib1g-dev only to build).
enum Gzip {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func compress(_ input: [UInt8], level: Int32 = 6) throws -> [UInt8] {
        // One deflate call: zlib counts the input in 32 bits.
        guard input.count < Int(UInt32.max) else { throw Failure(description: "profile too large to compress (\(input.count) bytes)") }
        var stream = z_stream()
        // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
        var status = deflateInit2_(&stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY,
                                   ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else { throw Failure(description: "zlib deflateInit2 failed (\(status))") }
        defer { deflateEnd(&stream) }
        // deflateBound covers the zlib format; the gzip wrapper adds 18 bytes.
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(input.count))) + 32)
        var input = input
        status = input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { destination in
                stream.next_in = source.baseAddress
                stream.avail_in = UInt32(source.count)
                stream.next_out = destination.baseAddress
                stream.avail_out = UInt32(destination.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { throw Failure(description: "zlib deflate failed (\(status))") }
        return Array(output.prefix(Int(stream.total_out)))
    }
}
