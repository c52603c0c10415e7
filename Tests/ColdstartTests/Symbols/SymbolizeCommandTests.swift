@testable import ColdstartAnalysis
import Foundation
import XCTest

/// `coldstart symbolize` end to end, on stacks captured in this process with
/// the binaries they ran copied aside, so they can be taken away afterwards.
final class SymbolizeCommandTests: XCTestCase {
    /// A timeline of real stacks whose modules are copies in `directory/bin`.
    private func realTimeline(in directory: URL) throws -> (path: String, binaries: URL) {
        let constructorStack = try ConstructorLibrary.constructorStack()
        let live = LiveModules()  // after the dlopen, so the library is among them
        let pid = Int(getpid())
        var rows: [[Any]] = []
        rows.append(live.sampleRow(ns: 11_000_000, tid: pid, addresses: constructorStack))
        for (index, depth) in [1, 2, 3, 3, 2, 1].enumerated() {
            rows.append(live.sampleRow(ns: Int64(21_000_000 + index * 1_000_000), tid: pid, addresses: nested(depth)))
        }
        rows.append(live.sampleRow(ns: 40_000_000, tid: pid, addresses: stackCapturedByLazyGlobal))
        rows.append(live.sampleRow(ns: 41_000_000, tid: pid, addresses: currentStack()))
        final class Box: @unchecked Sendable { var stack: [UInt64] = [] }
        let box = Box(), done = DispatchSemaphore(value: 0)
        Thread { box.stack = currentStack(); done.signal() }.start()
        done.wait()
        rows.append(live.sampleRow(ns: 42_000_000, tid: pid + 1, addresses: box.stack))

        // Copy every module a frame falls in; point the timeline at the copies.
        let binaries = directory.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: binaries, withIntermediateDirectories: true)
        let used = Set(rows.flatMap { row in
            (row[2] as! [Any]).enumerated().compactMap { $0.offset % 2 == 0 ? $0.element as? Int : nil }
        }).filter { $0 >= 0 }
        var copies: [Int: String] = [:]
        for module in used {
            let original = live.modules[module].path
            let folder = binaries.appendingPathComponent("\(module)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let copy = folder.appendingPathComponent(URL(fileURLWithPath: original).lastPathComponent).path
            try FileManager.default.copyItem(atPath: original, toPath: copy)
            copies[module] = copy
        }

        var builder = SampledTimelineBuilder()
        builder.pid = pid
        builder.executable = copies[0] ?? live.modules[0].path
        builder.symbolized = false
        builder.threads = [["tid": pid, "name": "main"], ["tid": pid + 1, "name": "worker"]]
        var document = builder.document
        var section = document["coldstart"] as! [String: Any]
        section["modules"] = live.timelineModules(paths: copies)
        section["samples"] = rows
        section["futureSection"] = ["kept": true]
        document["coldstart"] = section
        document["otherData"] = ["coldstartFormat": 1, "note": "kept too"]
        let path = directory.appendingPathComponent("launch.json").path
        try JSONSerialization.data(withJSONObject: document).write(to: URL(fileURLWithPath: path))
        return (path, binaries)
    }

    /// This thread's stack `depth` calls deeper, to give the flame chart shape.
    @inline(never)
    private func nested(_ depth: Int) -> [UInt64] {
        depth <= 1 ? currentStack() : nested(depth - 1)
    }

    private func symbolize(_ arguments: [String]) throws -> ProcessResult {
        try coldstart(["symbolize"] + arguments)
    }

    private func profile(_ path: String) throws -> (ProfileReport, String) {
        let report = try profileReport(Timeline(contentsOf: path), options: ProfileOptions(treeDepth: 200), path: path)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (report, String(decoding: try encoder.encode(report), as: UTF8.self))
    }

    func testSymbolizedTimelineReportsIdenticallyWithoutTheBinaries() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let (input, binaries) = try realTimeline(in: directory)
        let output = directory.appendingPathComponent("symbolized.json").path

        let run = try symbolize([input, "-o", output])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(run.stderr, "", "every binary was there")
        XCTAssertTrue(run.stdout.contains("\(output): named"), run.stdout)

        let fromBinaries = try profile(input)
        let symbolized = try profile(output)
        XCTAssertEqual(symbolized.1, fromBinaries.1, "names written in are the names read from the binaries")
        XCTAssertTrue(fromBinaries.0.callTreeNames.contains { $0.contains("SymbolizeCommandTests.testSymbolizedTimelineReports") })
        XCTAssertEqual(fromBinaries.0.lazyGlobals.map(\.name), ["ColdstartTests.stackCapturedByLazyGlobal"])

        try FileManager.default.removeItem(at: binaries)
        let withoutBinaries = try profile(output)
        XCTAssertEqual(withoutBinaries.1, symbolized.1, "a symbolized timeline needs no binary")
        XCTAssertEqual(withoutBinaries.0.text(), symbolized.0.text())

        // The unsymbolized original, by contrast, has lost its names.
        let lost = try profile(input)
        XCTAssertNotEqual(lost.1, fromBinaries.1)
        XCTAssertFalse(lost.0.warnings.isEmpty)
    }

    func testSymbolizeWritesNamesAndKeepsEverythingElse() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let (input, _) = try realTimeline(in: directory)
        let before = try Timeline(contentsOf: input)
        XCTAssertEqual(try symbolize([input]).status, 0, "in place by default")

        let after = try Timeline(contentsOf: input)
        XCTAssertTrue(after.isSymbolized)
        let frames = Set(before.samples.flatMap(\.frames).map(\.key))
        XCTAssertEqual(Set(after.symbols.keys), frames, "one name for every distinct frame")
        XCTAssertTrue(after.symbols.values.contains { $0.name == "__libc_start_main" })
        XCTAssertTrue(after.symbols.values.contains { $0.system?.hasPrefix("$s14ColdstartTests") == true && $0.name.contains("nested") })
        XCTAssertEqual(after.samples.count, before.samples.count)
        XCTAssertEqual(after.launch.completed, true, "booleans stay booleans")
        XCTAssertEqual((after.document["coldstart"] as? [String: Any])?["futureSection"] as? [String: Bool], ["kept": true])
        XCTAssertEqual((after.document["otherData"] as? [String: Any])?["note"] as? String, "kept too")

        let events = try flameChartEvents(after)
        XCTAssertGreaterThan(events.count, 10)
        // Symbolizing again replaces the flame chart rather than adding a second one.
        XCTAssertEqual(try symbolize([input]).status, 0)
        XCTAssertEqual(try flameChartEvents(Timeline(contentsOf: input)).count, events.count)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".tmp") }
        XCTAssertEqual(leftovers, [])
    }

    /// The `X` events on the flame-chart track, checked to be in time order
    /// and properly nested (what trace viewers need to draw them).
    private func flameChartEvents(_ timeline: Timeline, file: StaticString = #filePath, line: UInt = #line) throws -> [[String: Any]] {
        let all = try XCTUnwrap(timeline.document["traceEvents"] as? [[String: Any]])
        let track = all.filter { ($0["tid"] as? Int) == Timeline.flameChartTid }
        let names = track.filter { $0["ph"] as? String == "M" }
        XCTAssertEqual(names.count, 1, file: file, line: line)
        XCTAssertEqual((names.first?["args"] as? [String: String])?["name"], "main thread (samples)", file: file, line: line)
        let slices = track.filter { $0["ph"] as? String == "X" }
        var open: [(Double, Double)] = []
        var previous = -Double.infinity
        for slice in slices {
            let ts = try XCTUnwrap(slice["ts"] as? Double ?? (slice["ts"] as? Int).map(Double.init))
            let dur = try XCTUnwrap(slice["dur"] as? Double ?? (slice["dur"] as? Int).map(Double.init))
            XCTAssertGreaterThanOrEqual(ts, previous, "time order", file: file, line: line)
            previous = ts
            while let last = open.last, last.1 <= ts { open.removeLast() }
            if let parent = open.last {
                XCTAssertLessThanOrEqual(ts + dur, parent.1 + 1e-6, "nested in its parent", file: file, line: line)
            }
            open.append((ts, ts + dur))
        }
        return slices
    }

    func testFlameChartMergesRunsOfTheSameFunctionAtTheSameDepth() throws {
        var builder = SampledTimelineBuilder()
        let exe = builder.module("/opt/app/App")
        func f(_ name: String) -> SampledTimelineBuilder.Frame { .init(module: exe, name: name) }
        builder.sample(at: 21, [f("main"), f("A"), f("B")])
        builder.sample(at: 22, [f("main"), f("A"), f("B")])
        builder.sample(at: 23, [f("main"), f("A"), f("C")])
        builder.sample(at: 23.5, tid: 4300, [f("worker")])
        builder.sample(at: 24, [f("main"), f("D")])
        builder.sample(at: 25, [f("main"), f("D")])
        builder.sample(at: 40, [f("main"), f("A")])  // after a gap: the slices before end one period after their last sample
        let timeline = try builder.timeline()
        let events = timeline.flameChart(symbols: timeline.symbols)
        let summary = events.map { event -> String in
            let args = event["args"] as! [String: Any]
            return "\(event["name"]!)@\(event["ts"]!)+\(event["dur"]!)×\(args["samples"]!)"
        }
        XCTAssertEqual(summary, [
            "main@21000.0+5000.0×5", "A@21000.0+3000.0×3", "B@21000.0+2000.0×2", "C@23000.0+1000.0×1",
            "D@24000.0+2000.0×2", "main@40000.0+1000.0×1", "A@40000.0+1000.0×1",
        ])
        XCTAssertTrue(events.allSatisfy { $0["tid"] as? Int == Timeline.flameChartTid && $0["ph"] as? String == "X" })
        XCTAssertEqual((events.first?["args"] as? [String: Any])?["module"] as? String, "App")
    }

    func testBadInputIsAOneLineErrorAndWritesNothing() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let missing = directory.appendingPathComponent("missing.json").path
        let run = try symbolize([missing])
        XCTAssertEqual(run.status, 1)
        XCTAssertEqual(run.stderr, "coldstart symbolize: \(missing): no such file\n")

        let unsampled = directory.appendingPathComponent("unsampled.json").path
        var builder = SampledTimelineBuilder()
        builder.symbolized = false
        var document = builder.document
        var section = document["coldstart"] as! [String: Any]
        section["sampling"] = nil
        document["coldstart"] = section
        let original = try JSONSerialization.data(withJSONObject: document)
        try original.write(to: URL(fileURLWithPath: unsampled))
        let second = try symbolize([unsampled])
        XCTAssertEqual(second.status, 1)
        XCTAssertEqual(second.stderr, "coldstart symbolize: \(unsampled): no sampled stacks to symbolize (the launch was not sampled)\n")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: unsampled)), original, "untouched")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted(), ["unsampled.json"])

        XCTAssertEqual(try symbolize([]).status, 2)
        XCTAssertEqual(try symbolize([unsampled, "--bogus"]).status, 2)
    }

    private func documentData(_ document: Any) throws -> Data {
        var json = JSONText(escaping: .plain)
        try json.document(document)
        return Data(json.bytes)
    }

    func testJSONTextRoundTripsTheDocumentJSONSerializationReads() throws {
        let text = #"{"s":"quote \" backslash \\ tab \t nl \n ctl \u0001 é 😀","t":true,"f":false,"n":null,"#
            + #""i":-42,"big":4194305123456,"d":12345.678,"e":1e-7,"a":[1,"x",[],{}],"o":{"z":1,"a":2}}"#
        let parsed = try JSONSerialization.jsonObject(with: Data(text.utf8))
        var document = try XCTUnwrap(parsed as? [String: Any])
        document["added"] = ["swiftBool": true, "swiftInt": 7, "swiftDouble": 0.5, "typed": [["k": "v"]]] as [String: Any]
        let written = try documentData(document)
        let reread = try XCTUnwrap(JSONSerialization.jsonObject(with: written) as? [String: Any])
        XCTAssertEqual(reread["s"] as? String, "quote \" backslash \\ tab \t nl \n ctl \u{1} é 😀")
        XCTAssertEqual(String(cString: (reread["t"] as! NSNumber).objCType), "c", "booleans stay booleans")
        XCTAssertEqual(reread["f"] as? Bool, false)
        XCTAssertTrue(reread["n"] is NSNull)
        XCTAssertEqual(reread["i"] as? Int, -42)
        XCTAssertEqual(reread["big"] as? Int, 4_194_305_123_456)
        XCTAssertEqual(reread["d"] as? Double, 12345.678)
        XCTAssertEqual(reread["e"] as? Double, 1e-7)
        XCTAssertEqual((reread["a"] as? [Any])?.count, 4)
        let added = try XCTUnwrap(reread["added"] as? [String: Any])
        XCTAssertEqual(String(cString: (added["swiftBool"] as! NSNumber).objCType), "c")
        XCTAssertEqual(added["swiftInt"] as? Int, 7)
        XCTAssertEqual((added["typed"] as? [[String: String]])?.first?["k"], "v")
        let writtenText = String(decoding: written, as: UTF8.self)
        XCTAssertTrue(writtenText.contains(#""o":{"a":2,"z":1}"#), "keys sorted: \(writtenText)")
        XCTAssertEqual(try documentData(document), written, "the same bytes every time")
        XCTAssertThrowsError(try documentData(["date": Date()]))
    }
}
