import ColdstartAnalysis
import Foundation
import XCTest

/// `coldstart run` and `coldstart compare` end to end, on the example app
/// built by `swift build`.
final class RunCompareTests: XCTestCase {
    private static let phaseWithExtra = "config loaded → store opened"

    private func coldstart(_ arguments: [String], environment: [String: String?] = [:]) throws -> ProcessResult {
        // Swift's crash backtracer would add seconds to every crashing launch.
        try runProcess(try Products.path("coldstart"), arguments, environment: ["SWIFT_BACKTRACE": "enable=no"].merging(environment) { $1 })
    }

    private func json(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
        return try XCTUnwrap(object as? [String: Any], "not a JSON object: \(text.prefix(200))", file: file, line: line)
    }

    private func rows(_ comparison: [String: Any]) throws -> [String: [String: Any]] {
        let rows = try XCTUnwrap(comparison["rows"] as? [[String: Any]])
        return Dictionary(rows.map { ($0["name"] as! String, $0) }, uniquingKeysWith: { a, _ in a })
    }

    // MARK: run

    func testRunTenLaunchesRecordsExactStartsAndPassesOutputThrough() throws {
        let app = try Products.path("ServiceStartup")
        let dir = try makeTemporaryDirectory(for: self).appendingPathComponent("runs").path
        var before = timespec(), after = timespec()
        clock_gettime(CLOCK_BOOTTIME, &before)
        let result = try coldstart(["run", "-n", "10", "--out", dir, "--", app])
        clock_gettime(CLOCK_BOOTTIME, &after)
        XCTAssertEqual(result.status, 0, result.stderr)
        // The app's own output, once per launch (10 + 1 warm-up).
        XCTAssertEqual(result.stdout.components(separatedBy: "ready to serve on port 8080").count - 1, 11)
        XCTAssertTrue(result.stdout.contains("completed: 10 of 10 reached ready()"), result.stdout)
        for name in [Measure.launchName, "kernel exec + loader", "library initializers", Self.phaseWithExtra, "store opened → ready", "warm cache"] {
            XCTAssertNotNil(result.stdout.range(of: NSRegularExpression.escapedPattern(for: name) + #"\s+\d+\.\d\d\s+\d+\.\d\d"#, options: .regularExpression), "no statistics for \(name):\n\(result.stdout)")
        }
        XCTAssertTrue(result.stdout.contains("start: exact for 10 (spawn-env"), result.stdout)

        let set = try RunSet(path: dir)
        XCTAssertEqual(set.runs.map(\.label), (1...10).map { "run-\($0)" })
        XCTAssertEqual(set.completed.count, 10)
        let lower = UInt64(before.tv_sec) * 1_000_000_000 + UInt64(before.tv_nsec)
        let upper = UInt64(after.tv_sec) * 1_000_000_000 + UInt64(after.tv_nsec)
        for run in set.runs {
            let launch = run.timeline.launch
            XCTAssertEqual(launch.startSource, "spawn-env", run.label)
            XCTAssertEqual(launch.startPrecisionNs, 0, run.label)
            // The start handed over is a real CLOCK_BOOTTIME reading taken while coldstart ran.
            let boottime = launch.startNs + (launch.bootMinusMonotonicNs ?? 0)
            XCTAssertTrue((lower...upper).contains(boottime), "\(run.label): start \(boottime) outside [\(lower), \(upper)]")
        }
        XCTAssertEqual(try RunSet(path: dir + "/warmup").runs.count, 1, "the warm-up's timeline is kept apart")

        // Reusing the directory without --append would mix builds: refused.
        let again = try coldstart(["run", "-n", "1", "--out", dir, "--", app])
        XCTAssertEqual(again.status, 1)
        XCTAssertTrue(again.stderr.contains("already holds 10 runs; pass --append"), again.stderr)
    }

    func testRunJSONKeepsStdoutForTheSummary() throws {
        let app = try Products.path("ServiceStartup")
        let dir = try makeTemporaryDirectory(for: self).path
        let result = try coldstart(["run", "-n", "3", "--warmup", "0", "--json", "--out", dir, "--", app])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stderr.contains("ready to serve"), "the app's stdout goes to stderr with --json")
        let report = try json(result.stdout)
        XCTAssertEqual(report["completed"] as? Int, 3)
        let measures = try XCTUnwrap(report["measures"] as? [[String: Any]])
        let launch = try XCTUnwrap(measures.first { $0["name"] as? String == Measure.launchName })
        XCTAssertEqual(launch["count"] as? Int, 3)
        let median = try XCTUnwrap(launch["medianMs"] as? Double)
        XCTAssertLessThanOrEqual(try XCTUnwrap(launch["minMs"] as? Double), median)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(launch["maxMs"] as? Double), median)
    }

    func testExitStatusAndStderrPassThrough() throws {
        let app = try Products.path("ServiceStartup")
        let dir = try makeTemporaryDirectory(for: self).path
        let result = try coldstart(["run", "-n", "2", "--warmup", "0", "--out", dir, "--", app, "--fail-before-ready"])
        XCTAssertEqual(result.status, 3, "the app's exit status")
        XCTAssertEqual(result.stderr.components(separatedBy: "service: cannot bind port 8080").count - 1, 2, result.stderr)
        XCTAssertTrue(result.stdout.contains("completed: 0 of 2"), result.stdout)
        XCTAssertEqual(result.stdout.components(separatedBy: "ended before ready: exited with status 3").count - 1, 2, result.stdout)
        XCTAssertTrue(result.stdout.contains("no launch reached ready()"), result.stdout)
        XCTAssertEqual(try RunSet(path: dir).runs.filter { !$0.timeline.launch.completed }.count, 2)
    }

    func testCrashingLaunchesAreCountedNotLost() throws {
        let app = try Products.path("ServiceStartup")
        let dir = try makeTemporaryDirectory(for: self).path
        // Two good launches, then two that crash, into one directory.
        XCTAssertEqual(try coldstart(["run", "-n", "2", "--warmup", "0", "--out", dir, "--", app]).status, 0)
        let result = try coldstart(["run", "-n", "2", "--warmup", "0", "--append", "--out", dir, "--", app, "--crash-before-ready"])
        XCTAssertTrue([128 + SIGILL, 128 + SIGTRAP].contains(result.status), "fatalError's signal, got \(result.status)")
        XCTAssertTrue(result.stdout.contains("completed: 0 of 2"), result.stdout)
        XCTAssertTrue(result.stdout.contains("run-3: killed by SIG"), result.stdout)
        XCTAssertTrue(result.stdout.contains("run-4: killed by SIG"), result.stdout)
        XCTAssertEqual(try RunSet(path: dir).runs.count, 2, "a crash leaves no timeline; the earlier runs stay")
    }

    func testLaunchStoppedBeforeReadyIsCounted() throws {
        let app = try Products.path("ServiceStartup")
        let dir = try makeTemporaryDirectory(for: self).path
        let result = try coldstart(["run", "-n", "2", "--warmup", "0", "--timeout", "0.5", "--out", dir, "--", app, "--wait-before-ready"])
        XCTAssertEqual(result.status, 128 + SIGTERM, result.stderr)
        XCTAssertEqual(
            result.stdout.components(separatedBy: "ended before ready: stopped by SIGTERM in 'store opened → SIGTERM' (timed out").count - 1, 2,
            result.stdout)
        let set = try RunSet(path: dir)
        XCTAssertEqual(set.runs.map(\.timeline.launch.endReason), ["signal", "signal"])
        XCTAssertEqual(set.completed.count, 0)
    }

    func testStopAfterReadyEndsAServiceThatKeepsRunning() throws {
        let app = try Products.path("ServiceStartup")
        let dir = try makeTemporaryDirectory(for: self).path
        let result = try coldstart(["run", "-n", "2", "--warmup", "0", "--stop-after-ready", "--json", "--out", dir, "--", app, "--keep-serving"])
        XCTAssertEqual(result.status, 0, "stopped by coldstart after ready: not a failure")
        let runs = try XCTUnwrap(try json(result.stdout)["runs"] as? [[String: Any]])
        XCTAssertEqual(runs.map { $0["outcome"] as? String }, ["completed; stopped after ready", "completed; stopped after ready"])
        XCTAssertEqual(runs.map { $0["exitStatus"] as? Int }, [128 + Int(SIGTERM), 128 + Int(SIGTERM)])
    }

    func testAppNotLinkedWithColdstartIsExplained() throws {
        let dir = try makeTemporaryDirectory(for: self).path
        // Without the launcher's sampling (LoaderTests covers programs run with it).
        let result = try coldstart(["run", "-n", "5", "--no-sample-loader", "--out", dir, "--", "/bin/true"])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("/bin/true exited (status 0) without writing a timeline: it is not linked with Coldstart"), result.stderr)
        XCTAssertTrue(result.stderr.contains(#".product(name: "Coldstart", package: "Coldstart")"#), result.stderr)
        XCTAssertTrue(result.stderr.contains(".package(url:"), result.stderr)
    }

    func testColdRaisesMajorFaultsBeforeMain() throws {
        let app = try Products.path("ServiceStartup")
        let base = try makeTemporaryDirectory(for: self)
        let warm = try json(try coldstart(["run", "-n", "3", "--warmup", "1", "--json", "--out", base.appendingPathComponent("warm").path, "--", app]).stdout)
        let coldResult = try coldstart(["run", "-n", "3", "--warmup", "1", "--cold", "--json", "--out", base.appendingPathComponent("cold").path, "--", app])
        XCTAssertEqual(coldResult.status, 0, coldResult.stderr)
        let cold = try XCTUnwrap(try json(coldResult.stdout)["cold"] as? [String: Any])
        let files = try XCTUnwrap(cold["files"] as? [[String: Any]])
        let paths = files.compactMap { $0["path"] as? String }
        XCTAssertTrue(paths.contains(SharedLibraries.canonicalPath(app)), "the executable is evicted")
        XCTAssertTrue(paths.contains { $0.hasSuffix("/libswiftCore.so") }, "its libraries are evicted: \(paths)")
        let before = try XCTUnwrap(cold["residentBeforeBytes"] as? [Int]), after = try XCTUnwrap(cold["residentAfterBytes"] as? [Int])
        if zip(before, after).allSatisfy({ $0 == $1 }) {
            throw XCTSkip("the file system kept every page after posix_fadvise(POSIX_FADV_DONTNEED) (resident before \(before), after \(after)): eviction does not work here")
        }

        func preMainMajorFaults(_ dir: String) throws -> [Double] {
            try RunSet(path: dir).runs.compactMap { $0.timeline.preMainMajorFaults }.map { Double($0) }
        }
        let warmFaults = try preMainMajorFaults(base.appendingPathComponent("warm").path)
        let coldFaults = try preMainMajorFaults(base.appendingPathComponent("cold").path)
        XCTAssertEqual(warm["completed"] as? Int, 3)
        XCTAssertGreaterThan(try XCTUnwrap(Statistics.median(coldFaults)), try XCTUnwrap(Statistics.median(warmFaults)),
                             "cold \(coldFaults) vs warm \(warmFaults)")
        XCTAssertEqual(cold["effective"] as? Bool, true, "\(cold["check"] ?? "")")
    }

    func testSharedLibrariesMatchTheLoader() throws {
        // ldd runs the loader itself: the reference for the files read here.
        for name in ["ServiceStartup", "coldstart"] {
            let path = try Products.path(name)
            let ldd = try runProcess("/usr/bin/ldd", [path])
            XCTAssertEqual(ldd.status, 0)
            let expected = Set(ldd.stdout.split(separator: "\n").compactMap { line -> String? in
                let fields = line.split(separator: " ")
                let file = line.contains("=>") ? fields.count > 2 ? String(fields[2]) : nil : fields.first.map { String($0.trimmingCharacters(in: .whitespaces)) }
                return file.flatMap { $0.hasPrefix("/") ? SharedLibraries.canonicalPath($0) : nil }
            })
            let found = try SharedLibraries(executable: path, libraryPath: nil)
            XCTAssertEqual(Set(found.allFiles.dropFirst().map(SharedLibraries.canonicalPath)), expected, name)
            XCTAssertEqual(found.unresolved, [])
        }
        XCTAssertThrowsError(try SharedLibraries(executable: "/etc/hostname")) {
            XCTAssertEqual(String(describing: $0), "/etc/hostname: not an ELF file")
        }
    }

    // MARK: compare

    /// Sets of 8 launches, recorded once for all the comparison tests: three
    /// pairs from the same build, and one with 20 ms added to one phase.
    /// Sides are recorded two launches at a time, in turn, so that a change
    /// of machine load lands on both (what docs/ci.md recommends).
    private static var recorded: URL?

    private func recordedSets() throws -> URL {
        if let recorded = Self.recorded { return recorded }
        let app = try Products.path("ServiceStartup")
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("coldstart-compare-\(UUID().uuidString)")
        let sides: [(String, [String: String?])] = [
            ("same1-a", [:]), ("same1-b", [:]), ("same2-a", [:]), ("same2-b", [:]), ("same3-a", [:]), ("same3-b", [:]),
            ("slower", ["SERVICE_EXTRA_OPEN_MS": "20"]),
        ]
        for _ in 0..<4 {
            for (name, environment) in sides {
                let result = try coldstart(["run", "-n", "2", "--warmup", "0", "--append", "--out", root.appendingPathComponent(name).path, "--", app], environment: environment)
                XCTAssertEqual(result.status, 0, result.stderr)
            }
        }
        Self.recorded = root
        return root
    }

    override class func tearDown() {
        if let recorded { try? FileManager.default.removeItem(at: recorded) }
        recorded = nil
        super.tearDown()
    }

    /// Six gate checks on three same-build pairs. Each check is a test at
    /// α = 0.01, so even on a quiet machine one alarm in six has a small
    /// chance; a machine-load shift during recording makes it likelier. The
    /// false-alarm *rate* must be low: at most one of the six.
    func testSameBuildIsNoRegression() throws {
        let root = try recordedSets()
        var alarms: [String] = []
        for pair in 1...3 {
            let a = root.appendingPathComponent("same\(pair)-a").path, b = root.appendingPathComponent("same\(pair)-b").path
            let gated = try coldstart(["compare", a, b, "--fail-if-slower", "5", "--alpha", "0.01"])
            if gated.status != 0 { alarms.append("pair \(pair), whole launch:\n\(gated.stdout)\(gated.stderr)") }
            XCTAssertTrue(gated.stdout.contains("BASE  \(a): 8 timelines, 8 completed"), gated.stdout)
            XCTAssertTrue(gated.stdout.contains("start: exact (launcher timestamp)"), gated.stdout)
            let phaseGate = try coldstart(["compare", a, b, "--fail-if-slower", "5", "--alpha", "0.01", "--phase", Self.phaseWithExtra])
            if phaseGate.status != 0 { alarms.append("pair \(pair), phase:\n\(phaseGate.stdout)") }
            let report = try json(try coldstart(["compare", a, b, "--json"]).stdout)
            XCTAssertNotEqual(report["verdict"] as? String, "slower", "pair \(pair): Holm-adjusted rows called a regression")
        }
        XCTAssertLessThanOrEqual(alarms.count, 1, "false alarms:\n" + alarms.joined(separator: "\n"))
    }

    func testAddedTwentyMillisecondsIsARegressionInThatPhase() throws {
        let root = try recordedSets()
        let base = root.appendingPathComponent("same1-a").path, new = root.appendingPathComponent("slower").path
        let gated = try coldstart(["compare", base, new, "--fail-if-slower", "5", "--phase", Self.phaseWithExtra])
        XCTAssertEqual(gated.status, 1, gated.stdout + gated.stderr)
        XCTAssertTrue(gated.stdout.contains("gate (--fail-if-slower 5 --phase '\(Self.phaseWithExtra)'): '\(Self.phaseWithExtra)' is +"), gated.stdout)
        XCTAssertTrue(gated.stdout.contains("and significant (p "), gated.stdout)

        let report = try json(try coldstart(["compare", base, new, "--json"]).stdout)
        let rows = try rows(report)
        for name in [Self.phaseWithExtra, "open store"] {
            let row = try XCTUnwrap(rows[name])
            XCTAssertEqual(row["verdict"] as? String, "slower", name)
            let delta = try XCTUnwrap(row["deltaMs"] as? Double)
            XCTAssertTrue((15.0...35.0).contains(delta), "\(name): +20 ms added, measured \(delta)")
            XCTAssertLessThan(try XCTUnwrap(row["p"] as? Double), 0.01, name)
        }
        for name in ["kernel exec + loader", "library initializers", "read config"] {
            XCTAssertNotEqual(rows[name]?["verdict"] as? String, "slower", "\(name) was not changed")
        }
        // 20 ms is about 10% of this debug build's launch: that row may or may not rise above its noise.
        let slower = Set(try XCTUnwrap(report["significantlySlower"] as? [String]))
        XCTAssertTrue(slower.subtracting([Measure.launchName]) == [Self.phaseWithExtra, "open store"], "\(slower)")
        XCTAssertEqual((report["functions"] as? [String: Any])?["compared"] as? Bool, false)
    }

    func testCompareRefusesUnusableInput() throws {
        let root = try recordedSets()
        let good = root.appendingPathComponent("same1-a").path
        let scratch = try makeTemporaryDirectory(for: self)

        let missing = scratch.appendingPathComponent("no-such-dir").path
        var result = try coldstart(["compare", missing, good])
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(result.stderr, "coldstart compare: \(missing): no such file or directory\n")

        // A single launch: no test of significance is possible.
        result = try coldstart(["compare", good + "/run-1.json", good])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("\(good)/run-1.json has a single completed run"), result.stderr)
        XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, "one line: \(result.stderr)")

        // Two executables in one directory.
        let app = try Products.path("ServiceStartup")
        let copy = scratch.appendingPathComponent("ServiceStartupCopy").path
        try FileManager.default.copyItem(atPath: app, toPath: copy)
        let mixed = scratch.appendingPathComponent("mixed").path
        XCTAssertEqual(try coldstart(["run", "-n", "2", "--warmup", "0", "--out", mixed, "--", app]).status, 0)
        XCTAssertEqual(try coldstart(["run", "-n", "2", "--warmup", "0", "--append", "--out", mixed, "--", copy]).status, 0)
        result = try coldstart(["compare", good, mixed])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("\(mixed): mixes launches of different executables"), result.stderr)
        XCTAssertTrue(result.stderr.contains("ServiceStartupCopy (2 runs"), result.stderr)

        // Starts from /proc (10 ms steps) against exact ones.
        let procStat = scratch.appendingPathComponent("proc-stat")
        try FileManager.default.createDirectory(at: procStat, withIntermediateDirectories: true)
        for i in 1...4 {
            try runProcess(app, environment: ["COLDSTART": procStat.appendingPathComponent("run-\(i).json").path])
        }
        result = try coldstart(["compare", good, procStat.path])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("process starts come from different sources"), result.stderr)
        result = try coldstart(["compare", good, procStat.path, "--allow-mixed-start"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("warning: the sides' starts come from different sources"), result.stdout)

        // Something that is not a timeline inside a run directory.
        let garbage = scratch.appendingPathComponent("garbage")
        try FileManager.default.createDirectory(at: garbage, withIntermediateDirectories: true)
        try Data("{\"not\": 1}".utf8).write(to: garbage.appendingPathComponent("run-1.json"))
        result = try coldstart(["compare", good, garbage.path])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("run-1.json: not a Coldstart timeline"), result.stderr)

        result = try coldstart(["compare", good, good, "--fail-if-slower", "5", "--phase", "no such phase"])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("no phase or span named 'no such phase'; the runs have 'kernel exec + loader'"), result.stderr)

        result = try coldstart(["compare", good])
        XCTAssertEqual(result.status, 2, "usage error")
    }
}
