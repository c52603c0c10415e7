@testable import ColdstartAnalysis
@testable import ColdstartExport
import Foundation
import XCTest

/// `coldstart export`: what pprof, flame-graph tools and speedscope read
/// must say what `coldstart report` says.
final class ExportTests: XCTestCase {

    /// The report's top functions by self time.
    private func reportTopSelf(_ path: String, count: Int) throws -> [String] {
        let result = try coldstart(["report", path, "--json"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let profile = try XCTUnwrap(json["profile"] as? [String: Any])
        let overall = try XCTUnwrap(profile["overall"] as? [String: Any])
        let rows = try XCTUnwrap(overall["bySelf"] as? [[String: Any]])
        return rows.prefix(count).compactMap { $0["name"] as? String }
    }

    /// Issue 14: an output in a shared directory is written through an
    /// unpredictable temporary file created with O_EXCL|O_NOFOLLOW and renamed
    /// into place: a link planted at the destination is replaced, never
    /// written through, and nothing is left behind on success or failure.
    func testOutputsReplaceAPlantedLinkAndLeaveNoTemporaryFile() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let input = directory.appendingPathComponent("launch.json").path
        try FileManager.default.copyItem(atPath: try KnownProfile.timelinePath(), toPath: input)
        let victim = directory.appendingPathComponent("victim.txt").path
        try Data("keep".utf8).write(to: URL(fileURLWithPath: victim))
        let output = directory.appendingPathComponent("out.folded").path
        XCTAssertEqual(symlink(victim, output), 0)

        let result = try coldstart(["export", input, "--format", "folded", "-o", output])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(try String(contentsOfFile: victim, encoding: .utf8), "keep", "the link's target is untouched")
        var info = stat()
        XCTAssertEqual(lstat(output, &info), 0)
        XCTAssertEqual(info.st_mode & S_IFMT, S_IFREG, "the link was replaced by the output")
        let mask = umask(0o022)
        umask(mask)
        XCTAssertEqual(info.st_mode & 0o777, 0o644 & ~mask)
        XCTAssertFalse(try String(contentsOfFile: output, encoding: .utf8).isEmpty)

        let missing = directory.appendingPathComponent("missing/out.folded").path
        let failed = try coldstart(["export", input, "--format", "folded", "-o", missing])
        XCTAssertEqual(failed.status, 1)
        XCTAssertEqual(failed.stderr, "coldstart export: \(missing): cannot write (No such file or directory)\n")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".tmp") }
        XCTAssertEqual(leftovers, [])
    }

    func testGoToolPprofListsTheReportsTopFiveInOrder() throws {
        let go = try ExternalTool.path(ExternalTool.go)
        let path = try KnownProfile.timelinePath()
        let directory = try makeTemporaryDirectory(for: self)
        let output = directory.appendingPathComponent("known.pb.gz").path
        let export = try coldstart(["export", path, "--format", "pprof", "-o", output])
        XCTAssertEqual(export.status, 0, export.stderr)
        XCTAssertEqual(Array(try Data(contentsOf: URL(fileURLWithPath: output)).prefix(2)), [0x1F, 0x8B], "gzip-compressed")

        let top = try runProcess(go, ["tool", "pprof", "-top", output], environment: ["HOME": directory.path])
        XCTAssertEqual(top.status, 0, top.stderr)
        let lines = top.stdout.split(separator: "\n").map(String.init)
        let header = try XCTUnwrap(lines.firstIndex { $0.contains("flat%") && $0.contains("cum%") }, top.stdout)
        // "   40ms 40.40% 40.40%   40ms 40.40%  name with spaces"
        let pprofTop = lines[(header + 1)...].prefix(5).map { line in
            line.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
                .last.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        }
        let reportTop = try reportTopSelf(path, count: 5)
        XCTAssertEqual(reportTop.count, 5)
        XCTAssertEqual(pprofTop, reportTop, "go tool pprof -top:\n\(top.stdout)")
        XCTAssertTrue(lines[header + 1].trimmingCharacters(in: .whitespaces).hasPrefix("40ms "),
                      "40 samples × the asked 1 ms period, not the 800 Hz effective rate's 1.25 ms:\n\(top.stdout)")
        XCTAssertEqual(reportTop.map { KnownProfile.leaves.map(\.name).first(where: $0.contains) }, KnownProfile.leaves.map(\.name),
                       "the known leaves, most samples first")
    }

    func testPprofCarriesSampleTypesPeriodTimeLabelsAndBuildIDs() throws {
        let go = try ExternalTool.path(ExternalTool.go)
        let path = try KnownProfile.timelinePath()
        let directory = try makeTemporaryDirectory(for: self)
        let output = directory.appendingPathComponent("known.pb.gz").path
        XCTAssertEqual(try coldstart(["export", path, "--format", "pprof", "-o", output]).status, 0)
        let raw = try runProcess(go, ["tool", "pprof", "-raw", output], environment: ["HOME": directory.path])
        XCTAssertEqual(raw.status, 0, raw.stderr)
        let text = raw.stdout
        XCTAssertTrue(text.contains("PeriodType: cpu nanoseconds"), text)
        XCTAssertTrue(text.contains("Period: 1000000"), "1 kHz asked (800 Hz effective): one perf sample is 1 ms of user CPU")
        XCTAssertTrue(text.contains("samples/count cpu/nanoseconds"), "both sample types")
        XCTAssertTrue(text.contains("thread:[main]") && text.contains("thread:[worker]"), "thread labels")
        XCTAssertTrue(text.contains("phase:[main → config loaded]") && text.contains("phase:[config loaded → ready]"), "phase labels")
        XCTAssertTrue(text.contains("tid:[\(getpid())]"), "tid labels")
        XCTAssertTrue(text.contains("Time: 2026-01-01") || text.contains("Time: 2025-12-31"), "time_nanos from startRealtimeUs:\n\(text.prefix(400))")
        let timeline = try Timeline(contentsOf: path)
        let buildID = try XCTUnwrap(timeline.modules.first?.buildId, "the test binary has a GNU build-id")
        XCTAssertTrue(text.contains(buildID), "mappings carry build-ids")
        // A Swift function's mangled name is its system_name.
        XCTAssertTrue(text.contains("knownProfileHashIndex") && text.contains("s=0($s"), "system_name is the mangled name")
    }

    func testMalformedOrUnsampledInputGetsOneClearLine() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let fixtures = Bundle.module.resourceURL!.appendingPathComponent("Fixtures")
        let cases: [(String, String)] = [
            ("bad-garbage.json", "not JSON"), ("bad-truncated.json", "truncated"), ("bad-chrome-trace.json", "not a Coldstart timeline"),
            ("ready.json", "no sampled stacks"),
        ]
        for (fixture, problem) in cases {
            let input = fixtures.appendingPathComponent(fixture).path
            let output = directory.appendingPathComponent("\(fixture).out").path
            let result = try coldstart(["export", input, "--format", "pprof", "-o", output])
            XCTAssertEqual(result.status, 1, fixture)
            XCTAssertEqual(result.stdout, "", fixture)
            let lines = result.stderr.split(separator: "\n")
            XCTAssertEqual(lines.count, 1, "one line for \(fixture): \(result.stderr)")
            XCTAssertTrue(result.stderr.hasPrefix("coldstart export: \(input): "), result.stderr)
            XCTAssertTrue(result.stderr.contains(problem), "\(fixture): \(result.stderr)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: output), "no output for \(fixture)")
        }
        let path = try KnownProfile.timelinePath()
        let badFormat = try coldstart(["export", path, "--format", "svg"])
        XCTAssertEqual(badFormat.status, 2)
        XCTAssertTrue(badFormat.stderr.contains("unknown format 'svg'"), badFormat.stderr)
        let noThread = try coldstart(["export", path, "--format", "folded", "--thread", "renderer", "-o", "-"])
        XCTAssertEqual(noThread.status, 1)
        XCTAssertTrue(noThread.stderr.contains("no sampled thread named 'renderer'") && noThread.stderr.contains("'worker'"), noThread.stderr)
    }

    /// Stacks of function names (root first) and their sample counts.
    private func expectedTotals(_ stacks: SampledStacks, thread: Int? = nil) -> [[String]: Int] {
        var totals: [[String]: Int] = [:]
        for total in stacks.totals(thread: thread) {
            totals[total.functions.map { stacks.functions[$0].name }, default: 0] += total.samples
        }
        return totals
    }

    /// Reads folded stacks back, undoing the escapes.
    private func parseFolded(_ text: String) throws -> [[String]: Int] {
        var totals: [[String]: Int] = [:]
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) where !line.isEmpty {
            let space = try XCTUnwrap(line.lastIndex(of: " "), "a count ends \(line)")
            let count = try XCTUnwrap(Int(line[line.index(after: space)...]), String(line))
            let frames = line[..<space].split(separator: ";", omittingEmptySubsequences: false).map { frame -> String in
                var name = "", rest = Substring(frame)
                while let slash = rest.firstIndex(of: "\\") {
                    name += rest[..<slash]
                    let escape = rest[slash...]
                    for (code, value) in [("\\\\", "\\"), ("\\x3b", ";"), ("\\n", "\n"), ("\\r", "\r")] where escape.hasPrefix(code) {
                        name += value
                        rest = escape.dropFirst(code.count)
                        break
                    }
                    if rest.startIndex == slash { XCTFail("bad escape in \(frame)"); return name }
                }
                return name + rest
            }
            totals[frames, default: 0] += count
        }
        return totals
    }

    /// A timeline with names a flame-graph line could break on.
    private func awkwardTimeline() throws -> Timeline {
        var builder = SampledTimelineBuilder()
        let app = builder.module("/opt/app/App")
        let main = SampledTimelineBuilder.Frame(module: app, name: "main")
        let odd = SampledTimelineBuilder.Frame(module: app, name: "operator;(a\\b)\nnext")
        let plain = SampledTimelineBuilder.Frame(module: app, name: "Store.open(recordCount: Int) -> Store")
        for index in 0..<7 { builder.sample(at: 21 + Double(index), [main, odd, plain]) }
        for index in 0..<3 { builder.sample(at: 30 + Double(index), tid: 4243, [main, plain]) }
        builder.threads.append(["tid": 4243, "name": "worker"])
        return try builder.timeline()
    }

    func testEveryRegisteredFormatWritesItsSuffixAndNoneIsReadAsATimeline() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let input = directory.appendingPathComponent("launch.json").path
        try FileManager.default.copyItem(atPath: try KnownProfile.timelinePath(), toPath: input)
        for format in Exporters.all.map(\.exporter) {
            let result = try coldstart(["export", input, "--format", format.name])
            XCTAssertEqual(result.status, 0, "\(format.name): \(result.stderr)")
            XCTAssertTrue(FileManager.default.fileExists(atPath: directory.appendingPathComponent("launch" + format.suffix).path),
                          "\(format.name) writes FILE\(format.suffix) by default")
            XCTAssertTrue(try coldstart(["export", "--help"]).stdout.contains("  " + format.name + " "), "\(format.name) is in --help")
        }
        // Beside a timeline, a file with every registered ending that is no
        // timeline at all: a directory of runs still holds one run.
        for suffix in Exporters.suffixes {
            try Data("not a timeline".utf8).write(to: directory.appendingPathComponent("other" + suffix))
        }
        XCTAssertEqual(try RunSet(path: directory.path, exportSuffixes: Exporters.suffixes).runs.map(\.label), ["launch"])
        let compare = try coldstart(["compare", directory.path, directory.path])
        XCTAssertTrue(compare.stderr.contains("has a single completed run"), "only the timeline is read: \(compare.stderr)")
        // report DIR, aggregate and push list directories the same way.
        for command in [["report", directory.path], ["aggregate", directory.path]] {
            let result = try coldstart(command)
            XCTAssertEqual(result.status, 0, "\(command[0]): \(result.stderr)")
            XCTAssertFalse((result.stdout + result.stderr).contains("other."), "\(command[0]) reads no export as a timeline: \(result.stdout)")
        }
        XCTAssertEqual(Array(TimelineFiles([directory.path], exportSuffixes: Exporters.suffixes)), [.file(directory.appendingPathComponent("launch.json").path)])
    }

    /// `coldstart export` analyses the samples without the report (its
    /// findings and tables were a third of an export's CPU): every format
    /// writes the same bytes from those stacks as from the report's, for
    /// the whole launch and for one thread, with the same warnings.
    func testAnExportsStacksWithoutTheReportAreTheReportsStacks() throws {
        let timeline = try awkwardTimeline()
        var worker = ProfileOptions()
        worker.thread = 4243
        for options in [ProfileOptions(), worker] {
            let alone = try XCTUnwrap(SampledStacks(timeline: timeline, options: options, path: "t.json"))
            let reported = try XCTUnwrap(LaunchAnalysis(timeline: timeline, options: options, path: "t.json").stacks)
            XCTAssertEqual(alone.samples.count, options.thread == nil ? 10 : 3)
            XCTAssertEqual(alone.warnings, reported.warnings)
            for case .stacks(let exporter) in Exporters.all {
                XCTAssertEqual(try exporter.export(alone), try exporter.export(reported), "\(exporter.name), thread \(options.thread ?? 0)")
            }
        }
        var absent = ProfileOptions()
        absent.phase = "no such phase"
        XCTAssertThrowsError(try SampledStacks(timeline: timeline, options: absent), "a selection the launch lacks is refused, as by the report")
    }

    func testFoldedStacksRoundTrip() throws {
        for timeline in [try Timeline(contentsOf: try KnownProfile.timelinePath()), try awkwardTimeline()] {
            let stacks = try sampledStacks(timeline)
            let text = String(decoding: FoldedExporter.export(stacks), as: UTF8.self)
            XCTAssertEqual(text.filter { $0 == "\n" }.count, Set(expectedTotals(stacks).keys).count, "one line per distinct stack")
            XCTAssertEqual(try parseFolded(text), expectedTotals(stacks))
        }
        let stacks = try sampledStacks(try awkwardTimeline())
        XCTAssertTrue(String(decoding: FoldedExporter.export(stacks), as: UTF8.self).contains("main;operator\\x3b(a\\\\b)\\nnext;Store.open(recordCount: Int) -> Store 7\n"))

        // Through the CLI, to a file named after the input.
        let directory = try makeTemporaryDirectory(for: self)
        let input = directory.appendingPathComponent("launch.json")
        try FileManager.default.copyItem(atPath: try KnownProfile.timelinePath(), toPath: input.path)
        let result = try coldstart(["export", input.path, "--format", "folded"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let written = try String(contentsOfFile: directory.appendingPathComponent("launch.folded").path, encoding: .utf8)
        XCTAssertEqual(try parseFolded(written), expectedTotals(try sampledStacks(Timeline(contentsOf: input.path))))
    }

    /// A folded file's lines are in the order of their bytes, a name that
    /// starts another's included (`a` ends, `a!` goes on with `!`, `a;x`
    /// with `;`, `ab` with `b`), and functions of one name in two modules
    /// are one frame.
    func testFoldedLinesAreInTheOrderOfTheirBytes() throws {
        var builder = SampledTimelineBuilder()
        let app = builder.module("/opt/app/App"), lib = builder.module("/usr/lib/libA.so")
        func f(_ name: String, _ module: Int) -> SampledTimelineBuilder.Frame { .init(module: module, name: name) }
        builder.sample(at: 21, [f("ab", app)])
        builder.sample(at: 22, [f("a", app), f("x", app)])
        builder.sample(at: 23, [f("a", lib)])
        builder.sample(at: 24, [f("a!", app), f("y", app)])
        builder.sample(at: 25, [f("a", app)])
        let text = String(decoding: FoldedExporter.export(try sampledStacks(builder.timeline())), as: UTF8.self)
        XCTAssertEqual(text, "a 2\na!;y 1\na;x 1\nab 1\n")
    }

    func testSpeedscopeRoundTripsPerThreadAndCarriesThePhases() throws {
        for timeline in [try Timeline(contentsOf: try KnownProfile.timelinePath()), try awkwardTimeline()] {
            let stacks = try sampledStacks(timeline)
            let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(SpeedscopeExporter.export(stacks))) as? [String: Any])
            XCTAssertEqual(json["$schema"] as? String, SpeedscopeExporter.schema)
            let frames = try XCTUnwrap((json["shared"] as? [String: Any])?["frames"] as? [[String: Any]]).map { $0["name"] as? String ?? "" }
            let profiles = try XCTUnwrap(json["profiles"] as? [[String: Any]])
            let sampled = profiles.filter { $0["type"] as? String == "sampled" }
            XCTAssertEqual(sampled.count, stacks.threads.count, "one profile per thread")
            let period = stacks.nsPerSample
            for (profile, tid) in zip(sampled, stacks.threads) {
                XCTAssertTrue((profile["name"] as? String ?? "").contains("tid \(tid)"))
                let samples = try XCTUnwrap(profile["samples"] as? [[Int]])
                let weights = try XCTUnwrap(profile["weights"] as? [Double])
                XCTAssertEqual(samples.count, weights.count)
                var totals: [[String]: Double] = [:]
                for (stack, weight) in zip(samples, weights) { totals[stack.map { frames[$0] }, default: 0] += weight }
                let expected = expectedTotals(stacks, thread: tid).mapValues { Double($0) * period.rounded() }
                XCTAssertEqual(totals, expected, "thread \(tid): per-stack sampled time")
            }
            let evented = try XCTUnwrap(profiles.first { $0["type"] as? String == "evented" })
            let events = try XCTUnwrap(evented["events"] as? [[String: Any]])
            XCTAssertEqual(events.count, timeline.phases.count * 2)
            for (index, phase) in timeline.phases.enumerated() {
                XCTAssertEqual(frames[events[2 * index]["frame"] as! Int], phase.name)
                XCTAssertEqual(events[2 * index]["type"] as? String, "O")
                XCTAssertEqual((events[2 * index]["at"] as? NSNumber)?.int64Value, phase.startNs)
                XCTAssertEqual(events[2 * index + 1]["type"] as? String, "C")
                XCTAssertEqual((events[2 * index + 1]["at"] as? NSNumber)?.int64Value, phase.endNs)
            }
        }
    }

    func testMainThreadProfileIsInTimeOrder() throws {
        // The known profile's main thread runs its leaves one after another.
        let timeline = try Timeline(contentsOf: try KnownProfile.timelinePath())
        let stacks = try sampledStacks(timeline)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(SpeedscopeExporter.export(stacks))) as? [String: Any])
        let frames = ((json["shared"] as? [String: Any])?["frames"] as? [[String: Any]] ?? []).map { $0["name"] as? String ?? "" }
        let main = try XCTUnwrap((json["profiles"] as? [[String: Any]])?.first { ($0["name"] as? String ?? "").contains("tid \(getpid())") })
        let leaves = (main["samples"] as? [[Int]] ?? []).compactMap { $0.last.map { frames[$0] } }
        var runs: [String] = []
        for leaf in leaves where runs.last != leaf { runs.append(leaf) }
        XCTAssertEqual(runs.map { name in KnownProfile.leaves.first { name.contains($0.name) }?.name ?? name }, KnownProfile.leaves.map(\.name))
    }
}
