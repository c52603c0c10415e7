import ColdstartAnalysis

/// `coldstart export --format pprof`: the selected samples as pprof's
/// `profile.proto`, gzip-compressed, for `go tool pprof` and the viewers that
/// read it.
///
/// - sample types `samples/count` and `cpu/nanoseconds` (`wall/nanoseconds`
///   when the sampling clock was the wall-clock timer); a sample's time is one
///   sampling period as in `coldstart report` (the perf task clock's nominal
///   period of user-mode CPU, a POSIX timer's effective rate);
/// - one location per distinct frame, at its run-time address, in a mapping
///   per module with the module's build-id; functions carry the demangled
///   name and the mangled `system_name`;
/// - labels `thread` (name), `tid` and `phase` on every sample;
/// - `time_nanos` is the wall clock when sampling started (from the
///   timeline's `startRealtimeUs`), `duration_nanos` the sampling window.
package enum PprofExporter: StacksExporter {
    package static let name = "pprof", suffix = ".pb.gz"
    package static let help = [
        "gzip-compressed profile.proto: `go tool pprof -top OUT`,",
        "`go tool pprof -http=:8080 OUT`; sample types samples/count",
        "and cpu/nanoseconds, labels thread, tid and phase.",
    ]

    package static func export(_ stacks: SampledStacks) throws -> [UInt8] {
        do {
            return try Gzip.compress(profile(stacks))
        } catch {
            throw ExportError(description: "cannot compress the profile (\(error))")
        }
    }

    /// The uncompressed `Profile` message.
    static func profile(_ stacks: SampledStacks) -> [UInt8] {
        var strings = StringTable()
        var out = ProtobufWriter()
        let timeType = stacks.sampling.clock == "wall-timer" ? "wall" : "cpu"
        let period = Int64(stacks.nsPerSample.rounded())

        // Profile.sample_type = 1: ValueType {type = 1, unit = 2}.
        for (type, unit) in [("samples", "count"), (timeType, "nanoseconds")] {
            out.message(1) { $0.int(1, strings[type]); $0.int(2, strings[unit]) }
        }

        // Samples, merged by (frames, thread, phase): labels keep those apart.
        // A distinct stack's locations are worked out once.
        var locationIDs: [Timeline.Frame: UInt64] = [:]
        var locations: [(frame: Timeline.Frame, function: Int)] = []
        var shapeLocations: [Int: [UInt64]] = [:]
        struct Key: Hashable { var shape: Int; var tid: Int; var phase: Int }
        var counts: [Key: Int] = [:]
        var order: [Key] = []
        for sample in stacks.samples {
            if shapeLocations[sample.shape] == nil {
                shapeLocations[sample.shape] = zip(sample.frames, sample.functions).map { frame, function -> UInt64 in
                    if let id = locationIDs[frame] { return id }
                    locations.append((frame, function))
                    locationIDs[frame] = UInt64(locations.count)
                    return UInt64(locations.count)
                }
            }
            let key = Key(shape: sample.shape, tid: sample.tid, phase: sample.phase)
            if counts[key] == nil { order.append(key) }
            counts[key, default: 0] += 1
        }
        // Profile.sample = 2: Sample {location_id = 1, value = 2, label = 3};
        // Label {key = 1, str = 2, num = 3}.
        for key in order {
            let count = Int64(counts[key]!)
            out.message(2) { sample in
                sample.packed(1, shapeLocations[key.shape] ?? [])
                sample.packed(2, [UInt64(count), UInt64(count * period)])
                sample.message(3) { $0.int(1, strings["thread"]); $0.int(2, strings[stacks.threadNames[key.tid] ?? "thread \(key.tid)"]) }
                sample.message(3) { $0.int(1, strings["tid"]); $0.int(3, Int64(key.tid)) }
                sample.message(3) { $0.int(1, strings["phase"]); $0.int(2, strings[stacks.phaseNames[key.phase]]) }
            }
        }

        // Profile.mapping = 3: Mapping {id = 1, memory_start = 2, memory_limit = 3,
        // file_offset = 4, filename = 5, build_id = 6, has_functions = 7}.
        for (index, module) in stacks.modules.enumerated() {
            out.message(3) { mapping in
                mapping.uint(1, UInt64(index + 1))
                mapping.uint(2, module.start)
                mapping.uint(3, module.end)
                // The ELF address of the mapping's start: its file offset for
                // the first loadable segment, which is where the mapping begins.
                mapping.uint(4, module.start >= module.base ? module.start - module.base : 0)
                mapping.int(5, strings[module.path])
                mapping.int(6, strings[module.buildId ?? ""])
                mapping.bool(7, true)
            }
        }

        // Profile.location = 4: Location {id = 1, mapping_id = 2, address = 3,
        // line = 4}; Line {function_id = 1}.
        for (index, location) in locations.enumerated() {
            let frame = location.frame
            out.message(4) { message in
                message.uint(1, UInt64(index + 1))
                if frame.module >= 0 && frame.module < stacks.modules.count {
                    message.uint(2, UInt64(frame.module + 1))
                    message.uint(3, frame.address &+ stacks.modules[frame.module].base)
                } else {
                    message.uint(3, frame.address)
                }
                message.message(4) { $0.uint(1, UInt64(location.function + 1)) }
            }
        }

        // Profile.function = 5: Function {id = 1, name = 2, system_name = 3, filename = 4}.
        for (index, function) in stacks.functions.enumerated() {
            out.message(5) { message in
                message.uint(1, UInt64(index + 1))
                message.int(2, strings[function.name])
                message.int(3, strings[function.systemName])
                if function.module >= 0 { message.int(4, strings[stacks.modules[function.module].path]) }
            }
        }

        let sampling = stacks.sampling
        if let start = stacks.startRealtimeUs {
            out.int(9, Int64(start) * 1000 + sampling.startNs)  // time_nanos
        }
        out.int(10, max(0, sampling.stopNs - sampling.startNs))  // duration_nanos
        out.message(11) { $0.int(1, strings[timeType]); $0.int(2, strings["nanoseconds"]) }  // period_type
        out.int(12, period)
        let comments = [
            "coldstart: launch of \(stacks.process.executable) (pid \(stacks.process.pid))",
            "sampling clock \(sampling.clock), \(format(sampling.effectiveHz)) Hz effective (\(format(sampling.requestedHz)) Hz asked); "
                + "every sample counts one period, \(period) ns",
        ]
        out.packed(13, comments.map { UInt64(strings[$0]) })
        out.int(14, strings[timeType])  // default_sample_type

        // Profile.string_table = 6, written last: every string is known by now.
        for string in strings.strings { out.string(6, string) }
        return out.bytes
    }

    private static func format(_ value: Double) -> String {
        value.rounded() == value ? String(Int(value)) : String((value * 10).rounded() / 10)
    }
}

/// pprof's string table: index 0 is the empty string.
private struct StringTable {
    private(set) var strings: [String] = [""]
    private var indices: [String: Int64] = ["": 0]

    subscript(_ string: String) -> Int64 {
        mutating get {
            if let index = indices[string] { return index }
            strings.append(string)
            indices[string] = Int64(strings.count - 1)
            return Int64(strings.count - 1)
        }
    }
}
