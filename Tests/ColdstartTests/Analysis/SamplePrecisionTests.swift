@testable import ColdstartAnalysis
@testable import ColdstartText
@testable import ColdstartExport
import Foundation
import XCTest

/// How precise sampled figures are, and the report saying so when a launch
/// has too few samples to act on (issue 9, item 4).
final class SamplePrecisionTests: XCTestCase {
    func testIntervalsAreThoseOfAPoissonCount() {
        // The exact 95% bounds (chi-square quantiles ÷ 2), within 2%, and
        // 0.03 for one sample (the approximation is worst there).
        let exact: [(Int, Double, Double)] = [(0, 0, 3.689), (1, 0.0253, 5.572), (5, 1.623, 11.668), (20, 12.217, 30.889), (100, 81.364, 121.627)]
        for (count, low, high) in exact {
            let interval = SamplePrecision.interval(count)
            XCTAssertEqual(interval.low, low, accuracy: count == 1 ? 0.03 : low * 0.02 + 1e-9, "\(count) samples")
            XCTAssertEqual(interval.high, high, accuracy: high * 0.02, "\(count) samples")
        }
        let ms = SamplePrecision.interval(20, msPerSample: 0.5)
        XCTAssertEqual(ms.low, SamplePrecision.interval(20).low * 0.5, accuracy: 1e-12)
        XCTAssertEqual(SamplePrecision.rule(msPerSample: 1), "95% intervals (Poisson): 5 samples 1.6–11.7 ms, 20 samples 12.2–30.9 ms, "
            + "100 samples 81.4–121.6 ms (one unbroken stretch: ±1 sample)")
    }

    /// A 10 ms-like launch at 1 kHz: `count` samples in one app function.
    private func launch(samples count: Int, clockArmedMs: Double? = nil, scanBeganMs: Double? = nil) throws -> LaunchAnalysis {
        var builder = SampledTimelineBuilder()
        builder.clockArmedNs = clockArmedMs.map { Int64($0 * 1e6) }
        builder.scanBeganNs = scanBeganMs.map { Int64($0 * 1e6) }
        let app = builder.module("/opt/app/App")
        // Half the samples in each of two functions: neither is on every
        // stack (which a finding leaves out as plumbing).
        for index in 0..<count {
            builder.sample(at: 20 + Double(index) * 80 / Double(count), [
                .init(module: app, name: "main"), .init(module: app, name: index % 2 == 0 ? "App.loadCatalog()" : "App.parseConfig()"),
            ])
        }
        return try LaunchAnalysis(timeline: builder.timeline())
    }

    func testAThinLaunchSaysSoAndWhatToDo() throws {
        let analysis = try launch(samples: 8)
        let report = analysis.report
        let precision = try XCTUnwrap(report.profile?.precision)
        XCTAssertTrue(precision.tooFew)
        XCTAssertEqual(precision.launchSamples, 8)
        XCTAssertEqual(precision.advice, "pool launches: coldstart run -n 12 --out DIR APP, then coldstart report DIR"
            + "; or sample faster with COLDSTART_HZ=10000 (costs more per launch)")

        // The first screen: right after the findings, in 100 columns.
        let text = report.text(style: TextStyle(width: nil, color: false), full: false)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let notice = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("Too few samples to act on: 8 samples in the launch") }, text)
        XCTAssertLessThan(try XCTUnwrap(lines.firstIndex { $0.hasPrefix("Findings") }), notice)
        XCTAssertTrue(text.contains("coldstart run -n 12 --out DIR APP, then coldstart report DIR"), text)
        XCTAssertTrue(lines.allSatisfy { $0.count <= 100 }, lines.filter { $0.count > 100 }.joined(separator: "\n"))

        // Each sampled finding with the interval of its count.
        let finding = try XCTUnwrap(report.findings?.first { $0.kind == .slowFunction }, "\(report.findings ?? [])")
        XCTAssertEqual(finding.certainty, .samples(4))
        let interval = SamplePrecision.interval(4, msPerSample: 1)
        XCTAssertEqual(try XCTUnwrap(finding.msLow), interval.low, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(finding.msHigh), interval.high, accuracy: 1e-9)
        XCTAssertTrue(text.contains("    95%: \(String(format: "%.1f", interval.low))–\(String(format: "%.1f", interval.high)) ms · called from main · module App"), text)
        XCTAssertTrue(text.contains("  precision: 95% intervals (Poisson): 5 samples 1.6–11.7 ms"), text)

        // The JSON and the page say the same.
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: report.jsonData()) as? [String: Any])
        let profile = try XCTUnwrap(json["profile"] as? [String: Any])
        XCTAssertEqual((profile["precision"] as? [String: Any])?["tooFew"] as? Bool, true)
        let findings = try XCTUnwrap(json["findings"] as? [[String: Any]])
        XCTAssertNotNil(findings.first { $0["kind"] as? String == "slow-function" }?["msHigh"] as? Double)
        let page = HTMLReport.render(analysis, source: "thin.json")
        XCTAssertTrue(page.contains("<p class=\"warn\">Too few samples to act on: 8 samples in the launch"), "no notice on the page")
        XCTAssertTrue(page.contains("4 samples, 95%: "), "no interval on the page's finding")
    }

    /// A quiet kernel held the main thread's clock back 16 ms: the report
    /// says where sampling really began, and what to do.
    func testAClockThatStartedLateIsNamedWithWhatToDo() throws {
        let late = try launch(samples: 80, clockArmedMs: 26).report
        XCTAssertEqual(late.profile?.precision.clockStartedLateMs, 26)
        let text = late.text(style: TextStyle(width: nil, color: false), full: false)
        XCTAssertTrue(text.contains("Sampling began late, at 26.0 ms"), text)
        XCTAssertTrue(text.contains("→ run coldstart keep-warm on this machine"), text)
        XCTAssertTrue(text.contains("or profile with coldstart run"), text)
        let full = late.text(style: TextStyle(width: nil, color: false), full: true)
        XCTAssertTrue(full.contains("Sampled stacks: 80 samples from 10.00 (clock running from 26.00) to "), full)

        // The scan thread ran at once: the kernel's first event held the clock.
        let warmThread = try launch(samples: 80, clockArmedMs: 26, scanBeganMs: 10.3).report
        XCTAssertNil(warmThread.profile?.precision.scanWaitedMs)
        XCTAssertTrue(warmThread.text(style: TextStyle(width: nil, color: false), full: false).contains("the kernel had no perf event open"))

        let onTime = try launch(samples: 80, clockArmedMs: 10.6).report
        XCTAssertNil(onTime.profile?.precision.clockStartedLateMs)
        XCTAssertFalse(onTime.text(style: TextStyle(width: nil, color: false), full: true).contains("began late"))
    }

    /// A busy machine held Coldstart's scan thread back 60 ms (a CI run with
    /// both CPUs taken): the report says so, not that the kernel was quiet.
    func testAClockHeldBackByABusyMachineSaysSo() throws {
        let late = try launch(samples: 80, clockArmedMs: 74, scanBeganMs: 70).report
        XCTAssertEqual(late.profile?.precision.clockStartedLateMs, 74)
        XCTAssertEqual(try XCTUnwrap(late.profile?.precision.scanWaitedMs), 60, accuracy: 1e-9)
        let text = late.text(style: TextStyle(width: nil, color: false), full: false)
        XCTAssertTrue(text.contains("Sampling began late, at 74.0 ms: Coldstart's sampling thread waited 60.0 ms to run (the machine was\n  busy)"), text)
        XCTAssertFalse(text.contains("the kernel had no perf event open"), text)
        XCTAssertFalse(text.contains("keep-warm"), "keeping the kernel warm would not have helped")
    }

    /// A lone 12 ms launch on a quiet kernel: the clock never ran, no
    /// sample at all. The first screen says why instead of nothing.
    func testALaunchWhoseClockNeverRanSaysWhy() throws {
        let report = try launch(samples: 0).report
        XCTAssertNil(report.profile)
        let why = try XCTUnwrap(report.noSamples)
        XCTAssertTrue(why.hasPrefix("No samples: the sampling clock never ran: the launch ended at "), why)
        XCTAssertTrue(why.contains("before its first perf event was open"), why)
        let text = report.text(style: TextStyle(width: nil, color: false), full: false)
        XCTAssertTrue(text.contains("No samples: the sampling clock never ran"), text)
        XCTAssertTrue(text.contains("→ run coldstart keep-warm on this machine"), text)
        XCTAssertTrue(text.contains("profile with coldstart run"), text)
        XCTAssertNil(try launch(samples: 5).report.noSamples)
    }

    /// A clock that ran but took nothing says when it ran and when the
    /// launch ended; a sampled launch has no such reason, and the pool
    /// leaves out a launch whose app clock never ran.
    func testNoSamplesSaysWhatHappenedWithTheNumbers() throws {
        let late = try launch(samples: 0, clockArmedMs: 95).report
        XCTAssertEqual(late.noSamples?.hasPrefix("No samples: the clock ran from 95.0 ms, 85.0 ms after sampling started; the launch ended at 100.0 ms."), true,
                       late.noSamples ?? "")
        var builder = SampledTimelineBuilder()
        XCTAssertEqual(try builder.timeline().unsampledReason?.hasPrefix("the sampling clock never ran: the launch ended at 100.0 ms"), true)
        // A clock the scan thread never opened is not a refused one.
        var unopened = SampledTimelineBuilder()
        unopened.clock = "none"
        let notOpen = try unopened.timeline().unsampledReason ?? ""
        XCTAssertTrue(notOpen.hasPrefix("the sampling clock was not open yet when the launch ended at 100.0 ms"), notOpen)
        var document = unopened.document
        var section = try XCTUnwrap(document["coldstart"] as? [String: Any])
        var sampling = try XCTUnwrap(section["sampling"] as? [String: Any])
        sampling["perfRefused"] = ["errno": 1, "paranoid": 3]
        section["sampling"] = sampling
        document["coldstart"] = section
        let refused = try Timeline(data: JSONSerialization.data(withJSONObject: document))
        XCTAssertEqual(refused.unsampledReason, "no sampling clock could be opened (perf_event_open and the POSIX timers refused)")
        builder.clockArmedNs = 12_000_000
        let app = builder.module("/opt/app/App")
        builder.sample(at: 20, [.init(module: app, name: "main")])
        XCTAssertNil(try builder.timeline().unsampledReason)
    }

    func testALaunchWithEnoughSamplesStaysQuiet() throws {
        let report = try launch(samples: 80).report
        XCTAssertEqual(report.profile?.precision.tooFew, false)
        XCTAssertNil(report.profile?.precision.advice)
        let text = report.text(style: TextStyle(width: nil, color: false), full: false)
        XCTAssertFalse(text.contains("Too few samples"), text)
        XCTAssertFalse(HTMLReport.render(try launch(samples: 80), source: "x.json").contains("Too few samples"))
        // Still every figure's precision, once, in the profile's header.
        XCTAssertTrue(text.contains("  precision: 95% intervals (Poisson)"), text)
    }
}

/// The report's estimate of the launch without Coldstart (issue 9, item 5):
/// its arithmetic on timelines built by hand. How close it comes to real
/// unprofiled launches is `make bench-estimate`'s (a timing, not a test).
final class UnprofiledEstimateTests: XCTestCase {
    /// A 20 ms launch with a 1 ms set-up phase, `samples` main-thread
    /// samples after the earliest init (handlers 5 µs each) and 0.4 ms of
    /// Coldstart's own threads' CPU; `edit` changes the file's `coldstart`
    /// section before it is read.
    private func timeline(samples: Int = 10, edit: (inout [String: Any]) -> Void = { _ in }) throws -> Timeline {
        var builder = SampledTimelineBuilder()
        builder.endNs = 20_000_000
        builder.samplingStartNs = 3_000_000
        builder.phases = [
            ("kernel exec + loader", "loader", 0, 3), ("Coldstart set-up", "profiler", 3, 4),
            ("library initializers", "initializers", 4, 5), ("main → ready", "app", 5, 20),
        ]
        let app = builder.module("/opt/app/App")
        for index in 0..<samples { builder.sample(at: 5.5 + Double(index) * 14 / Double(samples), [.init(module: app, name: "main")]) }
        // The launcher's sample before the earliest init: a perf record, not a signal.
        builder.sample(at: 1, [.init(module: app, name: "_start")])
        var document = builder.document
        var section = document["coldstart"] as! [String: Any]
        var sampling = section["sampling"] as! [String: Any]
        sampling["handlerNs"] = ["median": 4000, "p99": 9000, "max": 9000, "totalNs": 5000 * (samples + 1)]
        sampling["coldstartCpuNs"] = 400_000
        section["sampling"] = sampling
        edit(&section)
        document["coldstart"] = section
        return try Timeline(data: JSONSerialization.data(withJSONObject: document))
    }

    func testSubtractsSetUpSamplesOnThePathAndColdstartsThreads() throws {
        let estimate = UnprofiledEstimate(try timeline(), blocked: nil)
        let perSample = (5000 + UnprofiledEstimate.kernelNsPerSample) / 1e6
        XCTAssertEqual(estimate.parts.map(\.name), ["set-up", "sampling", "Coldstart's threads"])
        XCTAssertEqual(estimate.parts[0].ms, 1, accuracy: 1e-9)
        XCTAssertEqual(estimate.parts[1].ms, 10 * perSample, accuracy: 1e-9, "the 10 signals on the main thread, not the launcher's record")
        // No watcher: anywhere from none to all of the threads' 0.4 ms.
        XCTAssertEqual(estimate.parts[2].ms, 0.2, accuracy: 1e-9)
        XCTAssertEqual(estimate.parts[2].uncertaintyMs, 0.2, accuracy: 1e-9)
        let ms = try XCTUnwrap(estimate.ms)
        XCTAssertEqual(ms, 20 - 1 - 10 * perSample - 0.2, accuracy: 1e-9)
        XCTAssertEqual(estimate.uncertaintyMs, 10 * UnprofiledEstimate.kernelNsUncertainty / 1e6 + 0.2, accuracy: 1e-9)
        XCTAssertNil(estimate.unknown)
        XCTAssertTrue(estimate.text.hasPrefix("without profiling, about \(String(format: "%.2f", ms)) ms ±"), estimate.text)
    }

    /// A launch that outlived the default's 4 kHz boost keeps one boosted
    /// sample in four: each of those stands for four signals the path took.
    func testThinnedBoostedSamplesCountForEverySignalTaken() throws {
        let estimate = UnprofiledEstimate(try timeline { section in
            var sampling = section["sampling"] as! [String: Any]
            sampling["boost"] = ["hz": 4000, "untilNs": 12_000_000, "thinned": true, "afterHz": 1000] as [String: Any]
            section["sampling"] = sampling
        }, blocked: nil)
        // Samples at 5.5 + 1.4 i ms: i = 0…4 fall before 12 ms.
        let perSample = (5000 + UnprofiledEstimate.kernelNsPerSample) / 1e6
        XCTAssertEqual(estimate.parts[1].ms, Double(5 * 4 + 5) * perSample, accuracy: 1e-9)
        XCTAssertTrue(estimate.parts[1].basis.contains(": 25 signals × 45 µs"), estimate.parts[1].basis)
    }

    /// The first 50 ms' samples were recorded by the kernel, with no signal
    /// and no handler: each costs the kernel's record, and the handler's mean
    /// is over the signals' samples alone.
    func testSamplesTheKernelRecordedCostNoSignal() throws {
        let estimate = UnprofiledEstimate(try timeline { section in
            var sampling = section["sampling"] as! [String: Any]
            // Samples at 5.5 + 1.4 i ms: i = 0…4 fall before 12 ms, and so
            // does the launcher's (not on the path).
            sampling["kernelStacks"] = ["samples": 6, "lost": 0, "untilNs": 12_000_000] as [String: Any]
            sampling["handlerNs"] = ["median": 4000, "p99": 9000, "max": 9000, "totalNs": 5000 * 5]
            section["sampling"] = sampling
        }, blocked: nil)
        let record = UnprofiledEstimate.recordNsPerSample, signal = 5000 + UnprofiledEstimate.kernelNsPerSample
        XCTAssertEqual(estimate.parts[1].ms, (5 * record + 5 * signal) / 1e6, accuracy: 1e-9)
        XCTAssertEqual(estimate.parts[1].uncertaintyMs,
                       (5 * UnprofiledEstimate.recordNsUncertainty + 5 * UnprofiledEstimate.kernelNsUncertainty) / 1e6, accuracy: 1e-9)
        XCTAssertTrue(estimate.parts[1].basis.contains("5 recorded by the kernel × ~17±9 µs + 5 signals × 45 µs"), estimate.parts[1].basis)
        // A launch that ended inside the window: every sample was a record.
        let short = UnprofiledEstimate(try timeline { section in
            var sampling = section["sampling"] as! [String: Any]
            sampling["kernelStacks"] = ["samples": 11, "lost": 0, "untilNs": NSNull()] as [String: Any]
            sampling["handlerNs"] = ["median": 0, "p99": 0, "max": 0, "totalNs": 0]
            section["sampling"] = sampling
        }, blocked: nil)
        XCTAssertEqual(short.parts[1].ms, 10 * record / 1e6, accuracy: 1e-9)
    }

    func testColdstartsThreadsCountOnlyWherePathWaitedForACPU() {
        // Waited 3 ms for one of 2 CPUs in a 20 ms window, 1 ms of Coldstart CPU:
        // at most 1 ms, at least 3 × 1 / (2 × 20).
        let part = UnprofiledEstimate.competition(cpuMs: 1, waitMs: 3, cpus: 2, wallMs: 20)
        XCTAssertEqual(part.ms, (1 + 0.075) / 2, accuracy: 1e-9)
        XCTAssertEqual(part.uncertaintyMs, (1 - 0.075) / 2, accuracy: 1e-9)
        // A path that never waited for a CPU was not delayed.
        let idle = UnprofiledEstimate.competition(cpuMs: 1, waitMs: 0, cpus: 2, wallMs: 20)
        XCTAssertEqual(idle.ms, 0)
        XCTAssertEqual(idle.uncertaintyMs, 0)
    }

    /// The timeline as one written before the set-up phase was recorded
    /// (or by the launcher for a program without Coldstart): no such phase.
    private static func dropSetUpPhase(_ section: inout [String: Any]) {
        var phases = section["phases"] as! [[String: Any]]
        phases.remove(at: 1)
        phases[1]["startNs"] = 3_000_000
        section["phases"] = phases
    }

    func testSaysWhyWhenItCannotKnow() throws {
        // A start known to a 10 ms clock tick.
        let ticks = UnprofiledEstimate(try timeline { section in
            var launch = section["launch"] as! [String: Any]
            launch["startSource"] = "proc-stat"
            launch["startPrecisionNs"] = 10_000_000
            section["launch"] = launch
        }, blocked: nil)
        XCTAssertNil(ticks.ms)
        XCTAssertTrue(try XCTUnwrap(ticks.unknown).contains("start time (/proc starttime in clock ticks"), ticks.unknown ?? "")
        XCTAssertTrue(ticks.text.hasPrefix("without profiling: somewhere in "), ticks.text)

        // coldstart run sampled the loader: its cost is not timed.
        let sampledLoader = UnprofiledEstimate(try timeline { section in
            section["launcher"] = ["mode": "linked", "samples": 40, "audit": ["versionNs": 1000]] as [String: Any]
        }, blocked: nil)
        XCTAssertNil(sampledLoader.ms)
        XCTAssertNil(sampledLoader.lowMs)
        XCTAssertTrue(try XCTUnwrap(sampledLoader.unknown).contains("--no-sample-loader"))

        // A program without Coldstart: the launcher's perf records are no
        // signals to it, and nothing of ours ran in it to subtract.
        let unlinked = UnprofiledEstimate(try timeline { section in
            section["launcher"] = ["mode": "not linked", "samples": 40, "audit": ["versionNs": 1000]] as [String: Any]
            Self.dropSetUpPhase(&section)
        }, blocked: nil)
        XCTAssertNil(unlinked.ms)
        XCTAssertEqual(unlinked.parts.map(\.name), [])
        let reason = try XCTUnwrap(unlinked.unknown)
        XCTAssertTrue(reason.hasPrefix("the program ran under coldstart run's perf events"), reason)
        XCTAssertFalse(reason.contains("set-up"), reason)

        // A timeline from before the set-up phase was recorded.
        let old = UnprofiledEstimate(try timeline(edit: Self.dropSetUpPhase), blocked: nil)
        XCTAssertNil(old.ms)
        XCTAssertTrue(try XCTUnwrap(old.unknown).contains("no 'Coldstart set-up' phase"))

        // Too many samples for a short launch: ±10% is out of reach.
        let dense = UnprofiledEstimate(try timeline(samples: 100), blocked: nil)
        XCTAssertNil(dense.ms)
        XCTAssertTrue(try XCTUnwrap(dense.unknown).hasPrefix("not known to 10%"), dense.unknown ?? "")
    }
}
