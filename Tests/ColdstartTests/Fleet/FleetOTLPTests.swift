import ColdstartAnalysis
import Foundation
import XCTest

/// `coldstart push` and `coldstart export --format otlp`: what an
/// OpenTelemetry backend receives, decoded by the official
/// `opentelemetry-proto` package (scripts/otlp-receiver.py).
final class FleetOTLPTests: XCTestCase {
    private var directory: URL!
    private var python: String!

    override func setUpWithError() throws {
        python = try Fleet.python()
        directory = try makeTemporaryDirectory(for: self)
    }

    /// A real launch of the example, labelled as the host side will label it.
    private func launch(_ name: String) throws -> (url: URL, timeline: Timeline) {
        let url = directory.appendingPathComponent("launches/\(name).json")
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let run = try runProcess(try Products.path("ServiceStartup"), environment: ["COLDSTART": url.path])
        XCTAssertEqual(run.status, 0, run.stderr)
        let document = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        try Fleet.write(document, labels: ["version": "1.4.2", "host": "web-7", "region": "eu"], to: url)
        return (url, try Timeline(contentsOf: url.path))
    }

    /// Starts the receiver; its port and the file it appends requests to.
    private func receiver() throws -> (port: String, requests: URL) {
        let requests = directory.appendingPathComponent("requests.jsonl")
        let server = try BackgroundProcess(python, [Fleet.script("otlp-receiver.py"), "serve", requests.path],
                                           log: directory.appendingPathComponent("receiver.log"), for: self)
        return (try server.firstLine(), requests)
    }

    private func received(_ url: URL) throws -> [[String: Any]] {
        let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        return try text.split(separator: "\n").map {
            try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    private func attributes(_ object: [String: Any]?) -> [String: String] {
        var result: [String: String] = [:]
        for item in object?["attributes"] as? [[String: Any]] ?? [] {
            let value = item["value"] as? [String: Any] ?? [:]
            result[item["key"] as! String] = (value["stringValue"] ?? value["intValue"] ?? value["boolValue"]).map { "\($0)" }
        }
        return result
    }

    private func nanos(_ timeline: Timeline, _ offset: Int64) -> String {
        String(Int64(timeline.launch.startRealtimeUs!) * 1000 + offset)
    }

    func testEachLaunchArrivesAsOneTraceWithPhasesSpansMarksAndLabels() throws {
        let launches = [try launch("first"), try launch("second")]
        let (port, requests) = try receiver()
        let push = try coldstart(["push", "--otlp", "http://127.0.0.1:\(port)", "--batch", "1",
                                  directory.appendingPathComponent("launches").path])
        XCTAssertEqual(push.status, 0, push.stderr)
        XCTAssertTrue(push.stdout.contains("2 launches sent as 2 traces"), push.stdout)
        let bodies = try received(requests)
        XCTAssertEqual(bodies.count, 2, "--batch 1: one request per launch")
        XCTAssertEqual((bodies.first?["headers"] as? [String: String])?["content-type"], "application/x-protobuf")

        var traceIds: [String] = []
        for body in bodies {
            let request = try XCTUnwrap(body["request"] as? [String: Any])
            let resourceSpans = try XCTUnwrap(request["resourceSpans"] as? [[String: Any]])
            XCTAssertEqual(resourceSpans.count, 1)
            let resource = attributes(resourceSpans[0]["resource"] as? [String: Any])
            let (_, timeline) = try XCTUnwrap(launches.first { String($0.timeline.process.pid) == resource["process.pid"] })
            XCTAssertEqual(resource["service.name"], "ServiceStartup")
            XCTAssertEqual(resource["service.version"], "1.4.2")
            XCTAssertEqual(resource["host.name"], "web-7")
            XCTAssertEqual(resource["region"], "eu", "every label is a resource attribute")
            XCTAssertEqual(resource["process.executable.build_id.gnu"], timeline.executableBuildId)
            XCTAssertNotNil(timeline.executableBuildId)

            let scopeSpans = try XCTUnwrap(resourceSpans[0]["scopeSpans"] as? [[String: Any]])
            XCTAssertEqual((scopeSpans[0]["scope"] as? [String: Any])?["name"] as? String, "coldstart")
            let spans = try XCTUnwrap(scopeSpans[0]["spans"] as? [[String: Any]])
            XCTAssertEqual(spans.count, 1 + timeline.phases.count + timeline.spans.count)
            let root = spans[0]
            XCTAssertEqual(root["name"] as? String, "launch")
            XCTAssertNil(root["parentSpanId"])
            XCTAssertEqual(root["startTimeUnixNano"] as? String, nanos(timeline, 0))
            XCTAssertEqual(root["endTimeUnixNano"] as? String, nanos(timeline, timeline.launch.endNs))
            let traceId = try XCTUnwrap(root["traceId"] as? String)
            XCTAssertEqual(traceId.count, 32, "16 bytes")
            traceIds.append(traceId)
            XCTAssertTrue(spans.allSatisfy { $0["traceId"] as? String == traceId })
            XCTAssertTrue(spans.dropFirst().allSatisfy { $0["parentSpanId"] as? String == root["spanId"] as? String })
            let spanIds = spans.compactMap { $0["spanId"] as? String }
            XCTAssertEqual(Set(spanIds).count, spans.count)
            XCTAssertTrue(spanIds.allSatisfy { $0.count == 16 }, "8 bytes")

            let events = try XCTUnwrap(root["events"] as? [[String: Any]])
            XCTAssertEqual(events.compactMap { $0["name"] as? String }, timeline.marks.map(\.name), "marks are the root's events")
            XCTAssertEqual(events.compactMap { $0["timeUnixNano"] as? String }, timeline.marks.map { nanos(timeline, $0.ns) })

            let phases = Array(spans[1...timeline.phases.count])
            XCTAssertEqual(phases.compactMap { $0["name"] as? String }, timeline.phases.map(\.name))
            XCTAssertEqual(phases.compactMap { $0["startTimeUnixNano"] as? String }, timeline.phases.map { nanos(timeline, $0.startNs) })
            XCTAssertEqual(phases.compactMap { $0["endTimeUnixNano"] as? String }, timeline.phases.map { nanos(timeline, $0.endNs) })
            XCTAssertEqual(attributes(phases[0])["coldstart.phase.kind"], "loader")

            let openStore = try XCTUnwrap(timeline.spans.first { $0.name == "open store" })
            let sent = try XCTUnwrap(spans.first { $0["name"] as? String == "open store" })
            XCTAssertEqual(attributes(sent)["thread.id"], String(openStore.tid))
            XCTAssertEqual(attributes(sent)["thread.name"], timeline.threads.first { $0.tid == openStore.tid }?.name)
            XCTAssertEqual(sent["startTimeUnixNano"] as? String, nanos(timeline, openStore.beginNs))
            XCTAssertEqual(sent["endTimeUnixNano"] as? String, nanos(timeline, openStore.endNs))
        }
        XCTAssertEqual(Set(traceIds).count, 2, "one trace per launch")

        // Pushed again: the same ids, so a backend sees the same traces.
        let again = try coldstart(["push", "--otlp", "http://127.0.0.1:\(port)/v1/traces", launches[0].url.path])
        XCTAssertEqual(again.status, 0, again.stderr)
        let repeated = try XCTUnwrap(try received(requests).last?["request"] as? [String: Any])
        let first = try XCTUnwrap(bodies.first { attributes((($0["request"] as? [String: Any])?["resourceSpans"] as? [[String: Any]])?.first?["resource"] as? [String: Any])["process.pid"] == String(launches[0].timeline.process.pid) })
        XCTAssertEqual(NSDictionary(dictionary: repeated), NSDictionary(dictionary: first["request"] as! [String: Any]))
    }

    func testExportedOTLPJSONParsesToTheRequestPushSends() throws {
        let (url, _) = try launch("one")
        let exported = directory.appendingPathComponent("one.otlp.json")
        let export = try coldstart(["export", url.path, "--format", "otlp", "-o", exported.path])
        XCTAssertEqual(export.status, 0, export.stderr)
        let parsed = try runProcess(python, [Fleet.script("otlp-receiver.py"), "parse", exported.path])
        XCTAssertEqual(parsed.status, 0, "json_format.Parse refused the OTLP/JSON: \(parsed.stderr)")
        let fromJSON = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(parsed.stdout.utf8)) as? [String: Any])

        let (port, requests) = try receiver()
        let push = try coldstart(["push", "--otlp", "http://127.0.0.1:\(port)", url.path])
        XCTAssertEqual(push.status, 0, push.stderr)
        let fromProtobuf = try XCTUnwrap(try received(requests).first?["request"] as? [String: Any])
        XCTAssertEqual(NSDictionary(dictionary: fromJSON), NSDictionary(dictionary: fromProtobuf),
                       "OTLP/JSON and OTLP/protobuf carry the same trace")
    }

    func testLaunchesThatCannotBeSentAreReported() throws {
        // The committed fixtures predate the wall-clock start.
        let old = Bundle.module.resourceURL!.appendingPathComponent("Fixtures/ready.json").path
        let (port, requests) = try receiver()
        let push = try coldstart(["push", "--otlp", "http://127.0.0.1:\(port)", old,
                                  Bundle.module.resourceURL!.appendingPathComponent("Fixtures/bad-empty.json").path])
        XCTAssertEqual(push.status, 1)
        XCTAssertTrue(push.stderr.contains("ready.json: no wall-clock start"), push.stderr)
        XCTAssertTrue(push.stderr.contains("bad-empty.json: empty file"), push.stderr)
        XCTAssertTrue(push.stdout.contains("0 launches sent"), push.stdout)
        XCTAssertEqual(try received(requests).count, 0, "nothing to send, no request")
        let export = try coldstart(["export", old, "--format", "otlp", "-o", directory.appendingPathComponent("x").path])
        XCTAssertEqual(export.status, 1)
        XCTAssertTrue(export.stderr.contains("no wall-clock start"), export.stderr)

        let (url, _) = try launch("one")
        let closed = try Fleet.freePort()
        let refused = try coldstart(["push", "--otlp", "http://127.0.0.1:\(closed)", url.path])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("http://127.0.0.1:\(closed)/v1/traces"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("0 launches sent before"), refused.stderr)
        XCTAssertEqual(try coldstart(["push", "--otlp", "ftp://127.0.0.1", url.path]).status, 2)
        XCTAssertEqual(try coldstart(["push", url.path]).status, 2)
    }
}
