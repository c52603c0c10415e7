import ColdstartAnalysis
import Foundation

extension SamplingPrecision {
    /// The lines the first screen prints after the findings when the
    /// samples are too few or began late; none when they are enough.
    package var noticeLines: [String] {
        var lines: [String] = []
        if let clockStartedLateMs, let scanWaitedMs {
            lines += [
                "Sampling began late, at \(Figure.format(clockStartedLateMs, decimals: 1)) ms: Coldstart's sampling thread waited "
                    + "\(Figure.format(scanWaitedMs, decimals: 1)) ms to run (the machine was busy); sampled figures miss the launch before that.",
                "  → profile where a CPU is free for Coldstart's thread, or pool launches (coldstart run -n N) so that some start on time",
            ]
        } else if let clockStartedLateMs {
            lines += [
                "Sampling began late, at \(Figure.format(clockStartedLateMs, decimals: 1)) ms: the kernel had no perf event open, "
                    + "and its first one waits 10–18 ms; sampled figures miss the launch before that.",
                "  → run coldstart keep-warm on this machine (it keeps the kernel ready for every launch; make install installs "
                    + "a systemd unit for it), or profile with coldstart run (it keeps the kernel ready for its own launches)",
            ]
        }
        if tooFew, let advice {
            lines += [
                "Too few samples to act on: \(ProfileReport.count(launchSamples)) in the launch (fewer than \(minimumSamples));"
                    + " a figure of 5 samples may stand for \(Self.range(of: 5)) its time (\(confidencePercent)%).",
                "  → \(advice)",
            ]
        }
        return lines
    }
}
