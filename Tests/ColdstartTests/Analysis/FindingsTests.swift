@testable import ColdstartAnalysis
import XCTest

final class FindingsTests: XCTestCase {
    /// The bundled example's figures, as a release build measured them: a
    /// 45 ms launch, 28 ms of it in `routingTable`'s initializer.
    private var example: FindingInputs {
        var inputs = FindingInputs(launchMs: 45)
        inputs.loader = .init(ms: 9.5, libraryCount: 21, swiftRuntimeIsShared: true, usesFoundation: true)
        inputs.lazyGlobals = [.init(name: "routingTable", module: "ServiceStartup", ms: 28.1, samples: 262, phase: "warm cache")]
        inputs.initializers = [
            .init(module: "libswiftCore.so", isExecutable: false, ms: 0.4, samples: 4, function: "_GLOBAL__sub_I_Backtrace.cpp"),
        ]
        inputs.functions = [.init(name: "ServiceStartup.Store.open(recordCount:)", module: "ServiceStartup", ms: 4.2, samples: 39, phase: "open store")]
        inputs.profilerCost = .init(setupMs: 0.2, samplingMs: 0.1, leftOutOfEstimate: true)
        return inputs
    }

    func testTheLargestCostsLeadWithWhereAndHowSure() throws {
        let findings = Finding.ranked(example)
        XCTAssertEqual(findings.map(\.kind), [.slowLazyGlobal, .loader, .slowFunction])
        let global = findings[0]
        XCTAssertEqual(global.title, "slow lazy global routingTable")
        XCTAssertEqual(global.percent, 28.1 * 100 / 45, accuracy: 1e-9)
        XCTAssertEqual(global.location, "module ServiceStartup, phase 'warm cache'")
        XCTAssertEqual(global.certainty, .samples(262))
        XCTAssertEqual(findings[1].location, "21 shared libraries")
        XCTAssertTrue(findings[1].advice.contains("-static-stdlib"), "the Swift runtime is a shared library here")
        XCTAssertFalse(findings.contains { $0.kind == .profilerCost }, "0.3 ms of 45 is under the 1% floor")
    }

    /// The loader phase starts at the process start: timed exactly only from
    /// a launcher's stamp, an estimate (with the start's precision) otherwise.
    func testTheLoaderIsExactOnlyWithAnExactStart() {
        var inputs = example
        XCTAssertEqual(Finding.ranked(inputs).first { $0.kind == .loader }?.certainty, .exact)
        inputs.loader?.startPrecisionMs = 4.33
        let loader = Finding.ranked(inputs).first { $0.kind == .loader }
        XCTAssertEqual(loader?.certainty, .estimate)
        XCTAssertEqual(loader?.location, "21 shared libraries; start ±4.3 ms")
    }

    /// A program not linked with Coldstart (swift-format under `coldstart
    /// run`) has its loader timed with the launcher's LD_AUDIT module and
    /// perf events inside the span (issue 26: 11.8 against 6.5 ms): the
    /// finding says so and does not call the figure exact.
    func testTheLoaderUnderTheLaunchersSamplingIsNotExact() {
        var inputs = example
        inputs.loader?.sampledByLauncher = true
        let loader = Finding.ranked(inputs).first { $0.kind == .loader }
        XCTAssertEqual(loader?.certainty, .estimate)
        XCTAssertEqual(loader?.location, "21 shared libraries; timed under the launcher's loader sampling (LD_AUDIT module, perf from exec), "
            + "which adds to it; --no-sample-loader times the loader alone")
    }

    /// Coldstart's cost as a finding says only what is so: a program run
    /// without linking Coldstart (swift-format under `coldstart run`) has no
    /// set-up phase and no "without profiling" figure in its header, and
    /// COLDSTART_HZ is not the only way its rate is set.
    func testProfilerCostNamesOnlyWhatTheLaunchHas() throws {
        var linked = FindingInputs(launchMs: 30)
        linked.profilerCost = .init(setupMs: 0.5, samplingMs: 1.0, leftOutOfEstimate: true)
        let own = try XCTUnwrap(Finding.ranked(linked).first { $0.kind == .profilerCost })
        XCTAssertEqual(own.location, "set-up 0.5 ms, sampling and its threads 1.0 ms on the critical path")
        XCTAssertTrue(own.advice.contains("the header's 'without profiling' leaves it out"), own.advice)
        XCTAssertTrue(own.advice.contains("coldstart run --hz"), own.advice)

        var unlinked = FindingInputs(launchMs: 22)
        unlinked.profilerCost = .init(setupMs: nil, samplingMs: 2.7, leftOutOfEstimate: false)
        let launcher = try XCTUnwrap(Finding.ranked(unlinked).first { $0.kind == .profilerCost })
        XCTAssertEqual(launcher.location, "sampling and its threads 2.7 ms on the critical path")
        XCTAssertFalse(launcher.advice.contains("without profiling"), launcher.advice)
        XCTAssertEqual(launcher.ms, 2.7)
    }

    func testPageFaultsAreEstimatedFromTheirCountsOrTakenFromTheWatcher() throws {
        var inputs = FindingInputs(launchMs: 200)
        inputs.pageFaults = .init(counts: (minor: 2000, major: 400), watchedMajorMs: nil)
        let finding = try XCTUnwrap(Finding.ranked(inputs).first { $0.kind == .pageFaults })
        XCTAssertEqual(finding.ms, 2000 * 0.0025 + 400 * 0.045, accuracy: 1e-9)
        XCTAssertEqual(finding.certainty, .estimate)
        XCTAssertTrue(finding.location.hasPrefix("2000 minor, 400 major (minor: ~5.0 ms at ~2.5 µs each; major: ~18.0 ms"), finding.location)
        XCTAssertTrue(finding.advice.contains("disk"), "major faults: a cold cache")

        // The watcher saw the critical path wait 3 ms for pages from disk.
        inputs.pageFaults = .init(counts: (minor: 0, major: 10), watchedMajorMs: 3)
        let watched = try XCTUnwrap(Finding.ranked(inputs).first { $0.kind == .pageFaults })
        XCTAssertEqual(watched.ms, 3, accuracy: 1e-9)
        XCTAssertEqual(watched.certainty, .watched)

        // Minor faults only: touching memory, not the disk.
        inputs.pageFaults = .init(counts: (minor: 4000, major: 0), watchedMajorMs: nil)
        let minor = try XCTUnwrap(Finding.ranked(inputs).first { $0.kind == .pageFaults })
        XCTAssertEqual(minor.ms, 10, accuracy: 1e-9)
        XCTAssertTrue(minor.advice.contains("touch less memory"), minor.advice)
    }

    /// Faults inside the loader's time: shares past 100% are said to overlap.
    func testOverlappingSharesAreSaidToOverlap() {
        var inputs = FindingInputs(launchMs: 10)
        inputs.loader = .init(ms: 7, libraryCount: 19, swiftRuntimeIsShared: true, usesFoundation: true)
        inputs.pageFaults = .init(counts: (minor: 1600, major: 0), watchedMajorMs: nil)
        let overlapping = Finding.lines(Finding.ranked(inputs)).joined(separator: "\n")
        XCTAssertTrue(overlapping.contains("(These overlap:"), overlapping)
        XCTAssertFalse(Finding.lines(Finding.ranked(example)).joined().contains("overlap"))
    }

    func testAtMostSevenAtLeastThree() {
        var inputs = FindingInputs(launchMs: 100)
        inputs.functions = (1...12).map { .init(name: "f\($0)", module: "App", ms: Double($0), samples: $0 * 10) }
        let findings = Finding.ranked(inputs)
        XCTAssertEqual(findings.count, Finding.limit)
        XCTAssertEqual(findings.map(\.title).first, "slow function f12")
        XCTAssertEqual(findings.map(\.ms), findings.map(\.ms).sorted(by: >))

        // A finding-sized library initializer is never crowded out.
        inputs.initializers = [.init(module: "libSlow.so", isExecutable: false, ms: 1.5, samples: 15)]
        let withInitializer = Finding.ranked(inputs)
        XCTAssertEqual(withInitializer.count, Finding.limit)
        XCTAssertEqual(withInitializer.last?.title, "slow library initializer libSlow.so", "\(withInitializer.map(\.title))")
        XCTAssertEqual(withInitializer.dropLast().map(\.ms), [12, 11, 10, 9, 8, 7])
        inputs.initializers[0].ms = 0.4
        XCTAssertFalse(Finding.ranked(inputs).contains { $0.kind == .slowInitializer }, "under 0.5 ms it is no finding")

        // Small costs only: the three largest that are not noise.
        var quiet = FindingInputs(launchMs: 100)
        quiet.functions = [0.05, 0.6, 0.7, 0.8, 0.9].map { .init(name: "g\($0)", module: "App", ms: $0, samples: 1) }
        XCTAssertEqual(Finding.ranked(quiet).map(\.ms), [0.9, 0.8, 0.7])
        XCTAssertEqual(Finding.ranked(FindingInputs(launchMs: 10)), [])
    }

    func testRuntimeCostsNameTheAppCallersAndAreNotCountedTwice() throws {
        let core = "libswiftCore.so"
        let scan = [
            NamedFrame(function: "swift_conformsToProtocolMaybeInstantiateSuperclasses", module: core),
            NamedFrame(function: "swift_dynamicCast", module: core),
            NamedFrame(function: "ParsableCommand._commandName.getter", module: "tool"),
            NamedFrame(function: "tool_main", module: "tool"),
        ]
        let global = [
            NamedFrame(function: "one-time initialization function for table", module: "tool"), NamedFrame(function: "swift_once", module: core),
        ]
        let loading = [NamedFrame(function: "_dl_relocate_object", module: "ld-linux-x86-64.so.2")]
        var inputs = FindingInputs(launchMs: 10)
        inputs.runtimeCosts = RuntimeCostSummary(
            stacks: Array(repeating: scan, count: 18) + Array(repeating: global, count: 10) + Array(repeating: loading, count: 40),
            nsPerSample: 100_000, isAppModule: { $0 == "tool" })
        let findings = Finding.ranked(inputs)
        XCTAssertEqual(findings.map(\.kind), [.runtimeCost], "the global and the loader have findings of their own")
        XCTAssertEqual(findings[0].title, "protocol-conformance scans")
        XCTAssertEqual(findings[0].ms, 1.8, accuracy: 1e-9)
        XCTAssertEqual(findings[0].location, "on the stack in 26% of the samples (1.8 ms); called from ParsableCommand._commandName.getter")
        XCTAssertEqual(findings[0].certainty, .samples(18))
    }

    /// Runtime kinds were exclusive only: type-by-name look-ups read 10%
    /// where they were on 15% of the stacks, the rest being scans inside
    /// them. Each kind has its share on the stack beside its own, and a
    /// kind only ever under another still has its row.
    func testRuntimeKindsSayTheirShareOnTheStack() throws {
        let core = "libswiftCore.so"
        let app = NamedFrame(function: "App.parse(arguments: [String]) -> App.Options", module: "tool")
        let lookup = NamedFrame(function: "swift_getTypeByMangledName", module: core)
        let scanUnderCast = [NamedFrame(function: "swift_conformsToProtocolMaybeInstantiateSuperclasses", module: core),
                             NamedFrame(function: "swift_dynamicCast", module: core), lookup, app]
        let costs = RuntimeCostSummary(
            stacks: Array(repeating: scanUnderCast, count: 5) + Array(repeating: [lookup, app], count: 10) + Array(repeating: [app], count: 85),
            nsPerSample: 1_000_000, isAppModule: { $0 == "tool" })
        let rows = Dictionary(uniqueKeysWithValues: costs.rows.map { ($0.kind, $0) })
        XCTAssertEqual(rows[.metadataLookup]?.samples, 10)
        XCTAssertEqual(rows[.metadataLookup]?.onStackSamples, 15)
        XCTAssertEqual(try XCTUnwrap(rows[.metadataLookup]?.onStackPercent), 15, accuracy: 1e-9)
        XCTAssertEqual(rows[.conformanceScan]?.onStackSamples, 5)
        XCTAssertEqual(rows[.dynamicCast]?.samples, 0)
        XCTAssertEqual(rows[.dynamicCast]?.onStackSamples, 5)
        XCTAssertEqual(costs.rows.map(\.kind), [.metadataLookup, .conformanceScan, .dynamicCast])
        let text = costs.lines(width: 100)
        XCTAssertTrue(text.contains { $0.contains("10.0 ms  10.0%  on the stack  15.0%  10 samples") }, text.joined(separator: "\n"))

        var inputs = FindingInputs(launchMs: 100)
        inputs.runtimeCosts = costs
        let finding = try XCTUnwrap(Finding.ranked(inputs).first { $0.title == "type metadata and type-by-name look-ups" })
        XCTAssertEqual(finding.totalMs, 15)
        XCTAssertTrue(finding.location.hasPrefix("on the stack in 15% of the samples (15.0 ms); called from App.parse(arguments:)"), finding.location)
    }

    /// CodableTool's first screen listed `inventoryToolMain` and the
    /// `inventoryRoundTrip` it calls as two findings on the same 8 samples,
    /// and "aRC and allocation": one cost is one finding, named by the frame
    /// nearest the leaf, and ARC keeps its capitals.
    func testACallerWithItsCalleesSamplesIsNotASecondFindingAndTitlesKeepTheirCapitals() throws {
        var builder = SampledTimelineBuilder()
        let app = builder.module("/opt/app/App")
        for index in 0..<60 {
            let work: [SampledTimelineBuilder.Frame] = index < 30
                ? [.init(module: app, name: "App.toolMain()"), .init(module: app, name: "App.roundTrip()")]
                : [.init(module: app, name: "App.loadCatalog()")]
            builder.sample(at: 20 + Double(index), [.init(module: app, name: "main")] + work)
        }
        let findings = try XCTUnwrap(LaunchAnalysis(timeline: builder.timeline()).report.findings)
        let titles = findings.filter { $0.kind == .slowFunction }.map(\.title)
        XCTAssertTrue(titles.contains("slow function App.roundTrip()"), "\(titles)")
        XCTAssertTrue(titles.contains("slow function App.loadCatalog()"), "\(titles)")
        XCTAssertFalse(titles.contains("slow function App.toolMain()"), "the same 30 samples as App.roundTrip(): \(titles)")

        XCTAssertEqual(RuntimeCostKind.arcAndAllocation.titleInSentence, "ARC and allocation")
        XCTAssertEqual(RuntimeCostKind.foundationInit.titleInSentence, "Foundation and ICU initialisation")
        XCTAssertEqual(RuntimeCostKind.conformanceScan.titleInSentence, "protocol-conformance scans")
    }

    /// swift-package --version (async main, no Coldstart: no watcher path)
    /// spent 61% of its launch in conformance scans on a second thread, and
    /// the findings, from the main thread alone, named none of it.
    func testWithoutAPathTheThreadsThatDidTheWorkStandForTheMainThread() throws {
        var builder = SampledTimelineBuilder()
        builder.threads.append(["tid": 4300, "name": "worker"])
        let app = builder.module("/opt/app/App")
        let core = builder.module("/usr/lib/swift/linux/libswiftCore.so")
        builder.sample(at: 21, [.init(module: app, name: "main"), .init(module: app, name: "App.start()")])
        for index in 0..<40 {
            builder.sample(at: 25 + Double(index), tid: 4300, [
                .init(module: app, name: "App.parseArguments()"),
                .init(module: core, name: "swift_conformsToProtocolMaybeInstantiateSuperclasses"),
            ])
        }
        let report = try LaunchAnalysis(timeline: builder.timeline()).report
        let costs = try XCTUnwrap(report.runtimeCosts)
        XCTAssertEqual(costs.scope, CriticalPathScope.everyThread.rawValue)
        XCTAssertEqual(costs.rows.first?.kind, .conformanceScan)
        XCTAssertEqual(costs.rows.first?.samples, 40)
        XCTAssertEqual(report.findings?.first?.title, "protocol-conformance scans", "\(report.findings ?? [])")
        XCTAssertTrue(costs.lines(width: 100).first?.contains("every thread's samples after main") == true)

        // The main thread doing most of the work stays the path.
        var own = SampledTimelineBuilder()
        let ownApp = own.module("/opt/app/App")
        for index in 0..<10 { own.sample(at: 25 + Double(index), [.init(module: ownApp, name: "main"), .init(module: ownApp, name: "App.load()")]) }
        XCTAssertEqual(try LaunchAnalysis(timeline: own.timeline()).report.runtimeCosts?.scope, CriticalPathScope.mainThread.rawValue)
    }

    /// A 100,000-sample report spent half its time matching every sample's
    /// frames against the runtime-cost table: each function is matched once,
    /// however many samples repeat its stacks, and each distinct stack
    /// counts for its samples.
    func testTheRuntimeCostTableMatchesEachFunctionOnceWhateverTheSamples() throws {
        func analysed(copies: Int) throws -> (matched: Int, costs: RuntimeCostSummary, slow: [FindingInputs.NamedCost]) {
            var builder = SampledTimelineBuilder()
            let app = builder.module("/opt/app/App")
            let core = builder.module("/usr/lib/swift/linux/libswiftCore.so")
            let main = SampledTimelineBuilder.Frame(module: app, name: "main")
            let parse = SampledTimelineBuilder.Frame(module: app, name: "App.parse()")
            let stacks: [[SampledTimelineBuilder.Frame]] = [
                [main, .init(module: app, name: "App.load()")],
                [main, parse, .init(module: core, name: "swift_conformsToProtocolMaybeInstantiateSuperclasses")],
                [main, parse, .init(module: core, name: "swift_retain")],
            ]
            for copy in 0..<copies {
                for (number, stack) in stacks.enumerated() { builder.sample(at: 21 + Double(copy * stacks.count + number) * 0.01, stack) }
            }
            let timeline = try builder.timeline()
            let analysis = try XCTUnwrap(ProfileAnalysis.make(timeline: timeline, symbols: timeline.symbols, path: "t.json"))
            let critical = analysis.criticalPathSamples().samples
            XCTAssertEqual(critical.count, copies * stacks.count)
            var rules = analysis.frameRules()
            let slow = analysis.slowFunctions(critical, limit: Finding.limit, rules: &rules)
            let costs = analysis.runtimeCosts(critical, rules: &rules)
            return (rules.framesMatched, costs, slow)
        }
        let one = try analysed(copies: 1), many = try analysed(copies: 500)
        XCTAssertEqual(many.matched, one.matched, "matches do not grow with the samples")
        XCTAssertLessThanOrEqual(many.matched, 2 * 5, "at most once as a leaf and once further out, for each of the 5 functions")
        XCTAssertEqual(many.costs.totalSamples, 1500)
        XCTAssertEqual(many.costs.rows.map(\.kind), [.arcAndAllocation, .conformanceScan], "ties by kind")
        XCTAssertEqual(many.costs.rows.map(\.samples), [500, 500])
        XCTAssertEqual(many.costs.rows.map { $0.callers.map(\.function) }, [["App.parse()"], ["App.parse()"]])
        XCTAssertEqual(many.slow.map(\.name), ["App.load()"], "main is in every sample, App.parse() only in costs explained above")
        XCTAssertEqual(many.slow.first?.samples, 500)
        XCTAssertEqual(one.slow.first?.samples, 1)
    }

    /// sourcekit-lsp's first screen: "slow function (1) suspend resume
    /// partial function for static Ar…": the piece names its function.
    func testAnAsyncFunctionsPieceIsNamedAsTheFunction() {
        XCTAssertEqual(ProfileAnalysis.shortName("(1) suspend resume partial function for static ArgumentParser.AsyncParsableCommand.main() async -> ()"),
                       "ArgumentParser.AsyncParsableCommand.main() async -> ()")
        XCTAssertEqual(ProfileAnalysis.shortName("(12) await resume partial function for App.load() async throws -> ()"), "App.load() async throws -> ()")
        XCTAssertEqual(ProfileAnalysis.shortName("generic specialization <Swift.Int> of App.f<A>(A) -> ()"), "App.f<A>(A) -> ()")
    }

    /// CodableTool (a tool: no ready()) had 1081 minor faults (~2.7 ms) and
    /// 3 major (~0.1 ms), and was told about a cold cache and "ready()".
    func testAdviceFitsTheLargerPartAndHowTheLaunchEnds() throws {
        var tool = FindingInputs(launchMs: 32)
        tool.endsAtReady = false
        tool.pageFaults = .init(counts: (minor: 1081, major: 3), watchedMajorMs: nil)
        tool.functions = [.init(name: "InventoryWork.inventoryRoundTrip(count:)", module: "CodableTool", ms: 2.5, samples: 8)]
        tool.lazyGlobals = [.init(name: "CodableTool.table", module: "CodableTool", ms: 2, samples: 2)]
        tool.blockingWaits = [.init(cause: "lock", what: "lock 0x1000", ms: 3), .init(cause: "file-read", what: "/etc/app.conf", ms: 2)]
        let findings = Finding.ranked(tool)
        let faults = try XCTUnwrap(findings.first { $0.kind == .pageFaults })
        XCTAssertTrue(faults.advice.hasPrefix("each first touch of a page costs a fault"), faults.advice)
        XCTAssertTrue(faults.advice.hasSuffix("before exit"), faults.advice)
        let function = try XCTUnwrap(findings.first { $0.kind == .slowFunction })
        XCTAssertTrue(function.advice.hasPrefix("on the critical path to exit;"), function.advice)
        XCTAssertFalse(findings.contains { $0.advice.contains("ready()") }, findings.map(\.advice).joined(separator: "\n"))

        var cold = FindingInputs(launchMs: 32)
        cold.pageFaults = .init(counts: (minor: 100, major: 50), watchedMajorMs: nil)
        let major = try XCTUnwrap(Finding.ranked(cold).first { $0.kind == .pageFaults })
        XCTAssertTrue(major.advice.hasPrefix("major faults read pages from disk"), major.advice)
    }

    /// A wait in `brk` on the critical path was told "the thread waited for
    /// I/O; read less, read in the background" (issue 39, item 2): each
    /// cause the watcher names gets advice about that cause.
    func testEachWaitCauseGetsAdviceAboutThatCause() {
        let causes = Timeline.Cause.known.filter { ![.running, .other].contains($0) }
        let advice = causes.map { Finding.blockingAdvice(cause: $0.name, endsAtReady: true) }
        XCTAssertEqual(Set(advice).count, causes.count, "one piece of advice per cause: \(advice)")
        let memory = Finding.blockingAdvice(cause: Timeline.Cause.memory.name, endsAtReady: true)
        XCTAssertFalse(memory.contains("I/O") || memory.contains("read less"), memory)
        XCTAssertTrue(memory.contains("brk"), memory)
        XCTAssertTrue(Finding.blockingAdvice(cause: "file-read", endsAtReady: true).hasSuffix("or after ready()"))
        XCTAssertFalse(Finding.blockingAdvice(cause: "file-read", endsAtReady: false).contains("ready()"))
        XCTAssertTrue(Finding.blockingAdvice(cause: "lock", endsAtReady: false).hasSuffix("before exit"))
    }

    func testTextFitsOneHundredColumnsAndWrapsAdvice() {
        var inputs = example
        inputs.lazyGlobals[0].name = "AVeryLongTypeName.WithAnotherNestedTypeName.andAGlobalWhoseNameGoesOnAndOnAndOnForAWhile"
        let lines = Finding.lines(Finding.ranked(inputs))
        XCTAssertEqual(lines.count, 1 + 3 * 3 + 2, "a title, three lines each, two advice lines wrapped: \(lines.joined(separator: "\n"))")
        XCTAssertTrue(lines.allSatisfy { $0.count <= 100 }, lines.filter { $0.count > 100 }.joined(separator: "\n"))
        XCTAssertTrue(lines[1].hasPrefix(" 1. slow lazy global AVeryLong"))
        XCTAssertTrue(lines[1].contains("…"))
        XCTAssertTrue(lines[1].hasSuffix("28.1 ms   62%  262 samples"), lines[1])
        XCTAssertTrue(lines[2].hasPrefix("    95%: 24.8–31.7 ms · module ServiceStartup"), lines[2])
        // The rank lines (a sampled finding's location line has its interval in ms too).
        let msColumn = lines.filter { $0.range(of: #"^ *\d+\. "#, options: .regularExpression) != nil }.map { $0.range(of: " ms ")!.lowerBound.utf16Offset(in: $0) }
        XCTAssertEqual(Set(msColumn).count, 1, "the figures line up")
        XCTAssertTrue(Finding.lines(Finding.ranked(inputs), width: 60).allSatisfy { $0.count <= 60 })
    }
}

extension FindingsTests {
    /// A builder whose modules are an app, Foundation and the Swift runtime.
    private static func appWithFoundation() -> (SampledTimelineBuilder, app: Int, foundation: Int, core: Int) {
        var builder = SampledTimelineBuilder()
        let app = builder.module("/opt/app/App")
        let foundation = builder.module("/usr/lib/swift/linux/libFoundationEssentials.so")
        let core = builder.module("/usr/lib/swift/linux/libswiftCore.so")
        return (builder, app, foundation, core)
    }

    /// CodableTool's `main` is mostly JSONEncoder.encode and
    /// JSONDecoder.decode, and its first screen named two app functions of
    /// a millisecond each and never the JSON calls; a slow leaf was named
    /// without who called it. The library call is a finding at the app's
    /// line, and a slow function names its callers and its self and total
    /// time.
    func testALibraryCallIsNamedAtTheAppsLineAndASlowFunctionByItsCallers() throws {
        var (builder, app, foundation, core) = Self.appWithFoundation()
        let main = SampledTimelineBuilder.Frame(module: app, name: "App_main", file: "/src/App/main.swift", line: 8)
        let encode = SampledTimelineBuilder.Frame(
            module: foundation, name: "FoundationEssentials.JSONEncoder.encode<A where A: Encodable>(A) throws -> FoundationEssentials.Data")
        let wrap = SampledTimelineBuilder.Frame(module: foundation, name: "FoundationEssentials.__JSONEncoder.wrapGeneric<A>(_: A) throws -> ()")
        for index in 0..<40 {
            // Runtime work inside the call is the call's.
            let leaf: [SampledTimelineBuilder.Frame] = index % 4 == 0 ? [.init(module: core, name: "swift_getTypeByMangledName")] : []
            builder.sample(at: 20 + Double(index) * 0.5, [main, encode, wrap] + leaf)
        }
        let load = SampledTimelineBuilder.Frame(module: app, name: "App.loadCatalog(path: String) throws -> App.Catalog", file: "/src/App/main.swift", line: 9)
        for index in 0..<30 {
            builder.sample(at: 45 + Double(index) * 0.5, [main, load, .init(module: app, name: "App.spin(Double) -> ()")])
        }
        let findings = try XCTUnwrap(LaunchAnalysis(timeline: builder.timeline()).report.findings)

        let call = try XCTUnwrap(findings.first { $0.kind == .libraryCall }, "\(findings.map(\.title))")
        XCTAssertEqual(call.title, "library call JSONEncoder.encode(_:)")
        XCTAssertEqual(call.certainty, .samples(40), "the runtime work inside it is its")
        XCTAssertEqual(call.callers, ["main at main.swift:8"])
        XCTAssertEqual(call.callSite, "main.swift:8")
        XCTAssertEqual(call.selfMs, 0)
        XCTAssertEqual(try XCTUnwrap(call.totalMs), 40, accuracy: 1e-9)
        XCTAssertTrue(call.location.hasPrefix("called from main at main.swift:8 · in libFoundationEssentials.so; self 0.0 ms, on the stack 40.0 ms"),
                      call.location)

        let spin = try XCTUnwrap(findings.first { $0.kind == .slowFunction }, "\(findings.map(\.title))")
        XCTAssertEqual(spin.title, "slow function App.spin(Double) -> ()")
        XCTAssertEqual(spin.callers, ["App.loadCatalog(path:) at main.swift:9"])
        XCTAssertEqual(try XCTUnwrap(spin.selfMs), 30, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(spin.totalMs), 30, accuracy: 1e-9)
        XCTAssertTrue(spin.location.hasPrefix("called from App.loadCatalog(path:) at main.swift:9 · module App; self 30.0 ms"), spin.location)
    }

    /// `make demo` named Coldstart's own `span` as a slow function and as the
    /// caller of the app's: the time inside a span is the app's code's.
    func testColdstartsOwnSpanIsNeitherASlowFunctionNorACaller() throws {
        var (builder, app, _, _) = Self.appWithFoundation()
        let main = SampledTimelineBuilder.Frame(module: app, name: "App_main", file: "/src/App/main.swift", line: 23)
        let span = SampledTimelineBuilder.Frame(module: app, name: "Coldstart.Coldstart.span<A>(Swift.String, () throws -> A) throws -> A",
                                                file: "/src/Coldstart/Coldstart.swift", line: 32)
        let closure = SampledTimelineBuilder.Frame(module: app, name: "closure #1 () -> () in App_main")
        let open = SampledTimelineBuilder.Frame(module: app, name: "App.Store.open(recordCount: Swift.Int) -> App.Store",
                                                file: "/src/App/Store.swift", line: 36)
        let fill = SampledTimelineBuilder.Frame(module: app, name: "App.Store.fill(Swift.Int) -> ()")
        let specialized = SampledTimelineBuilder.Frame(
            module: app, name: "generic specialization <()> of Coldstart.Coldstart.span<A>(Swift.String, () throws -> A) throws -> A")
        // As make demo's symbolized frames name it (issue 39, item 1): a
        // static method's demangled name begins "static ".
        let demangled = SampledTimelineBuilder.Frame(module: app, name: "static Coldstart.Coldstart.span<A>(String, () throws -> A) throws -> A",
                                                     file: "/src/Coldstart/Coldstart.swift", line: 32)
        for index in 0..<30 {
            builder.sample(at: 20 + Double(index) * 0.5, [main, [span, specialized, demangled][index % 3], closure, open] + (index % 3 == 0 ? [] : [fill]))
        }
        let findings = try XCTUnwrap(LaunchAnalysis(timeline: builder.timeline()).report.findings)
        let everything = findings.map { "\($0.title) · \($0.location)" }
        XCTAssertFalse(everything.contains { $0.contains("Coldstart.") }, "\(everything)")
        let fills = try XCTUnwrap(findings.first { $0.title == "slow function App.Store.fill(Swift.Int) -> ()" }, "\(everything)")
        XCTAssertEqual(fills.callers, ["App.Store.open(recordCount:) at Store.swift:36"])
    }

    /// A bad unwind's "return address" in the program's data or ELF header
    /// (`App+0x…` named "(not code)" by the symbolizer, `__ehdr_start` in a
    /// timeline symbolized before it knew code from data) was shown as the
    /// caller of a runtime kind and of a library call: a caller is a frame
    /// in code, the next one up past such frames.
    func testCallersAreFramesInCode() throws {
        var (builder, app, foundation, core) = Self.appWithFoundation()
        let main = SampledTimelineBuilder.Frame(module: app, name: "App_main", file: "/src/App/main.swift", line: 3)
        let relocated = SampledTimelineBuilder.Frame(module: app, name: "App+0xbf70 (not code)")
        let header = SampledTimelineBuilder.Frame(module: app, name: "__ehdr_start")
        let parse = SampledTimelineBuilder.Frame(module: app, name: "App.parse(arguments: [Swift.String]) -> App.Options",
                                                 file: "/src/App/Options.swift", line: 21)
        let scan = SampledTimelineBuilder.Frame(module: core, name: "swift_conformsToProtocolMaybeInstantiateSuperclasses")
        for index in 0..<30 {
            builder.sample(at: 20 + Double(index) * 0.5, [main, parse, index % 2 == 0 ? relocated : header, scan])
        }
        let load = SampledTimelineBuilder.Frame(module: app, name: "App.loadCatalog(path: Swift.String) throws -> App.Catalog",
                                                file: "/src/App/Catalog.swift", line: 9)
        let decode = SampledTimelineBuilder.Frame(
            module: foundation, name: "FoundationEssentials.JSONDecoder.decode<A where A: Decodable>(_: A.Type, from: FoundationEssentials.Data) throws -> A")
        let unbox = SampledTimelineBuilder.Frame(module: foundation, name: "FoundationEssentials.JSONDecoderImpl.unwrap<A>(_: A.Type) throws -> A")
        for index in 0..<40 {
            builder.sample(at: 40 + Double(index) * 0.5, [main, load, index % 4 == 0 ? relocated : header, decode, unbox])
        }
        let findings = try XCTUnwrap(LaunchAnalysis(timeline: builder.timeline()).report.findings)
        let everything = findings.map { "\($0.title) · \($0.location)" }

        let scans = try XCTUnwrap(findings.first { $0.kind == .runtimeCost }, "\(everything)")
        XCTAssertTrue(scans.location.hasSuffix("; called from App.parse(arguments:)"), scans.location)
        let call = try XCTUnwrap(findings.first { $0.kind == .libraryCall }, "\(everything)")
        XCTAssertEqual(call.title, "library call JSONDecoder.decode(_:from:)")
        XCTAssertEqual(call.callers, ["App.loadCatalog(path:) at Catalog.swift:9"])
        XCTAssertEqual(call.callSite, "Catalog.swift:9")
        for finding in findings {
            XCTAssertFalse(finding.location.contains("not code") || finding.location.contains("__ehdr_start"), finding.location)
            XCTAssertFalse(finding.title.contains("not code") || finding.title.contains("__ehdr_start"), finding.title)
        }

        // The runtime kinds' table built from named stacks passes them over too.
        let stack = [scan, header, relocated, parse, main].map { NamedFrame(function: $0.name, module: "App") }
        let match = try XCTUnwrap(RuntimeCostClassifier.classify(stack))
        XCTAssertEqual(RuntimeCostClassifier.appFrame(in: stack, from: match.depth) { $0 == "App" }?.function, parse.name)
        XCTAssertFalse(Symbolizer.namesFunction("libc.so.6+0x1f3a0"))
        XCTAssertFalse(Symbolizer.namesFunction("0x7f001234"))
        XCTAssertFalse(Symbolizer.namesFunction("libm.so.6+0x2a (build-id mismatch)"))
        XCTAssertTrue(Symbolizer.namesFunction("operator+(Money, Money)"))
        XCTAssertTrue(Symbolizer.namesFunction("App.parse(arguments: [Swift.String]) -> App.Options"))
    }

    /// Two launches pooled: every time per launch (a cost of one launch
    /// only divided by both), every count the pool's, the callers of the
    /// launch with most of its samples.
    func testPooledInputsArePerLaunchWithThePoolsSamples() throws {
        func launch(_ ms: Double, samples: Int, site: String, only: Bool) -> FindingInputs {
            var inputs = FindingInputs(launchMs: 40)
            var cost = FindingInputs.NamedCost(name: "App.load()", module: "App", ms: ms, samples: samples)
            (cost.callers, cost.callSite, cost.totalMs, cost.selfMs) = (["main at \(site)"], site, ms, 0)
            inputs.functions = [cost]
            if only { inputs.lazyGlobals = [.init(name: "App.table", module: "App", ms: 6, samples: 60)] }
            return inputs
        }
        var pool = PooledFindings()
        pool.add(launch(10, samples: 100, site: "main.swift:3", only: true))
        pool.add(launch(14, samples: 140, site: "main.swift:4", only: false))
        let inputs = pool.inputs
        XCTAssertEqual(pool.launches, 2)
        XCTAssertEqual(inputs.launchMs, 40)
        let load = try XCTUnwrap(inputs.functions.first)
        XCTAssertEqual(load.ms, 12, accuracy: 1e-9)
        XCTAssertEqual(load.samples, 240)
        XCTAssertEqual(try XCTUnwrap(load.totalMs), 12, accuracy: 1e-9)
        XCTAssertEqual(load.callSite, "main.swift:4")
        XCTAssertEqual(inputs.lazyGlobals.first?.ms, 3, "seen in one launch of two")
        let finding = try XCTUnwrap(Finding.ranked(inputs).first { $0.kind == .slowFunction })
        XCTAssertEqual(finding.certainty, .samples(240))
        let interval = SamplePrecision.interval(240, msPerSample: 12.0 / 240)
        XCTAssertEqual(try XCTUnwrap(finding.msLow), interval.low, accuracy: 1e-9)
    }

    func testBriefNamesKeepTheArgumentLabels() {
        XCTAssertEqual(ProfileAnalysis.briefName("InventoryWork.Item.init(from: Decoder) throws -> InventoryWork.Item"), "InventoryWork.Item.init(from:)")
        XCTAssertEqual(ProfileAnalysis.briefName("f(_: (A) throws -> B, count: Int)"), "f(_:count:)")
        XCTAssertEqual(ProfileAnalysis.briefName("ParsableCommand._commandName.getter : Swift.String"), "ParsableCommand._commandName.getter")
        XCTAssertEqual(ProfileAnalysis.briefName("std::vector<int>::push_back(int const&)"), "std::vector::push_back")
        XCTAssertEqual(ProfileAnalysis.withoutModule("FoundationEssentials.JSONEncoder.encode(_:)"), "JSONEncoder.encode(_:)")
        XCTAssertEqual(ProfileAnalysis.withoutModule("App.load()"), "App.load()")
    }

    /// A C library built without frame pointers ends the kernel's chain in
    /// its constructor: 30 ms of "unattributed" samples and no finding. A
    /// stack of the initializers phase rooted in a library is that
    /// library's initializer; one rooted in the loader stays the loader's.
    func testAnInitializerWhoseStackWasCutShortIsStillAFinding() throws {
        var builder = SampledTimelineBuilder()
        let app = builder.module("/opt/app/App")
        let slow = builder.module("/opt/app/lib/libSlowInit.so")
        let loader = builder.module("/lib64/ld-linux-x86-64.so.2")
        for index in 0..<8 {
            builder.sample(at: 11 + Double(index), [.init(module: slow, name: "slow_init_burn")])
        }
        builder.sample(at: 19.5, [.init(module: loader, name: "_dl_relocate_object")])
        for index in 0..<30 { builder.sample(at: 21 + Double(index), [.init(module: app, name: "main"), .init(module: app, name: "App.run()")]) }
        let report = try LaunchAnalysis(timeline: builder.timeline()).report
        let initializers = try XCTUnwrap(report.profile?.initializers)
        XCTAssertEqual(initializers.libraries.map(\.module), ["libSlowInit.so"])
        XCTAssertEqual(initializers.libraries.first?.samples, 8)
        XCTAssertEqual(initializers.libraries.first?.constructors.first?.name, "slow_init_burn")
        XCTAssertEqual(initializers.unattributedSamples, 1, "the loader's own sample")
        XCTAssertTrue(report.findings?.contains { $0.title == "slow library initializer libSlowInit.so" } == true,
                      "\(report.findings?.map(\.title) ?? [])")
    }
}
