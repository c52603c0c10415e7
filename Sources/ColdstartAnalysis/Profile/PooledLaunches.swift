import Foundation

/// `coldstart report DIR`: the pooled profile of the launches of one
/// executable in a directory (a `coldstart run --out DIR`, or any directory
/// of timelines), and the files left out with their reasons.
package struct PooledLaunches: Codable, Sendable {
    package var directory: String
    /// The executable's file name: the one with the most sampled launches
    /// in the directory.
    package var executable: String?
    /// Timeline files read (pooled, not sampled, or of another executable).
    package var filesRead: Int
    /// Files left out: not readable timelines, or another executable's.
    package var skippedCount: Int
    /// The first `LaunchAggregate.skippedListLimit` of them.
    package var skipped: [AggregateSummary.Skipped]
    /// Module files read to name the frames, once each across the launches.
    package var modulesRead: Int
    /// The pool's findings (`PooledFindings`): each launch's inputs added
    /// up, per launch, their certainty the pooled samples.
    package var findings: [Finding]
    /// The pool's runtime costs by kind, per launch; absent when no launch
    /// was sampled.
    package var runtimeCosts: RuntimeCostSummary?
    package var profile: PooledProfileReport

    /// Pools the timelines of one executable under `directory` and its
    /// sub-directories (as `coldstart aggregate` finds them), except a run
    /// directory's `warmup/` launches, which `coldstart run` does not
    /// measure either, its `reference/` launches, which it made without
    /// loader sampling to compare with, and exports beside them
    /// (`exportSuffixes`).
    /// `debugDirectory` is where separate debug files live. Each launch is
    /// analysed as `report FILE` analyses it (`LaunchAnalysis`); `thread`
    /// and `phase` select the pooled profile's samples, not the findings'.
    package init(directory: String, exportSuffixes: [String], top: Int, thread: String? = nil, phase: String? = nil,
                 debugDirectory: String? = "/usr/lib/debug") {
        var files: [String] = []
        var skipped: [AggregateSummary.Skipped] = []
        let run = directory.hasSuffix("/") ? directory : directory + "/"
        let unmeasured = [run + "warmup/", run + "reference/"]
        for entry in TimelineFiles([directory], exportSuffixes: exportSuffixes) {
            switch entry {
            case .file(let path) where !unmeasured.contains(where: path.hasPrefix): files.append(path)
            case .file: continue
            case .unreadable(let path, let reason): skipped.append(.init(file: path, reason: reason))
            }
        }
        // One pool per executable; the one with most sampled launches is
        // reported, the others' files skipped.
        let cache = SymbolCache()
        var pools: [String: (pool: PooledProfile, findings: PooledFindings, files: [String])] = [:]
        var read = 0
        for path in files.sorted(by: { $0.compare($1, options: .numeric) == .orderedAscending }) {
            let timeline: Timeline
            do {
                timeline = try Timeline(contentsOf: path)
            } catch let error as TimelineError {
                skipped.append(.init(file: path, reason: error.problem))
                continue
            } catch {
                skipped.append(.init(file: path, reason: "\(error)"))
                continue
            }
            read += 1
            var entry = pools[timeline.executableName] ?? (PooledProfile(), PooledFindings(), [])
            let symbolizer = Symbolizer(modules: timeline.modules, debugDirectory: debugDirectory, cache: cache)
            if let launch = try? LaunchAnalysis(timeline: timeline, path: path, symbolizer: symbolizer) {
                if entry.pool.add(launch, timeline: timeline, thread: thread, phase: phase) { entry.findings.add(launch.findingInputs) }
            } else {
                // No usable sampling rate (LaunchAnalysis refused it): counted as not sampled.
                entry.pool.add(timeline, cache: cache, debugDirectory: debugDirectory, path: path)
            }
            entry.files.append(path)
            pools[timeline.executableName] = entry
        }
        let chosen = pools.max { ($0.value.pool.launches, $1.key) < ($1.value.pool.launches, $0.key) }
        if let chosen {
            for (name, entry) in pools where name != chosen.key {
                skipped += entry.files.map { .init(file: $0, reason: "a launch of \(name), not of \(chosen.key): not pooled with them") }
            }
        }
        let executable = chosen?.key
        let pool = chosen?.value.pool ?? PooledProfile()
        let inputs = chosen?.value.findings.inputs
        findings = inputs.map { Finding.ranked($0) } ?? []
        runtimeCosts = inputs?.runtimeCosts
        self.directory = directory
        self.executable = executable
        filesRead = read
        skippedCount = skipped.count
        self.skipped = Array(skipped.prefix(LaunchAggregate.skippedListLimit))
        modulesRead = cache.modulesRead
        profile = pool.report(top: top)
    }
}
