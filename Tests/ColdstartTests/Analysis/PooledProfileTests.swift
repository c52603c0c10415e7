@testable import ColdstartAnalysis
import ColdstartExport
import Foundation
import XCTest

/// `coldstart report DIR` end to end: five real launches of KnownCosts
/// (`coldstart run -n 5 --out DIR`) pooled into one profile whose figures
/// per launch match what the program measured itself.
final class PooledProfileTests: XCTestCase {
    private struct Failure: Error, CustomStringConvertible { var description: String }

    /// One `coldstart run -n 5` of KnownCosts for every test of the class:
    /// the directory and the program's own measurements of each launch.
    private static let recorded = Result { () throws -> (directory: URL, measured: [[String: Double]]) in
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coldstart-pool-\(getpid())")
        atexit { try? FileManager.default.removeItem(at: FileManager.default.temporaryDirectory.appendingPathComponent("coldstart-pool-\(getpid())")) }
        let out = directory.appendingPathComponent("runs").path
        let result = try coldstart(["run", "-n", "5", "--out", out, "--", try FixturePrograms.path("KnownCosts")])
        guard result.status == 0 else { throw Failure(description: "coldstart run exited \(result.status): \(result.stderr)") }
        // KnownCosts prints its measurements as one JSON line on stderr per launch (the warm-up's first).
        let measured = result.stderr.split(separator: "\n").compactMap { line -> [String: Double]? in
            guard line.hasPrefix("{"), let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return object.compactMapValues { ($0 as? NSNumber)?.doubleValue }
        }
        return (directory, Array(measured.suffix(5)))
    }

    private func record() throws -> (runs: String, measured: [[String: Double]]) {
        let (directory, measured) = try Self.recorded.get()
        XCTAssertEqual(measured.count, 5, "KnownCosts measured each of its 5 launches")
        return (directory.appendingPathComponent("runs").path, measured)
    }


    private func pooled(_ directory: String) throws -> PooledLaunches {
        let result = try coldstart(["report", "--json", "--top", "50", directory])
        XCTAssertEqual(result.status, 0, result.stderr)
        return try JSONDecoder().decode(PooledLaunches.self, from: Data(result.stdout.utf8))
    }

    private func mean(_ name: String, of measured: [[String: Double]]) throws -> Double {
        let values = measured.compactMap { $0[name] }
        XCTAssertEqual(values.count, measured.count, "KnownCosts measured \(name) in every launch")
        return values.reduce(0, +) / Double(max(1, values.count))
    }

    func testARunDirectoryIsPooledIntoOneProfileWithEachLaunchsOwnCosts() throws {
        let (runs, measured) = try record()
        let pool = try pooled(runs)
        let files = (1...5).map { "\(runs)/run-\($0).json" }
        let timelines = try files.map { try Timeline(contentsOf: $0) }
        XCTAssertEqual(pool.profile.launches, 5, "the 5 measured launches; the warm-up is left out")
        XCTAssertEqual(pool.filesRead, 5)
        XCTAssertEqual(pool.skippedCount, 0)
        XCTAssertEqual(pool.executable, "KnownCosts")
        XCTAssertEqual(pool.profile.samples, timelines.map(\.samples.count).reduce(0, +), "pooled samples = the files' samples")
        XCTAssertEqual(pool.profile.phases.map(\.samples).reduce(0, +), pool.profile.samples, "every sample in a phase")

        // Same binary in every launch: each module is read once for all five.
        XCTAssertEqual(Set(timelines.map(\.executableBuildId)).count, 1, "one build")
        let modules = Set(timelines.flatMap { $0.modules.map { "\($0.path) \($0.buildId ?? "")" } })
        XCTAssertLessThanOrEqual(pool.modulesRead, modules.count)
        XCTAssertLessThan(pool.modulesRead, timelines.map(\.modules.count).reduce(0, +) / 2, "not once per file")

        for (function, phase) in KnownCostsTests.functions {
            let name = KnownCostsTests.demangled(function)
            let row = try XCTUnwrap(pool.profile.byTotal.first { $0.name == name }, "\(name) among \(pool.profile.byTotal.map(\.name))")
            let expected = try mean(function, of: measured)
            XCTAssertEqual(row.totalMsPerLaunch, expected, accuracy: expected * KnownCostsTests.tolerance, "\(name) ms per launch")
            XCTAssertEqual(row.launches, 5)
            XCTAssertEqual(row.module, "KnownCosts")
            let inPhase = try XCTUnwrap(pool.profile.phases.first { $0.name == phase })
            XCTAssertGreaterThanOrEqual(inPhase.samples, row.totalSamples, "\(name)'s samples fall in '\(phase)'")
        }
        let library = try XCTUnwrap(pool.profile.initializers.libraries.first, "a slow initializer")
        XCTAssertEqual(library.module, "libSlowInit.so")
        let constructor = try mean("constructor", of: measured)
        XCTAssertEqual(library.msPerLaunch, constructor, accuracy: constructor * KnownCostsTests.tolerance)
        let global = try XCTUnwrap(pool.profile.lazyGlobals.first, "a slow lazy global")
        XCTAssertEqual(global.name, "KnownCosts.slowGlobalTable")
        let table = try mean("slowGlobalTable", of: measured)
        XCTAssertEqual(global.msPerLaunch, table, accuracy: table * KnownCostsTests.tolerance)

        // Unwrapped into a pipe with --full; the first look wraps at 100 columns.
        let text = try coldstart(["report", "--full", runs])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains("5 launches pooled (KnownCosts) of 5 timelines read, 0 files skipped"), text.stdout)
        XCTAssertTrue(text.stdout.contains("Pooled profile: \(pool.profile.samples) samples from 5 sampled launches"), text.stdout)
        XCTAssertTrue(text.stdout.contains("ms/launch = pooled samples × sampling period ÷ 5 launches"), text.stdout)
        XCTAssertTrue(text.stdout.contains("libSlowInit.so"), text.stdout)

        // KnownCosts' ~350 ms launches give hundreds of samples each: enough.
        XCTAssertEqual(pool.profile.precision.launchSamples, pool.profile.samples)
        XCTAssertFalse(pool.profile.precision.tooFew)
        XCTAssertNil(pool.profile.precision.advice)
        XCTAssertTrue(text.stdout.contains("precision: \(pool.profile.precision.rule)"), text.stdout)
    }

    /// The pooled report was a lesser report: no findings, no runtime
    /// kinds, no threads, and `--full`/`--thread` refused (exit 2), though
    /// the "too few samples" advice sends users there. It is the single
    /// report's, each launch's findings added up, per launch, their
    /// precision the pool's.
    func testThePooledReportHasTheFindingsRuntimeKindsAndThreadsOfOneLaunch() throws {
        let (runs, measured) = try record()
        let pool = try pooled(runs)
        let single = try XCTUnwrap(LaunchAnalysis(timeline: Timeline(contentsOf: "\(runs)/run-1.json")).report.findings)
        for (function, _) in KnownCostsTests.functions {
            let title = "slow function \(KnownCostsTests.demangled(function))"
            let finding = try XCTUnwrap(pool.findings.first { $0.title == title }, "\(title) among \(pool.findings.map(\.title))")
            let expected = try mean(function, of: measured)
            XCTAssertEqual(finding.ms, expected, accuracy: expected * KnownCostsTests.tolerance, "\(title) ms per launch")
            guard case .samples(let pooledCount) = finding.certainty,
                  case .samples(let oneLaunch)? = single.first(where: { $0.title == title })?.certainty else {
                return XCTFail("\(title) is counted in samples")
            }
            XCTAssertGreaterThan(pooledCount, oneLaunch * 3, "the pool's samples, not one launch's")
            // The pool's interval: narrower, relative to the figure, than one launch's.
            let (low, high) = (try XCTUnwrap(finding.msLow), try XCTUnwrap(finding.msHigh))
            XCTAssertLessThan((high - low) / finding.ms, 0.5, "\(low)–\(high) around \(finding.ms)")
        }
        XCTAssertTrue(pool.findings.contains { $0.title == "slow library initializer libSlowInit.so" }, "\(pool.findings.map(\.title))")
        XCTAssertTrue(pool.findings.contains { $0.title == "slow lazy global KnownCosts.slowGlobalTable" }, "\(pool.findings.map(\.title))")
        XCTAssertFalse(try XCTUnwrap(pool.runtimeCosts).rows.isEmpty)
        XCTAssertEqual(pool.profile.threads.first { $0.name == "main" }?.launches, 5, "\(pool.profile.threads)")

        let text = try coldstart(["report", runs])
        XCTAssertEqual(text.status, 0, text.stderr)
        let findings = try XCTUnwrap(text.stdout.range(of: "Findings (most time first; % of the mean launch's wall time):"), text.stdout)
        XCTAssertLessThan(findings.lowerBound, try XCTUnwrap(text.stdout.range(of: "Pooled profile: ")).lowerBound, "the findings first")
        XCTAssertTrue(text.stdout.contains("More with --full: "), text.stdout)
        XCTAssertFalse(text.stdout.contains("Threads (by name"), text.stdout)

        let full = try coldstart(["report", "--full", runs])
        XCTAssertEqual(full.status, 0, full.stderr)
        for section in ["Top functions by total time", "Threads (by name", "Swift runtime costs by kind"] {
            XCTAssertTrue(full.stdout.contains(section), "\(section) in --full:\n\(full.stdout)")
        }
        let main = try coldstart(["report", "--json", "--thread", "main", runs])
        XCTAssertEqual(main.status, 0, main.stderr)
        let onMain = try JSONDecoder().decode(PooledLaunches.self, from: Data(main.stdout.utf8))
        XCTAssertEqual(onMain.profile.threads.map(\.name), ["main"])
        XCTAssertEqual(onMain.findings.map(\.title), pool.findings.map(\.title), "the findings are the whole launches'")
        let none = try coldstart(["report", "--thread", "no such thread", runs])
        XCTAssertEqual(none.status, 1)
        XCTAssertTrue(none.stderr.contains("no launch has samples of a thread named 'no such thread'"), none.stderr)
    }

    /// A thin pool says so, in the JSON as in the text, with what to do.
    /// A phase row's CPU split from fewer launches than its ms/launch says
    /// how many (issue 26: a row mixed a figure from all 36 launches with a
    /// split from 18 of them): here one launch of two lost its kernel samples,
    /// the loader phase's only split.
    func testAPhaseRowSaysThePopulationOfItsSplit() throws {
        // The kernel says whether kernel-mode samples are allowed, not the
        // launcher: where they are, run-2 must have them to lose.
        try MachineProbes.requireKernelSamples()
        let directory = try makeTemporaryDirectory(for: self).path
        let run = try coldstart(["run", "-n", "2", "--warmup", "0", "--out", directory, "--", try FixturePrograms.path("FoundationTool")])
        XCTAssertEqual(run.status, 0, run.stderr)
        let second = URL(fileURLWithPath: "\(directory)/run-2.json")
        var document = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: second)) as? [String: Any])
        var section = try XCTUnwrap(document["coldstart"] as? [String: Any])
        var launcher = try XCTUnwrap(section["launcher"] as? [String: Any])
        XCTAssertNotNil(launcher.removeValue(forKey: "kernelSamples"), "the kernel allows kernel-mode samples here (MachineProbes)")
        section["launcher"] = launcher
        document["coldstart"] = section
        try JSONSerialization.data(withJSONObject: document).write(to: second)

        let pool = try pooled(directory)
        XCTAssertEqual(pool.profile.launches, 2)
        let loader = try XCTUnwrap(pool.profile.phases.first { $0.kind == "loader" })
        XCTAssertNotNil(loader.kernel, "run-1's split")
        XCTAssertEqual(loader.kernelLaunches, 1)
        let app = try XCTUnwrap(pool.profile.phases.first { $0.kind == "app" })
        XCTAssertEqual(app.kernelLaunches, 2, "getrusage splits the app phase in both")
        let text = try coldstart(["report", directory])
        XCTAssertEqual(text.status, 0, text.stderr)
        let row = try XCTUnwrap(text.stdout.split(separator: "\n").first { $0.contains("kernel exec + loader") && $0.contains("+") })
        XCTAssertTrue(row.contains("(1 of 2 launches)"), String(row))
        let appRow = try XCTUnwrap(text.stdout.split(separator: "\n").first { $0.contains("main → exit(0)") && $0.contains("+") })
        XCTAssertFalse(appRow.contains(" of 2 launches"), String(appRow))
    }

    func testAThinPoolSaysWhatToDo() {
        let thin = SamplingPrecision(pooledSamples: 12, samplesPerLaunch: 4)
        XCTAssertTrue(thin.tooFew)
        XCTAssertEqual(thin.advice?.hasPrefix("too few samples to act on (12 pooled, fewer than 20)"), true, thin.advice ?? "")
        let sparse = SamplingPrecision(pooledSamples: 80, samplesPerLaunch: 8)
        XCTAssertFalse(sparse.tooFew)
        XCTAssertEqual(sparse.advice?.hasPrefix("few samples per launch"), true, sparse.advice ?? "")
        XCTAssertTrue(sparse.rule.contains("20 samples ×0.6–×1.5"), sparse.rule)
    }

    /// In a 100-column terminal no line of `report DIR` passes the edge: the
    /// tables are narrowed and the header's sentences (the precision rule
    /// was one 170-column line) wrap.
    func testThePooledReportFitsTheTerminalWidth() throws {
        let (runs, _) = try record()
        let text = try coldstart(["report", runs], environment: ["COLUMNS": "100"])
        XCTAssertEqual(text.status, 0, text.stderr)
        let lines = text.stdout.split(separator: "\n")
        XCTAssertTrue(lines.contains { $0.hasPrefix("  precision: ") }, text.stdout)
        for line in lines {
            XCTAssertLessThanOrEqual(line.count, 100, String(line))
        }
    }

    func testBadFilesAreSkippedWithTheirReasonAndTheRestPooled() throws {
        let (runs, _) = try record()
        let directory = try makeTemporaryDirectory(for: self)
        for number in 1...5 {
            try FileManager.default.copyItem(atPath: "\(runs)/run-\(number).json", toPath: directory.appendingPathComponent("run-\(number).json").path)
        }
        try Data().write(to: directory.appendingPathComponent("empty.json"))
        try Data("{\"traceEvents\": [".utf8).write(to: directory.appendingPathComponent("truncated.json"))
        // A launch of another program: not pooled with KnownCosts.
        let other = try Timeline(contentsOf: "\(runs)/run-1.json").document
        var section = try XCTUnwrap(other["coldstart"] as? [String: Any])
        var process = try XCTUnwrap(section["process"] as? [String: Any])
        process["executable"] = "/tmp/app/OtherTool"
        section["process"] = process
        var document = other
        document["coldstart"] = section
        try JSONSerialization.data(withJSONObject: document).write(to: directory.appendingPathComponent("other.json"))

        let pool = try pooled(directory.path)
        XCTAssertEqual(pool.profile.launches, 5)
        XCTAssertEqual(pool.filesRead, 6, "five KnownCosts launches and the other program's")
        XCTAssertEqual(pool.skippedCount, 3)
        XCTAssertEqual(Set(pool.skipped.map { ($0.file as NSString).lastPathComponent }), ["empty.json", "truncated.json", "other.json"])
        let reason = try XCTUnwrap(pool.skipped.first { $0.file.hasSuffix("other.json") }?.reason)
        XCTAssertTrue(reason.contains("OtherTool") && reason.contains("not pooled"), reason)
        XCTAssertTrue(pool.skipped.allSatisfy { !$0.reason.isEmpty })

        let text = try coldstart(["report", "--full", directory.path])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains("5 launches pooled (KnownCosts) of 6 timelines read, 3 files skipped"), text.stdout)
        XCTAssertTrue(text.stdout.contains("Skipped 3 files:"), text.stdout)
    }

    func testADirectoryWithoutASampledLaunchIsAnError() throws {
        let directory = try makeTemporaryDirectory(for: self)
        try Data("not json".utf8).write(to: directory.appendingPathComponent("bad.json"))
        let result = try coldstart(["report", directory.path])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("no sampled launch to pool"), result.stderr)
        XCTAssertTrue(result.stderr.contains("bad.json"), result.stderr)
        XCTAssertEqual(result.stdout, "")

        let html = try coldstart(["report", directory.path, "--html", "out.html"])
        XCTAssertEqual(html.status, 2, "--html is for one file")
        XCTAssertTrue(html.stderr.contains("--html is for one timeline FILE"), html.stderr)
    }
}

/// `coldstart aggregate`'s pooled profile: the same counters, read on any
/// number of threads.
final class AggregatePooledProfileTests: XCTestCase {
    func testAggregatePoolsTheSampledLaunchesOfEachGroupOnAnyNumberOfThreads() throws {
        let directory = try makeTemporaryDirectory(for: self).appendingPathComponent("runs").path
        let run = try coldstart(["run", "-n", "3", "--warmup", "0", "--no-reference", "--out", directory, "--", try FixturePrograms.path("KnownCosts")])
        XCTAssertEqual(run.status, 0, run.stderr)
        let timelines = try (1...3).map { try Timeline(contentsOf: "\(directory)/run-\($0).json") }

        let result = try coldstart(["aggregate", "--json", directory])
        XCTAssertEqual(result.status, 0, result.stderr)
        let summary = try JSONDecoder().decode(AggregateSummary.self, from: Data(result.stdout.utf8))
        let profile = try XCTUnwrap(summary.groups.first?.profile, "the group's pooled profile")
        XCTAssertEqual(profile.launches, 3)
        XCTAssertEqual(profile.unsampledLaunches, 0)
        XCTAssertEqual(profile.samples, timelines.map(\.samples.count).reduce(0, +))
        XCTAssertEqual(profile.bySelf.first?.name, "KnownCosts.burnCPU(milliseconds: UInt64) -> ()")
        XCTAssertEqual(profile.initializers.libraries.first?.module, "libSlowInit.so")
        XCTAssertEqual(profile.lazyGlobals.first?.name, "KnownCosts.slowGlobalTable")
        XCTAssertLessThanOrEqual(profile.bySelf.count, 10, "--top's default")

        // Folded on one thread or three, then merged: the same counts (the
        // ms sums may differ in their last bit with the order of addition).
        func counts(_ profile: PooledProfileReport?) -> [String] {
            guard let profile else { return [] }
            return ["\(profile.launches) \(profile.samples)"]
                + profile.phases.map { "\($0.name) \($0.samples) \($0.launches)" }
                + (profile.bySelf + profile.byTotal).map { "\($0.name) \($0.module) \($0.selfSamples) \($0.totalSamples) \($0.launches)" }
                + profile.initializers.libraries.map { "\($0.module) \($0.samples) \($0.launches)" }
                + profile.lazyGlobals.map { "\($0.name) \($0.samples) \($0.launches)" }
        }
        let one = LaunchAggregate(reading: [directory], exportSuffixes: Exporters.suffixes, threads: 1).summary.groups.first?.profile
        let three = LaunchAggregate(reading: [directory], exportSuffixes: Exporters.suffixes, threads: 3).summary.groups.first?.profile
        XCTAssertEqual(counts(one), counts(three))
        XCTAssertEqual(counts(one), counts(profile))
        XCTAssertEqual(one?.msPerLaunch ?? 0, three?.msPerLaunch ?? -1, accuracy: 1e-9)

        let text = try coldstart(["aggregate", directory])
        XCTAssertTrue(text.stdout.contains("Pooled profile: \(profile.samples) samples from 3 sampled launches"), text.stdout)
    }

    func testALaunchThatWasNotSampledIsCountedNotPooled() throws {
        let file = try makeTemporaryDirectory(for: self).appendingPathComponent("phases.json").path
        let result = try runProcess(try Products.path("ServiceStartup"), environment: ["COLDSTART": file, "COLDSTART_SAMPLER": "off"])
        XCTAssertEqual(result.status, 0, result.stderr)
        var aggregate = LaunchAggregate()
        aggregate.add(try Timeline(contentsOf: file), file: file)
        let group = try XCTUnwrap(aggregate.summary.groups.first)
        XCTAssertNil(group.profile, "no sampled launch: no profile")
        var pool = PooledProfile()
        XCTAssertFalse(pool.add(try Timeline(contentsOf: file), cache: SymbolCache(), path: file))
        XCTAssertEqual(pool.report(top: 5).unsampledLaunches, 1)
        XCTAssertEqual(pool.report(top: 5).launches, 0)
    }
}
