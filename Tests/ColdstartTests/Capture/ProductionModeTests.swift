import ColdstartAnalysis
import Foundation
import XCTest

/// Production mode (docs/fleet.md, "Recording in production"): sampling on a
/// fraction of launches, labels, a size bound per file and a rotating
/// directory, end to end with the example app.
final class ProductionModeTests: XCTestCase {
    private var example: String!
    private var directory: URL!

    override func setUpWithError() throws {
        example = try Products.path("ServiceStartup")
        directory = try makeTemporaryDirectory(for: self)
    }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// The `coldstart` section of a timeline, after the analysis reader has
    /// accepted the whole file.
    private func coldstartSection(_ path: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        _ = try Timeline(contentsOf: path)
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any]
        return try XCTUnwrap(json?["coldstart"] as? [String: Any], file: file, line: line)
    }

    /// A NUL-terminated field of `utsname`.
    private func text<T>(_ field: T) -> String {
        withUnsafeBytes(of: field) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    private func timelineFiles(in dir: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dir.path)
            .filter { $0.hasPrefix("coldstart-ServiceStartup-") }.sorted()
    }

    func testFractionZeroNeverSamplesAndOneAlwaysDoes() throws {
        for run in 0..<3 {
            let out = path("off-\(run).json")
            let result = try runProcess(example, environment: ["COLDSTART": out, "COLDSTART_SAMPLE": "0"])
            XCTAssertEqual(result.status, 0)
            XCTAssertEqual(result.stderr, "")
            let section = try coldstartSection(out)
            let sample = try XCTUnwrap(section["sample"] as? [String: Any])
            XCTAssertEqual(sample["sampled"] as? Bool, false)
            XCTAssertEqual(sample["fraction"] as? Double, 0)
            XCTAssertNil(section["sampling"], "fraction 0: the sampler never starts")
            XCTAssertNil(section["watch"], "fraction 0: the watcher never starts")
            let phases = try Timeline(contentsOf: out).phases.map(\.name)
            XCTAssertTrue(phases.contains("config loaded → store opened"), "phases are still recorded: \(phases)")
        }
        for run in 0..<3 {
            let out = path("on-\(run).json")
            XCTAssertEqual(try runProcess(example, environment: ["COLDSTART": out, "COLDSTART_SAMPLE": "1"]).status, 0)
            let section = try coldstartSection(out)
            let sample = try XCTUnwrap(section["sample"] as? [String: Any])
            XCTAssertEqual(sample["sampled"] as? Bool, true)
            XCTAssertEqual(sample["fraction"] as? Double, 1)
            XCTAssertNotNil(section["watch"])
            #if arch(x86_64)
            XCTAssertNotNil(section["sampling"])
            #endif
        }
        // A fraction in between is written as given (millionths).
        let out = path("some.json")
        XCTAssertEqual(try runProcess(example, environment: ["COLDSTART": out, "COLDSTART_SAMPLE": "0.015"]).status, 0)
        let sample = try XCTUnwrap(try coldstartSection(out)["sample"] as? [String: Any])
        XCTAssertEqual(sample["fraction"] as? Double, 0.015)
        XCTAssertEqual((sample["sampled"] as? Bool) == true, try coldstartSection(out)["watch"] != nil)
    }

    func testLabelsAreRecordedWithHostKernelAndBuildId() throws {
        let out = path("labelled.json")
        let result = try runProcess(example, environment: ["COLDSTART": out, "COLDSTART_LABELS": "version=1.4.2,region=eu,app.tier=web_1"])
        XCTAssertEqual(result.stderr, "")
        let labels = try XCTUnwrap(try coldstartSection(out)["labels"] as? [String: String])
        XCTAssertEqual(labels["version"], "1.4.2")
        XCTAssertEqual(labels["region"], "eu")
        XCTAssertEqual(labels["app.tier"], "web_1")
        var names = utsname()
        uname(&names)
        XCTAssertEqual(labels["host"], text(names.nodename))
        XCTAssertEqual(labels["kernel"], text(names.release))
        let buildId = try XCTUnwrap(labels["buildId"])
        XCTAssertTrue(buildId.count >= 16 && buildId.allSatisfy(\.isHexDigit), buildId)

        // A label the user sets wins over the default of the same key.
        let own = path("own-host.json")
        _ = try runProcess(example, environment: ["COLDSTART": own, "COLDSTART_LABELS": "host=web-7"])
        XCTAssertEqual((try coldstartSection(own)["labels"] as? [String: String])?["host"], "web-7")
    }

    func testBadLabelsWarnOnceAndLeaveTheHostAlone() throws {
        let plain = try runProcess(example)
        let bad = ["9lives=1", "version", "=1", "a b=c", "version=1,version=2", "k=\u{1}x",
                   "k=" + String(repeating: "v", count: 257),
                   (0..<17).map { "k\($0)=v" }.joined(separator: ",")]
        for (index, spec) in bad.enumerated() {
            let out = path("bad-\(index).json")
            let result = try runProcess(example, environment: ["COLDSTART": out, "COLDSTART_LABELS": spec])
            XCTAssertEqual(result.status, plain.status, spec)
            XCTAssertEqual(result.stdout, plain.stdout, spec)
            XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, "one line for \(spec): \(result.stderr)")
            XCTAssertTrue(result.stderr.hasPrefix("coldstart: ignoring COLDSTART_LABELS"), result.stderr)
            let labels = try XCTUnwrap(try coldstartSection(out)["labels"] as? [String: String])
            XCTAssertEqual(Set(labels.keys), ["host", "kernel", "buildId"], "bad input is ignored whole: \(spec)")
        }
        // A bad fraction warns once and samples, as without the setting.
        let out = path("bad-fraction.json")
        let result = try runProcess(example, environment: ["COLDSTART": out, "COLDSTART_SAMPLE": "1.5"])
        XCTAssertEqual(result.stdout, plain.stdout)
        XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr)
        XCTAssertTrue(result.stderr.contains("ignoring COLDSTART_SAMPLE"), result.stderr)
        XCTAssertEqual((try coldstartSection(out)["sample"] as? [String: Any])?["sampled"] as? Bool, true)
    }

    func testRotationKeepsTheNewestTimelinesOfOurNamingOnly() throws {
        let fm = FileManager.default
        let dir = directory.appendingPathComponent("runs")
        try fm.createDirectory(at: dir, withIntermediateDirectories: true)
        // Things in the directory that rotation must never remove or follow.
        let victim = directory.appendingPathComponent("victim.json")
        try Data("keep me".utf8).write(to: victim)
        try fm.createSymbolicLink(atPath: dir.appendingPathComponent("coldstart-Evil-1.json").path, withDestinationPath: victim.path)
        let strangers = ["coldstart-notes.json", "coldstart-App-1.json.tmp.5.abcdef", "other-App-1.json"]
        for name in strangers { try Data("{}".utf8).write(to: dir.appendingPathComponent(name)) }
        try fm.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -3600)],
                             ofItemAtPath: dir.appendingPathComponent("coldstart-notes.json").path)

        var written: [String] = []
        for _ in 0..<5 {
            let result = try runProcess(example, environment: ["COLDSTART": "1", "COLDSTART_DIR": dir.path, "COLDSTART_KEEP": "2", "COLDSTART_SAMPLE": "0"])
            XCTAssertEqual(result.status, 0)
            XCTAssertEqual(result.stderr, "")
            written += try timelineFiles(in: dir).filter { !written.contains($0) }
        }
        XCTAssertEqual(written.count, 5)
        XCTAssertEqual(try timelineFiles(in: dir), Array(written.suffix(2)).sorted(), "the two newest are kept")
        let left = Set(try fm.contentsOfDirectory(atPath: dir.path))
        XCTAssertTrue(left.isSuperset(of: strangers + ["coldstart-Evil-1.json"]), "\(left)")
        XCTAssertEqual(try String(contentsOf: victim, encoding: .utf8), "keep me")
    }

    func testRotationBySizeRemovesTheOldestFirst() throws {
        let fm = FileManager.default
        // Three older timelines of another program, 30 KB each, oldest first.
        for age in 1...3 {
            let url = directory.appendingPathComponent("coldstart-Old-\(age).json")
            try Data(repeating: 0x20, count: 30_000).write(to: url)
            try fm.setAttributes([.modificationDate: Date(timeIntervalSinceNow: Double(-100 * (4 - age)))], ofItemAtPath: url.path)
        }
        let result = try runProcess(example, environment: ["COLDSTART": "1", "COLDSTART_DIR": directory.path, "COLDSTART_KEEP_BYTES": "65536", "COLDSTART_SAMPLE": "0"])
        XCTAssertEqual(result.status, 0)
        let left = try fm.contentsOfDirectory(atPath: directory.path).sorted()
        let total = try left.reduce(0) { $0 + ((try fm.attributesOfItem(atPath: path($1))[.size] as? Int) ?? 0) }
        XCTAssertLessThanOrEqual(total, 65536)
        XCTAssertEqual(left.filter { $0.hasPrefix("coldstart-Old-") }, ["coldstart-Old-3.json"], "the newest old one stays")
        XCTAssertEqual(try timelineFiles(in: directory).count, 1)
    }

    func testRotationDrainsABacklogOneBatchPerLaunch() throws {
        let fm = FileManager.default
        for n in 1...70 {
            let url = directory.appendingPathComponent("coldstart-Old-\(n).json")
            try Data("{}".utf8).write(to: url)
            try fm.setAttributes([.modificationDate: Date(timeIntervalSinceNow: Double(-1000 + n))], ofItemAtPath: url.path)
        }
        let environment = ["COLDSTART": "1", "COLDSTART_DIR": directory.path, "COLDSTART_KEEP": "1", "COLDSTART_SAMPLE": "0"]
        XCTAssertEqual(try runProcess(example, environment: environment).status, 0)
        // One listing removes at most 64 (the oldest): 71 − 64 left.
        let old = try fm.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("coldstart-Old-") }
        XCTAssertEqual(Set(old), Set((65...70).map { "coldstart-Old-\($0).json" }))
        XCTAssertEqual(try runProcess(example, environment: environment).status, 0)
        XCTAssertEqual(try fm.contentsOfDirectory(atPath: directory.path).count, 1, "the next launch drains the rest")
    }

    func testSizeBoundDropsSamplingAndWatchWholeAndKeepsValidJSON() throws {
        // Many samples, and a bound above the writer's 64 KiB buffer: the
        // first attempt has reached the file before it is abandoned.
        let full = path("full.json")
        _ = try runProcess(example, environment: ["COLDSTART": full, "COLDSTART_HZ": "10000"])
        let fullSize = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: full)[.size] as? Int)
        let bound = 100_000
        // The example at 10 kHz writes well over the bound (samples, watch):
        // a smaller file is the capture's loss, a failure, never a skip.
        XCTAssertGreaterThan(fullSize, bound, "the unbounded timeline must outgrow the bound for it to drop anything")

        let out = path("bounded.json")
        let result = try runProcess(example, environment: ["COLDSTART": out, "COLDSTART_HZ": "10000", "COLDSTART_MAX_BYTES": "\(bound)"])
        XCTAssertEqual(result.stderr, "")
        let size = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: out)[.size] as? Int)
        XCTAssertLessThanOrEqual(size, bound)
        let section = try coldstartSection(out)
        XCTAssertNil(section["samples"])
        XCTAssertNil(section["watch"])
        let limit = try XCTUnwrap(section["sizeLimit"] as? [String: Any])
        XCTAssertEqual(limit["maxBytes"] as? Int, bound)
        XCTAssertTrue((limit["dropped"] as? [String])?.contains("watch") == true, "\(limit)")
        XCTAssertEqual(try Timeline(contentsOf: out).phases.map(\.name), try Timeline(contentsOf: full).phases.map(\.name))

        // Too small even for phases and marks: nothing is written, one line says so.
        let tiny = path("tiny.json")
        let plain = try runProcess(example)
        let refused = try runProcess(example, environment: ["COLDSTART": tiny, "COLDSTART_MAX_BYTES": "4096"])
        XCTAssertEqual(refused.status, plain.status)
        XCTAssertEqual(refused.stdout, plain.stdout)
        XCTAssertEqual(refused.stderr.split(separator: "\n").count, 1, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("COLDSTART_MAX_BYTES"), refused.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: tiny))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains(".tmp.") }, [])
    }
}
