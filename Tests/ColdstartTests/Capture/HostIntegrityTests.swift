import ColdstartAnalysis
import Foundation
import XCTest

/// Issue 14, the host's side: attacks by another local user and host patterns
/// (signals, threads, descriptors, exec, fork) that Coldstart must leave as
/// they are without it. The hosts are HostPatterns modes; the attacks run as
/// an unprivileged user with setpriv.
final class HostIntegrityTests: XCTestCase {
    private var host: String!
    private var directory: URL!

    override func setUpWithError() throws {
        host = try FixturePrograms.path("HostPatterns")
        directory = try makeTemporaryDirectory(for: self)
    }

    private func timelinePath(_ name: String = "timeline.json") -> String { directory.appendingPathComponent(name).path }

    /// The timeline's "coldstart" section as plain JSON, for keys the model does not decode.
    private func section(_ path: String) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any]
        return try XCTUnwrap(object?["coldstart"] as? [String: Any])
    }

    private func profiled(
        _ arguments: [String], _ extra: [String: String?] = [:], timeout: TimeInterval = 60, whileRunning: ((Process) -> Void)? = nil
    ) throws -> ProcessResult {
        var environment: [String: String?] = ["COLDSTART": timelinePath()]
        for (key, value) in extra { environment[key] = value }
        return try runProcess(host, arguments, environment: environment, timeout: timeout, whileRunning: whileRunning)
    }

    /// Runs a command as user and group 65534 (nobody) with no supplementary groups.
    private func asNobody(_ command: [String], environment: [String: String?] = [:]) throws -> ProcessResult {
        try runProcess("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "--"] + command, environment: environment)
    }

    private func requireRootAndSetpriv() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else {
            throw XCTSkip("the attack tests need root (to make a setuid copy and a victim file) and setpriv (util-linux) to act as another user")
        }
    }

    /// A world-writable, sticky directory, like /tmp.
    private func sharedDirectory() throws -> URL {
        let shared = directory.appendingPathComponent("shared")
        try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: true)
        chmod(directory.path, 0o755)
        chmod(shared.path, 0o1777)
        return shared
    }

    // MARK: - Security (items 1 and 2)

    func testASetuidHostIgnoresTheCallersColdstart() throws {
        try requireRootAndSetpriv()
        let shared = try sharedDirectory()
        let copy = directory.appendingPathComponent("setuid-host").path
        try FileManager.default.copyItem(atPath: host, toPath: copy)
        chmod(copy, 0o4755)
        let victim = directory.appendingPathComponent("root-only")
        try Data("secret\n".utf8).write(to: victim)
        chmod(victim.path, 0o600)
        // The attack of the report: a planted link at the temporary name, and a
        // timeline path the caller chose.
        let target = shared.appendingPathComponent("x.json").path
        _ = try asNobody(["/bin/ln", "-s", victim.path, target + ".tmp.1"])
        let result = try asNobody([copy, "int-disposition"], environment: ["COLDSTART": target])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "coldstart: ignoring COLDSTART in a setuid or setgid program; profiling off\n")
        XCTAssertFalse(FileManager.default.fileExists(atPath: target), "no timeline from a setuid program")
        XCTAssertEqual(try String(contentsOf: victim, encoding: .utf8), "secret\n")
    }

    func testSymlinksPlantedAtTheTemporaryAndFinalNamesAreNeverFollowed() throws {
        try requireRootAndSetpriv()
        // The other user's own directory (not sticky: the kernel's
        // protected_symlinks does not apply), which a root host writes to.
        let theirs = directory.appendingPathComponent("theirs")
        try FileManager.default.createDirectory(at: theirs, withIntermediateDirectories: true)
        chmod(directory.path, 0o755)
        chown(theirs.path, 65534, 65534)
        let victim = directory.appendingPathComponent("root-only")
        try Data("secret\n".utf8).write(to: victim)
        chmod(victim.path, 0o600)
        let target = theirs.appendingPathComponent("x.json").path
        XCTAssertEqual(try asNobody(["/bin/ln", "-s", victim.path, target]).status, 0)
        // The report's attack: a link at the temporary name the old writer
        // derived from the pid ("<dest>.tmp.<pid>"), planted just before the
        // host starts with that pid (the shell execs it).
        let plant = "/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups /bin/ln -s \"$1\" \"$2.tmp.$$\"; exec \"$0\" int-disposition"
        let result = try runProcess("/bin/sh", ["-c", plant, host, victim.path, target], environment: ["COLDSTART": target])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(try String(contentsOf: victim, encoding: .utf8), "secret\n", "the root-owned file is untouched")
        let attributes = try FileManager.default.attributesOfItem(atPath: target)
        XCTAssertEqual(attributes[.type] as? FileAttributeType, .typeRegular, "the link at the final name was replaced")
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o600, "readable by its owner only")
        XCTAssertNoThrow(try Timeline(contentsOf: target))
        let left = try FileManager.default.contentsOfDirectory(atPath: theirs.path).filter { $0 != "x.json" }
        XCTAssertEqual(left.count, 1, "only the planted link is left: \(left)")
        XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: theirs.appendingPathComponent(left.first ?? "-").path), victim.path)
    }

    func testADirectorySwappedDuringTheLaunchDoesNotRedirectTheTimeline() throws {
        try requireRootAndSetpriv()
        let shared = try sharedDirectory()
        let sub = shared.appendingPathComponent("sub")
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        chown(sub.path, 65534, 65534)   // the other user's directory, which a root host was told to use
        let rootOnly = directory.appendingPathComponent("root-only-dir")
        try FileManager.default.createDirectory(at: rootOnly, withIntermediateDirectories: true)
        chmod(rootOnly.path, 0o700)
        let flag = directory.appendingPathComponent("go").path
        let result = try runProcess(host, ["wait-file", flag], environment: ["COLDSTART": sub.appendingPathComponent("x.json").path]) { _ in
            usleep(300_000)   // the host is past its start-up
            // The other user swaps the directory for a link to one only root may write.
            _ = try? self.asNobody(["/bin/mv", sub.path, sub.path + ".moved"])
            _ = try? self.asNobody(["/bin/ln", "-s", rootOnly.path, sub.path])
            _ = FileManager.default.createFile(atPath: flag, contents: nil)
        }
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: rootOnly.path), [], "nothing written through the swapped link")
        XCTAssertTrue(FileManager.default.fileExists(atPath: sub.path + ".moved/x.json"), "the timeline is in the directory chosen at start-up")
    }

    // MARK: - Signals (items 3, 4, 8)

    func testAHostHandlerThatChainsToThePreviousOneKeepsItsGracefulExit() throws {
        for when in ["before", "after"] {
            let result = try profiled(["term-chain", when])
            XCTAssertEqual(result.status, 0, "SIGTERM \(when) ready(): \(result.stderr)")
            XCTAssertEqual(result.stdout, "graceful: true\naffinity kept: true\n")
            let launch = try Timeline(contentsOf: timelinePath()).launch
            XCTAssertEqual(launch.endReason, when == "before" ? "signal" : "ready", "an abandoned launch is still recorded")
            try FileManager.default.removeItem(atPath: timelinePath())
        }
    }

    /// Item 9: a kill mid-launch while eight threads burn CPU. The writer has
    /// a CPU of its own while it writes (the host's threads are moved off it
    /// and back); the process still ends by the signal, with the abandoned
    /// launch recorded whole. How long it takes is `make bench-kill`'s to
    /// measure (docs/performance.md), not a test's.
    func testASIGTERMWhileEightThreadsBurnEndsTheProcessWithACompleteTimeline() throws {
        let result = try profiled(["busy", "8"], ["COLDSTART_HZ": "10000"]) { process in
            usleep(400_000)   // the threads are burning and sampled
            kill(process.processIdentifier, SIGTERM)
        }
        XCTAssertEqual(result.signal, SIGTERM, result.stderr)
        XCTAssertEqual(result.status, 143)
        XCTAssertEqual(result.stdout, "busy\n")
        XCTAssertEqual(result.stderr, "", "no warning: the timeline was written")
        let timeline = try Timeline(contentsOf: timelinePath())   // a truncated file does not load
        XCTAssertEqual(timeline.launch.endReason, "signal")
        XCTAssertFalse(timeline.launch.completed)
        XCTAssertEqual(try section(timelinePath())["launch"].flatMap { ($0 as? [String: Any])?["signal"] as? Int }, Int(SIGTERM))
        let burning = Set(timeline.samples.map(\.tid)).subtracting([timeline.process.pid])
        XCTAssertGreaterThanOrEqual(burning.count, 4, "the burning threads were sampled until the kill")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), ["timeline.json"], "no temporary file left")
    }

    func testAHostInstallingItsSIGINTHandlerOnlyOverTheDefaultGetsIt() throws {
        let result = try profiled(["int-if-default"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "installed: true, handled: true\n", "SIG_DFL is back when ready() returns")
    }

    func testAnIgnoredSIGINTStaysIgnored() throws {
        let result = try runProcess("/bin/sh", ["-c", "trap '' INT; exec \"$0\" int-disposition", host], environment: ["COLDSTART": timelinePath()])
        XCTAssertEqual(result.stdout, "ignored\n", "Coldstart installs nothing over the action the host was given")
    }

    func testTheHostsOwnSIGPROFHandlerNeverSeesColdstartsSignals() throws {
        let result = try profiled(["prof-handler"], ["COLDSTART_HZ": "10000"])
        XCTAssertEqual(result.stdout, "host handler calls: 0\n")
        XCTAssertGreaterThan(try XCTUnwrap(Timeline(contentsOf: timelinePath()).sampling).samples, 100, "and sampling went on")
    }

    func testAHostTakingTheSamplingSignalStopsSamplingAndTheTimelineSaysWhy() throws {
        // At 1 kHz: a scan period (5 ms) is 5 signals. (The default's boosted
        // start signals 4 times as often for its first 50 ms.)
        let result = try profiled(["urg-handler"], ["COLDSTART_HZ": "1000"])
        XCTAssertEqual(result.status, 0)
        XCTAssertEqual(result.stderr, "coldstart: the program changed SIGURG's action (Coldstart's sampling signal); stack sampling stopped\n")
        let sampling = try XCTUnwrap(section(timelinePath())["sampling"] as? [String: Any])
        XCTAssertEqual(sampling["stopReason"] as? String, "signal-taken")
        let calls = Int(result.stdout.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? -1
        XCTAssertTrue((0..<20).contains(calls), "at most one scan period of signals reached the host's handler: \(calls)")
    }

    func testBlockingResettingAndUnblockingTheSignalsDoesNotKillTheHost() throws {
        let result = try profiled(["block-reset"], ["COLDSTART_HZ": "10000"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "alive\n")
    }

    func testAThreadWaitingInSigtimedwaitForEverySignalGetsItsTimeout() throws {
        for hz in ["1000", "10000"] {
            // By default the kernel samples it: no signal to take.
            let result = try profiled(["sigwait"], ["COLDSTART_HZ": hz])
            XCTAssertEqual(result.stdout, "timed out\n", "at \(hz) Hz")
            // The signal fallback leaves it alone.
            let fallback = try profiled(["sigwait"], ["COLDSTART_HZ": hz, "COLDSTART_SAMPLER": "signals"])
            XCTAssertEqual(fallback.stdout, "timed out\n", "at \(hz) Hz, with signals")
            let sampling = try XCTUnwrap(section(timelinePath())["sampling"] as? [String: Any])
            XCTAssertEqual(sampling["threadsBlockingSignal"] as? Int, 1, "the waiting thread is left alone")
        }
    }

    func testACrashStillGetsTheSwiftBacktraceOfEveryThread() throws {
        let backtrace = "enable=yes,interactive=no,symbolicate=off"
        // Whether the Swift backtracer runs here at all: the same crash
        // without Coldstart (a fact of the toolchain and the machine).
        let alone = try runProcess(host, ["crash"], environment: ["SWIFT_BACKTRACE": backtrace])
        guard alone.stderr.contains("Program crashed") else {
            throw XCTSkip("the Swift backtracer does not run here, without Coldstart either (SWIFT_BACKTRACE=\(backtrace)): \(alone.stderr.prefix(200))")
        }
        let result = try profiled(["crash"], ["SWIFT_BACKTRACE": backtrace])
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.stderr.contains("Program crashed"), "the backtracer runs under Coldstart too: \(result.stderr.prefix(400))")
        XCTAssertFalse(result.stderr.contains("failed to suspend thread"), result.stderr)
        XCTAssertTrue(result.stderr.contains("coldstart-watch"), "Coldstart's threads are in the backtrace too")
    }

    /// Samples of threads other than the main one (those from `fromNs` on).
    private func workerSamples(_ path: String, fromNs: Int64 = .min) throws -> Int {
        let samples = try XCTUnwrap(section(path)["samples"] as? [[Any]])
        let pid = try Timeline(contentsOf: path).process.pid
        return samples.filter { ($0[1] as? Int) != pid && (($0[0] as? NSNumber)?.int64Value ?? .max) >= fromNs }.count
    }

    // The signal fallback's SIGPROF for threads that block SIGURG (by
    // default the kernel samples them without a signal).
    private let signals: [String: String?] = ["COLDSTART_SAMPLER": "signals"]

    func testAThreadWithLibdispatchsSignalMaskIsSampledWithSIGPROF() throws {
        let result = try profiled(["dispatch-mask", "plain"], signals)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "alive, host handler calls: 0\n")
        let sampling = try XCTUnwrap(section(timelinePath())["sampling"] as? [String: Any])
        XCTAssertEqual(sampling["threadsBlockingSignal"] as? Int, 0, "it blocks SIGURG but not SIGPROF")
        XCTAssertGreaterThan(try workerSamples(timelinePath()), 100, "its 200 ms of CPU at 1 kHz")
    }

    func testWithTheHostsOwnSIGPROFHandlerSuchAThreadIsLeftAlone() throws {
        let result = try profiled(["dispatch-mask", "prof"], ["COLDSTART_HZ": "10000"].merging(signals) { $1 })
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "alive, host handler calls: 0\n")
        XCTAssertEqual(try workerSamples(timelinePath()), 0, "no signal of ours")
        XCTAssertEqual(try section(timelinePath())["sampling"].flatMap { ($0 as? [String: Any])?["threadsBlockingSignal"] as? Int }, 1)
        // By default the kernel samples it, and the host's handler sees nothing.
        let kernel = try profiled(["dispatch-mask", "prof"], ["COLDSTART_HZ": "10000"])
        XCTAssertEqual(kernel.stdout, "alive, host handler calls: 0\n")
        XCTAssertGreaterThan(try workerSamples(timelinePath()), 100, "its 200 ms of CPU, sampled by the kernel")
    }

    func testAHostInstallingItsSIGPROFHandlerWhileSuchAThreadIsSampledGetsItBack() throws {
        let result = try profiled(["dispatch-mask", "late-prof"], signals)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "coldstart: the program changed SIGPROF's action; threads that block SIGURG (dispatch workers) are no longer sampled\n")
        let calls = Int(result.stdout.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? -1
        XCTAssertTrue((0..<20).contains(calls), "at most one scan period of signals reached the host's handler: \(calls)")
        let sampling = try XCTUnwrap(section(timelinePath())["sampling"] as? [String: Any])
        XCTAssertEqual(sampling["threadsBlockingSignal"] as? Int, 1, "left alone from then on")
        XCTAssertEqual(sampling["stopReason"] as? String, "launch-end", "the other threads are still sampled")
    }

    func testSamplingStoppingWhileSuchAThreadBurnsLeavesNoSIGPROFToKillIt() throws {
        for _ in 0..<5 {
            let result = try profiled(["dispatch-mask", "busy-ready"], ["COLDSTART_HZ": "10000"].merging(signals) { $1 })
            XCTAssertEqual(result.status, 0, "a pending SIGPROF of ours met SIG_DFL: \(result.stderr)")
            XCTAssertEqual(result.stdout, "alive, host handler calls: 0\n")
            XCTAssertGreaterThan(try workerSamples(timelinePath()), 0, "sampled with SIGPROF while it burnt")
            try FileManager.default.removeItem(atPath: timelinePath())
        }
    }

    // MARK: - No Coldstart code on a host thread's stack or descriptors (issue 23, items 1 and 2)

    /// A daemon closes every descriptor, then opens its logs and writes them
    /// while it is sampled. (libunwind in a sampling handler once took the
    /// numbers of its validation pipe back from the host: logs lost, process
    /// memory written into a host file.) By default no sample runs code on a
    /// host thread; the signal fallback walks frame pointers, touching no
    /// descriptor.
    func testADaemonThatClosesEveryDescriptorKeepsEveryLogLine() throws {
        for mode in ["perf", "signals"] {
            let logs = directory.appendingPathComponent("logs-\(mode)")
            try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
            let result = try profiled(["log-daemon", logs.path], ["COLDSTART_SAMPLER": mode])
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(result.stdout, "lines: 80 of 80, failed writes: 0\n", mode)
            XCTAssertGreaterThan(try XCTUnwrap(Timeline(contentsOf: timelinePath()).sampling).samples, 100, "sampled meanwhile (\(mode))")
        }
    }

    /// A thread with little stack left survives its samples: by default the
    /// kernel takes them (no signal frame on its stack at all); the signal
    /// fallback's handler skips a sample when under 2 KiB would be left
    /// below it (libunwind in the handler needed 8–10 KiB: a thread with 6 KiB
    /// left died of SIGSEGV). Any signal first needs the kernel's own frame
    /// on that stack, whoever sends it: _SC_MINSIGSTKSZ (AT_MINSIGSTKSZ), 3376 bytes with the
    /// AVX-512 state, ~2 KiB with AVX2. Below that no handler can help, so
    /// the fallback's case is that frame plus room to sample.
    func testAThreadWithLittleStackLeftSurvivesItsSamples() throws {
        let kernelFrame = sysconf(Int32(_SC_MINSIGSTKSZ))
        XCTAssertGreaterThan(kernelFrame, 0, "the kernel says how large its signal frame is")
        // + 256 bytes: every sample skipped. It died of SIGSEGV in 30 of 40
        // launches with the other CPU busy while the handler's first library
        // call ran the loader's lazy binding on that stack (docs/performance.md).
        let cases = [("perf", 1024), ("signals", kernelFrame + 256), ("signals", kernelFrame + 3072)]
        for (mode, left) in cases {
            let result = try profiled(["stack-edge", String(left)], ["COLDSTART_SAMPLER": mode, "COLDSTART_HZ": "10000"])
            XCTAssertEqual(result.status, 0, "\(mode), \(left) bytes left: \(result.stderr)")
            XCTAssertEqual(result.stdout, "survived\n")
            let sampling = try XCTUnwrap(Timeline(contentsOf: timelinePath()).sampling)
            // Of the ~1,000 periods, those before the scan thread armed the
            // new thread's clock go unsampled, and a record the kernel dropped
            // for a full ring was still a sample survived: at load 5.5, with
            // the scan thread kept off the CPU, 493 were kept.
            let lost = sampling.kernelStacks?.lost ?? 0
            XCTAssertGreaterThan(sampling.samples + (sampling.stackSkips ?? 0) + lost, 250,
                                 "100 ms at 10 kHz, sampled, skipped or lost in a full ring (\(mode); \(lost) lost)")
        }
    }

    /// No sample cuts a host's sleep short, with the kernel's samples or the
    /// fallback's signals (SA_RESTART, and a CPU clock: a sleeping thread's
    /// clock does not run).
    func testSleepsAreNeverCutShort() throws {
        for mode in ["perf", "signals"] {
            let result = try profiled(["sleeps"], ["COLDSTART_SAMPLER": mode, "COLDSTART_HZ": "10000"])
            XCTAssertEqual(result.stdout, "sleeps cut short: 0\n", mode)
        }
    }

    // MARK: - Descriptors, time and memory (items 5, 6, 7)

    func testShortLivedThreadsDoNotKeepDescriptors() throws {
        let result = try profiled(["short-threads", "300"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let open = Int(result.stdout.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? -1
        XCTAssertTrue((0..<64).contains(open), "descriptors open after 300 threads came and went: \(result.stdout)")
        let sampling = try XCTUnwrap(Timeline(contentsOf: timelinePath()).sampling)
        XCTAssertGreaterThan(sampling.threadsSampled ?? 0, 100, "they were sampled while they lived")
    }

    func testANeverReadyHostIsSampledAndWatchedForABoundedTime() throws {
        let result = try profiled(["never-ready", "1500"], ["COLDSTART_LIMIT_MS": "300"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let coldstart = try section(timelinePath())
        let sampling = try XCTUnwrap(coldstart["sampling"] as? [String: Any])
        XCTAssertEqual(sampling["stopReason"] as? String, "time-limit")
        let window = Double((sampling["stopNs"] as? Int ?? 0) - (sampling["startNs"] as? Int ?? 0)) / 1e6
        XCTAssertEqual(window, 300, accuracy: 200, "sampled for the limit, not the 1.5 s the host ran")
        let watch = try XCTUnwrap(coldstart["watch"] as? [String: Any])
        XCTAssertEqual(watch["stopReason"] as? String, "time-limit")
        XCTAssertEqual(try Timeline(contentsOf: timelinePath()).launch.endReason, "exit", "the timeline is still written at exit")
    }

    /// The helper process that opens the kernel's first perf event is not a
    /// child the program's own `waitpid(-1)` can get, and it is reaped.
    func testColdstartsHelperProcessIsNeitherSeenByTheHostsWaitNorLeftBehind() throws {
        let result = try profiled(["wait-children"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "waitpid: no child, children left: 0\n")
        XCTAssertNotNil(try Timeline(contentsOf: timelinePath()).sampling, "it was sampled (so the helper ran)")
    }

    /// COLDSTART_MAX_SAMPLES=1000000 reserves 288 MB of sample buffers: only
    /// what the samples use becomes resident, and the write gives it back.
    func testTheBuffersAreResidentOnlyAsUsedAndGivenBackOnceTheTimelineIsWritten() throws {
        let result = try profiled(["rss"], ["COLDSTART_MAX_SAMPLES": "1000000"])
        let numbers = result.stdout.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        XCTAssertEqual(numbers.count, 2, result.stdout)
        guard numbers.count == 2 else { return }
        XCTAssertLessThan(numbers[0], 60_000, "resident kB before ready(), 330 ms into the launch: \(result.stdout)")
        XCTAssertLessThanOrEqual(numbers[1], numbers[0] + 2_048, "and after the write: \(result.stdout)")
    }

    // MARK: - A second image (item 10)

    func testAnExecOfItselfAfterReadyKeepsTheFirstImagesTimeline() throws {
        let result = try profiled(["exec-self"])
        XCTAssertEqual(result.stdout, "second image\n", result.stderr)
        let first = try Timeline(contentsOf: timelinePath()), second = try Timeline(contentsOf: timelinePath("timeline-2.json"))
        XCTAssertEqual(first.launch.endReason, "ready")
        XCTAssertEqual(second.launch.endReason, "ready")
        XCTAssertEqual(first.process.pid, second.process.pid, "one process, two images, two files")

        let byPid = directory.appendingPathComponent("dir")
        try FileManager.default.createDirectory(at: byPid, withIntermediateDirectories: true)
        _ = try runProcess(host, ["exec-self"], environment: ["COLDSTART": "1", "COLDSTART_DIR": byPid.path])
        let names = try FileManager.default.contentsOfDirectory(atPath: byPid.path).sorted()
        XCTAssertEqual(names.count, 2, "\(names)")
        XCTAssertTrue(names.first?.hasSuffix("-2.json") ?? false || names.last?.hasSuffix("-2.json") ?? false, "\(names)")
    }

    /// A rerun with the same path: the previous run's timeline is removed by
    /// Coldstart's thread during the launch, so that freeing its blocks (a
    /// synchronous discard on a file system mounted with `discard`, ~1 ms)
    /// is not part of the host's exit; the new one takes its place. The
    /// writer prepares that on the sampler's thread, or the watcher's when
    /// sampling is off.
    func testARerunsPreviousTimelineGoesDuringTheLaunchNotAtItsExit() throws {
        for sampler in [nil, "off"] as [String?] {
            try Data("previous run".utf8).write(to: URL(fileURLWithPath: timelinePath()))
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -60)], ofItemAtPath: timelinePath())
            let release = directory.appendingPathComponent("release").path
            try? FileManager.default.removeItem(atPath: release)
            var goneWhileRunning = false
            let result = try profiled(["wait-file", release], ["COLDSTART_SAMPLER": sampler]) { _ in
                for _ in 0..<400 where !goneWhileRunning {
                    goneWhileRunning = !FileManager.default.fileExists(atPath: self.timelinePath())
                    if !goneWhileRunning { usleep(5_000) }
                }
                _ = FileManager.default.createFile(atPath: release, contents: Data())
            }
            let mode = "COLDSTART_SAMPLER=\(sampler ?? "(unset)")"
            XCTAssertEqual(result.status, 0, "\(mode): \(result.stderr)")
            XCTAssertTrue(goneWhileRunning, "\(mode): the previous timeline was still there while the launch ran")
            XCTAssertEqual(try Timeline(contentsOf: timelinePath()).launch.endReason, "exit", "\(mode): the new timeline in its place")
            XCTAssertFalse(FileManager.default.fileExists(atPath: timelinePath("timeline-2.json")), mode)
        }
    }

    func testADaemonizingForkDoesNotOverwriteTheParentsTimeline() throws {
        let marker = directory.appendingPathComponent("child-done").path
        let result = try profiled(["daemonize", marker])
        XCTAssertEqual(result.status, 0)
        for _ in 0..<400 where !FileManager.default.fileExists(atPath: marker) { usleep(5_000) }
        XCTAssertTrue(FileManager.default.fileExists(atPath: marker), "the daemon ran")
        usleep(100_000)
        let timeline = try Timeline(contentsOf: timelinePath())
        XCTAssertEqual(timeline.launch.endReason, "exit", "the parent's launch")
        XCTAssertTrue(timeline.marks.isEmpty, "nothing of the child's")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }, ["timeline.json"])
    }
}
