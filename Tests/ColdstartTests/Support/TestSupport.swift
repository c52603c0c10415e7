import CLauncher
import Foundation
import XCTest

/// Programs built by `swift build` (the README's `make test` runs it first),
/// shared by every test: nothing is compiled per test.
enum Products {
    /// The directory holding this test bundle and the package's executables.
    static let directory: URL = {
        var url = Bundle.main.bundleURL
        if url.pathExtension == "xctest" { url.deleteLastPathComponent() }
        return url
    }()

    /// The path of the built executable `name`; fails the test when missing.
    static func path(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let path = directory.appendingPathComponent(name).path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            XCTFail("\(path) is missing: run `swift build` before `swift test` (make test does)", file: file, line: line)
            throw CocoaError(.fileNoSuchFile)
        }
        return path
    }

    /// The objects SwiftPM built for `module`, in its build folder and the
    /// folders below it (a C target's mirror its source folders). With
    /// `sources` (a C target's folder), only those whose source is still
    /// there: an incremental build keeps the objects of moved or deleted files.
    static func objects(of module: String, sources: URL? = nil) -> [String] {
        let build = directory.appendingPathComponent("\(module).build")
        let relatives = (try? FileManager.default.subpathsOfDirectory(atPath: build.path)) ?? []
        return relatives.filter { relative in
            relative.hasSuffix(".o")
                && sources.map { FileManager.default.fileExists(atPath: $0.appendingPathComponent(String(relative.dropLast(2))).path) } ?? true
        }.sorted().map { build.appendingPathComponent($0).path }
    }
}

/// What a finished child process left behind.
struct ProcessResult {
    var status: Int32
    /// Set when the process was ended by a signal.
    var signal: Int32?
    var stdout: String
    var stderr: String
}

/// Reads a pipe to its end on a background queue; `wait()` hands the bytes
/// over once the writer closed it (the semaphore orders the two threads).
private final class PipeDrain: @unchecked Sendable {
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ pipe: Pipe) {
        DispatchQueue.global().async {
            self.data = pipe.fileHandleForReading.readDataToEndOfFile()
            self.done.signal()
        }
    }

    func wait() -> Data {
        done.wait()
        return data
    }
}

/// The `coldstart` executable, as a user runs it, with `environment` added
/// as `runProcess` adds it. Swift's crash backtracer is off: it would add
/// seconds to a crash, which a test then reports anyway.
func coldstart(_ arguments: [String], environment: [String: String?] = [:], timeout: TimeInterval = 120) throws -> ProcessResult {
    try runProcess(try Products.path("coldstart"), arguments,
                   environment: ["SWIFT_BACKTRACE": "enable=no"].merging(environment) { $1 }, timeout: timeout)
}

/// Runs `executable` with `arguments` and `environment` added to (or, with a
/// nil value, removed from) this process's environment. `whileRunning` is
/// called with the child's pid once it has started.
@discardableResult
func runProcess(
    _ executable: String,
    _ arguments: [String] = [],
    environment: [String: String?] = [:],
    currentDirectory: String? = nil,
    timeout: TimeInterval = 120,
    whileRunning: ((Process) -> Void)? = nil
) throws -> ProcessResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    var env = ProcessInfo.processInfo.environment
    for key in env.keys where key.hasPrefix("COLDSTART") { env[key] = nil }
    for (key, value) in environment { env[key] = value }
    process.environment = env
    if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    // Read both pipes concurrently so a chatty child cannot block on a full pipe.
    let outDrain = PipeDrain(out), errDrain = PipeDrain(err)
    try process.run()
    whileRunning?(process)
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(2_000) }
    if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        _ = (outDrain.wait(), errDrain.wait())
        throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "\(executable) timed out after \(timeout) s"])
    }
    process.waitUntilExit()
    let outData = outDrain.wait(), errData = errDrain.wait()
    let bySignal = process.terminationReason == .uncaughtSignal
    return ProcessResult(
        status: bySignal ? 128 + process.terminationStatus : process.terminationStatus,
        signal: bySignal ? process.terminationStatus : nil,
        stdout: String(decoding: outData, as: UTF8.self),
        stderr: String(decoding: errData, as: UTF8.self)
    )
}

/// A fresh directory under the system's temporary directory, removed by the
/// test's teardown.
func makeTemporaryDirectory(for test: XCTestCase) throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("coldstart-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    test.addTeardownBlock { try? FileManager.default.removeItem(at: url) }
    return url
}

/// The fixture programs of Tests/Fixtures, built once by `make fixtures`.
enum FixturePrograms {
    /// A perf event held for the whole test run, as `coldstart run` holds one
    /// for its batch: the fixtures' samplers then open their clocks in
    /// microseconds instead of the kernel's 6–25 ms one-time switch, which
    /// would leave the start of their library initializers unsampled and
    /// make the accuracy tests depend on how long the machine was quiet.
    nonisolated(unsafe) private static var warmKernel: Int32 = -1

    private static func keepKernelWarm() {
        if warmKernel < 0 { warmKernel = cs_launch_keep_perf_warm() }
    }

    /// Runs `body` on a quiet kernel: this process's warm event closed and
    /// 1.5 s gone by (the kernel switches its hooks off a second after the
    /// last event closes). The milliseconds a first event then took to open
    /// (a probe, itself followed by another 1.5 s) say whether this machine
    /// has the quiet kernel's wait at all: another process holding an event
    /// keeps it warm. Then the warm event again.
    static func withQuietKernel<T>(_ body: (_ firstOpenMs: Double) throws -> T) rethrows -> T {
        if warmKernel >= 0 { close(warmKernel) }
        warmKernel = -1
        defer { keepKernelWarm() }
        usleep(1_500_000)
        let start = DispatchTime.now().uptimeNanoseconds
        let probe = cs_launch_keep_perf_warm()
        let firstOpenMs = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        if probe >= 0 { close(probe) }
        usleep(1_500_000)
        return try body(firstOpenMs)
    }

    /// The fixtures' bin directory, from COLDSTART_FIXTURES (set by `make test`).
    static func path(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        keepKernelWarm()
        guard let directory = ProcessInfo.processInfo.environment["COLDSTART_FIXTURES"], !directory.isEmpty else {
            XCTFail("COLDSTART_FIXTURES is not set: run the tests with `make test` (it builds Tests/Fixtures and sets it)", file: file, line: line)
            throw CocoaError(.fileNoSuchFile)
        }
        let path = URL(fileURLWithPath: directory).appendingPathComponent(name).path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            XCTFail("\(path) is missing: `make fixtures` builds it", file: file, line: line)
            throw CocoaError(.fileNoSuchFile)
        }
        return path
    }
}

/// Runs `executable` with stdout to /dev/null: its exit status (128 + the
/// signal when killed), its stderr, and its peak resident memory: the
/// largest `VmHWM` of /proc/PID/status read every 10 ms (the high-water mark
/// of its own memory after `exec`; `wait4`'s `ru_maxrss` would also count
/// the test process's, which a spawned child shares until its `exec`).
/// `maxResidentMiB` is nil when no read found the line (the program ended
/// first): a bound on it must then fail, not hold for a figure never read.
func runMeasuringMemory(_ executable: String, _ arguments: [String], timeout: TimeInterval = 120) throws
    -> (status: Int32, stderr: String, rawStderr: [UInt8], maxResidentMiB: Int?) {
    let errors = FileManager.default.temporaryDirectory.appendingPathComponent("coldstart-stderr-\(UUID().uuidString)").path
    defer { unlink(errors) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    let variables: [String] = ["SWIFT_BACKTRACE=enable=no", "PATH=/usr/bin:/bin"]
    let environment: [UnsafeMutablePointer<CChar>?] = variables.map { strdup($0) } + [nil]
    defer { environment.forEach { free($0) } }
    var pid: pid_t = 0
    XCTAssertEqual(posix_spawn(&pid, executable, &actions, nil, argv, environment), 0)
    var status: Int32 = 0
    var highWaterKiB: Int?
    let deadline = Date().addingTimeInterval(timeout)
    while waitpid(pid, &status, WNOHANG) == 0 {
        if let line = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8))?
            .split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
           let kib = Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") {
            highWaterKiB = max(highWaterKiB ?? 0, kib)
        }
        if Date() > deadline {
            kill(pid, SIGKILL)
            _ = waitpid(pid, &status, 0)
            XCTFail("\(arguments) did not finish in \(timeout) s")
            break
        }
        usleep(10_000)
    }
    let raw = [UInt8]((try? Data(contentsOf: URL(fileURLWithPath: errors))) ?? Data())
    let exited = status & 0x7F == 0
    return (exited ? (status >> 8) & 0xFF : 128 + (status & 0x7F), String(decoding: raw, as: UTF8.self), raw,
            highWaterKiB.map { $0 / 1024 })
}

/// The CPUs this process may run on (/proc/self/status, `Cpus_allowed_list`:
/// "0-3,6"), which a child it starts inherits; ascending.
func allowedCPUs() -> [Int] {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") })
    else { return [] }
    return line.dropFirst("Cpus_allowed_list:".count).trimmingCharacters(in: .whitespaces).split(separator: ",").flatMap { range -> [Int] in
        let ends = range.split(separator: "-").compactMap { Int($0) }
        guard let low = ends.first, let high = ends.last, low <= high else { return [] }
        return Array(low...high)
    }
}

/// The machine's stolen time so far, in clock ticks (/proc/stat's `cpu` line,
/// field 8): time the hypervisor ran something else on a virtual CPU. Stolen
/// while a thread runs, it is in neither the thread's CPU clock nor its
/// run-queue wait, while the perf task clock, which runs whenever the thread
/// is scheduled in, counts it.
func stolenTicks() -> UInt64 {
    let line = (try? String(contentsOfFile: "/proc/stat", encoding: .utf8))?.split(separator: "\n").first
    let fields = line?.split(separator: " ")
    return fields.flatMap { $0.count > 8 ? UInt64($0[8]) : nil } ?? 0
}

/// The machine's steal since `stolenTicks()` read `ticks`, in milliseconds,
/// summed over its CPUs: the most of it that can have hit one thread.
func stolenMs(since ticks: UInt64) -> Double {
    Double(stolenTicks() &- ticks) * 1000 / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// The repository's root (this file is Tests/ColdstartTests/Support/TestSupport.swift).
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
