import ColdstartAnalysis
import Foundation

/// Spawns the app with posix_spawn: nothing runs in the child between the
/// clock read and exec, and the app inherits this process's stdio.
struct Launcher {
    let path: String
    let arguments: [String]
    let environment: [String: String]
    /// With --json this process's stdout carries the summary.
    let stdoutToStderr: Bool
    /// The app's stdout and stderr go to /dev/null (the reference launches:
    /// the user asked for N launches' output, not more).
    var discardsOutput = false

    /// The path a command name runs, searched in PATH like a shell.
    static func resolve(_ command: String) throws -> String {
        if command.contains("/") {
            guard FileManager.default.isExecutableFile(atPath: command) else {
                throw CommandError(message: "\(command): no such executable")
            }
            return command
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(command)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw CommandError(message: "\(command): not found in PATH")
    }

    func launch(label: String, timeline: String, stopAfterReady: Bool, timeout: Double?) throws -> RunRecord {
        var cStrings: [UnsafeMutablePointer<CChar>?] = []
        defer { cStrings.forEach { free($0) } }
        let argv = arguments.map { strdup($0) } + [nil]
        cStrings += argv
        var envp = environment.map { strdup("\($0.key)=\($0.value)") }
        envp.append(strdup("COLDSTART=\(timeline)"))
        // Filled in just before the spawn: "COLDSTART_SPAWN_NS=" + 20 digits.
        let prefix = Array("COLDSTART_SPAWN_NS=".utf8CString.dropLast())
        let spawnSlot = UnsafeMutablePointer<CChar>.allocate(capacity: prefix.count + 21)
        defer { spawnSlot.deallocate() }
        prefix.withUnsafeBufferPointer { spawnSlot.update(from: $0.baseAddress!, count: prefix.count) }
        envp.append(spawnSlot)
        cStrings += envp.dropLast()
        envp.append(nil)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t(), empty = sigset_t()
        sigemptyset(&defaults)
        for sig in [SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGPIPE] { sigaddset(&defaults, sig) }
        sigemptyset(&empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if discardsOutput {
            for fd in [STDOUT_FILENO, STDERR_FILENO] { posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_WRONLY, 0) }
        } else if stdoutToStderr {
            posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO)
        }

        var pid: pid_t = 0
        var now = timespec()
        clock_gettime(CLOCK_BOOTTIME, &now)
        Self.writeDecimal(UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec), into: spawnSlot + prefix.count)
        let rc = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard rc == 0 else { throw CommandError(message: "cannot launch \(path): \(String(cString: strerror(rc)))") }

        let (status, timedOut, stopped) = wait(pid, timeline: timeline, stopAfterReady: stopAfterReady, timeout: timeout)
        return Self.record(label: label, file: timeline, waitStatus: status, timedOut: timedOut, stoppedAfterReady: stopped)
    }

    /// Writes `value` in decimal and a NUL; no allocation between the clock
    /// read and the spawn.
    private static func writeDecimal(_ value: UInt64, into buffer: UnsafeMutablePointer<CChar>) {
        var digits = 1, rest = value / 10
        while rest > 0 { digits += 1; rest /= 10 }
        var v = value
        for i in stride(from: digits - 1, through: 0, by: -1) {
            buffer[i] = CChar(48 + Int(v % 10))
            v /= 10
        }
        buffer[digits] = 0
    }

    /// Waits for the child; polls when it may have to stop it.
    private func wait(_ pid: pid_t, timeline: String, stopAfterReady: Bool, timeout: Double?) -> (Int32, Bool, Bool) {
        var status: Int32 = 0
        if !stopAfterReady && timeout == nil {
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            return (status, false, false)
        }
        var stop = ChildStop(pid: pid, readyFile: stopAfterReady ? timeline : nil, timeout: timeout)
        while true {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid || (r < 0 && errno != EINTR) { return (status, stop.timedOut, stop.stoppedAfterReady) }
            stop.check()
            usleep(2_000)
        }
    }

    /// The shell's convention for a wait status: the exit status, or 128 + the signal.
    static func exitStatus(_ waitStatus: Int32) -> Int32 {
        let signal = waitStatus & 0x7F
        return signal == 0 ? (waitStatus >> 8) & 0xFF : 128 + signal
    }

    static func record(label: String, file: String, waitStatus: Int32, timedOut: Bool, stoppedAfterReady: Bool) -> RunRecord {
        let signal = waitStatus & 0x7F
        let status = exitStatus(waitStatus)
        var record = RunRecord(label: label, file: file, outcome: .noTimeline(status: status), status: status, timedOut: timedOut)
        guard FileManager.default.fileExists(atPath: file) else {
            record.outcome = signal != 0 ? .crashed(signal: signal) : .noTimeline(status: status)
            return record
        }
        do {
            let timeline = try Timeline(contentsOf: file)
            record.timeline = timeline
            if timeline.launch.completed && timedOut {
                record.outcome = .timedOutAfterReady
            } else if timeline.launch.completed {
                record.outcome = .completed(stoppedByUs: stoppedAfterReady)
            } else {
                let launch = timeline.launch
                let reason = launch.endReason == "signal"
                    ? "stopped by \(launch.signalName ?? "signal \(launch.signal ?? 0)")"
                    : "exited with status \(launch.exitStatus ?? Int(status))"
                record.outcome = .endedBeforeReady(reason: "\(reason) in '\(launch.endPhase ?? "?")'")
            }
        } catch {
            record.outcome = .unreadable(String(describing: error))
        }
        return record
    }
}

/// Stops a launch on --timeout or once its timeline exists
/// (--stop-after-ready): SIGTERM once, SIGKILL if it is still running 5 s
/// later. `check()` is called between two polls of the child.
struct ChildStop {
    let pid: pid_t
    /// Stop once this file exists.
    let readyFile: String?
    let timeout: Double?
    private let start = Date()
    private var termSent: Date?
    private(set) var timedOut = false
    private(set) var stoppedAfterReady = false

    init(pid: pid_t, readyFile: String? = nil, timeout: Double?) {
        self.pid = pid
        self.readyFile = readyFile
        self.timeout = timeout
    }

    mutating func check() {
        if let sent = termSent {
            if Date().timeIntervalSince(sent) > 5 { kill(pid, SIGKILL) }
        } else if let readyFile, FileManager.default.fileExists(atPath: readyFile) {
            stoppedAfterReady = true
            terminate()
        } else if let timeout, Date().timeIntervalSince(start) > timeout {
            timedOut = true
            terminate()
        }
    }

    private mutating func terminate() {
        termSent = Date()
        kill(pid, SIGTERM)
    }
}
