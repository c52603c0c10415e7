@testable import ColdstartAnalysis
import Foundation
import XCTest

/// Issue 25, item 3: the reader decodes the `coldstart` section alone and
/// parses the whole document only when asked for. What it reads must be
/// what a full parse of the file gives (`JSONSerialization` of every byte,
/// then `JSONDecoder` of every byte: the reader before), and it must refuse
/// every file that parse refuses, since the document is parsed later.
final class TimelineReaderTests: XCTestCase {
    /// The full parse: the typed sections and labels as the old reader got them.
    private struct Reference: Decodable {
        struct Section: Decodable {
            var launch: Timeline.Launch
            var process: Timeline.Process
            var phases: [Timeline.Phase]
            var marks: [Timeline.Mark]
            var spans: [Timeline.Span]
            var threads: [Timeline.Thread]?
            var modules: [Timeline.Module]?
            var sampling: Timeline.Sampling?
            var symbols: [String: Timeline.Symbol]?
        }
        var coldstart: Section
    }

    private func encoded<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    private func documentText(_ document: Any) throws -> String {
        var json = JSONText(escaping: .plain)
        try json.document(document)
        return json.text
    }

    /// Checks `data` against the full parse; returns whether the reader accepted it.
    @discardableResult
    private func assertReadsLikeAFullParse(_ data: Data, _ name: String, file: StaticString = #filePath, line: UInt = #line) throws -> Bool {
        let text = UTF8Repair.replacingInvalidBytes(data).0
        let whole = try? JSONSerialization.jsonObject(with: text) as? [String: Any]
        let timeline: Timeline
        do {
            timeline = try Timeline(data: data, path: name)
        } catch {
            XCTAssertFalse("\(error)".contains("\n"), "\(name): one line: \(error)", file: file, line: line)
            return false
        }
        guard var document = whole else {
            XCTFail("\(name): read, but JSONSerialization refuses the file, so the document could not be parsed", file: file, line: line)
            return true
        }
        // The reader's document has the samples as `[]`, and the count of replaced bytes.
        if var section = document["coldstart"] as? [String: Any] {
            if section["samples"] is [Any] { section["samples"] = [Any]() }
            if timeline.dropped.notUtf8Bytes != nil, data != text { section["dropped"] = timeline.parsedDocument["coldstart"].flatMap { ($0 as? [String: Any])?["dropped"] } }
            document["coldstart"] = section
        }
        XCTAssertEqual(try documentText(timeline.parsedDocument), try documentText(document), "\(name): the document", file: file, line: line)
        let reference = try JSONDecoder().decode(Reference.self, from: text).coldstart
        for (what, mine, theirs) in [
            ("launch", try encoded(timeline.launch), try encoded(reference.launch)),
            ("process", try encoded(timeline.process), try encoded(reference.process)),
            ("phases", try encoded(timeline.phases), try encoded(reference.phases)),
            ("marks", try encoded(timeline.marks), try encoded(reference.marks)),
            ("spans", try encoded(timeline.spans), try encoded(reference.spans)),
            ("threads", try encoded(timeline.threads), try encoded(reference.threads ?? [])),
            ("modules", try encoded(timeline.modules), try encoded(reference.modules ?? [])),
            ("sampling", try encoded(timeline.sampling), try encoded(reference.sampling)),
            ("symbols", try encoded(timeline.symbols), try encoded(reference.symbols ?? [:])),
        ] {
            XCTAssertEqual(mine, theirs, "\(name): \(what)", file: file, line: line)
        }
        let labels = ((document["coldstart"] as? [String: Any])?["labels"] as? [String: Any])?.compactMapValues { $0 as? String } ?? [:]
        XCTAssertEqual(timeline.labels, labels, "\(name): labels", file: file, line: line)
        let samples = ((whole?["coldstart"] as? [String: Any])?["samples"] as? [[Any]]) ?? []
        XCTAssertEqual(timeline.samples.count, samples.count, "\(name): samples", file: file, line: line)
        return true
    }

    private func fixtures() throws -> [URL] {
        try [Fixtures.directory, Fixtures.directory.appendingPathComponent("fuzz-corpus")].flatMap { directory in
            try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
                .filter { $0.pathExtension == "json" }.sorted { $0.path < $1.path }
        }
    }

    func testEveryFixtureReadsAsAFullParseReadsIt() throws {
        var read = 0
        for url in try fixtures() {
            if try assertReadsLikeAFullParse(try Data(contentsOf: url), url.lastPathComponent) { read += 1 }
        }
        XCTAssertGreaterThanOrEqual(read, 7, "the good fixtures read")
    }

    /// `ready.json` with `members` first in its `coldstart` section.
    private func ready(section members: String) throws -> Data {
        try ready(replacing: #""coldstart":{"#, with: #""coldstart":{"# + members + ",")
    }

    /// `ready.json` with `needle` replaced by `replacement` (once).
    private func ready(replacing needle: String, with replacement: String) throws -> Data {
        let text = try String(contentsOf: Fixtures.directory.appendingPathComponent("ready.json"), encoding: .utf8)
        let range = try XCTUnwrap(text.range(of: needle), needle)
        return Data(text.replacingCharacters(in: range, with: replacement).utf8)
    }

    /// Escapes, unicode, nesting, repeated keys and odd numbers, in the
    /// section and out of it: read as the full parse reads them, or refused
    /// as "not JSON" where it refuses them.
    func testEdgeCasesReadLikeAFullParseAndWhatItRefusesIsRefused() throws {
        let accepted: [(String, Data)] = [
            ("escaped label", try ready(section: #""labels":{"n\u00e4me":"a\"b\\c\/d\n\u0000\uD83D\uDE00"}"#)),
            ("raw unicode", try ready(section: #""labels":{"région":"日本 🙂"}"#)),
            ("lone surrogate, repaired", try ready(section: #""labels":{"odd":"\uD800x"}"#)),
            ("non-string label", try ready(section: #""labels":{"n":1,"list":["x"],"s":"kept"}"#)),
            ("escaped section key", try ready(section: #""\u006cabels":{"via":"escape"},"future":{"x":[]}"#)),
            ("deep nesting elsewhere", try ready(replacing: #""traceEvents":["#, with: #""deep":[[[[[[[[[[{"a":[[["\""]]]}]]]]]]]]]],"traceEvents":["#)),
            ("numbers elsewhere", try ready(replacing: #""traceEvents":["#, with: #""n":[-0,1E5,1e-400,0.5e+3,99999999999999999999999,1.7976931348623157e308],"traceEvents":["#)),
            ("repeated label key", try ready(section: #""labels":{"version":"first"},"labels":{"version":"second"}"#)),
            ("strings with braces", try ready(replacing: #""traceEvents":["#, with: #""s":"}]{[\"coldstart\":{","traceEvents":["#)),
        ]
        for (name, data) in accepted {
            XCTAssertTrue(try assertReadsLikeAFullParse(data, name), "\(name) reads")
        }
        // Each refused by JSONSerialization: the scanner must refuse it too.
        let refused: [(String, Data)] = [
            ("1e400", try ready(replacing: #""traceEvents":["#, with: #""n":1e400,"traceEvents":["#)),
            ("-1e400 in a label", try ready(section: #""labels":{"n":-1e400}"#)),
            ("past Double's maximum", try ready(replacing: #""traceEvents":["#, with: #""n":1.7976931348623159e308,"traceEvents":["#)),
            ("320 digits", try ready(replacing: #""traceEvents":["#, with: #""n":1"# + String(repeating: "0", count: 320) + #","traceEvents":["#)),
            ("leading zero", try ready(replacing: #""traceEvents":["#, with: #""n":01,"traceEvents":["#)),
            ("negative leading zero", try ready(section: #""labels":{"n":-007}"#)),
            ("a scalar top level", Data("17".utf8)),
        ]
        for (name, data) in refused {
            XCTAssertNil(try? JSONSerialization.jsonObject(with: data), "\(name): JSONSerialization refuses it")
            XCTAssertThrowsError(try Timeline(data: data, path: "edge.json"), name) { error in
                XCTAssertEqual("\(error)", "edge.json: not JSON", name)
            }
        }
    }

    /// The arrays of small objects most of a phases-only timeline is
    /// (`phases`, `marks`, `spans`, `rusage`) are read from their bytes
    /// (`PlainSections`): through `JSONDecoder` they were over half of
    /// `coldstart aggregate`'s CPU. Every good fixture's four are read so,
    /// and as the decoder reads them; what the plain reader leaves to the
    /// decoder (an escape, a fraction, a repeated key, a missing or mistyped
    /// field) still reads as the full parse reads it, or is refused with the
    /// decoder's message.
    func testPhasesMarksSpansAndRusageAreReadFromTheirBytesAsTheDecoderReadsThem() throws {
        func counters(_ snapshots: [Timeline.RusageSnapshot]) -> [String] { snapshots.map { "\($0.at) \($0.ns) \($0.usage)" } }
        var plain = 0
        for name in ["ready.json", "exit.json", "error-exit.json", "sigterm.json", "threads.json"] {
            let data = try Data(contentsOf: Fixtures.directory.appendingPathComponent(name))
            let section = try XCTUnwrap((JSONSerialization.jsonObject(with: data) as? [String: Any])?["coldstart"] as? [String: Any])
            func bytes(_ key: String) throws -> Data { try JSONSerialization.data(withJSONObject: section[key] ?? [Any]()) }
            let phases = try XCTUnwrap(PlainSections.phases(try bytes("phases")), "\(name): phases read plainly")
            XCTAssertEqual(try encoded(phases), try encoded(JSONDecoder().decode([Timeline.Phase].self, from: try bytes("phases"))), name)
            let marks = try XCTUnwrap(PlainSections.marks(try bytes("marks")), "\(name): marks read plainly")
            XCTAssertEqual(try encoded(marks), try encoded(JSONDecoder().decode([Timeline.Mark].self, from: try bytes("marks"))), name)
            let spans = try XCTUnwrap(PlainSections.spans(try bytes("spans")), "\(name): spans read plainly")
            XCTAssertEqual(try encoded(spans), try encoded(JSONDecoder().decode([Timeline.Span].self, from: try bytes("spans"))), name)
            let rusage = try XCTUnwrap(PlainSections.rusage(try bytes("rusage")), "\(name): rusage read plainly")
            XCTAssertEqual(counters(rusage), counters(try JSONDecoder().decode([Timeline.RusageSnapshot].self, from: try bytes("rusage"))), name)
            XCTAssertEqual(counters(try Timeline(data: data).rusage), counters(rusage), name)
            plain += phases.count + marks.count + spans.count + rusage.count
        }
        XCTAssertGreaterThan(plain, 50)

        let firstPhase = #"{"name":"kernel exec + loader","kind":"loader","startNs":0,"#
        let left: [(String, Data)] = [
            ("escaped phase name", try ready(replacing: firstPhase, with: #"{"name":"kernel \"exec\" + loader","kind":"loader","startNs":0,"#)),
            ("fraction", try ready(replacing: firstPhase, with: #"{"name":"kernel exec + loader","kind":"loader","startNs":0.0,"#)),
            ("repeated field", try ready(replacing: firstPhase, with: #"{"name":"first","name":"kernel exec + loader","kind":"loader","startNs":0,"#)),
            ("unknown array field", try ready(replacing: firstPhase, with: #"{"future":[1],"name":"kernel exec + loader","kind":"loader","startNs":0,"#)),
            ("repeated marks", try ready(section: #""marks":[]"#)),
            ("repeated marks, escaped past 16 bytes", try ready(section: #""\u006d\u0061\u0072\u006bs":[]"#)),
        ]
        for (name, data) in left {
            XCTAssertTrue(try assertReadsLikeAFullParse(data, name), "\(name) reads")
        }
        XCTAssertEqual(try Timeline(data: left[0].1).phases.first?.name, #"kernel "exec" + loader"#)
        let refused: [(String, Data, String)] = [
            ("mistyped", try ready(replacing: firstPhase, with: #"{"name":"kernel exec + loader","kind":"loader","startNs":"0","#),
             #"malformed timeline: bad "phases" (wrong type at Index 0.startNs)"#),
            ("missing", try ready(replacing: firstPhase, with: #"{"name":"kernel exec + loader","startNs":0,"#),
             #"malformed timeline: bad "phases" (missing "kind")"#),
            ("negative counter", try ready(replacing: #""rusage":[{"at":"earliestInit","ns":6656963,"minorFaults":507"#,
                                           with: #""rusage":[{"at":"earliestInit","ns":6656963,"minorFaults":-507"#),
             #"malformed timeline: bad "rusage" (unreadable)"#),
            ("null", try ready(replacing: #""rusage":[{"at":"earliestInit","#, with: #""rusage":null,"was":[{"at":"earliestInit","#),
             #"malformed timeline: missing "rusage""#),
        ]
        for (name, data, problem) in refused {
            XCTAssertThrowsError(try Timeline(data: data, path: "t.json"), name) { error in
                XCTAssertEqual("\(error)", "t.json: " + problem, name)
            }
        }
    }

    /// A file cut anywhere is refused with one line; a cut the full parse
    /// would take (none here) would have to read the same.
    func testATimelineCutAnywhereIsRefusedWithOneLine() throws {
        let data = try Data(contentsOf: Fixtures.directory.appendingPathComponent("ready.json"))
        var cuts = 0
        for length in stride(from: 1, to: data.count - 1, by: 37) {
            let cut = data.prefix(length)
            XCTAssertFalse(try assertReadsLikeAFullParse(cut, "cut at \(length)"), "cut at \(length) is refused")
            cuts += 1
        }
        XCTAssertGreaterThan(cuts, 100)
        XCTAssertThrowsError(try Timeline(data: data.prefix(data.count / 2), path: "cut.json")) { error in
            XCTAssertEqual("\(error)", "cut.json: truncated JSON (the file ends mid-way)")
        }
    }

    /// Issue 25: each sample's frames are an array of their own length.
    /// The copy that shared the reader's row buffer was as large as the
    /// deepest stack read before it, for every sample after (1,000,000
    /// samples: 250 MB more, 64,000 more page faults).
    func testEachSampleHoldsOnlyItsOwnFrames() throws {
        var builder = SampledTimelineBuilder()
        let app = builder.module("/opt/app/App")
        builder.sample(at: 21, (0..<500).map { .init(module: app, name: "deep\($0)") })
        for index in 0..<100 {
            builder.sample(at: 22 + Double(index) / 10, [.init(module: app, name: "main"), .init(module: app, name: "leaf\(index)")])
        }
        let samples = try builder.timeline().samples
        XCTAssertEqual(samples.map(\.frames.count), [500] + Array(repeating: 2, count: 100))
        XCTAssertEqual(samples.dropFirst().filter { $0.frames.capacity > 8 }.count, 0,
                       "capacities after the deep stack: \(Set(samples.dropFirst().map(\.frames.capacity)))")
    }

    /// With `coldstart` twice, the last one counts, its samples too (the
    /// scanner kept the first one's samples when the last had none).
    func testARepeatedColdstartKeyReadsTheLastSectionWithItsOwnSamples() throws {
        var builder = SampledTimelineBuilder()
        builder.sample(at: 21, [.init(module: builder.module("/opt/app/App"), name: "main")])
        let first = String(decoding: try JSONSerialization.data(withJSONObject: builder.document), as: UTF8.self)
        var unsampled = builder.document["coldstart"] as! [String: Any]
        unsampled["samples"] = nil
        let last = String(decoding: try JSONSerialization.data(withJSONObject: unsampled), as: UTF8.self)
        let twice = Data((String(first.dropLast()) + #","coldstart":"# + last + "}").utf8)
        XCTAssertEqual(try Timeline(data: Data(first.utf8)).samples.count, 1, "the sampled section alone")
        XCTAssertEqual(try Timeline(data: twice).samples.count, 0, "the last section has no samples")
        try assertReadsLikeAFullParse(twice, "coldstart twice")
    }

    /// A `coldstart` or top level that is not an object is said so, as before.
    func testASectionOrTopLevelThatIsNotAnObjectIsNamed() throws {
        let array = try ready(replacing: #""coldstart":{"#, with: #""coldstart":[{"#).dropLast(2) + Data("]}\n".utf8)
        XCTAssertThrowsError(try Timeline(data: array, path: "array.json")) { error in
            XCTAssertTrue("\(error)".hasPrefix(#"array.json: not a Coldstart timeline (no "coldstart" section"#), "\(error)")
        }
        XCTAssertThrowsError(try Timeline(data: Data("[{}]".utf8), path: "list.json")) { error in
            XCTAssertEqual("\(error)", "list.json: not a Coldstart timeline (top level is not an object)")
        }
    }
}
