import Foundation

/// Why this launch was sampled without perf events, what it got instead,
/// and the one remedy for the machine it ran on (docs/containers.md): the
/// report's first screen says it under the header.
package struct PerfAdvice: Codable, Sendable, Equatable {
    package var refusal: PerfRefusal
    /// "seccomp", "paranoid", "capability" or "no-perf".
    package var cause: String
    /// The cause in words.
    package var because: String
    /// How the launch was sampled instead, and the rate it got.
    package var sampledBy: String
    /// The remedy for this machine.
    package var remedy: String

    /// nil when perf was not refused (or the file does not say).
    package init?(_ timeline: Timeline) {
        let section = timeline.parsedDocument["coldstart"] as? [String: Any]
        let launcher = section?["launcher"] as? [String: Any]
        let sampling = section?["sampling"] as? [String: Any]
        guard let refusal = PerfRefusal(json: launcher?["perfRefused"]) ?? PerfRefusal(json: sampling?["perfRefused"]) else { return nil }
        self.refusal = refusal
        (cause, because, remedy) = Self.explain(refusal)
        let samples = (sampling?["samples"] as? NSNumber)?.intValue ?? timeline.samples.count
        let effective = (sampling?["effectiveHz"] as? NSNumber)?.doubleValue ?? 0
        let asked = (sampling?["requestedHz"] as? NSNumber)?.doubleValue ?? 0
        let rate = "\(samples) sample\(samples == 1 ? "" : "s"), " + String(format: "%.0f Hz of CPU time effective", effective)
        switch sampling?["clock"] as? String {
        case "ptrace":
            sampledBy = "coldstart run sampled every thread by ptrace from exec instead: \(rate) (\(Int(asked)) Hz asked)"
        case "posix-cpu-timer":
            sampledBy = "sampled with POSIX CPU-time timers instead, which fire at most at the kernel tick (CONFIG_HZ, commonly "
                + "250 Hz): \(rate), not the \(Int(asked)) Hz asked"
        case let clock?:
            sampledBy = "sampled with the \(clock) clock instead: \(rate)"
        case nil:
            sampledBy = "not sampled"
        }
        if cause == "seccomp" || cause == "paranoid" || cause == "capability", sampling?["clock"] as? String != "ptrace" {
            remedy += "; or run it under coldstart run, which samples by ptrace at ≥ 1 kHz without perf"
        }
    }

    /// A refusal's cause ("seccomp", "paranoid", "capability" or
    /// "no-perf"), the cause in words, and the remedy for this machine:
    /// what a launch's report says, and `coldstart keep-warm` when it is
    /// refused.
    package static func explain(_ refusal: PerfRefusal) -> (cause: String, because: String, remedy: String) {
        let call = "perf_event_open refused (\(refusal.errnoName))"
        let cause: String, because: String
        if refusal.errno == 38 {
            cause = "no-perf"
            because = "\(call): this kernel has no perf events, or a filter answers ENOSYS"
        } else if refusal.seccomp == 2 {
            cause = "seccomp"
            because = "\(call) by a seccomp filter (Seccomp: 2 in /proc/self/status), as a container's default profile refuses it"
        } else if let paranoid = refusal.paranoid, paranoid >= 3, refusal.capPerfmon != true {
            cause = "paranoid"
            because = "\(call): kernel.perf_event_paranoid = \(paranoid) (Debian's kernels default to 3, Ubuntu's to 4: no perf event for a user without CAP_PERFMON)"
        } else {
            cause = "capability"
            because = "\(call) with kernel.perf_event_paranoid = \(refusal.paranoid.map(String.init) ?? "?") and no CAP_PERFMON"
        }
        let remedy: String
        switch cause {
        case "seccomp":
            remedy = "give the container CAP_PERFMON, which Docker's and containerd's default profiles then let call perf_event_open: "
                + "docker run --cap-add PERFMON …, or in Kubernetes securityContext: {capabilities: {add: [\"PERFMON\"]}} (docs/containers.md)"
        case "paranoid", "capability":
            remedy = "sudo sysctl kernel.perf_event_paranoid=2 (kept across boots by a line kernel.perf_event_paranoid = 2 in "
                + "/etc/sysctl.d/60-perf.conf), or sudo setcap cap_perfmon+ep \"$(command -v coldstart)\" so that coldstart run opens "
                + "events on the programs it starts, which get no capability (docs/containers.md)"
        default:
            remedy = "profile with coldstart run: it samples by ptrace where there are no perf events (docs/containers.md)"
        }
        return (cause, because, remedy)
    }
}
