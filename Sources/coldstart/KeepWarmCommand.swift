import CLauncher
import ColdstartAnalysis
import Foundation

/// `coldstart keep-warm`: holds one counting perf event on itself and
/// sleeps, so that the kernel keeps its perf scheduler hooks on and a lone
/// profiled launch opens its clock at once (docs/performance.md, "Keeping
/// the kernel warm").
enum KeepWarmCommand: Command {
    static let name = "keep-warm"
    static let summary = "Keep the kernel ready for perf events, so that lone launches are sampled from their start"
    static let help = """
    Usage: coldstart keep-warm [--check]

    Holds one perf event open on itself and sleeps until it is stopped
    (SIGTERM, SIGINT or SIGHUP; exit status 0). While any process holds a
    perf event bound to a task, the kernel keeps its perf scheduler hooks on.
    Without one for about a second, it switches them off, and the next
    profiled launch's first perf event waits 10-18 ms while the kernel
    switches them on again: its samples then start that late, and a short
    tool's launch may end before its first sample. `coldstart run` keeps the
    kernel ready for its own batch; keep-warm does it for every launch on
    the machine, `COLDSTART=1 ./app` included.

    The event is a software task-clock counter of this process's own CPU
    time: never sampled, no signal, no ring buffer, and this process sleeps
    in sigwait, so it uses no CPU. What the hooks cost other processes'
    context switches is measured in docs/performance.md ("Keeping the kernel
    warm"). Allowed at kernel.perf_event_paranoid 2 or lower, without
    privileges.

    `make install` installs a systemd unit that runs it as an unprivileged
    dynamic user:
      sudo systemctl enable --now coldstart-keep-warm.service

    Fails with exit status 1, and says why and what to do, when the kernel
    or a seccomp filter refuses the event: then the programs started here
    with the same privileges are refused too, and there is nothing to keep
    warm.

    Options:
      --check     Open the event, say whether it could be held, and exit.
      -h, --help  Show this text.
    """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        let check = arguments.flag("--check")
        try arguments.finish()
        // Blocked before anything else, so that a stop at any moment is one
        // sigwait returns, never the default action's kill.
        var stops = sigset_t()
        sigemptyset(&stops)
        for signal in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&stops, signal) }
        pthread_sigmask(SIG_BLOCK, &stops, nil)
        let event = cs_launch_keep_perf_warm()
        guard event >= 0 else { throw CommandError(message: refused(errno: errno)) }
        defer { close(event) }
        if check {
            try StandardOutput.print("coldstart keep-warm: a perf event on this process opened: keep-warm can hold one here")
            return ExitStatus.success
        }
        printError("coldstart keep-warm: holding a perf event (pid \(getpid())): the kernel's perf hooks stay on until this process ends")
        var received: Int32 = 0
        while sigwait(&stops, &received) != 0 {}
        printError("coldstart keep-warm: \(signalName(received)) received, perf event closed")
        return ExitStatus.success
    }

    /// The one-line error for a refused event: the cause and the remedy.
    static func refused(errno error: Int32) -> String {
        let (_, because, remedy) = PerfAdvice.explain(PerfAccess.refusal(errno: error))
        return "cannot hold a perf event: \(because); programs started here with the same privileges are refused too, so there is no kernel to keep warm. → \(remedy)"
    }

    private static func signalName(_ signal: Int32) -> String {
        [SIGTERM: "SIGTERM", SIGINT: "SIGINT", SIGHUP: "SIGHUP"][signal] ?? "signal \(signal)"
    }
}
