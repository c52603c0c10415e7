@testable import ColdstartAnalysis
@testable import ColdstartExport
import Foundation
import XCTest

/// `coldstart report` names how the launch was profiled in its first lines
/// (text, JSON, HTML), and splits each phase's CPU into sampled user time
/// and kernel time that add up (docs/before-main.md).
final class LaunchModeTests: XCTestCase {

    /// The report of `timeline` as text (first look), JSON and HTML.
    private func reports(_ timeline: String, in dir: String) throws -> (text: [String], json: [String: Any], html: String) {
        let text = try coldstart(["report", timeline])
        XCTAssertEqual(text.status, 0, text.stderr)
        let json = try coldstart(["report", timeline, "--json"])
        XCTAssertEqual(json.status, 0, json.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let html = try coldstart(["report", timeline, "--html", dir + "/report.html"])
        XCTAssertEqual(html.status, 0, html.stderr)
        return (text.stdout.components(separatedBy: "\n"), object, try String(contentsOfFile: dir + "/report.html", encoding: .utf8))
    }

    private func assertMode(_ mode: String, _ phrase: String, timeline: String, dir: String,
                            file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let (text, json, html) = try reports(timeline, in: dir)
        XCTAssertTrue(text.count > 1 && text[1].hasPrefix("  mode: ") && text[1].contains(phrase), "\(text.prefix(3))", file: file, line: line)
        let launch = try XCTUnwrap(json["launch"] as? [String: Any], file: file, line: line)
        XCTAssertEqual(launch["mode"] as? String, mode, file: file, line: line)
        XCTAssertTrue((launch["modeDescription"] as? String)?.contains(phrase) == true, file: file, line: line)
        // Right under the title, before the findings.
        let title = try XCTUnwrap(html.range(of: "</h1>"), file: file, line: line)
        let modeLine = try XCTUnwrap(html.range(of: "<p class=\"mode\">Mode: "), "no mode line in the HTML", file: file, line: line)
        XCTAssertTrue(title.upperBound <= modeLine.lowerBound && modeLine.lowerBound < (html.range(of: "id=\"findings\"")?.lowerBound ?? html.endIndex),
                      file: file, line: line)
        // The command in backticks is set as code on the page.
        XCTAssertTrue(html[modeLine.upperBound...].hasPrefix(HTMLPage.prose(phrase)), file: file, line: line)
        return json
    }

    private func phases(_ json: [String: Any]) throws -> [[String: Any]] {
        try XCTUnwrap(json["phases"] as? [[String: Any]])
    }

    /// A phase's user + kernel split adds up to its CPU time where that is known.
    /// `kernelBusy`: the phase is known to spend much of its CPU in the
    /// kernel (exec, mapping and faulting in the libraries: about half).
    private func assertSplitAddsUp(_ phase: [String: Any], kernelBusy: Bool = false, kernelSampled: Bool,
                                   file: StaticString = #filePath, line: UInt = #line) throws {
        let kernel = try XCTUnwrap(phase["kernel"] as? [String: Any], "\(phase["name"] ?? "?") has no kernel share", file: file, line: line)
        let user = try XCTUnwrap(kernel["userMs"] as? Double), system = try XCTUnwrap(kernel["kernelMs"] as? Double)
        XCTAssertGreaterThanOrEqual(user, 0, file: file, line: line)
        XCTAssertGreaterThanOrEqual(system, 0, file: file, line: line)
        if kernelBusy {
            XCTAssertGreaterThan(kernel["kernelPercent"] as? Double ?? 0, 10, "exec, mmap and page faults are kernel time", file: file, line: line)
        }
        // Coldstart's own CPU and the kernel's exit after the last sample are apart.
        let apart = (kernel["coldstartMs"] as? Double ?? 0) + (kernel["exitMs"] as? Double ?? 0)
        if let cpu = (phase["usage"] as? [String: Any])?["cpuMs"] as? Double {
            XCTAssertEqual(user + system + apart, cpu, accuracy: 0.001, file: file, line: line)
        }
        XCTAssertEqual(kernel["source"] as? String, kernelSampled ? "kernel samples" : "rusage", file: file, line: line)
    }

    func testProgramWithoutColdstartUnderRun() throws {
        let dir = try makeTemporaryDirectory(for: self).path
        let run = try coldstart(["run", "-n", "1", "--warmup", "0", "--hz", "5000", "--out", dir, "--", try FixturePrograms.path("FoundationTool")])
        XCTAssertEqual(run.status, 0, run.stderr)
        let json = try assertMode("run-unlinked", "not linked with Coldstart, under `coldstart run`", timeline: dir + "/run-1.json", dir: dir)
        let rows = try phases(json)
        XCTAssertEqual(rows.map { $0["kind"] as? String }, ["loader", "initializers", "app"])
        // Every phase has kernel-mode samples when the kernel allows them
        // (root, or paranoid ≤ 1); main → exit has getrusage at both ends too.
        let timeline = try Timeline(contentsOf: dir + "/run-1.json")
        let launcher = try XCTUnwrap((timeline.document["coldstart"] as? [String: Any])?["launcher"] as? [String: Any])
        try assertSplitAddsUp(rows[2], kernelSampled: launcher["kernelSamples"] != nil)
        if launcher["kernelSamples"] != nil {
            try assertSplitAddsUp(rows[0], kernelBusy: true, kernelSampled: true)
        } else {
            XCTAssertNil(rows[0]["kernel"], "no kernel figure without kernel samples or getrusage")
        }
        // The before-main section and the loader statistics are in the JSON and the page.
        XCTAssertNotNil(json["beforeMain"])
        let page = try String(contentsOfFile: dir + "/report.html", encoding: .utf8)
        XCTAssertTrue(page.contains("<section id=\"beforemain\">") && page.contains("Loader statistics"))
        XCTAssertTrue(page.contains("<th class=\"num\">kernel ms</th>"), "the phase table splits CPU into user and kernel")
        let statistics = try XCTUnwrap(json["loaderStatistics"] as? [String: Any])
        XCTAssertGreaterThan(statistics["symbolic"] as? Int ?? 0, 1000)
    }

    func testLinkedAppUnderRunAndOnItsOwn() throws {
        let app = try Products.path("ServiceStartup")
        let dir = try makeTemporaryDirectory(for: self).path
        // 10 kHz: a phase needs 10 periods of CPU for a split (the loader's ~5 ms).
        let run = try coldstart(["run", "-n", "1", "--warmup", "0", "--hz", "10000", "--out", dir, "--", app])
        XCTAssertEqual(run.status, 0, run.stderr)
        let sampled = try assertMode("run-linked", "linked with Coldstart, under `coldstart run`: loader sampled", timeline: dir + "/run-1.json", dir: dir)
        // The loader phase: the launcher's kernel-mode samples where the kernel
        // allows them, else getrusage at the earliest init less its user samples.
        let loader = try XCTUnwrap(try phases(sampled).first { $0["kind"] as? String == "loader" })
        let launcher = (try Timeline(contentsOf: dir + "/run-1.json").document["coldstart"] as? [String: Any])?["launcher"] as? [String: Any]
        try assertSplitAddsUp(loader, kernelBusy: true, kernelSampled: launcher?["kernelSamples"] != nil)
        try assertSplitAddsUp(try XCTUnwrap(try phases(sampled).last { $0["kind"] as? String == "app" }), kernelSampled: false)

        let alone = dir + "/alone.json"
        let result = try runProcess(app, environment: ["COLDSTART": alone, "COLDSTART_SPAWN_NS": nil])
        XCTAssertEqual(result.status, 0, result.stderr)
        let json = try assertMode("linked", "linked with Coldstart, on its own: start estimated", timeline: alone, dir: dir)
        let rows = try phases(json)
        XCTAssertNil(rows.first { $0["kind"] as? String == "loader" }?["kernel"], "the loader was not sampled: no user time known")
        XCTAssertNil(json["beforeMain"], "no launcher, no launcher section")
    }

    func testAHostileLauncherSectionIsReadWithoutCrashing() throws {
        var builder = SampledTimelineBuilder()
        let app = builder.module("/opt/app/App")
        builder.sample(at: 21, [.init(module: app, name: "main")])
        var document = builder.document
        var section = document["coldstart"] as! [String: Any]
        let dir = try makeTemporaryDirectory(for: self).path
        XCTAssertTrue(FileManager.default.createFile(atPath: dir + "/not-elf.so", contents: Data("not an ELF file".utf8)))
        section["launcher"] = [
            "mode": "not linked",
            "kernelSamples": [["x"], [], [Int64.max, 1], [-5, "tid"]] as [Any],
            "audit": ["objects": [["path": "/dev/zero"], ["path": dir], ["path": dir + "/not-elf.so"], ["path": "/no/such.so"], ["ns": 3]]],
        ] as [String: Any]
        document["coldstart"] = section
        let timeline = try Timeline(data: JSONSerialization.data(withJSONObject: document), path: "hostile.json")
        let report = try LaunchAnalysis(timeline: timeline).report
        XCTAssertEqual(report.launch.mode, .runUnlinked)
        XCTAssertNil(report.loaderStatistics, "no readable object: no statistics")
        _ = report.text(full: true)
    }

    /// A program without Coldstart at 1 kHz (1 ms a sample): 8 user samples
    /// in the loader, 6 in the initializers, 30 in `main`; 30 ms of CPU at
    /// `main`, 40 ms in the app phase.
    /// `audit`: the launcher section's `audit` entry.
    private func unlinkedTimeline(kernelSamples: [Double]?, coldstartsKernelSamples: Set<Int> = [],
                                  audit: [String: Any]? = nil) throws -> Timeline {
        var builder = SampledTimelineBuilder()
        builder.samplingStartNs = 0
        builder.phases = [("kernel exec + loader", "loader", 0, 10), ("library initializers", "initializers", 10, 20),
                          ("main → exit(0)", "app", 20, 100)]
        let app = builder.module("/opt/app/App")
        let loaderMs: [Double] = (0..<8).map { 0.5 + Double($0) }
        let initializerMs: [Double] = (0..<6).map { 10.5 + Double($0) }
        let mainMs: [Double] = (0..<30).map { 20.5 + Double($0) * 2 }
        for ms in loaderMs + initializerMs + mainMs {
            builder.sample(at: ms, [.init(module: app, name: "f")])
        }
        var document = builder.document
        var section = document["coldstart"] as! [String: Any]
        func usage(cpuMs: Int64) -> [String: Any] {
            ["minorFaults": 0, "majorFaults": 0, "voluntarySwitches": 0, "involuntarySwitches": 0,
             "userNs": cpuMs * 1_000_000 / 2, "systemNs": cpuMs * 1_000_000 / 2]
        }
        var phases = section["phases"] as! [[String: Any]]
        phases[2]["rusage"] = usage(cpuMs: 40)
        section["phases"] = phases
        section["rusage"] = [usage(cpuMs: 30).merging(["at": "main", "ns": Int64(20_000_000)]) { a, _ in a }]
        var launcher: [String: Any] = ["mode": "not linked"]
        if let kernelSamples {
            launcher["kernelSamples"] = kernelSamples.enumerated().map { [Int64($1 * 1e6), 4242, coldstartsKernelSamples.contains($0) ? 1 : 0] }
        }
        launcher["audit"] = audit
        section["launcher"] = launcher
        document["coldstart"] = section
        return try Timeline(data: JSONSerialization.data(withJSONObject: document), path: "unlinked.json")
    }

    func testKernelSharePerPhaseAddsUpToTheCPUTime() throws {
        // Kernel-mode samples: 9 in the loader, 4 in the initializers. The 3 ms
        // of CPU before main no sample saw (the launcher's fork child) are
        // Coldstart's, in the loader phase.
        let kernelMs: [Double] = (0..<9).map { 0.7 + Double($0) } + [11.1, 12.1, 13.1, 14.1]
        let sampled = KernelShare.phases(try unlinkedTimeline(kernelSamples: kernelMs))
        let loader = try XCTUnwrap(sampled[0]), initializers = try XCTUnwrap(sampled[1]), app = try XCTUnwrap(sampled[2])
        XCTAssertEqual([loader.userMs, loader.kernelMs, initializers.userMs, initializers.kernelMs], [8, 9, 6, 4])
        XCTAssertEqual(loader.coldstartMs, 3)
        XCTAssertNil(initializers.coldstartMs)
        XCTAssertEqual(loader.userMs + loader.kernelMs + (loader.coldstartMs ?? 0) + initializers.userMs + initializers.kernelMs, 30,
                       "getrusage at main")
        XCTAssertEqual(loader.source, "kernel samples")
        XCTAssertEqual(initializers.kernelPercent, 40, accuracy: 1e-9)
        // The kernel-mode samples here too (none): the 10 ms of wait4's CPU
        // after the last sample are the kernel's exit, apart, as perf's task
        // clock does not see them either.
        XCTAssertEqual([app.userMs, app.kernelMs], [30, 0])
        XCTAssertEqual(app.exitMs, 10)
        XCTAssertEqual(app.kernelPercent, 0)
        XCTAssertEqual(app.source, "kernel samples")

        // User mode only (perf_event_paranoid refused kernel mode): no split
        // before main per phase, only before main as a whole.
        let userOnly = try unlinkedTimeline(kernelSamples: nil)
        let phases = KernelShare.phases(userOnly)
        XCTAssertNil(phases[0])
        XCTAssertNil(phases[1])
        XCTAssertEqual(phases[2]?.kernelMs, 10)
        let beforeMain = try XCTUnwrap(KernelShare.beforeMain(userOnly))
        XCTAssertEqual([beforeMain.userMs, beforeMain.kernelMs], [14, 16])
        XCTAssertEqual(BeforeMain(userOnly)?.beforeMainKernel?.kernelMs, 16)
        XCTAssertNil(BeforeMain(try unlinkedTimeline(kernelSamples: kernelMs))?.beforeMainKernel, "not when the phases are split")

        // Kernel-mode samples the launcher marked Coldstart's (the kernel
        // writing its page-fault and mmap records on the program's thread:
        // 2 of the loader's 9) are counted apart, as its fork child is: the
        // loader of swift-format --version read 40.7% kernel with them,
        // 38.4% without, against perf's 36.8%.
        let marked = KernelShare.phases(try unlinkedTimeline(kernelSamples: kernelMs, coldstartsKernelSamples: [2, 5]))
        let ownLoader = try XCTUnwrap(marked[0])
        XCTAssertEqual([ownLoader.userMs, ownLoader.kernelMs, ownLoader.coldstartMs], [8, 7, 5])
        XCTAssertEqual(ownLoader.kernelPercent, 700.0 / 15, accuracy: 1e-9)
        XCTAssertEqual(marked[1]?.kernelMs, 4)
    }

    /// ld.so loading the LD_AUDIT module and its namespace's libc, from the
    /// module's first mapping to its la_version, is Coldstart's, user and
    /// kernel mode: perf's launch of the program has no audit module. It
    /// kept swift-format --version's loader 2.5 points above perf.
    /// The LD_AUDIT module logs every la_objopen, also a library dlopen'ed
    /// after main (libunwind, by Coldstart's own threads): it was named the
    /// slowest of the loader's objects, its gap since the loader's last
    /// mapping (issue 39, item 3). Only mappings before main are the loader's.
    func testObjectsMappedAfterMainAreNotTheLoaders() throws {
        var document = try unlinkedTimeline(kernelSamples: nil, audit: ["moduleMappedNs": 400_000, "versionNs": 2_200_000]).document
        var section = document["coldstart"] as! [String: Any]
        let mainNs = try XCTUnwrap((section["launch"] as? [String: Any])?["mainNs"] as? Int)
        var launcher = section["launcher"] as! [String: Any]
        var audit = launcher["audit"] as! [String: Any]
        audit["objects"] = [["path": "-", "ns": 2_500_000], ["path": "/usr/lib/x86_64-linux-gnu/libc.so.6", "ns": 3_000_000],
                            ["path": "/usr/lib/x86_64-linux-gnu/libunwind-x86_64.so.8", "ns": mainNs + 4_000_000]]
        launcher["audit"] = audit
        section["launcher"] = launcher
        document["coldstart"] = section
        let timeline = try Timeline(data: JSONSerialization.data(withJSONObject: document), path: "dlopen-after-main.json")
        let beforeMain = try XCTUnwrap(BeforeMain(timeline))
        XCTAssertEqual(beforeMain.mapped.map(\.name).sorted(), ["(the executable)", "libc.so.6"])
    }

    func testLoadingTheAuditModuleIsColdstarts() throws {
        // 0.4–2.2 ms: the user samples at 0.5 and 1.5 ms, the kernel samples
        // at 0.7 and 1.7 ms (one marked already) and one fault of the
        // loader's 9 user, 9 kernel samples; the second fault is the program's.
        let kernelMs: [Double] = (0..<9).map { 0.7 + Double($0) } + [11.1, 12.1, 13.1, 14.1]
        let audit: [String: Any] = ["moduleMappedNs": 400_000, "versionNs": 2_200_000, "preinitNs": 19_000_000]
        var document = try unlinkedTimeline(kernelSamples: kernelMs, coldstartsKernelSamples: [1, 5], audit: audit).document
        var section = document["coldstart"] as! [String: Any]
        var launcher = section["launcher"] as! [String: Any]
        launcher["faultPeriod"] = 1
        launcher["faultFiles"] = ["/usr/lib/libc.so.6"]
        launcher["faults"] = [[Int64(1_000_000), 4242, -1, 0x1000, 0, 0x1000], [Int64(3_000_000), 4242, -1, 0x2000, 0, 0x2000]]
        section["launcher"] = launcher
        document["coldstart"] = section
        let timeline = try Timeline(data: JSONSerialization.data(withJSONObject: document), path: "audited.json")
        XCTAssertEqual(LauncherTimeline.auditLoading(launcher), 400_000..<2_200_000)

        let phases = KernelShare.phases(timeline)
        let loader = try XCTUnwrap(phases[0])
        // User 8 − 2, kernel 9 − 2 in the window − 1 marked after it;
        // Coldstart's: 3 ms no sample saw + 2 + 2 + 1.
        XCTAssertEqual([loader.userMs, loader.kernelMs, loader.coldstartMs], [6, 6, 8])
        XCTAssertEqual(loader.userSamples, 6)
        XCTAssertEqual(loader.kernelPercent, 50, accuracy: 1e-9)
        XCTAssertEqual(loader.userMs + loader.kernelMs + (loader.coldstartMs ?? 0) + (phases[1]?.userMs ?? 0) + (phases[1]?.kernelMs ?? 0), 30,
                       "getrusage at main")
        XCTAssertEqual([phases[1]?.userMs, phases[1]?.kernelMs], [6, 4], "no window there")

        let beforeMain = try XCTUnwrap(BeforeMain(timeline))
        let faults = beforeMain.phaseFaults[0]
        XCTAssertEqual(faults.faults, 1)
        XCTAssertEqual(faults.coldstarts, 1)
        // The loader's samples and functions are the split's population: the
        // window's 2 user samples apart, as Coldstart's.
        XCTAssertEqual(beforeMain.loaderSamples, loader.userSamples)
        XCTAssertEqual(beforeMain.loaderColdstartsSamples, 2)
        XCTAssertEqual(beforeMain.loaderFunctions.map(\.count), [6])
        XCTAssertEqual(beforeMain.loaderFunctions.map(\.ms), [6])
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: JSONEncoder().encode(beforeMain)) as? [String: Any])
        XCTAssertEqual([json["loaderSamples"] as? Int, json["loaderColdstartsSamples"] as? Int], [6, 2])
        let text = beforeMain.text()
        XCTAssertTrue(text.contains("  kernel exec + loader: 10.00 ms, 6 samples of the main thread (and Coldstart's 2: ld.so loading its LD_AUDIT module "
            + "and the module's callbacks)\n"), text)
        XCTAssertTrue(text.contains("  loader functions (self, samples × period; Coldstart's 2 samples left out): f 6.00 ms\n"), text)
        XCTAssertTrue(text.contains("    kernel exec + loader: 1 (and Coldstart's 1: ld.so loading its LD_AUDIT module); files libc.so.6 1;"), text)
        XCTAssertTrue(text.contains("kernel exec + loader 6.00 + 6.00 ms (50% kernel; Coldstart's 8.00 ms)"), text)
        let unaudited = try XCTUnwrap(BeforeMain(try unlinkedTimeline(kernelSamples: kernelMs))).text()
        XCTAssertTrue(unaudited.contains("  kernel exec + loader: 10.00 ms, 8 samples of the main thread\n"), unaudited)
        XCTAssertTrue(unaudited.contains("  loader functions (self, samples × period): f 8.00 ms\n"), unaudited)

        // Without la_version's stamp there is no window.
        let unstamped = try unlinkedTimeline(kernelSamples: kernelMs, coldstartsKernelSamples: [1, 5], audit: ["moduleMappedNs": 400_000])
        XCTAssertEqual(KernelShare.phases(unstamped)[0]?.coldstartMs, 5)
        XCTAssertNil(BeforeMain(unstamped)?.loaderColdstartsSamples)
    }

    /// User mode only (the kernel refused kernel-mode samples), before main
    /// as a whole: the window's user samples are Coldstart's, as in the
    /// per-phase split, and so is its kernel part, which no sample saw: its
    /// wall time less its user samples.
    func testLoadingTheAuditModuleIsColdstartsInUserModeOnly() throws {
        // 0.4–2.2 ms: the user samples at 0.5 and 1.5 ms cover its 1.8 ms.
        let audited = try unlinkedTimeline(kernelSamples: nil, audit: ["moduleMappedNs": 400_000, "versionNs": 2_200_000])
        let split = try XCTUnwrap(KernelShare.beforeMain(audited))
        XCTAssertEqual([split.userMs, split.kernelMs, split.coldstartMs], [12, 16, 2])
        XCTAssertEqual(split.userSamples, 12)
        let beforeMain = try XCTUnwrap(BeforeMain(audited))
        XCTAssertEqual([beforeMain.loaderSamples, beforeMain.loaderColdstartsSamples], [6, 2])
        let text = beforeMain.text()
        XCTAssertTrue(text.contains("  before main: 12.00 + 16.00 ms of CPU in user + kernel mode (57% kernel: getrusage at main less user samples "
            + "× period and Coldstart's 2.00 ms: ld.so loading its LD_AUDIT module, by wall time, and the module's callbacks)\n"), text)

        // 7.6–9.9 ms: no user sample in its 2.3 ms, all of it kernel mode.
        let unsampled = try unlinkedTimeline(kernelSamples: nil, audit: ["moduleMappedNs": 7_600_000, "versionNs": 9_900_000])
        let kernel = try XCTUnwrap(KernelShare.beforeMain(unsampled))
        XCTAssertEqual(kernel.userMs, 14)
        XCTAssertEqual(kernel.kernelMs, 13.7, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(kernel.coldstartMs), 2.3, accuracy: 1e-9)
        XCTAssertNil(BeforeMain(unsampled)?.loaderColdstartsSamples)

        let plain = try XCTUnwrap(BeforeMain(try unlinkedTimeline(kernelSamples: nil))).text()
        XCTAssertTrue(plain.contains("  before main: 14.00 + 16.00 ms of CPU in user + kernel mode (53% kernel: getrusage at main less user samples "
            + "× period)\n"), plain)
    }

    /// The fault list's heading said "(1 sample per 1)": every fault is counted.
    func testThePageFaultHeadingSaysWhatWasCounted() throws {
        var document = try unlinkedTimeline(kernelSamples: nil).document
        var section = document["coldstart"] as! [String: Any]
        var launcher = section["launcher"] as! [String: Any]
        launcher["faultPeriod"] = 1
        launcher["faultFiles"] = ["[anon]"]
        launcher["faults"] = [[Int64(1_000_000), 4242, 0, 0x1000, 0, 0]]
        section["launcher"] = launcher
        document["coldstart"] = section
        let timeline = try Timeline(data: JSONSerialization.data(withJSONObject: document))
        let text = try XCTUnwrap(BeforeMain(timeline)).text()
        XCTAssertTrue(text.contains("  page faults in user mode by phase (every fault):\n"), text)
        XCTAssertFalse(text.contains("sample per"), text)
    }

    func testAPoolSumsEachLaunchsSplitOfAPhaseTooShortForOne() throws {
        // Kernel-mode samples: 1 in the initializers (6 user samples there), so
        // one launch has 7 periods there, under the floor of 10; two have 14.
        let kernelMs: [Double] = (0..<9).map { 0.7 + Double($0) } + [11.1]
        let one = try unlinkedTimeline(kernelSamples: kernelMs)
        XCTAssertNil(KernelShare.phases(one)[1], "7 periods: no split for one launch")
        var pool = PooledProfile()
        for _ in 0..<2 { XCTAssertTrue(pool.add(one, cache: SymbolCache(), path: "unlinked.json")) }
        let initializers = try XCTUnwrap(pool.report(top: 5).phases.first { $0.kind == "initializers" }?.kernel)
        XCTAssertEqual([initializers.userMs, initializers.kernelMs], [6, 1], "per launch")
        XCTAssertEqual(initializers.userSamples, 12)
        XCTAssertEqual(initializers.source, "pooled over 2 launches")
        // Coldstart's own and the exit stay apart in the pool, per launch.
        let report = pool.report(top: 5)
        XCTAssertEqual(report.phases.first { $0.kind == "loader" }?.kernel?.coldstartMs, 6, "the CPU before main no sample saw: 30 ms less 24 sampled")
        XCTAssertEqual(report.phases.first { $0.kind == "app" }?.kernel?.exitMs, 10, "wait4's CPU after the last sample")
        XCTAssertEqual(report.phases.first { $0.kind == "initializers" }?.kernel?.coldstartMs, nil)
    }
}
