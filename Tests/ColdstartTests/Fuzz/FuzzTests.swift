@testable import ColdstartAnalysis
import ColdstartExport
import ColdstartText
import Foundation
import XCTest

/// A mutation fuzzer for the two readers of untrusted files, the timeline
/// reader and the ELF reader, each through the whole CLI path: load, one
/// analysis pass, then text, JSON, HTML, pprof, folded, speedscope and
/// `symbolize` output.
///
/// Input N of seed S is a deterministic mutation of a corpus file
/// (Fixtures/*.json and Fixtures/fuzz-corpus/, plus two small system ELF
/// files), so (S, N) reproduces it anywhere. The inputs run in a child
/// process (this test binary again, whose Tests/CTestOnly constructor runs
/// `coldstart_fuzz_worker` before XCTest's main: no test), which records
/// the input it is on before each one: a crash or a hang kills the child,
/// not the test run, and the parent saves the input and fails naming S, N
/// and the saved file, then goes on from N + 1.
///
/// `make test` runs 30 s with a fixed seed; `make fuzz` runs longer with a
/// fresh one (COLDSTART_FUZZ_SECONDS, COLDSTART_FUZZ_SEED,
/// COLDSTART_FUZZ_CRASHES: where crashing inputs are saved).
final class FuzzTests: XCTestCase {
    private static let environment = ProcessInfo.processInfo.environment

    func testTimelineAndELFReadersSurviveMutatedInputs() throws {
        let seconds = Double(Self.environment["COLDSTART_FUZZ_SECONDS"] ?? "") ?? 30
        let seed = UInt64(Self.environment["COLDSTART_FUZZ_SEED"] ?? "") ?? 20_261_201
        let crashes = URL(fileURLWithPath: Self.environment["COLDSTART_FUZZ_CRASHES"]
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("coldstart-fuzz-crashes").path)
        let state = try makeTemporaryDirectory(for: self)
        let corpus = try FuzzCorpus.load()
        let deadline = Date().addingTimeInterval(seconds)
        var iteration: UInt64 = 0
        var executions: UInt64 = 0
        var failures: [String] = []
        while Date() < deadline, failures.count < 5 {
            let progress = state.appendingPathComponent("progress")
            try? FileManager.default.removeItem(at: progress)
            var outcome = ""
            do {
                let child = try runProcess(
                    // A filter no test matches: were the worker's constructor
                    // missing, XCTest would run nothing rather than every test.
                    CommandLine.arguments[0], ["ColdstartTests.FuzzWorkerIsNoTest"],
                    environment: ["COLDSTART_FUZZ_WORKER": state.path, "COLDSTART_FUZZ_SEED": "\(seed)",
                                  "COLDSTART_FUZZ_START": "\(iteration)", "COLDSTART_FUZZ_UNTIL": "\(deadline.timeIntervalSince1970)",
                                  "SWIFT_BACKTRACE": "enable=no"],
                    timeout: max(1, deadline.timeIntervalSinceNow) + 30)
                if child.status == 0 { outcome = "" } else {
                    outcome = child.signal.map { "killed by signal \($0)" } ?? "exit status \(child.status)"
                    let lines = child.stderr.split(separator: "\n")
                    outcome += ": " + (lines.first { $0.contains("Fatal error") }.map(String.init)
                        ?? lines.suffix(2).joined(separator: " | "))
                }
            } catch {
                outcome = "hung (\(error))"
            }
            let last = (try? String(contentsOf: progress, encoding: .utf8)).flatMap { UInt64($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            let done = last.map { $0 + 1 } ?? iteration
            executions += done - iteration
            guard !outcome.isEmpty, let last else {
                if !outcome.isEmpty { failures.append("seed \(seed): the worker failed before any input: \(outcome)") }
                break
            }
            let input = corpus.input(seed: seed, iteration: last)
            try FileManager.default.createDirectory(at: crashes, withIntermediateDirectories: true)
            let saved = crashes.appendingPathComponent("seed\(seed)-input\(last).\(input.isELF ? "elf" : "json")")
            try Data(input.bytes).write(to: saved)
            failures.append("seed \(seed) input \(last) (\(input.isELF ? "ELF" : "timeline"), saved as \(saved.path)): \(outcome)")
            iteration = last + 1
        }
        print("fuzz: seed \(seed), \(executions) inputs in \(Int(seconds)) s, \(failures.count) crashing")
        XCTAssertEqual(failures, [], "reproduce one with COLDSTART_FUZZ_SEED=S and the saved input")
        XCTAssertGreaterThan(executions, 0, "the worker ran no input")
    }
}

/// The child process (not an XCTest method: Tests/CTestOnly/fuzz_worker.c
/// calls it when COLDSTART_FUZZ_WORKER is set, and exits with its status):
/// runs inputs from COLDSTART_FUZZ_START until the deadline, writing the
/// number of each to `progress` before it runs. 2: started wrongly.
@_cdecl("coldstart_fuzz_worker")
func fuzzWorker() -> Int32 {
    let environment = ProcessInfo.processInfo.environment
    guard let state = environment["COLDSTART_FUZZ_WORKER"],
          let seed = UInt64(environment["COLDSTART_FUZZ_SEED"] ?? ""),
          var iteration = UInt64(environment["COLDSTART_FUZZ_START"] ?? ""),
          let until = Double(environment["COLDSTART_FUZZ_UNTIL"] ?? ""),
          let corpus = try? FuzzCorpus.load()
    else {
        FileHandle.standardError.write(Data("fuzz worker: COLDSTART_FUZZ_* incomplete, or no corpus\n".utf8))
        return 2
    }
    let progress = open(state + "/progress", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard progress >= 0 else {
        FileHandle.standardError.write(Data("fuzz worker: cannot write \(state)/progress (errno \(errno))\n".utf8))
        return 2
    }
    defer { close(progress) }
    let modulePath = state + "/module.so"
    while Date().timeIntervalSince1970 < until {
        let number = Array("\(iteration)\n".utf8)
        _ = ftruncate(progress, 0)
        _ = pwrite(progress, number, number.count, 0)
        let input = corpus.input(seed: seed, iteration: iteration)
        if input.isELF {
            guard (try? Data(input.bytes).write(to: URL(fileURLWithPath: modulePath))) != nil else { return 2 }
            FuzzPipeline.elf(at: modulePath, timeline: corpus.elfTimeline(modulePath: modulePath))
        } else {
            FuzzPipeline.timeline(Data(input.bytes))
        }
        iteration += 1
    }
    return 0
}

/// The seeds, and input N of a seed.
struct FuzzCorpus {
    var timelines: [[UInt8]]
    var elfs: [[UInt8]]

    static func load() throws -> FuzzCorpus {
        var timelines: [[UInt8]] = []
        for directory in [Fixtures.directory, Fixtures.directory.appendingPathComponent("fuzz-corpus")] {
            let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }.sorted()
            for name in names { timelines.append(Array(try Data(contentsOf: directory.appendingPathComponent(name)))) }
        }
        // Small ELF files every Debian system has: a shared library and an executable.
        let elfs = ["/usr/lib/x86_64-linux-gnu/libdl.so.2", "/usr/bin/true"].compactMap { FileManager.default.contents(atPath: $0) }
        return FuzzCorpus(timelines: timelines, elfs: elfs.map(Array.init))
    }

    /// One input in four is an ELF file when there are ELF seeds.
    func input(seed: UInt64, iteration: UInt64) -> (bytes: [UInt8], isELF: Bool) {
        var random = SplitMix64(seed: seed, iteration: iteration)
        if !elfs.isEmpty, random.below(4) == 0 {
            return (FuzzMutator.elf(random.pick(elfs), &random), true)
        }
        return (FuzzMutator.timeline(random.pick(timelines), &random), false)
    }

    /// An unsymbolized timeline whose one module is the mutated ELF file,
    /// sampled at addresses across its first megabyte.
    func elfTimeline(modulePath: String) -> Timeline? {
        var builder = SampledTimelineBuilder()
        builder.symbolized = false
        let module = builder.module(modulePath)
        for index in 0..<8 {
            builder.sample(at: 21 + Double(index), [.init(module: module, name: "root"), .init(module: module, name: "leaf\(index)")])
        }
        return try? builder.timeline()
    }
}

/// What the CLI does with a file, minus the writing.
enum FuzzPipeline {
    static func timeline(_ data: Data) {
        guard let timeline = try? Timeline(data: data, path: "fuzz.json") else { return }
        render(timeline)
        _ = try? timeline.symbolized(path: "fuzz.json", debugDirectory: nil)
    }

    static func elf(at path: String, timeline: Timeline?) {
        if let image = try? ELFImage(path: path, debugDirectory: nil) {
            let addresses: [UInt64] = [0, 1, 0x1000, 0x1040, .max, image.segments.first?.virtualAddress ?? 0]
            for address in addresses {
                _ = image.symbol(containing: address)
            }
        }
        _ = try? SharedLibraries(executable: path, libraryPath: nil)
        // `coldstart inspect`: initializers, Swift sections, the allow-list.
        if let inspection = try? StaticInspection(executable: path, libraryPath: nil) {
            _ = inspection.text(style: TextStyle(width: 80, color: false))
            _ = try? inspection.jsonData()
            _ = AllowList.text(for: inspection, binaryName: "fuzz")
        }
        if let timeline { render(timeline) }
    }

    /// Every output of one analysis pass, whole launch and first phase only.
    static func render(_ timeline: Timeline) {
        var selections = [ProfileOptions()]
        if let phase = timeline.phases.first?.name { selections.append(ProfileOptions(top: 3, phase: phase, treeDepth: 3)) }
        for options in selections {
            guard let analysis = try? LaunchAnalysis(
                timeline: timeline, options: options, path: "fuzz.json",
                symbolizer: Symbolizer(modules: timeline.modules, debugDirectory: nil)) else { continue }
            _ = analysis.report.text()
            _ = try? analysis.report.jsonData()
            _ = HTMLReport.render(analysis, source: "fuzz.json")
            if let stacks = analysis.stacks {
                _ = try? PprofExporter.export(stacks)
                _ = FoldedExporter.export(stacks)
                _ = SpeedscopeExporter.export(stacks)
            }
        }
    }
}
