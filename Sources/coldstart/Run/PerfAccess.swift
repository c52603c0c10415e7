import CLauncher
import ColdstartAnalysis
import Foundation

/// Whether this process may open perf events, and why not (docs/containers.md).
/// The launcher's child inherits its seccomp filter, credentials and the
/// kernel's perf_event_paranoid, so what refuses `coldstart` refuses the
/// program it launches.
enum PerfAccess {
    /// nil when a task-clock event on this process opens; otherwise why not.
    static func refusal() -> PerfRefusal? {
        let error = cs_launch_perf_errno()
        return error == 0 ? nil : refusal(errno: error)
    }

    static func refusal(errno error: Int32) -> PerfRefusal {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        func field(_ name: String) -> String? {
            status.split(separator: "\n").first { $0.hasPrefix(name + ":") }
                .map { $0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces) }
        }
        let capabilities = field("CapEff").flatMap { UInt64($0, radix: 16) }
        let paranoid = (try? String(contentsOfFile: "/proc/sys/kernel/perf_event_paranoid", encoding: .utf8))
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        return PerfRefusal(
            errno: Int(error), paranoid: paranoid, seccomp: field("Seccomp").flatMap { Int($0) },
            capPerfmon: capabilities.map { $0 & (1 << 38) != 0 }, capSysAdmin: capabilities.map { $0 & (1 << 21) != 0 })
    }
}

/// `coldstart` given a file capability (`setcap cap_perfmon+ep`, so that
/// `coldstart run` may open perf events on its children where
/// perf_event_paranoid refuses them) runs in secure-execution mode
/// (AT_SECURE): glibc removes LD_LIBRARY_PATH, LD_PRELOAD, TMPDIR, TZDIR
/// and the like from its environment before `main`. The program it launches
/// gains no capability and is not in that mode, so it gets them back from
/// the environment this process was started with (its original strings,
/// still on the stack): the host runs as it would without Coldstart.
enum SecureExecution {
    /// The variables glibc removed, empty when not in secure-execution mode.
    static func removedVariables(from current: [String: String]) -> [String: String] {
        guard cs_launch_secure_execution() != 0 else { return [:] }
        let size = cs_launch_original_environment(nil, 0)
        guard size > 0 else { return [:] }
        var original = [UInt8](repeating: 0, count: size)
        guard original.withUnsafeMutableBufferPointer({ buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: size) { cs_launch_original_environment($0, size) }
        }) == size else { return [:] }
        var removed: [String: String] = [:]
        for entry in original.split(separator: 0) {
            let text = String(decoding: entry, as: UTF8.self)
            guard let equals = text.firstIndex(of: "=") else { continue }
            let key = String(text[..<equals])
            if current[key] == nil && removed[key] == nil { removed[key] = String(text[text.index(after: equals)...]) }
        }
        return removed
    }
}
