import Foundation

/// How far a figure counted in samples can be from the time it stands for.
///
/// A function that ran in one unbroken stretch gets its time's share of
/// sampling periods, give or take one sample. Start-up time is rarely one
/// stretch: a function runs in many short calls among others, and whether a
/// period ends inside one of them is then close to chance, so its count
/// scatters like a Poisson count. The interval given is that one (95%): the
/// honest bound for scattered time, a generous one for an unbroken stretch.
package enum SamplePrecision {
    /// The confidence of every interval, in percent.
    package static let confidencePercent = 95

    /// A launch with fewer samples than this (before its end, all threads)
    /// is too thin to act on: a figure of a tenth of it rests on one or two
    /// samples, ±100% or more.
    package static let minimumSamples = 20

    /// The 95% interval of the expected count behind `count` observed
    /// samples (a Poisson count; Wilson–Hilferty's cube-root approximation
    /// of the exact chi-square bounds, within 2% of them from one sample up:
    /// 0 → 0–3.7, 1 → 0.03–5.6, 5 → 1.6–11.7, 20 → 12.2–30.9).
    package static func interval(_ count: Int) -> (low: Double, high: Double) {
        let z = 1.959964
        func bound(_ n: Double, _ sign: Double) -> Double {
            let root = 1 - 1 / (9 * n) + sign * z / (3 * n.squareRoot())
            return n * root * root * root
        }
        let n = Double(max(count, 0))
        return (count > 0 ? max(bound(n, -1), 0) : 0, bound(n + 1, 1))
    }

    /// The interval of `count` samples in ms, each standing for `msPerSample`.
    package static func interval(_ count: Int, msPerSample: Double) -> (low: Double, high: Double) {
        let (low, high) = interval(count)
        return (low * msPerSample, high * msPerSample)
    }

    /// The rule every sampled figure of a report follows, in one line:
    /// "95% intervals: 5 samples 1.6–11.7 ms, 20 samples 12.2–30.9 ms, 100
    /// samples 81.4–121.6 ms (one stretch of CPU: ±1 sample)".
    package static func rule(msPerSample: Double) -> String {
        let examples = [5, 20, 100].map { count -> String in
            let (low, high) = interval(count, msPerSample: msPerSample)
            return "\(count) samples \(Figure.format(low, decimals: 1))–\(Figure.format(high, decimals: 1)) ms"
        }
        return "\(confidencePercent)% intervals (Poisson): " + examples.joined(separator: ", ") + " (one unbroken stretch: ±1 sample)"
    }
}

/// Whether the launch's samples are enough to act on, and what to do when
/// they are not (`profile.precision` in the JSON).
package struct SamplingPrecision: Codable, Sendable, Equatable {
    /// The confidence of every interval the report gives, in percent.
    package var confidencePercent: Int
    /// The rule, as the text prints it.
    package var rule: String
    /// Samples up to the launch's end, every thread.
    package var launchSamples: Int
    /// Fewer than this is too few to act on.
    package var minimumSamples: Int
    package var tooFew: Bool
    /// What to do about it; absent when the samples are enough.
    package var advice: String?
    /// When the main thread's sampling clock started, if it started well
    /// after Coldstart's set-up (a kernel with no perf event open makes the
    /// first one wait 10–18 ms): no sample covers the launch before it.
    package var clockStartedLateMs: Double?
    /// Of that delay, how long Coldstart's scan thread waited to run at all
    /// (a busy machine), when it was most of it; nil when the kernel's first
    /// event, or a file that does not say, held the clock back.
    package var scanWaitedMs: Double?

    /// A clock running within this of the earliest init is on time (the
    /// scan thread's start and the first event take 1–2 ms on a warm kernel;
    /// a quiet kernel's first event, 10–18 ms).
    static let lateClockMs = 5.0

    init(launchSamples: Int, msPerSample: Double, requestedHz: Double, samplingStartMs: Double = 0, clockArmedMs: Double? = nil,
         scanBeganMs: Double? = nil) {
        if let clockArmedMs, clockArmedMs - samplingStartMs > Self.lateClockMs {
            clockStartedLateMs = clockArmedMs
            if let scanBeganMs, scanBeganMs - samplingStartMs > (clockArmedMs - samplingStartMs) / 2 {
                scanWaitedMs = scanBeganMs - samplingStartMs
            }
        }
        confidencePercent = SamplePrecision.confidencePercent
        rule = SamplePrecision.rule(msPerSample: msPerSample)
        self.launchSamples = launchSamples
        minimumSamples = SamplePrecision.minimumSamples
        tooFew = launchSamples < SamplePrecision.minimumSamples
        guard tooFew else { return }
        // Enough launches that their pooled samples reach about five times
        // the minimum: each finding then rests on tens of samples.
        let launches = min(max(5 * SamplePrecision.minimumSamples / max(launchSamples, 1), 5), 200)
        let faster = requestedHz < 10_000 ? "; or sample faster with COLDSTART_HZ=10000 (costs more per launch)" : ""
        advice = "pool launches: coldstart run -n \(launches) --out DIR APP, then coldstart report DIR\(faster)"
    }

    /// A pool of launches (`coldstart report DIR`): `launchSamples` is the
    /// pool's, and the rule is given as ratios, since the launches' sampling
    /// periods may differ.
    init(pooledSamples: Int, samplesPerLaunch: Double) {
        confidencePercent = SamplePrecision.confidencePercent
        rule = "a row of n pooled samples is good to its \(confidencePercent)% interval (Poisson): "
            + [20, 100, 1000].map { "\($0) samples \(Self.range(of: $0))" }.joined(separator: ", ")
        launchSamples = pooledSamples
        minimumSamples = SamplePrecision.minimumSamples
        tooFew = pooledSamples < minimumSamples
        if tooFew {
            advice = "too few samples to act on (\(pooledSamples) pooled, fewer than \(minimumSamples)): pool more launches (coldstart run -n N --append)"
        } else if samplesPerLaunch < 20 {
            advice = "few samples per launch: pool more launches (coldstart run -n N) or sample faster (--hz) for steadier figures"
        }
    }

    /// "×0.3–×2.3": how far `count` samples may be from their time.
    package static func range(of count: Int) -> String {
        let (low, high) = SamplePrecision.interval(count)
        return "×\(Figure.format(low / Double(count), decimals: 1))–×\(Figure.format(high / Double(count), decimals: 1))"
    }
}
