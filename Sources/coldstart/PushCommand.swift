import ColdstartAnalysis
import ColdstartExport
import Foundation

/// `coldstart push --otlp URL FILE…`: launches as traces to an OpenTelemetry
/// backend over OTLP/HTTP.
enum PushCommand: Command {
    static let name = "push"
    static let summary = "Send launches as OpenTelemetry traces to an OTLP/HTTP endpoint"
    static let help = """
    Usage: coldstart push --otlp URL DIR|FILE… [--batch N] [--header 'NAME: VALUE']…
                                              [--timeout SECONDS]

    Sends each launch as one trace (docs/fleet.md): the launch is the root
    span, its phases and spans are child spans with their thread, its marks
    are events, its labels resource attributes (service.name is the
    executable's name). OTLP/HTTP with protobuf bodies, POSTed to
    URL/v1/traces (URL as OTEL_EXPORTER_OTLP_ENDPOINT: the collector's base,
    e.g. http://127.0.0.1:4318; a URL already ending in /v1/traces is used as
    it is). Span times are the launch's wall-clock start plus its
    CLOCK_MONOTONIC offsets. Ids derive from the launch, so pushing a launch
    again sends the same trace. Directories are read for *.json timelines,
    as by `coldstart aggregate`; files that cannot be read are skipped and
    reported. `coldstart export FILE --format otlp` writes the same trace as
    OTLP/JSON.

    Options:
      --otlp URL           The OTLP/HTTP endpoint (required).
      --batch N            Launches per request (default 100).
      --header 'N: V'      An extra request header (authentication); repeatable.
      --timeout SECONDS    Each request whole, connecting to the response's last
                           byte (default 10). 429, 502, 503 and 504 are
                           retried twice, after Retry-After or 1 s and 2 s.
    Redirects are not followed (one would drop the body or carry --header
    credentials to another host): give the final URL. At most 1 MiB of a
    response is read; what the server says is shown escaped.
      --help               Show this text.

    Exit status: 0 every launch sent and accepted; 1 a file was skipped, the
    endpoint refused spans, or a request failed (nothing more is sent after
    a failed request); 2 wrong arguments.
    """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        guard let base = try arguments.option("--otlp") else { throw UsageError(message: "--otlp URL is required") }
        guard let url = endpoint(base) else {
            throw UsageError(message: "--otlp wants an http:// or https:// URL, got '\(base)'")
        }
        let batchSize = try arguments.number("--batch", in: 1...100_000) ?? 100
        let timeout = try arguments.number("--timeout", in: 0.1...3600.0) ?? 10
        var headers: [(String, String)] = []
        while let header = try arguments.option("--header") {
            let parts = header.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { throw UsageError(message: "--header wants 'NAME: VALUE', got '\(header)'") }
            headers.append((parts[0].trimmingCharacters(in: .whitespaces), parts[1].trimmingCharacters(in: .whitespaces)))
        }
        var paths: [String] = []
        while let path = try? arguments.positional("FILE") { paths.append(path) }
        try arguments.finish()
        guard !paths.isEmpty else { throw UsageError(message: "missing FILE or DIR (timelines to send)") }

        // Requests encoded one launch at a time and concatenated: protobuf
        // merges the repeated `resource_spans` of concatenated messages.
        var body: [UInt8] = []
        var batchLaunches = 0, batchSpans = 0
        var sent = 0, spans = 0, requests = 0, skipped = 0, rejected: Int64 = 0
        func flush() throws {
            guard batchLaunches > 0 else { return }
            let response = try post(body, to: url, headers: headers, timeout: timeout)
            if let rejection = OTLPExporter.rejection(inResponse: response) {
                rejected += rejection.spans
                printError("coldstart push: \(url.absoluteString) refused \(rejection.spans) span\(rejection.spans == 1 ? "" : "s"): \(BoundedRequest.escaped(Array(rejection.message.utf8)))")
            }
            requests += 1
            sent += batchLaunches
            spans += batchSpans
            body.removeAll(keepingCapacity: true)
            batchLaunches = 0
            batchSpans = 0
        }
        for entry in TimelineFiles(paths, exportSuffixes: Exporters.suffixes) {
            switch entry {
            case .file(let path):
                do {
                    let trace = LaunchTrace(try Timeline(contentsOf: path))
                    body += try OTLPExporter.protobuf([(trace, path)])
                    batchLaunches += 1
                    batchSpans += OTLPExporter.spanCount(trace)
                } catch {
                    skipped += 1
                    printError("coldstart push: skipped \(error)")
                }
            case .unreadable(let path, let reason):
                skipped += 1
                printError("coldstart push: skipped \(path): \(reason)")
            }
            if batchLaunches >= batchSize {
                do { try flush() } catch { throw failure(error, sent: sent) }
            }
        }
        do { try flush() } catch { throw failure(error, sent: sent) }
        try StandardOutput.print("\(url.absoluteString): \(sent) launch\(sent == 1 ? "" : "es") sent as \(sent) trace\(sent == 1 ? "" : "s") "
            + "(\(spans) spans) in \(requests) request\(requests == 1 ? "" : "s")"
            + (skipped > 0 ? ", \(skipped) file\(skipped == 1 ? "" : "s") skipped" : "")
            + (rejected > 0 ? ", \(rejected) spans refused" : ""))
        return skipped == 0 && rejected == 0 ? ExitStatus.success : ExitStatus.failure
    }

    private static func failure(_ error: Error, sent: Int) -> CommandError {
        CommandError(message: "\((error as? CommandError)?.message ?? "\(error)") (\(sent) launch\(sent == 1 ? "" : "es") sent before; nothing more sent)")
    }

    /// URL/v1/traces, unless URL already names it.
    static func endpoint(_ base: String) -> URL? {
        guard let url = URL(string: base), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              url.host != nil
        else { return nil }
        if url.path.hasSuffix("/v1/traces") { return url }
        return URL(string: (base.hasSuffix("/") ? String(base.dropLast()) : base) + "/v1/traces")
    }

    /// A response body is read up to this (an OTLP response is a few bytes;
    /// a 1 GiB one was held whole in memory).
    static let maxResponseBytes = 1 << 20

    /// POSTs one request, retrying what OTLP calls retryable; the response
    /// body. Each attempt ends within `timeout` seconds, whole.
    private static func post(_ body: [UInt8], to url: URL, headers: [(String, String)], timeout: Double) throws -> [UInt8] {
        let request = BoundedRequest(url: url.absoluteString, headers: [("Content-Type", "application/x-protobuf")] + headers, body: body)
        for attempt in 0..<3 {
            let response: BoundedRequest.Response
            do {
                response = try request.send(timeout: timeout, maxBody: maxResponseBytes)
            } catch {
                throw CommandError(message: "\(url.absoluteString): \(error)")
            }
            if (200..<300).contains(response.status) {
                if response.truncated {
                    printError("coldstart push: warning: \(url.absoluteString): response longer than \(maxResponseBytes >> 20) MiB; the rest was not read")
                    return []
                }
                return response.body
            }
            if [429, 502, 503, 504].contains(response.status) && attempt < 2 {
                let after = response.retryAfter.flatMap(Double.init).flatMap { $0.isFinite && $0 >= 0 ? $0 : nil }
                Thread.sleep(forTimeInterval: min(after ?? Double(1 << attempt), 30))
                continue
            }
            let text = BoundedRequest.escaped(response.body)
            throw CommandError(message: "\(url.absoluteString): HTTP \(response.status)" + (text.isEmpty ? "" : " (\(text))"))
        }
        throw CommandError(message: "\(url.absoluteString): still refused after 3 attempts")
    }
}
