import ColdstartAnalysis
@testable import ColdstartExport
import Foundation
import XCTest

/// `coldstart aggregate --format openmetrics`: checked by `promtool check
/// metrics`, then scraped by a real Prometheus on 127.0.0.1 — as a file, as
/// OpenMetrics and through node_exporter's textfile collector — and queried
/// for a phase's p90: the commands of docs/fleet.md.
final class FleetPrometheusTests: XCTestCase {
    /// 20 launches of version 1.0 whose "library initializers" take 1…20 ms,
    /// 5 of version 2.0 at 40 ms; the OpenMetrics file and the JSON summary.
    private func aggregate(in directory: URL) throws -> (metrics: URL, summary: AggregateSummary) {
        let ready = try Fleet.fixtureDocument("ready.json")
        let launches = directory.appendingPathComponent("launches")
        for i in 1...20 {
            try Fleet.write(ready, labels: ["version": "1.0"], to: launches.appendingPathComponent("v1-\(i).json")) {
                Fleet.setPhase("library initializers", durationNs: Int64(i) * 1_000_000, in: &$0)
            }
        }
        for i in 1...5 {
            try Fleet.write(ready, labels: ["version": "2.0"], to: launches.appendingPathComponent("v2-\(i).json")) {
                Fleet.setPhase("library initializers", durationNs: 40_000_000, in: &$0)
            }
        }
        try Data().write(to: launches.appendingPathComponent("empty.json"))
        let metrics = directory.appendingPathComponent("textfile/coldstart.prom")
        try FileManager.default.createDirectory(at: metrics.deletingLastPathComponent(), withIntermediateDirectories: true)
        let result = try coldstart(["aggregate", launches.path, "--by", "version", "--format", "openmetrics", "-o", metrics.path])
        XCTAssertEqual(result.status, 0, result.stderr)
        let json = try coldstart(["aggregate", launches.path, "--by", "version", "--json"])
        XCTAssertEqual(json.status, 0, json.stderr)
        return (metrics, try JSONDecoder().decode(AggregateSummary.self, from: Data(json.stdout.utf8)))
    }

    /// Prometheus' histogram_quantile: linear inside the bucket holding rank
    /// q·count, from 0 for the first bucket; the highest finite bound when
    /// the rank falls in +Inf.
    private func histogramQuantile(_ q: Double, boundsSeconds: [Double], cumulative: [Int]) -> Double {
        let rank = q * Double(cumulative.last!)
        guard let b = cumulative.dropLast().firstIndex(where: { Double($0) >= rank }) else { return boundsSeconds.last! }
        let start = b == 0 ? 0 : boundsSeconds[b - 1]
        let below = b == 0 ? 0 : Double(cumulative[b - 1])
        return start + (boundsSeconds[b] - start) * (rank - below) / (Double(cumulative[b]) - below)
    }

    func testPromtoolAcceptsTheFile() throws {
        let promtool = try ExternalTool.path(ExternalTool.promtool)
        let directory = try makeTemporaryDirectory(for: self)
        let (metrics, _) = try aggregate(in: directory)
        let text = try String(contentsOf: metrics, encoding: .utf8)
        XCTAssertTrue(text.hasSuffix("# EOF\n"))
        XCTAssertTrue(text.contains(#"coldstart_phase_seconds_bucket{executable="ServiceStartup",version="1.0",phase="library initializers",kind="initializers",le="0.01"} 10"#), text)
        XCTAssertTrue(text.contains(#"coldstart_phase_seconds_count{executable="ServiceStartup",version="2.0",phase="library initializers",kind="initializers"} 5"#), text)
        XCTAssertTrue(text.contains("coldstart_files_skipped 1\n"), text)
        // promtool reads standard input: `promtool check metrics < FILE`.
        let check = try runProcess("/bin/sh", ["-c", "\"$0\" check metrics < \"$1\"", promtool, metrics.path], timeout: 60)
        XCTAssertEqual(check.status, 0, check.stdout + check.stderr)
        XCTAssertEqual(check.stdout + check.stderr, "", "no lint findings")
    }

    func testAwkwardLabelValuesAndNamesStayValid() throws {
        let promtool = try ExternalTool.path(ExternalTool.promtool)
        let directory = try makeTemporaryDirectory(for: self)
        let file = directory.appendingPathComponent("odd.json")
        try Fleet.write(try Fleet.fixtureDocument("ready.json"), labels: ["build-id": "1.4 \"beta\"\\\nnext"], to: file)
        var aggregate = LaunchAggregate(groupLabel: "build-id")
        aggregate.add(try Timeline(contentsOf: file.path), file: file.path)
        let text = OpenMetricsExporter.export(aggregate.summary)
        XCTAssertTrue(text.contains(#"coldstart_launch_seconds_count{executable="ServiceStartup",build_id="1.4 \"beta\"\\\nnext"} 1"#), text)
        XCTAssertEqual(OpenMetricsExporter.labelName("9-lives.x"), "_9_lives_x")
        let metrics = directory.appendingPathComponent("odd.prom")
        try text.write(to: metrics, atomically: true, encoding: .utf8)
        let check = try runProcess("/bin/sh", ["-c", "\"$0\" check metrics < \"$1\"", promtool, metrics.path], timeout: 60)
        XCTAssertEqual(check.status, 0, check.stdout + check.stderr)
    }

    func testPrometheusScrapesItAndComputesThePhaseP90() throws {
        let prometheus = try ExternalTool.path(ExternalTool.prometheus)
        let nodeExporter = try ExternalTool.path(ExternalTool.nodeExporter)
        let python = "/usr/bin/python3"
        guard FileManager.default.isExecutableFile(atPath: python) else { throw XCTSkip("no /usr/bin/python3 to serve the file") }
        let directory = try makeTemporaryDirectory(for: self)
        let (metrics, summary) = try aggregate(in: directory)

        // The file served as it is (python's file server: Prometheus' text
        // parser) and as OpenMetrics (Prometheus' stricter OpenMetrics parser).
        let files = try BackgroundProcess(python, ["-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", metrics.deletingLastPathComponent().path],
                                          log: directory.appendingPathComponent("http.log"), for: self)
        let line = try files.firstLine()
        let filePort = try XCTUnwrap(line.split(separator: " ").first { Int($0) != nil }, line)
        let openMetrics = try BackgroundProcess(python, [Fleet.script("serve-openmetrics.py"), metrics.path],
                                                log: directory.appendingPathComponent("openmetrics.log"), for: self)
        let openMetricsPort = try openMetrics.firstLine()

        // node_exporter's textfile collector reading the directory, as in production.
        let nodePort = try Fleet.freePort()
        _ = try BackgroundProcess(nodeExporter, [
            "--collector.disable-defaults", "--collector.textfile",
            "--collector.textfile.directory=\(metrics.deletingLastPathComponent().path)",
            "--web.listen-address=127.0.0.1:\(nodePort)",
        ], log: directory.appendingPathComponent("node-exporter.log"), for: self)

        let port = try Fleet.freePort()
        let config = directory.appendingPathComponent("prometheus.yml")
        try """
        global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
        scrape_configs:
          - job_name: textfile
            metrics_path: /coldstart.prom
            static_configs: [{targets: ['127.0.0.1:\(filePort)']}]
          - job_name: openmetrics
            static_configs: [{targets: ['127.0.0.1:\(openMetricsPort)']}]
          - job_name: node
            static_configs: [{targets: ['127.0.0.1:\(nodePort)']}]
        """.write(to: config, atomically: true, encoding: .utf8)
        let server = try BackgroundProcess(prometheus, [
            "--config.file=\(config.path)", "--storage.tsdb.path=\(directory.appendingPathComponent("data").path)",
            "--web.listen-address=127.0.0.1:\(port)",
        ], log: directory.appendingPathComponent("prometheus.log"), for: self)

        let group = try XCTUnwrap(summary.groups.first { $0.value == "1.0" })
        let phase = try XCTUnwrap(group.phases.first { $0.name == "library initializers" })
        let expected = histogramQuantile(0.9, boundsSeconds: summary.bucketBoundsMs.map { $0 / 1000 }, cumulative: phase.buckets)
        XCTAssertEqual(expected, 0.022, accuracy: 1e-12, "rank 18 of 20: 10 ms + 15 ms × 8/10")

        for job in ["textfile", "openmetrics", "node"] {
            let query = "histogram_quantile(0.9, coldstart_phase_seconds_bucket{job=\"\(job)\",phase=\"library initializers\",version=\"1.0\"})"
            var components = URLComponents(string: "http://127.0.0.1:\(port)/api/v1/query")!
            components.queryItems = [URLQueryItem(name: "query", value: query)]
            var value: Double?
            let deadline = Date().addingTimeInterval(60)
            while value == nil && Date() < deadline && server.process.isRunning {
                if let body = Fleet.get(components.url!.absoluteString),
                   let response = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
                   let data = response["data"] as? [String: Any],
                   let result = (data["result"] as? [[String: Any]])?.first,
                   let sample = result["value"] as? [Any], let text = sample.last as? String {
                    value = Double(text)
                } else {
                    usleep(250_000)
                }
            }
            let p90 = try XCTUnwrap(value, "no \(job) p90 from Prometheus within 60 s: \(server.logTail)")
            XCTAssertEqual(p90, expected, accuracy: 1e-9, job)
        }
        let up = Fleet.get("http://127.0.0.1:\(port)/api/v1/query?query=up").map { String(decoding: $0, as: UTF8.self) } ?? ""
        XCTAssertFalse(up.contains("\"0\""), "every target scraped: \(up)")
    }
}
