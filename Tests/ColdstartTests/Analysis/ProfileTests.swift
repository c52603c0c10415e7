@testable import ColdstartAnalysis
import ColdstartExport
import Foundation
import XCTest

final class ProfileTests: XCTestCase {
    typealias Frame = SampledTimelineBuilder.Frame

    private var builder = SampledTimelineBuilder()
    private var exe = 0, libc = 0, loader = 0, swiftCore = 0

    override func setUp() {
        builder = SampledTimelineBuilder()
        exe = builder.module("/opt/app/App")
        libc = builder.module("/usr/lib/x86_64-linux-gnu/libc.so.6")
        loader = builder.module("/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
        swiftCore = builder.module("/opt/swift/usr/lib/swift/linux/libswiftCore.so")
    }

    private func f(_ module: Int, _ name: String, _ system: String? = nil) -> Frame {
        Frame(module: module, name: name, system: system)
    }

    private func report(_ options: ProfileOptions = ProfileOptions()) throws -> ProfileReport {
        try profileReport(builder.timeline(), options: options, debugDirectory: nil)
    }

    private func row(_ rows: [ProfileReport.FunctionTime], _ name: String, file: StaticString = #filePath, line: UInt = #line) throws
        -> ProfileReport.FunctionTime {
        try XCTUnwrap(rows.first { $0.name == name }, "\(name) in \(rows.map(\.name))", file: file, line: line)
    }

    // MARK: Functions

    /// A short launch sampled at the default rate ends inside the boosted
    /// start: its file says so, every sample is one boost period (0.25 ms at
    /// 4 kHz), and the report weighs them so.
    func testSamplesOfABoostedStartStandForTheBoostPeriod() throws {
        builder.requestedHz = 4000
        builder.hz = 4000
        builder.boost = ["hz": 4000, "untilNs": 60_000_000, "thinned": false, "afterHz": 1000]
        let main = f(exe, "main"), decode = f(exe, "decode")
        for ms in stride(from: 21.0, to: 23.0, by: 0.25) { builder.sample(at: ms, [main, decode]) }
        builder.sample(at: 23, [main])
        let timeline = try builder.timeline()
        XCTAssertEqual(timeline.sampling?.boost?.thinned, false)
        XCTAssertEqual(timeline.sampling?.boost?.afterHz, 1000)
        let report = try report()
        XCTAssertEqual(report.sampling.msPerSample, 0.25)
        XCTAssertEqual(report.overall.samples, 9)
        XCTAssertEqual(report.overall.ms, 2.25)
        XCTAssertEqual(try row(report.overall.bySelf, "decode").selfMs, 2.0)
    }

    /// Half the app phase's CPU is the kernel's: the perf clock's user-mode
    /// samples are 500 per CPU second, but each is one asked period (1 ms)
    /// of user CPU, so a function's time is not inflated by the kernel's and
    /// the phase's user + kernel split adds up to its CPU.
    func testAPerfSampleIsOneAskedPeriodOfUserCPUWhenHalfTheCPUIsTheKernels() throws {
        builder.hz = 500  // 20 samples ÷ 40 ms of CPU
        let main = f(exe, "main"), work = f(exe, "work")
        for index in 0..<20 { builder.sample(at: 20.5 + Double(index) * 4, [main, work]) }
        var document = builder.document
        var section = document["coldstart"] as! [String: Any]
        var phases = section["phases"] as! [[String: Any]]
        // main → ready: 40 ms of CPU, 20 of them in the kernel.
        let usage: [String: Any] = ["minorFaults": 0, "majorFaults": 0, "voluntarySwitches": 0, "involuntarySwitches": 0,
                                    "userNs": 20_000_000, "systemNs": 20_000_000]
        phases[2]["endNs"] = 100_000_000
        phases[2]["rusage"] = usage
        section["phases"] = Array(phases.prefix(3))
        document["coldstart"] = section
        let timeline = try Timeline(data: JSONSerialization.data(withJSONObject: document))
        let report = try profileReport(timeline, options: ProfileOptions(), debugDirectory: nil)

        XCTAssertEqual(report.sampling.msPerSample, 1)
        XCTAssertEqual(try row(report.overall.byTotal, "work").totalMs, 20, "20 samples × 1 ms, not × 2 ms (1 / 500 Hz)")
        let split = try XCTUnwrap(KernelShare.phases(timeline)[2])
        XCTAssertEqual([split.userMs, split.kernelMs], [20, 20])
        XCTAssertEqual(split.userMs, try XCTUnwrap(report.phases.first { $0.name == "main → config loaded" }).functions.ms, "the split's user time is the sampled time")
        XCTAssertEqual(split.userMs + split.kernelMs, 40, "the phase's CPU")
        XCTAssertTrue(report.text().contains("every time below is samples × 1.000 ms (one period of the perf task clock: user-mode CPU; "
                                             + "the kernel's share is in the phase table)"))

        // A POSIX timer counts user and system CPU: its sample is a period of the rate achieved.
        builder.clock = "posix-cpu-timer"
        XCTAssertEqual(try self.report().sampling.msPerSample, 2)
    }

    /// The builder's `coldstart` section with its first three phases, the
    /// third (20–100 ms) with 40 ms of CPU by getrusage.
    private func fortyMsAppPhase(_ document: [String: Any]) -> [String: Any] {
        var section = document["coldstart"] as! [String: Any]
        var phases = section["phases"] as! [[String: Any]]
        phases[2]["endNs"] = 100_000_000
        phases[2]["rusage"] = ["minorFaults": 0, "majorFaults": 0, "voluntarySwitches": 0, "involuntarySwitches": 0,
                               "userNs": 30_000_000, "systemNs": 10_000_000] as [String: Any]
        section["phases"] = Array(phases.prefix(3))
        return section
    }

    /// Coldstart's own threads (the scan thread unwinding, the watcher
    /// reading /proc) are in the process's getrusage but are not the host's:
    /// 15 ms of their CPU in a phase of 40 ms with 20 ms of user samples
    /// leave the host 5 ms of kernel time, not 20.
    func testColdstartsOwnThreadsCPUIsCountedApartFromTheHostsKernelTime() throws {
        builder.hz = 1000
        let main = f(exe, "main"), work = f(exe, "work")
        for index in 0..<20 { builder.sample(at: 20.5 + Double(index) * 4, [main, work]) }
        var document = builder.document
        var section = fortyMsAppPhase(document)
        // The scan thread: 2 ms before the phase, 12 in it (its CPU at the
        // phase's start and end read between two points), the watcher 3 in
        // it; 5 ms after its end.
        section["ownThreads"] = [
            ["tid": 901, "cpu": [[5_000_000, 0], [20_000_000, 2_000_000], [40_000_000, 8_000_000], [80_000_000, 12_000_000],
                                 [100_000_000, 14_000_000], [120_000_000, 19_000_000]]],
            ["tid": 902, "cpu": [[21_000_000, 0], [99_000_000, 3_000_000]]],
        ]
        document["coldstart"] = section
        let timeline = try Timeline(data: JSONSerialization.data(withJSONObject: document))
        XCTAssertEqual(timeline.ownCpuNs(from: 20_000_000, to: 100_000_000), 15_000_000, accuracy: 1)
        let split = try XCTUnwrap(KernelShare.phases(timeline)[2])
        XCTAssertEqual(split.userMs, 20)
        XCTAssertEqual(split.kernelMs, 5, accuracy: 1e-9, "the phase's CPU less the user samples and Coldstart's threads")
        XCTAssertEqual(try XCTUnwrap(split.coldstartMs), 15, accuracy: 1e-9)
        XCTAssertEqual(split.kernelPercent, 20, accuracy: 1e-9, "the host's kernel share, of the host's CPU")
        XCTAssertEqual(split.userMs + split.kernelMs + (split.coldstartMs ?? 0), 40, accuracy: 1e-9, "the phase's CPU")
        let text = try LaunchAnalysis(timeline: timeline).report.text(full: true)
        let row = try XCTUnwrap(text.split(separator: "\n").first { $0.contains("main → config loaded") && $0.contains("|") }, text)
        XCTAssertTrue(text.contains("Coldstart ms") && row.contains("20.00+5.00") && row.contains("15.00"), String(row))

        // A point that goes back is refused: the interpolation needs order.
        section["ownThreads"] = [["tid": 901, "cpu": [[5_000_000, 10], [4_000_000, 20]]]]
        document["coldstart"] = section
        XCTAssertThrowsError(try Timeline(data: JSONSerialization.data(withJSONObject: document)))
    }

    /// A phase that ran partly before the main thread's clock was armed has
    /// no split: its unsampled start would read as kernel time. Under
    /// `coldstart run` a launcher sample just after the earliest init made
    /// such a window look whole (a loaded machine armed the clock 5 ms into
    /// `main`: 46% kernel against perf's 10%).
    func testNoSplitForAPhaseTheMainThreadsClockMissedTheStartOf() throws {
        builder.hz = 1000
        let main = f(exe, "main"), work = f(exe, "work")
        builder.sample(at: 20.5, [main])   // a sample from before the clock ran (the launcher's)
        for index in 0..<20 { builder.sample(at: 60.5 + Double(index) * 2, [main, work]) }
        var document = builder.document
        var section = fortyMsAppPhase(document)
        var sampling = section["sampling"] as! [String: Any]
        sampling["clockArmedNs"] = 60_000_000
        section["sampling"] = sampling
        document["coldstart"] = section
        XCTAssertNil(KernelShare.phases(try Timeline(data: JSONSerialization.data(withJSONObject: document)))[2],
                     "half the phase ran before the clock")
        sampling["clockArmedNs"] = 20_000_000
        section["sampling"] = sampling
        document["coldstart"] = section
        XCTAssertNotNil(KernelShare.phases(try Timeline(data: JSONSerialization.data(withJSONObject: document)))[2])
        // Records the kernel dropped from a full ring: user time of no known phase.
        sampling["kernelStacks"] = ["samples": 21, "lost": 3] as [String: Any]
        section["sampling"] = sampling
        document["coldstart"] = section
        XCTAssertNil(KernelShare.phases(try Timeline(data: JSONSerialization.data(withJSONObject: document)))[2], "3 samples lost")
    }

    func testSelfTotalPercentAndFirstSeenAreExact() throws {
        builder.clock = "posix-cpu-timer"
        builder.hz = 800  // 1.25 ms a sample: a POSIX timer's effective rate, not the 1000 Hz asked for
        let main = f(exe, "main"), parse = f(exe, "parse"), lex = f(exe, "lex"), render = f(exe, "render")
        builder.sample(at: 21, [main, parse, lex])
        builder.sample(at: 22, [main, parse, lex])
        builder.sample(at: 23, [main, parse])
        builder.sample(at: 24, [main, render])
        let overall = try report().overall

        XCTAssertEqual(overall.samples, 4)
        XCTAssertEqual(overall.ms, 5.0)
        XCTAssertEqual(overall.bySelf.map(\.name), ["lex", "parse", "render"], "main never ran itself")
        XCTAssertEqual(overall.byTotal.map(\.name), ["main", "parse", "lex", "render"])
        let lexRow = try row(overall.bySelf, "lex")
        XCTAssertEqual([lexRow.selfSamples, lexRow.totalSamples], [2, 2])
        XCTAssertEqual(lexRow.selfMs, 2.5)
        XCTAssertEqual(lexRow.selfPercent, 50)
        XCTAssertEqual(lexRow.firstSeenMs, 21)
        XCTAssertEqual(lexRow.module, "App")
        let parseRow = try row(overall.byTotal, "parse")
        XCTAssertEqual([parseRow.selfSamples, parseRow.totalSamples], [1, 3])
        XCTAssertEqual(parseRow.totalMs, 3.75)
        XCTAssertEqual(parseRow.totalPercent, 75)
        XCTAssertEqual(try row(overall.byTotal, "main").totalPercent, 100)
        XCTAssertEqual(try row(overall.byTotal, "render").firstSeenMs, 24)
    }

    func testRecursionCountsOncePerSample() throws {
        let main = f(exe, "main"), fib = f(exe, "fib"), other = f(exe, "other")
        builder.sample(at: 21, [main, fib, fib, fib])
        builder.sample(at: 22, [main, fib, fib])
        builder.sample(at: 23, [main, other])
        builder.sample(at: 24, [main, other])
        let result = try report()
        let fibRow = try row(result.overall.byTotal, "fib")
        XCTAssertEqual(fibRow.totalSamples, 2)
        XCTAssertEqual(fibRow.totalPercent, 50)
        XCTAssertEqual(fibRow.selfSamples, 2)
        // The tree keeps each recursion level as its own node.
        let mainNode = try XCTUnwrap(result.callTree.first)
        XCTAssertEqual(mainNode.name, "main")
        XCTAssertEqual(mainNode.samples, 4)
        XCTAssertEqual(mainNode.children.map(\.name), ["fib", "other"])
        let fib1 = mainNode.children[0]
        XCTAssertEqual([fib1.samples, fib1.selfSamples], [2, 0])
        XCTAssertEqual([fib1.children[0].samples, fib1.children[0].selfSamples], [2, 1])
        XCTAssertEqual([fib1.children[0].children[0].samples, fib1.children[0].children[0].selfSamples], [1, 1])
    }

    /// swift-format under `coldstart run` (the launcher's frame-pointer
    /// chains): 22 of 244 stacks ran past the stack's base into words that
    /// are no return address (`0x0`, `0x622f7273752f7466`, which is text),
    /// each a root of the call tree of its own beside
    /// `__libc_start_call_main`. A stack ends at its last frame in code; a
    /// sample is never dropped.
    func testWordsPastTheStacksBaseAreNoRootOfTheCallTree() throws {
        let start = f(libc, "__libc_start_call_main"), main = f(exe, "main"), work = f(exe, "work")
        let zero = f(-1, "0x0"), text = f(-1, "0x622f7273752f7466"), data = f(exe, "App+0x1f3a0 (not code)")
        for index in 0..<20 { builder.sample(at: 21 + Double(index), [start, main, work]) }
        for index in 0..<5 { builder.sample(at: 41 + Double(index), [zero, text, start, main, work]) }
        for index in 0..<5 { builder.sample(at: 46 + Double(index), [data, start, main, work]) }
        builder.sample(at: 60, [zero])
        let result = try report()
        XCTAssertEqual(result.overall.samples, 31)
        XCTAssertEqual(result.callTree.map(\.name), ["__libc_start_call_main", "0x0"], "\(result.callTree.map(\.name))")
        XCTAssertEqual(result.callTree.first?.samples, 30)
        XCTAssertEqual(try row(result.overall.byTotal, "0x0").totalSamples, 1, "the lone one's leaf stays")
        let names = result.overall.byTotal.map(\.name)
        XCTAssertFalse(names.contains(text.name) || names.contains(data.name), "\(names)")
    }

    /// KnownCosts: 1 of 345 samples, in 2 of 55 launches, ran out of the
    /// kernel's stack copy in a deep libswiftCore stack and went on by the
    /// kernel's frame-pointer chain, which skips glibc's frames (rooted at
    /// `__libc_start_call_main`), or ended at the program's main: a second
    /// root beside `_start`. It goes on along the path the launch's other
    /// stacks show above that frame; a launch walked by frame pointers only
    /// keeps its one root as it is.
    func testAStackCutShortAtTheProgramsStartJoinsTheLaunchsPathAboveIt() throws {
        let start = f(exe, "_start"), libcStart = f(libc, "__libc_start_main"), callMain = f(libc, "__libc_start_call_main")
        let main = f(exe, "main"), work = f(exe, "work"), deep = f(swiftCore, "swift_getGenericMetadata")
        for index in 0..<20 { builder.sample(at: 21 + Double(index), [start, libcStart, callMain, main, work]) }
        for index in 0..<3 { builder.sample(at: 41 + Double(index), [callMain, main, work, deep]) }
        for index in 0..<2 { builder.sample(at: 44 + Double(index), [main, work, deep]) }
        let joined = try report()
        XCTAssertEqual(joined.callTree.map(\.name), ["_start"], "\(joined.callTree.map(\.name))")
        XCTAssertEqual(joined.callTree.first?.samples, 25)
        XCTAssertEqual(try row(joined.overall.byTotal, "_start").totalSamples, 25)
        XCTAssertEqual(try row(joined.overall.bySelf, "swift_getGenericMetadata").selfSamples, 5)

        setUp()
        for index in 0..<5 { builder.sample(at: 21 + Double(index), [callMain, main, work]) }
        XCTAssertEqual(try report().callTree.map(\.name), ["__libc_start_call_main"], "nothing to join it to")
    }

    func testSamplesFallInThePhaseHoldingTheirTime() throws {
        let main = f(exe, "main"), work = f(exe, "work"), late = f(exe, "late"), ctor = f(exe, "ctorWork")
        builder.sample(at: 15, [ctor])
        builder.sample(at: 25, [main, work])
        builder.sample(at: 49.999, [main, work])
        builder.sample(at: 50, [main, late])  // a boundary belongs to the phase it starts
        builder.sample(at: 100, [main, late])  // the last phase holds the launch's end
        builder.sample(at: 101, [main, late])  // after ready(): the extension window
        let result = try report()

        XCTAssertEqual(result.phases.map(\.name), [
            "kernel exec + loader", "library initializers", "main → config loaded", "config loaded → ready",
            "after ready (extension window)",
        ])
        XCTAssertEqual(result.phases.map(\.functions.samples), [0, 1, 2, 2, 1])
        XCTAssertEqual(result.phases.map(\.sampled), [false, true, true, true, true], "sampling starts at the earliest init")
        XCTAssertEqual(result.phases[2].functions.bySelf.map(\.name), ["work"])
        XCTAssertEqual(result.phases[2].functions.bySelf.first?.selfPercent, 100, "percent of the phase's samples")
        XCTAssertEqual(result.phases[3].functions.bySelf.map(\.name), ["late"])
        XCTAssertEqual(result.phases[4].kind, "after-end")

        let only = try report(ProfileOptions(phase: "main → config loaded"))
        XCTAssertEqual(only.overall.samples, 2)
        XCTAssertEqual(only.overall.bySelf.map(\.name), ["work"])
        XCTAssertEqual(only.selection.phase, "main → config loaded")
        XCTAssertThrowsError(try report(ProfileOptions(phase: "warm-up"))) { error in
            XCTAssertTrue("\(error)".contains("no phase named 'warm-up'"), "\(error)")
            XCTAssertTrue("\(error)".contains("'config loaded → ready'"), "lists the phases: \(error)")
        }
    }

    func testThreadsAreSummarisedAndSelectable() throws {
        builder.threads = [["tid": 4242, "name": "main"], ["tid": 4300, "name": "worker"]]
        builder.sample(at: 21, [f(exe, "main"), f(exe, "a")])
        builder.sample(at: 22, [f(exe, "main"), f(exe, "a")])
        builder.sample(at: 23, [f(exe, "main"), f(exe, "b")])
        builder.sample(at: 24, tid: 4300, [f(libc, "start_thread"), f(exe, "job")])
        builder.sample(at: 26, tid: 4301, [f(libc, "start_thread"), f(exe, "other")])
        let threads = try report().threads
        XCTAssertEqual(threads.map(\.tid), [4242, 4300, 4301])
        XCTAssertEqual(threads.map(\.name), ["main", "worker", "thread 4301"])
        XCTAssertEqual(threads.map(\.samples), [3, 1, 1])
        XCTAssertEqual(threads[0].percent, 60)
        XCTAssertEqual(threads[0].topSelf.map(\.name), ["a", "b"])
        XCTAssertEqual([threads[0].firstMs, threads[0].lastMs], [21, 23])

        let worker = try report(ProfileOptions(thread: 4300))
        XCTAssertEqual(worker.overall.samples, 1)
        XCTAssertEqual(worker.overall.bySelf.map(\.name), ["job"])
        XCTAssertThrowsError(try report(ProfileOptions(thread: 9))) { error in
            XCTAssertTrue("\(error)".contains("no samples of thread 9 (sampled threads: 4242, 4300, 4301)"), "\(error)")
        }
    }

    func testThresholdsAndTopLimitTheRows() throws {
        // Function k is the leaf of k samples: 1 + 2 + … + 10 = 55 samples of 1 ms.
        for k in 1...10 {
            for n in 0..<k { builder.sample(at: 20 + Double(k) + Double(n) / 100, [f(exe, "main"), f(exe, "fn\(k)")]) }
        }
        XCTAssertEqual(try report().overall.bySelf.count, 10)
        XCTAssertEqual(try report(ProfileOptions(minMs: 8)).overall.bySelf.map(\.name), ["fn10", "fn9", "fn8"])
        // 10% of 55 samples is 5.5: fn6 (10.9%) is in, fn5 (9.1%) is out.
        XCTAssertEqual(try report(ProfileOptions(minPercent: 10)).overall.bySelf.map(\.name), ["fn10", "fn9", "fn8", "fn7", "fn6"])
        XCTAssertEqual(try report(ProfileOptions(top: 2)).overall.bySelf.map(\.name), ["fn10", "fn9"])
        XCTAssertEqual(try report(ProfileOptions(minMs: 100)).overall.byTotal.map(\.name), [])
        let tree = try report(ProfileOptions(minPercent: 15)).callTree
        XCTAssertEqual(tree.first?.children.map(\.name), ["fn10", "fn9"], "10/55 and 9/55 are over 15%")
    }

    func testCallTreeIsDepthLimited() throws {
        builder.sample(at: 21, [f(exe, "a"), f(exe, "b"), f(exe, "c"), f(exe, "d")])
        let deep = try report().callTree
        XCTAssertEqual(deep.first?.children.first?.children.first?.children.first?.name, "d")
        let shallow = try report(ProfileOptions(treeDepth: 1)).callTree
        XCTAssertEqual(shallow.first?.name, "a")
        XCTAssertEqual(shallow.first?.children.map(\.name), ["b"])
        XCTAssertEqual(shallow.first?.children.first?.children.count, 0)
    }

    /// The flame graph's whole call tree (the HTML page's) is merged from
    /// each distinct stack once: 500 copies of three stacks merge three
    /// stacks, as one copy does, into the same nodes with 500 times the
    /// samples, with the same look-ups of a node's children, visited in
    /// the text report's unpruned tree's pre-order.
    /// A report and its HTML page (`LaunchAnalysis`'s stacks) merge the
    /// call tree once: the flame graph walks the tree the text report was
    /// pruned from; an export alone (no report) merges it itself.
    func testTheWholeCallTreeMergesEachDistinctStackOnceWhateverTheSamples() throws {
        typealias Node = (name: String, module: String, depth: Int, samples: Int, selfSamples: Int)
        func visited(copies: Int) throws -> (merged: Int, mergedAgain: Int, lookups: Int, nodes: [Node], report: [Node]) {
            builder = SampledTimelineBuilder()
            let app = builder.module("/opt/app/App"), core = builder.module("/usr/lib/swift/linux/libswiftCore.so")
            let stacks = [[f(app, "main"), f(app, "load")], [f(app, "main"), f(app, "parse"), f(core, "swift_retain")],
                          [f(app, "main"), f(app, "parse")]]
            for copy in 0..<copies {
                for (number, stack) in stacks.enumerated() { builder.sample(at: 21 + Double(copy * stacks.count + number) * 0.01, stack) }
            }
            let whole = ProfileOptions(minMs: 0, minPercent: 0, top: .max, treeDepth: .max, treeFloorPercent: 0)
            let analysis = try LaunchAnalysis(timeline: builder.timeline(), options: whole)
            let stacksOfLaunch = try XCTUnwrap(analysis.stacks)
            var nodes: [Node] = []
            let mergedAgain = stacksOfLaunch.visitCallTree { function, depth, samples, selfSamples in
                nodes.append((stacksOfLaunch.functions[function].name, stacksOfLaunch.moduleName(of: function), depth, samples, selfSamples))
            }
            let exported = try XCTUnwrap(SampledStacks(timeline: builder.timeline(), options: whole))
            var exportedNodes: [Node] = []
            let merged = exported.visitCallTree { function, depth, samples, selfSamples in
                exportedNodes.append((exported.functions[function].name, exported.moduleName(of: function), depth, samples, selfSamples))
            }
            XCTAssertEqual(exportedNodes.map { "\($0)" }, nodes.map { "\($0)" }, "an export's flame graph is the report's")
            var report: [Node] = []
            func flatten(_ tree: [ProfileReport.CallNode], depth: Int) {
                for node in tree {
                    report.append((node.name, node.module, depth, node.samples, node.selfSamples))
                    flatten(node.children, depth: depth + 1)
                }
            }
            flatten(try XCTUnwrap(analysis.report.profile).callTree, depth: 0)
            let (profile, selected) = try XCTUnwrap(analysis.profile)
            return (merged, mergedAgain, profile.mergedCallTree(selected).lookups, nodes, report)
        }
        let one = try visited(copies: 1), many = try visited(copies: 500)
        XCTAssertEqual(one.merged, 3)
        XCTAssertEqual([one.mergedAgain, many.mergedAgain], [0, 0], "the HTML page walks the report's tree, not a second merge")
        XCTAssertEqual(many.merged, one.merged, "merging does not grow with the samples")
        XCTAssertEqual(one.lookups, 4, "each node looked up once: the third stack is all the second's outer frames")
        XCTAssertEqual(many.lookups, one.lookups, "nor do the merge's look-ups")
        XCTAssertEqual(many.nodes.map(\.name), ["main", "parse", "swift_retain", "load"], "most samples first")
        XCTAssertEqual(many.nodes.map(\.depth), [0, 1, 2, 1])
        XCTAssertEqual(many.nodes.map(\.samples), one.nodes.map { $0.samples * 500 })
        XCTAssertEqual(many.nodes.map(\.selfSamples), [0, 500, 500, 500])
        XCTAssertEqual(many.nodes.map(\.module), ["App", "App", "libswiftCore.so", "App"])
        for copies in [one, many] {
            XCTAssertEqual(copies.nodes.map { "\($0)" }, copies.report.map { "\($0)" }, "the text report's whole tree, in pre-order")
        }
    }

    /// A thread's flame chart: a run per function and depth while the
    /// consecutive samples keep it, sorted by start, then depth, each
    /// ending at the sample that leaves it, or one period after the last
    /// sample before a gap of over two periods. Two samples of one time
    /// (the first deeper) still list the shallower run first.
    func testFlameChartRunsNestInTimeOrderAndEndAtAGap() throws {
        builder.sample(at: 21, [f(exe, "main"), f(exe, "a"), f(exe, "b")])
        builder.sample(at: 21, [f(exe, "main"), f(exe, "c")])
        builder.sample(at: 22, [f(exe, "main"), f(exe, "c")])
        builder.sample(at: 23, [f(exe, "main"), f(exe, "c")])
        builder.sample(at: 30, [f(exe, "main")])
        builder.sample(at: 31, [f(exe, "main"), f(exe, "d")])
        let stacks = try XCTUnwrap(LaunchAnalysis(timeline: builder.timeline()).stacks)
        let runs = stacks.runs(thread: builder.pid).map { run in
            "\(stacks.functions[run.function].name) \(run.depth) \(run.startNs / 1_000_000)-\(run.endNs / 1_000_000) ms \(run.samples)"
        }
        XCTAssertEqual(runs, ["main 0 21-24 ms 4", "a 1 21-21 ms 1", "c 1 21-24 ms 3", "b 2 21-21 ms 1",
                              "main 0 30-32 ms 2", "d 1 31-32 ms 1"])
    }

    // MARK: Initializers

    func testInitializerTimeIsAttributedToTheLibraryTheLoaderCalled() throws {
        let libA = builder.module("/usr/lib/libA.so"), libB = builder.module("/usr/lib/libB.so")
        let libC = builder.module("/usr/lib/libC.so"), libD = builder.module("/usr/lib/libD.so")
        let start = f(loader, "_dl_start_user"), dlInit = f(loader, "_dl_init"), callInit = f(loader, "call_init")
        builder.sample(at: 11, [start, dlInit, callInit, f(libA, "a_ctor"), f(libA, "a_work")])
        builder.sample(at: 12, [start, dlInit, callInit, f(libA, "a_ctor"), f(libc, "memset")])
        // A constructor that dlopens another library: both are in their constructors.
        builder.sample(at: 13, [start, dlInit, callInit, f(libB, "b_ctor"), f(libc, "dlopen"), f(loader, "_dl_open"),
                                dlInit, callInit, f(libC, "c_ctor")])
        // The loader without symbols: the first frame out of a loader-rooted stack.
        builder.sample(at: 14, [f(loader, "ld-linux-x86-64.so.2+0x1ab90"), f(loader, "ld-linux-x86-64.so.2+0x4a00"),
                                f(libD, "d_ctor")])
        // The program's constructors, called by __libc_start_main (glibc ≥ 2.34) …
        builder.sample(at: 15, [f(exe, "_start"), f(libc, "__libc_start_main"), f(exe, "early_ctor"), f(exe, "burn")])
        // … its preinit array, called by the loader …
        builder.sample(at: 16, [start, dlInit, f(exe, "coldstart_preinit")])
        // … and, with glibc < 2.34, through __libc_csu_init.
        builder.sample(at: 17, [f(exe, "_start"), f(libc, "__libc_start_main"), f(exe, "__libc_csu_init"), f(exe, "old_ctor")])
        // A stack cut short during the initializers phase: in libA's
        // constructor (a library without frame pointers ends the chain) …
        builder.sample(at: 18, [f(libA, "a_work")])
        // … and in the loader, its own work.
        builder.sample(at: 18.5, [f(loader, "_dl_relocate_object")])
        // main, with and without libc's symbols: not an initializer.
        builder.sample(at: 25, [f(exe, "_start"), f(libc, "__libc_start_main"), f(libc, "__libc_start_call_main"), f(exe, "main")])
        builder.sample(at: 26, [f(exe, "_start"), f(libc, "__libc_start_main"), f(libc, "libc.so.6+0x271d0"), f(exe, "main")])
        builder.sample(at: 27, [f(exe, "_start"), f(libc, "__libc_start_main"), f(libc, "libc.so.6+0x271d0"), f(exe, "App_main")])

        let result = try report().initializers
        XCTAssertEqual(result.samples, 8)
        XCTAssertEqual(result.ms, 8)
        XCTAssertEqual(result.unattributedSamples, 1)
        XCTAssertEqual(result.libraries.map(\.module), ["App", "libA.so", "libB.so", "libC.so", "libD.so"])
        XCTAssertEqual(result.libraries.map(\.samples), [3, 3, 1, 1, 1])
        XCTAssertEqual(result.libraries.map(\.isExecutable), [true, false, false, false, false])
        XCTAssertEqual(result.libraries[0].constructors.map(\.name), ["coldstart_preinit", "early_ctor", "old_ctor"])
        XCTAssertEqual(result.libraries[1].constructors.map(\.name), ["a_ctor", "a_work"])
        XCTAssertEqual(result.libraries[1].constructors.first?.samples, 2)
        XCTAssertEqual(result.libraries[1].firstSeenMs, 11)
        XCTAssertEqual(result.libraries[1].percent, 3.0 / 12 * 100, accuracy: 1e-9)
        XCTAssertEqual(result.libraries[3].constructors.map(\.name), ["c_ctor"])
        XCTAssertEqual(result.libraries[4].path, "/usr/lib/libD.so")
    }

    // MARK: Lazy globals

    func testLazyGlobalsAreFoundUnderTheRuntimesOnce() throws {
        let main = f(exe, "main"), open = f(exe, "App.Store.open()")
        let once = f(swiftCore, "swift::threading_impl::once_slow(swift::threading_impl::once_t&, void (*)(void*), void*)",
                     "_ZN5swift14threading_impl9once_slowERNS0_6once_tEPFvPvES3_")
        let table = f(exe, "one-time initialization function for table", "$s3App5table_WZ")
        let routes = f(exe, "one-time initialization function for routes", "$s3App6routes_WZ")
        builder.sample(at: 30, [main, open, once, table, f(exe, "buildTable")])
        builder.sample(at: 31, [main, open, once, table, f(exe, "buildTable")])
        builder.sample(at: 60, [main, open, once, table])
        // One global's initializer using another: both are initialising.
        builder.sample(at: 61, [main, open, once, table, once, routes, f(exe, "buildRoutes")])
        // A one-time initializer not reached through the once, and a function under the once that is none.
        builder.sample(at: 62, [main, f(exe, "one-time initialization function for cache", "$s3App5cache_WZ")])
        builder.sample(at: 63, [main, once, f(exe, "App.notAGlobal()", "$s3App10notAGlobalyyF")])

        let globals = try report().lazyGlobals
        XCTAssertEqual(globals.map(\.name), ["App.table", "App.routes"])
        XCTAssertEqual(globals.map(\.samples), [4, 1])
        XCTAssertEqual(globals.map(\.ms), [4, 1])
        XCTAssertEqual(globals[0].firstSeenMs, 30)
        XCTAssertEqual(globals[0].phases, ["main → config loaded", "config loaded → ready"])
        XCTAssertEqual(globals[1].phases, ["config loaded → ready"])
        XCTAssertEqual(globals[0].percent, 4.0 / 6 * 100, accuracy: 1e-9)
    }

    func testSwiftModuleNameComesFromTheMangledName() {
        XCTAssertEqual(ProfileAnalysis.swiftModuleName("$s14ServiceStartup12routingTable_WZ"), "ServiceStartup")
        XCTAssertEqual(ProfileAnalysis.swiftModuleName("_$s3App5table_WZ"), "App")
        XCTAssertNil(ProfileAnalysis.swiftModuleName("$sSS5countSivg"))
        XCTAssertNil(ProfileAnalysis.swiftModuleName("$s99Short"))
    }

    // MARK: Input

    /// `coldstart report --html` once named every frame up to three times
    /// (the profile, the page's stacks, the blocked stacks): one pass now
    /// looks each distinct frame up once, whatever is rendered from it.
    func testOneAnalysisNamesEveryFrameOnceForEveryOutput() throws {
        builder.symbolized = false
        builder.sample(at: 21, [f(exe, "main"), f(exe, "load")])
        builder.sample(at: 22, [f(exe, "main"), f(exe, "parse")])
        builder.sample(at: 23, [f(exe, "main"), f(exe, "load")])
        var document = builder.document
        var section = try XCTUnwrap(document["coldstart"] as? [String: Any])
        let blockedStack: [Any] = [exe, 0x9000, exe, 0x9100]
        section["watch"] = [
            "requestedHz": 1000, "effectiveHz": 1000, "startNs": 0, "stopNs": 100_000_000, "ticks": 100, "cpuNs": 0,
            "threads": [["tid": 4242, "name": "main", "firstNs": 0, "lastNs": 100_000_000, "cpuNs": 0, "runQueueNs": 0]],
            "paths": ["/etc/app.conf"], "stacks": [blockedStack], "runnable": [[Any]](),
            "segments": [[4242, 30_000_000, 40_000_000, "S", "file-read", "read", 0, 0, 0, 0, 0, 0, [String]()]],
        ] as [String: Any]
        document["coldstart"] = section
        let timeline = try Timeline(data: JSONSerialization.data(withJSONObject: document))
        let distinctFrames = Set((timeline.samples.flatMap(\.frames)) + (timeline.watch?.stacks.flatMap { $0 } ?? [])).count

        let symbolizer = Symbolizer(modules: timeline.modules, debugDirectory: nil)
        let analysis = try LaunchAnalysis(timeline: timeline, path: "t.json", symbolizer: symbolizer)
        let stacks = try XCTUnwrap(analysis.stacks)
        XCTAssertFalse(analysis.report.text().isEmpty)
        XCTAssertFalse(try analysis.report.jsonData().isEmpty)
        XCTAssertFalse(HTMLReport.render(analysis, source: "t.json").isEmpty)
        XCTAssertFalse(try PprofExporter.export(stacks).isEmpty)
        XCTAssertFalse(FoldedExporter.export(stacks).isEmpty)
        XCTAssertFalse(SpeedscopeExporter.export(stacks).isEmpty)
        XCTAssertEqual(symbolizer.framesLookedUp, distinctFrames, "each distinct frame of the samples and blocked stacks, once")
        let site = try XCTUnwrap(analysis.report.blockedTime?.callSites.first)
        XCTAssertEqual(site.stack, ["App+0x9000", "App+0x9100"], "the blocked stack is named by the same pass")
    }

    func testATimelineWithoutSamplesHasNoStacks() throws {
        let analysis = try LaunchAnalysis(timeline: builder.timeline(), path: "/tmp/t.json")
        XCTAssertNil(analysis.report.profile)
        XCTAssertNil(analysis.stacks)
    }

    func testUnsymbolizedFramesOfMissingBinariesGetModuleOffsetNames() throws {
        builder.symbolized = false
        builder.sample(at: 21, [f(exe, "main"), f(-1, "ignored")])
        let result = try report()
        let names = result.overall.byTotal.map(\.name)
        XCTAssertEqual(names.count, 2)
        XCTAssertTrue(names.contains { $0.hasPrefix("App+0x") }, "\(names)")
        XCTAssertTrue(names.contains { $0.hasPrefix("0x") }, "\(names)")
        XCTAssertTrue(result.warnings.contains { $0.hasPrefix("/opt/app/App: no such file") }, "\(result.warnings)")
    }

    // MARK: The report

    /// A launch with a bit of everything: functions, a library constructor, a lazy global.
    private func addRichSamples() {
        builder.hz = 800
        let libA = builder.module("/usr/lib/libA.so")
        let once = f(swiftCore, "swift::threading_impl::once_slow(swift::threading_impl::once_t&, void (*)(void*), void*)")
        builder.sample(at: 11, [f(loader, "_dl_start_user"), f(loader, "_dl_init"), f(loader, "call_init"), f(libA, "a_ctor")])
        builder.sample(at: 21, [f(exe, "main"), f(exe, "parse")])
        builder.sample(at: 22, [f(exe, "main"), f(exe, "parse")])
        builder.sample(at: 60, [f(exe, "main"), once, f(exe, "one-time initialization function for table", "$s3App5table_WZ")])
    }

    private func writeRichTimeline(in directory: URL) throws -> String {
        addRichSamples()
        let path = directory.appendingPathComponent("rich.json").path
        try builder.data().write(to: URL(fileURLWithPath: path))
        return path
    }

    func testTextReportStatesClockRateAndPrecisionAndEverySection() throws {
        addRichSamples()
        let text = try report().text()
        XCTAssertTrue(text.contains("Sampled stacks: 4 samples from 10.00 to 100.00 ms after process start (0 dropped; unwinder libunwind)"), text)
        XCTAssertTrue(text.contains("perf-task-clock (perf task clock: each thread's own CPU time in user mode); 800.0 Hz effective, 1000 Hz asked"), text)
        // A perf sample is one asked period of user CPU, whatever the effective rate (the kernel's time drops periods).
        XCTAssertTrue(text.contains("every time below is samples × 1.000 ms (one period of the perf task clock: user-mode CPU; "
                                    + "the kernel's share is in the phase table)"), text)
        for section in ["Top functions by self time, whole launch (4 samples = 4.00 ms)", "Top functions by total time",
                        "Per phase", "Slow initializers: 1 sample = 1.00 ms", "Slow lazy globals", "Threads", "Call tree"] {
            XCTAssertTrue(text.contains(section), "\(section) in\n\(text)")
        }
        XCTAssertTrue(text.contains("not sampled"), "the loader phase says it was not sampled")
        XCTAssertNotNil(text.range(of: #"1\.00\s+25\.0%\s+1\s+11\.00\s+libA\.so\s+a_ctor \(1\)"#, options: .regularExpression), text)
        XCTAssertNotNil(text.range(of: #"1\.00\s+25\.0%\s+1\s+60\.00\s+App\.table\s+'config loaded → ready'"#, options: .regularExpression), text)
    }

    func testReportCommandAddsTheSampledSections() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let path = try writeRichTimeline(in: directory)
        let coldstart = try Products.path("coldstart")

        let text = try runProcess(coldstart, ["report", path])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains("Phases (times in ms"), "the launch report is still there")
        XCTAssertTrue(text.stdout.contains("Sampled stacks: 4 samples"), text.stdout)
        XCTAssertTrue(text.stdout.contains("App.table"), text.stdout)

        let json = try runProcess(coldstart, ["report", path, "--json", "--top", "1", "--min-ms", "1"])
        XCTAssertEqual(json.status, 0, json.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let profile = try XCTUnwrap(object["profile"] as? [String: Any])
        let overall = try XCTUnwrap(profile["overall"] as? [String: Any])
        XCTAssertEqual((overall["bySelf"] as? [[String: Any]])?.map { $0["name"] as? String }, ["parse"], "--top 1")
        XCTAssertEqual(((profile["lazyGlobals"] as? [[String: Any]])?.first)?["name"] as? String, "App.table")
        XCTAssertEqual((profile["selection"] as? [String: Any])?["minMs"] as? Double, 1)

        let phase = try runProcess(coldstart, ["report", path, "--json", "--phase", "main → config loaded"])
        let phaseObject = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(phase.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(((phaseObject["profile"] as? [String: Any])?["selection"] as? [String: Any])?["samples"] as? Int, 2)

        let bogus = try runProcess(coldstart, ["report", path, "--phase", "bogus"])
        XCTAssertEqual(bogus.status, 1)
        XCTAssertEqual(bogus.stdout, "")
        XCTAssertTrue(bogus.stderr.hasPrefix("coldstart report: \(path): no phase named 'bogus' (phases: 'kernel exec + loader'"), bogus.stderr)
        XCTAssertEqual(bogus.stderr.split(separator: "\n").count, 1)
        XCTAssertEqual(try runProcess(coldstart, ["report", path, "--min-percent", "200"]).status, 2)
        XCTAssertEqual(try runProcess(coldstart, ["report", path, "--top", "0"]).status, 2)
    }

    func testUnsampledTimelinesHaveNoProfileSection() throws {
        let report = try LaunchAnalysis(timeline: builder.timeline(), path: "x").report
        XCTAssertNil(report.profile)
        let json = String(decoding: try report.jsonData(), as: UTF8.self)
        XCTAssertFalse(json.contains("\"profile\""), "absent, not null")
        XCTAssertFalse(report.text().contains("Sampled stacks"))
    }
}
