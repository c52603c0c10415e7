import Foundation

/// What `coldstart run`'s loader sampling adds to the time before the app's
/// first code: exec → earliest init in the run's sampled launches against
/// launches of the same run that the launcher started without it (no perf
/// events from exec, no LD_AUDIT module), interleaved with them. Stored in
/// each sampled timeline's `launcher.loaderReference` once the run ends.
///
/// Both starts are the launcher's stamps (exact to a microsecond); a
/// reference launch's stamp is taken just before `posix_spawn`, so its
/// figure also holds the spawn's clone (tens of µs), not less.
///
/// A program without Coldstart has no earliest init of its own: its
/// reference launches end where glibc's ld.so prints its statistics
/// (`End.loaderStatistics`), which `_dl_start_final` does once `dl_main`
/// has mapped and relocated every object, just before `_dl_start_user`
/// calls `_dl_init` (the first initializer). The launcher reads them from a
/// FIFO and stamps their arrival: later than the print by the launcher's
/// own wake-up, never earlier.
package struct LoaderReference: Sendable, Equatable {
    /// Where the reference launches' span ends.
    package enum End: String, Sendable {
        /// The app's own timeline's earliest init (a linked app).
        case earliestInit = "earliest init"
        /// ld.so's `LD_DEBUG=statistics` print reaching the launcher.
        case loaderStatistics = "ld.so statistics"
    }
    package var end: End
    /// Launches without loader sampling, and their exec → earliest init.
    package var launches: Int
    package var medianNs: Int64
    package var p25Ns: Int64
    package var p75Ns: Int64
    /// The run's sampled launches, and the median of the same span.
    package var sampledLaunches: Int
    package var sampledMedianNs: Int64

    /// The median's difference: what loader sampling added to the phase.
    package var addedNs: Int64 { sampledMedianNs - medianNs }

    /// Nil unless both kinds of launch have an earliest init.
    package init?(sampled: [Int64], undisturbed: [Int64], end: End = .earliestInit) {
        guard !sampled.isEmpty, !undisturbed.isEmpty else { return nil }
        self.end = end
        let reference = undisturbed.map(Double.init).sorted()
        launches = reference.count
        medianNs = Int64(Statistics.percentile(sorted: reference, 50))
        p25Ns = Int64(Statistics.percentile(sorted: reference, 25))
        p75Ns = Int64(Statistics.percentile(sorted: reference, 75))
        sampledLaunches = sampled.count
        sampledMedianNs = Int64(Statistics.percentile(sorted: sampled.map(Double.init).sorted(), 50))
    }

    /// The reference a run stored in `timeline`, if any.
    package init?(_ timeline: Timeline) {
        guard let launcher = (timeline.parsedDocument["coldstart"] as? [String: Any])?["launcher"] as? [String: Any],
              let stored = launcher["loaderReference"] as? [String: Any] else { return nil }
        func int(_ key: String) -> Int64? { (stored[key] as? NSNumber)?.int64Value }
        guard let launches = int("launches"), launches > 0, let median = int("medianNs"), let p25 = int("p25Ns"), let p75 = int("p75Ns"),
              let sampled = int("sampledLaunches"), sampled > 0, let sampledMedian = int("sampledMedianNs"),
              median >= 0, p25 <= median, median <= p75, sampledMedian >= 0 else { return nil }
        if let end = stored["end"] {
            guard let name = end as? String, let known = End(rawValue: name) else { return nil }
            self.end = known
        } else {
            self.end = .earliestInit
        }
        (self.launches, medianNs, p25Ns, p75Ns) = (Int(launches), median, p25, p75)
        (sampledLaunches, sampledMedianNs) = (Int(sampled), sampledMedian)
    }

    /// The `launcher.loaderReference` object (docs/timeline-format.md).
    package var json: [String: Any] {
        ["launches": launches, "medianNs": medianNs, "p25Ns": p25Ns, "p75Ns": p75Ns,
         "sampledLaunches": sampledLaunches, "sampledMedianNs": sampledMedianNs, "end": end.rawValue]
    }

    /// What the reference launches' span is, for a sentence.
    package var spanPhrase: String {
        switch end {
        case .earliestInit: "exec → earliest init"
        case .loaderStatistics: "exec → ld.so's statistics print"
        }
    }

    /// How precisely the reference's end is known.
    package var precisionPhrase: String {
        switch end {
        case .earliestInit: "the app's own clock"
        case .loaderStatistics: "the print's arrival at the launcher, late by its wake-up"
        }
    }

    /// "6.5 ms without the launcher's loader sampling (median of 10
    /// interleaved launches, 6.1–7.0 ms); the sampling adds 5.3 ms"; a
    /// program without Coldstart's says where its span ends.
    package var sentence: String {
        func ms(_ ns: Int64) -> String { String(format: "%.1f", Double(ns) / 1e6) }
        let added = addedNs >= 0 ? "the sampling adds \(ms(addedNs)) ms" : "the sampling added nothing measurable"
        let span = end == .earliestInit ? "" : "\(spanPhrase) (every object relocated, before the first initializer): "
        let precision = end == .earliestInit ? "" : "; \(precisionPhrase)"
        return "\(span)\(ms(medianNs)) ms without the launcher's loader sampling (median of \(launches) interleaved "
            + "launch\(launches == 1 ? "" : "es"), \(ms(p25Ns))–\(ms(p75Ns)) ms\(precision)); \(added) to the median of \(sampledLaunches)"
            + (end == .earliestInit ? "" : " (exec → earliest init)")
    }
}
