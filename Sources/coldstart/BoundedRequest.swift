import CHTTP
import Foundation

/// One HTTP POST to a server the CLI does not trust to behave (libcurl,
/// through `cs_http_post`): it ends within `timeout` seconds whole
/// (connecting, sending, and a body dripped a byte at a time; URLSession's
/// timeout only bounded the wait between two bytes), keeps at most
/// `maxBody` bytes of the response and reads no further (URLSession queued
/// hundreds of MB of a 1 GiB response before a cancel took effect), and
/// follows no redirect. A followed 307/308 went without its body (the
/// server saw an empty POST, `push` said "sent"), and one to another host
/// carried the `Authorization` header there: with none followed, the request
/// and its credentials go only where the user said.
struct BoundedRequest {
    struct Response {
        var status: Int
        /// At most `maxBody` bytes.
        var body: [UInt8]
        /// The server sent more than `maxBody` bytes; the rest was not read.
        var truncated: Bool
        var retryAfter: String?
    }

    enum Failure: Error, CustomStringConvertible {
        case redirected(status: Int, location: String?)
        case timedOut(seconds: Double)
        case transport(String)

        var description: String {
            switch self {
            case .redirected(let status, let location):
                return "HTTP \(status) redirect" + (location.map { " to \(BoundedRequest.escaped(Array($0.utf8)))" } ?? "")
                    + ", not followed (a redirect would drop the request body or carry credentials to another host; give the final URL)"
            case .timedOut(let seconds):
                let figure = seconds.rounded() == seconds ? String(Int(seconds)) : String(format: "%.1f", seconds)
                return "no complete response within \(figure) s (--timeout)"
            case .transport(let reason): return reason
            }
        }
    }

    var url: String
    var headers: [(String, String)]
    var body: [UInt8]

    /// Sends the request once; the response (any status but a redirect's),
    /// or a `Failure`.
    func send(timeout: Double, maxBody: Int) throws -> Response {
        let lines = headers.map { strdup("\($0.0): \($0.1)") }
        defer { lines.forEach { free($0) } }
        var result = cs_http_result()
        defer { cs_http_free(&result) }
        let sent = lines.map { UnsafePointer($0) }.withUnsafeBufferPointer { pointers in
            body.withUnsafeBytes { bytes in
                cs_http_post(url, pointers.baseAddress, pointers.count, bytes.baseAddress, bytes.count,
                             max(1, Int(timeout * 1000)), maxBody, &result)
            }
        }
        guard sent == 0 else {
            if result.timed_out != 0 { throw Failure.timedOut(seconds: timeout) }
            throw Failure.transport(withUnsafeBytes(of: result.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) })
        }
        let status = Int(result.status)
        if (300..<400).contains(status) {
            throw Failure.redirected(status: status, location: result.location.map { String(cString: $0) })
        }
        let received = result.body.map { [UInt8](UnsafeRawBufferPointer(start: $0, count: result.body_length)) } ?? []
        return Response(status: status, body: received, truncated: result.truncated != 0,
                        retryAfter: result.retry_after.map { String(cString: $0) })
    }

    /// Text from a server, safe for a terminal: control characters (NUL,
    /// ESC and its sequences, carriage returns), C1 controls and bidi
    /// overrides as `\x..`/`\u{..}`, bytes that are not UTF-8 as U+FFFD,
    /// whitespace at the ends trimmed, at most `limit` characters.
    static func escaped(_ bytes: [UInt8], limit: Int = 200) -> String {
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        var out = ""
        for (count, scalar) in text.unicodeScalars.enumerated() {
            if count == limit {
                out += "…"
                break
            }
            switch scalar.value {
            case 0x0A: out += "\\n"
            case 0x09: out += "\\t"
            case 0x0D: out += "\\r"
            case 0..<0x20, 0x7F: out += String(format: "\\x%02X", scalar.value)
            case 0x80...0x9F, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069:
                out += String(format: "\\u{%X}", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
