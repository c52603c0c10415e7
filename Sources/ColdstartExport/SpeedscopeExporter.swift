import ColdstartAnalysis

/// `coldstart export --format speedscope`: speedscope's JSON file format.
///
/// - one `sampled` profile per thread (most samples first), its samples in
///   time order, root frame first, each weighted with the time one sample
///   stands for (one sampling period as in `coldstart report`, in ns), so the profile's
///   time axis is sampled time, as in `coldstart report`;
/// - one `evented` profile "launch phases" on the wall clock (ns from the
///   process start), a frame per phase opened at its start, closed at its end.
/// Frames are functions (`name`, `file` = the module's path).
package enum SpeedscopeExporter: StacksExporter {
    package static let name = "speedscope", suffix = ".speedscope.json"
    package static let help = [
        "speedscope's JSON: one profile per thread in time order,",
        "plus the launch phases on the wall clock.",
    ]
    static let schema = "https://www.speedscope.app/file-format-schema.json"

    package static func export(_ stacks: SampledStacks) -> [UInt8] {
        let weight = Int64(stacks.nsPerSample.rounded())
        var json = JSONText(capacity: stacks.samples.count * 64, escaping: .plain)
        json.raw("{\"$schema\":")
        json.string(schema)
        json.raw(",\"exporter\":\"coldstart\",\"name\":")
        json.string("launch of \(stacks.process.executable) (pid \(stacks.process.pid))")
        json.raw(",\"activeProfileIndex\":0,\"shared\":{\"frames\":[")
        for (index, function) in stacks.functions.enumerated() {
            json.raw(index == 0 ? "{\"name\":" : ",{\"name\":")
            json.string(function.name)
            if function.module >= 0 {
                json.raw(",\"file\":")
                json.string(stacks.modules[function.module].path)
            }
            json.raw("}")
        }
        let phaseFrame = stacks.functions.count
        for phase in stacks.phases {
            json.raw(",{\"name\":")
            json.string(phase.name)
            json.raw(",\"file\":\"launch phase\"}")
        }
        json.raw("]},\"profiles\":[")

        // Indices, not copies of the samples: each copy retains its two
        // arrays, and a million of them is memory and time for nothing.
        var byThread: [Int: [Int]] = [:]
        for (index, sample) in stacks.samples.enumerated() { byThread[sample.tid, default: []].append(index) }
        // Each distinct stack's `[root,…,leaf]` written once, then copied.
        var written: [Int: String] = [:]
        func stack(_ index: Int) -> String {
            let shape = stacks.samples[index].shape
            if let text = written[shape] { return text }
            let sample = stacks.samples[index]
            var one = JSONText(capacity: sample.functions.count * 6, escaping: .plain)
            one.ints(sample.functions.reversed())
            written[sample.shape] = one.text
            return one.text
        }
        let weightText = String(weight)
        let threads = stacks.threads
        for (number, tid) in threads.enumerated() {
            let samples = byThread[tid] ?? []
            let start = samples.first.map { stacks.samples[$0].ns } ?? 0
            if number > 0 { json.raw(",") }
            json.raw("{\"type\":\"sampled\",\"name\":")
            json.string("\(stacks.threadNames[tid] ?? "thread \(tid)") (tid \(tid))")
            json.raw(",\"unit\":\"nanoseconds\",\"startValue\":")
            json.int(start)
            json.raw(",\"endValue\":")
            json.int(start + Int64(samples.count) * weight)
            json.raw(",\"samples\":[")
            for (number, index) in samples.enumerated() {
                if number > 0 { json.raw(",") }
                json.raw(stack(index))
            }
            json.raw("],\"weights\":[")
            for index in samples.indices {
                if index > 0 { json.raw(",") }
                json.raw(weightText)
            }
            json.raw("]}")
        }

        json.raw(threads.isEmpty ? "" : ",")
        json.raw("{\"type\":\"evented\",\"name\":\"launch phases (wall clock, CLOCK_MONOTONIC from process start)\"")
        json.raw(",\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":")
        json.int(max(stacks.launchEndNs, stacks.phases.last?.endNs ?? 0))
        json.raw(",\"events\":[")
        for (index, phase) in stacks.phases.enumerated() {
            if index > 0 { json.raw(",") }
            json.raw("{\"type\":\"O\",\"frame\":")
            json.int(phaseFrame + index)
            json.raw(",\"at\":")
            json.int(phase.startNs)
            json.raw("},{\"type\":\"C\",\"frame\":")
            json.int(phaseFrame + index)
            json.raw(",\"at\":")
            json.int(max(phase.endNs, phase.startNs))
            json.raw("}")
        }
        json.raw("]}]}\n")
        return json.bytes
    }
}
