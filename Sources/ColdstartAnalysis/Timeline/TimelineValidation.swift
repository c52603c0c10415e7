import Foundation

/// The range check of every number the analysis computes with, done once
/// where the file is decoded: past it, times are offsets in
/// `0...TimelineLimits.maxOffsetNs`, counters at most `maxCount`, rates
/// finite and usable, and intervals do not end before they start, so no sum,
/// difference or conversion downstream can overflow or trap.
struct TimelineValidator {
    let fail: (String) -> TimelineError

    private func problem(_ field: String, _ value: String, _ allowed: String) -> TimelineError {
        fail("malformed timeline: \(field) is \(value), out of range (\(allowed))")
    }

    func offset(_ value: Int64?, _ field: @autoclosure () -> String) throws {
        guard let value else { return }
        guard value >= 0, value <= TimelineLimits.maxOffsetNs else {
            throw problem(field(), "\(value)", "0 to \(TimelineLimits.maxOffsetNs) ns")
        }
    }

    func duration(_ value: UInt64?, _ field: @autoclosure () -> String) throws {
        guard let value else { return }
        guard value <= UInt64(TimelineLimits.maxOffsetNs) else {
            throw problem(field(), "\(value)", "0 to \(TimelineLimits.maxOffsetNs) ns")
        }
    }

    /// A duration written as a JSON number that may have a fraction.
    func duration(_ value: Double?, _ field: @autoclosure () -> String) throws {
        guard let value else { return }
        guard value.isFinite, value >= 0, value <= Double(TimelineLimits.maxOffsetNs) else {
            throw problem(field(), "\(value)", "0 to \(TimelineLimits.maxOffsetNs) ns")
        }
    }

    func count(_ value: UInt64?, _ field: @autoclosure () -> String) throws {
        guard let value else { return }
        guard value <= TimelineLimits.maxCount else { throw problem(field(), "\(value)", "0 to \(TimelineLimits.maxCount)") }
    }

    func count(_ value: Int?, _ field: @autoclosure () -> String) throws {
        guard let value else { return }
        guard value >= 0, UInt64(value) <= TimelineLimits.maxCount else {
            throw problem(field(), "\(value)", "0 to \(TimelineLimits.maxCount)")
        }
    }

    /// 0 (unknown) or a rate one period of which is at most 1000 s.
    func rate(_ value: Double?, _ field: @autoclosure () -> String) throws {
        guard let value else { return }
        guard value == 0 || (value >= 0.001 && value <= TimelineLimits.maxHz) else {
            throw problem(field(), "\(value) Hz", "0, or 0.001 to \(Int(TimelineLimits.maxHz)) Hz")
        }
    }

    func interval(_ start: Int64, _ end: Int64, _ field: @autoclosure () -> String) throws {
        try offset(start, field() + " start")
        try offset(end, field() + " end")
        guard end >= start else { throw fail("malformed timeline: \(field()) ends (\(end) ns) before it starts (\(start) ns)") }
    }

    /// Why a resource-use delta cannot be used (a counter or time out of
    /// range), or nil. Such a delta is set aside, not the whole file: one
    /// writer's wrapped subtraction cost a launch whole (issue 35, item 12).
    func rusageProblem(_ usage: Timeline.Rusage?, _ field: String) -> String? {
        guard let usage else { return nil }
        for (name, value, limit) in [("minorFaults", usage.minorFaults, TimelineLimits.maxCount),
                                     ("majorFaults", usage.majorFaults, TimelineLimits.maxCount),
                                     ("voluntarySwitches", usage.voluntarySwitches, TimelineLimits.maxCount),
                                     ("involuntarySwitches", usage.involuntarySwitches, TimelineLimits.maxCount),
                                     ("userNs", usage.userNs, UInt64(TimelineLimits.maxOffsetNs)),
                                     ("systemNs", usage.systemNs, UInt64(TimelineLimits.maxOffsetNs))] where value > limit {
            return "\(field).\(name) is \(value), out of range (0 to \(limit))"
        }
        return nil
    }
}

extension Timeline {
    /// Checks every number of the decoded file (`TimelineValidator`); a
    /// resource-use delta out of range is set aside (`setAside`).
    mutating func validate(_ check: TimelineValidator) throws {
        for (field, value) in [("mainNs", launch.mainNs), ("endNs", launch.endNs), ("earliestInitNs", launch.earliestInitNs),
                               ("setupEndNs", launch.setupEndNs), ("readyNs", launch.readyNs)] {
            try check.offset(value, "launch." + field)
        }
        try check.duration(launch.startPrecisionNs, "launch.startPrecisionNs")
        try check.duration(launch.extendNs, "launch.extendNs")
        // µs since the epoch: 2^53 µs is the year 2255.
        try check.duration(launch.startRealtimeUs, "launch.startRealtimeUs")
        try check.count(dropped.events, "dropped.events")
        try check.count(dropped.nameBytes, "dropped.nameBytes")
        try check.count(dropped.notUtf8Bytes ?? 0, "dropped.notUtf8Bytes")
        for (index, snapshot) in rusage.enumerated() { try check.offset(snapshot.ns, "rusage[\(index)].ns") }
        rusage = rusage.enumerated().filter { index, snapshot in
            guard let problem = check.rusageProblem(snapshot.usage, "rusage[\(index)]") else { return true }
            setAside.append(problem)
            return false
        }.map(\.element)
        for (index, thread) in ownThreads.enumerated() {
            var last: [Int64] = [0, 0]
            for (point, pair) in thread.cpu.enumerated() {
                let field = "ownThreads[\(index)].cpu[\(point)]"
                guard pair.count == 2 else { throw check.fail("malformed timeline: \(field) is not a [ns, cpuNs] pair") }
                try check.offset(pair[0], field + "[0]")
                try check.offset(pair[1], field + "[1]")
                // The interpolation needs both in order: a clock never goes back.
                guard pair[0] >= last[0], pair[1] >= last[1] else { throw check.fail("malformed timeline: \(field) goes back in time or CPU") }
                last = pair
            }
        }
        func setAsideIfOutOfRange(_ usage: inout Rusage?, _ field: String) {
            guard let problem = check.rusageProblem(usage, field) else { return }
            usage = nil
            setAside.append(problem)
        }
        for index in phases.indices {
            try check.interval(phases[index].startNs, phases[index].endNs, "phases[\(index)]")
            setAsideIfOutOfRange(&phases[index].rusage, "phases[\(index)].rusage")
        }
        for index in marks.indices {
            try check.offset(marks[index].ns, "marks[\(index)].ns")
            setAsideIfOutOfRange(&marks[index].rusage, "marks[\(index)].rusage")
        }
        for index in spans.indices {
            try check.interval(spans[index].beginNs, spans[index].endNs, "spans[\(index)]")
            setAsideIfOutOfRange(&spans[index].rusage, "spans[\(index)].rusage")
        }
        if let sampling { try validate(sampling, check) }
        if let watch { try validate(watch, check) }
    }

    private func validate(_ sampling: Sampling, _ check: TimelineValidator) throws {
        try check.rate(sampling.requestedHz, "sampling.requestedHz")
        try check.rate(sampling.effectiveHz, "sampling.effectiveHz")
        try check.rate(sampling.loweredHz, "sampling.loweredHz")
        if let boost = sampling.boost {
            try check.rate(boost.hz, "sampling.boost.hz")
            try check.rate(boost.afterHz, "sampling.boost.afterHz")
            try check.offset(boost.untilNs, "sampling.boost.untilNs")
            // The file's one rate is the boost's or the one after it.
            if sampling.requestedHz != (boost.thinned ? boost.afterHz : boost.hz) {
                throw check.fail("malformed timeline: sampling.requestedHz \(sampling.requestedHz) Hz is neither the boost's rate nor the rate after it")
            }
        }
        try check.interval(sampling.startNs, sampling.stopNs, "sampling")
        try check.offset(sampling.clockArmedNs, "sampling.clockArmedNs")
        try check.offset(sampling.scanBeganNs, "sampling.scanBeganNs")
        for (field, value) in [("cpuNs", sampling.cpuNs), ("userNs", sampling.userNs), ("systemNs", sampling.systemNs),
                               ("coldstartCpuNs", sampling.coldstartCpuNs)] {
            try check.duration(value, "sampling." + field)
        }
        // The report's estimate divides it by the samples.
        try check.duration(sampling.handlerNs?.totalNs, "sampling.handlerNs.totalNs")
        for (field, value) in [("samples", sampling.samples), ("dropped", sampling.dropped), ("maxSamples", sampling.maxSamples),
                               ("threadsSampled", sampling.threadsSampled), ("threadsMissed", sampling.threadsMissed),
                               ("unwindFailures", sampling.unwindFailures)] {
            try check.count(value, "sampling." + field)
        }
        if let bridge = sampling.bridge {
            try check.count(bridge.cpus, "sampling.bridge.cpus")
            try check.offset(bridge.openNs, "sampling.bridge.openNs")
            try check.offset(bridge.closeNs, "sampling.bridge.closeNs")
            for (field, value) in [("samples", bridge.samples), ("overlap", bridge.overlap), ("foreign", bridge.foreign), ("lost", bridge.lost)] {
                try check.count(value, "sampling.bridge." + field)
            }
        }
        if let kernel = sampling.kernelStacks {
            try check.count(kernel.samples, "sampling.kernelStacks.samples")
            try check.count(kernel.lost, "sampling.kernelStacks.lost")
            try check.offset(kernel.untilNs, "sampling.kernelStacks.untilNs")
            if kernel.samples > sampling.samples {
                throw check.fail("malformed timeline: sampling.kernelStacks.samples \(kernel.samples) exceeds sampling.samples \(sampling.samples)")
            }
        }
    }

    private func validate(_ watch: Watch, _ check: TimelineValidator) throws {
        try check.rate(watch.requestedHz, "watch.requestedHz")
        try check.rate(watch.effectiveHz, "watch.effectiveHz")
        try check.interval(watch.startNs, watch.stopNs, "watch")
        try check.duration(watch.cpuNs, "watch.cpuNs")
        try check.duration(watch.tickMedianNs, "watch.tickNs.median")
        try check.duration(watch.tickP99Ns, "watch.tickNs.p99")
        for (index, thread) in watch.threads.enumerated() {
            let field = "watch.threads[\(index)]"
            try check.offset(thread.firstNs, field + ".firstNs")
            try check.offset(thread.lastNs, field + ".lastNs")
            for (name, value) in [("cpuBeforeNs", thread.cpuBeforeNs), ("runQueueBeforeNs", thread.runQueueBeforeNs),
                                  ("cpuNs", thread.cpuNs), ("runQueueNs", thread.runQueueNs)] {
                try check.duration(value, field + "." + name)
            }
            try check.count(thread.switches, field + ".switches")
        }
        for (index, stack) in watch.stacks.enumerated() where stack.count > TimelineLimits.maxFrames {
            throw check.fail("beyond what coldstart reads: watch stack \(index) has more than \(TimelineLimits.maxFrames) frames")
        }
        for (index, segment) in watch.segments.enumerated() {
            let field = "watch.segments[\(index)]"
            try check.interval(segment.startNs, segment.endNs, field)
            try check.duration(segment.runNs, field + " runNs")
            try check.duration(segment.waitNs, field + " waitNs")
            try check.count(segment.minorFaults, field + " minorFaults")
            try check.count(segment.majorFaults, field + " majorFaults")
        }
        for (index, point) in watch.runnable.enumerated() {
            try check.offset(point.ns, "watch.runnable[\(index)] ns")
            try check.count(point.count, "watch.runnable[\(index)] count")
        }
    }
}
