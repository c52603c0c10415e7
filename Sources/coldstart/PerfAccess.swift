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
            errno: errnoName(error), paranoid: paranoid, seccomp: field("Seccomp").flatMap { Int($0) },
            capPerfmon: capabilities.map { $0 & (1 << 38) != 0 }, capSysAdmin: capabilities.map { $0 & (1 << 21) != 0 })
    }

    static func errnoName(_ error: Int32) -> String {
        switch error {
        case EPERM: return "EPERM"
        case EACCES: return "EACCES"
        case ENOSYS: return "ENOSYS"
        case ENOENT: return "ENOENT"
        case EINVAL: return "EINVAL"
        default: return "errno \(error)"
        }
    }
}
