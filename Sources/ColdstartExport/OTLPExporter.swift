import ColdstartAnalysis
import Foundation

/// Launches as OpenTelemetry traces (`coldstart export --format otlp`,
/// `coldstart push`): one trace per launch, as an OTLP
/// `ExportTraceServiceRequest` in OTLP/JSON or protobuf (OTLP/HTTP).
///
/// - the launch is the root span (`launch`, process start → ready, exit or
///   signal; status ERROR for an error exit or a signal), the marks its events;
/// - each phase and each span is a child of it, with `thread.id` (a phase:
///   the main thread) and its `getrusage` counters;
/// - the resource carries `service.name` (the executable's file name), the
///   process, the kernel and every label of `coldstart.labels` under its
///   own name (`version` also as `service.version`, `host` as `host.name`).
///
/// Times are unix nanoseconds: the wall clock of the process start
/// (`startRealtimeUs`, µs) plus the monotonic offsets of the timeline, so a
/// launch sits beside the service's own traces to the microsecond of its
/// start. Ids are hashes of the launch (pid, monotonic and wall-clock start,
/// executable, host label): exporting the same launch twice gives the same
/// trace, which backends then merge rather than duplicate.
package enum OTLPExporter: TraceExporter {
    package static let name = "otlp", suffix = ".otlp.json"
    package static let help = [
        "the launch as an OpenTelemetry trace, OTLP/JSON (.otlp.json;",
        "needs no samples; --phase/--thread do not apply): see",
        "`coldstart push --help` and docs/fleet.md.",
    ]

    /// OTLP/JSON (hex ids, integers of 64 bits as strings, as the OTLP
    /// specification says).
    package static func export(_ launches: [(trace: LaunchTrace, path: String)]) throws -> [UInt8] {
        let traces = try launches.map { try trace($0.trace, path: $0.path) }
        let request: [String: Any] = ["resourceSpans": traces.map { trace in
            [
                "resource": ["attributes": trace.resource.map(json)],
                "scopeSpans": [["scope": ["name": scopeName], "spans": trace.spans.map(json)]],
            ] as [String: Any]
        }]
        return try [UInt8](JSONSerialization.data(withJSONObject: request, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]))
            + Array("\n".utf8)
    }

    package static func summary(_ trace: LaunchTrace) -> String {
        "OTLP/JSON, 1 trace of \(spanCount(trace)) spans and \(trace.marks.count) events"
    }

    /// The launch's span and those of its phases and spans.
    package static func spanCount(_ trace: LaunchTrace) -> Int { 1 + trace.phases.count + trace.spans.count }

    /// The same request as protobuf, the body of an OTLP/HTTP POST to `/v1/traces`.
    package static func protobuf(_ launches: [(trace: LaunchTrace, path: String)]) throws -> [UInt8] {
        var out = ProtobufWriter()
        for item in launches {
            let trace = try trace(item.trace, path: item.path)
            // ExportTraceServiceRequest.resource_spans = 1: ResourceSpans
            // {resource = 1: Resource {attributes = 1}, scope_spans = 2}.
            out.message(1) { resourceSpans in
                resourceSpans.message(1) { resource in
                    for attribute in trace.resource { resource.message(1) { protobuf(attribute, &$0) } }
                }
                // ScopeSpans {scope = 1: InstrumentationScope {name = 1}, spans = 2}.
                resourceSpans.message(2) { scopeSpans in
                    scopeSpans.message(1) { $0.string(1, scopeName) }
                    for span in trace.spans { scopeSpans.message(2) { protobuf(span, &$0) } }
                }
            }
        }
        return out.bytes
    }

    static let scopeName = "coldstart"

    enum Value {
        case string(String), int(Int64), bool(Bool)
    }

    struct Attribute {
        var key: String
        var value: Value
        init(_ key: String, _ value: Value) { self.key = key; self.value = value }
    }

    struct Event {
        var timeUnixNano: UInt64
        var name: String
        var attributes: [Attribute]
    }

    struct Span {
        var traceId: [UInt8]
        var spanId: [UInt8]
        var parentSpanId: [UInt8]
        var name: String
        var startUnixNano: UInt64
        var endUnixNano: UInt64
        var attributes: [Attribute]
        var events: [Event] = []
        /// Status ERROR with this message; nil leaves it unset.
        var error: String?
    }

    struct Trace {
        var resource: [Attribute]
        var spans: [Span]
    }

    static func trace(_ launchTrace: LaunchTrace, path: String) throws -> Trace {
        guard let startUs = launchTrace.launch.startRealtimeUs else {
            throw ExportError(description: "\(path): no wall-clock start (startRealtimeUs) in the timeline, so the launch cannot be placed in time")
        }
        let labels = launchTrace.labels
        let process = launchTrace.process
        let launch = launchTrace.launch
        let identity = "\(process.pid)/\(launch.startNs)/\(startUs)/\(process.executable)/\(labels["host"] ?? "")"
        let traceId = hash(identity, seed: 1) + hash(identity, seed: 2)
        func spanId(_ what: String) -> [UInt8] { hash(identity + "/" + what, seed: 3) }
        func unixNano(_ offset: Int64) -> UInt64 { UInt64(max(0, Int64(startUs) * 1000 + offset)) }
        let threadNames = launchTrace.threadNames

        var resource = [Attribute("service.name", .string(launchTrace.executableName))]
        if let version = labels["version"] { resource.append(Attribute("service.version", .string(version))) }
        if let host = labels["host"] { resource.append(Attribute("host.name", .string(host))) }
        resource += [
            Attribute("process.pid", .int(Int64(process.pid))),
            Attribute("process.executable.name", .string(launchTrace.executableName)),
            Attribute("process.executable.path", .string(process.executable)),
            Attribute("process.runtime.name", .string("swift")),
            Attribute("process.runtime.version", .string(process.swiftVersion)),
            Attribute("os.type", .string("linux")),
            Attribute("os.version", .string(process.kernelRelease)),
        ]
        if let buildId = launchTrace.executableBuildId {
            resource.append(Attribute("process.executable.build_id.gnu", .string(buildId)))
        }
        let named = Set(resource.map(\.key))
        resource += labels.sorted { $0.key < $1.key }.filter { !named.contains($0.key) }.map { Attribute($0.key, .string($0.value)) }

        let rootId = spanId("launch")
        var root = Span(
            traceId: traceId, spanId: rootId, parentSpanId: [], name: "launch",
            startUnixNano: unixNano(0), endUnixNano: unixNano(launch.endNs),
            attributes: [
                Attribute("thread.id", .int(Int64(process.pid))),
                Attribute("coldstart.end_reason", .string(launch.endReason)),
                Attribute("coldstart.completed", .bool(launch.completed)),
                Attribute("coldstart.start_source", .string(launch.startSource)),
                Attribute("coldstart.start_precision_ns", .int(Int64(clamping: launch.startPrecisionNs))),
            ])
        if let status = launch.exitStatus { root.attributes.append(Attribute("coldstart.exit_status", .int(Int64(status)))) }
        if let signal = launch.signalName { root.attributes.append(Attribute("coldstart.signal", .string(signal))) }
        switch launch.endReason {
        case "error-exit": root.error = "exit(\(launch.exitStatus ?? -1)) before ready"
        case "signal": root.error = "\(launch.signalName ?? "signal") before ready"
        case "stepped-aside": root.error = "profiling stopped at \(launch.asideFor ?? "a call that needs one thread")"
        default: break
        }
        root.events = launchTrace.marks.map { mark in
            Event(timeUnixNano: unixNano(mark.ns), name: mark.name, attributes: threadAttributes(mark.tid, threadNames) + [
                Attribute("coldstart.phase_boundary", .bool(mark.phaseBoundary)),
                Attribute("coldstart.extended", .bool(mark.extended)),
            ])
        }
        var spans = [root]
        for (index, phase) in launchTrace.phases.enumerated() {
            spans.append(Span(
                traceId: traceId, spanId: spanId("phase/\(index)"), parentSpanId: rootId, name: phase.name,
                startUnixNano: unixNano(phase.startNs), endUnixNano: unixNano(phase.endNs),
                attributes: [Attribute("coldstart.type", .string("phase")), Attribute("coldstart.phase.kind", .string(phase.kind))]
                    + threadAttributes(process.pid, threadNames) + rusageAttributes(phase.rusage)))
        }
        for (index, span) in launchTrace.spans.enumerated() {
            var attributes = [Attribute("coldstart.type", .string("span"))] + threadAttributes(span.tid, threadNames)
            if span.endTid != span.tid { attributes.append(Attribute("coldstart.end_thread.id", .int(Int64(span.endTid)))) }
            if span.unfinished { attributes.append(Attribute("coldstart.unfinished", .bool(true))) }
            spans.append(Span(
                traceId: traceId, spanId: spanId("span/\(index)"), parentSpanId: rootId, name: span.name,
                startUnixNano: unixNano(span.beginNs), endUnixNano: unixNano(span.endNs),
                attributes: attributes + rusageAttributes(span.rusage)))
        }
        return Trace(resource: resource, spans: spans)
    }

    private static func threadAttributes(_ tid: Int, _ names: [Int: String]) -> [Attribute] {
        [Attribute("thread.id", .int(Int64(tid)))] + (names[tid].map { [Attribute("thread.name", .string($0))] } ?? [])
    }

    private static func rusageAttributes(_ rusage: Timeline.Rusage?) -> [Attribute] {
        guard let rusage else { return [] }
        return [
            Attribute("coldstart.cpu_ns", .int(Int64(clamping: rusage.cpuNs))),
            Attribute("coldstart.minor_faults", .int(Int64(clamping: rusage.minorFaults))),
            Attribute("coldstart.major_faults", .int(Int64(clamping: rusage.majorFaults))),
            Attribute("coldstart.voluntary_switches", .int(Int64(clamping: rusage.voluntarySwitches))),
            Attribute("coldstart.involuntary_switches", .int(Int64(clamping: rusage.involuntarySwitches))),
        ]
    }

    /// 8 bytes of FNV-1a 64 over `text`, mixed by SplitMix64's finalizer so
    /// that near-identical inputs differ in every byte; never all zero (an
    /// invalid id in OTLP).
    static func hash(_ text: String, seed: UInt64) -> [UInt8] {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325 ^ (seed &* 0x9E37_79B9_7F4A_7C15)
        for byte in text.utf8 { h = (h ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        h = (h ^ (h >> 30)) &* 0xBF58_476D_1CE4_E5B9
        h = (h ^ (h >> 27)) &* 0x94D0_49BB_1331_11EB
        h ^= h >> 31
        if h == 0 { h = 1 }
        return (0..<8).map { UInt8(truncatingIfNeeded: h >> (56 - 8 * UInt64($0))) }
    }

    // MARK: OTLP/JSON

    private static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    private static func json(_ attribute: Attribute) -> [String: Any] {
        let value: [String: Any]
        switch attribute.value {
        case .string(let text): value = ["stringValue": text]
        case .int(let number): value = ["intValue": String(number)]
        case .bool(let flag): value = ["boolValue": flag]
        }
        return ["key": attribute.key, "value": value]
    }

    private static func json(_ span: Span) -> [String: Any] {
        var object: [String: Any] = [
            "traceId": hex(span.traceId), "spanId": hex(span.spanId), "name": span.name,
            "kind": 1,  // SPAN_KIND_INTERNAL
            "startTimeUnixNano": String(span.startUnixNano), "endTimeUnixNano": String(span.endUnixNano),
            "attributes": span.attributes.map(json),
        ]
        if !span.parentSpanId.isEmpty { object["parentSpanId"] = hex(span.parentSpanId) }
        if !span.events.isEmpty {
            object["events"] = span.events.map { event -> [String: Any] in
                ["timeUnixNano": String(event.timeUnixNano), "name": event.name, "attributes": event.attributes.map(json)]
            }
        }
        if let error = span.error { object["status"] = ["code": 2, "message": error] as [String: Any] }  // STATUS_CODE_ERROR
        return object
    }

    // MARK: protobuf (opentelemetry/proto/trace/v1/trace.proto, common/v1/common.proto)

    /// KeyValue {key = 1, value = 2: AnyValue {string_value = 1, bool_value = 2, int_value = 3}}.
    private static func protobuf(_ attribute: Attribute, _ out: inout ProtobufWriter) {
        out.string(1, attribute.key)
        out.message(2) { value in
            switch attribute.value {
            case .string(let text): value.string(1, text)
            case .bool(let flag): value.oneofVarint(2, flag ? 1 : 0)
            case .int(let number): value.oneofVarint(3, UInt64(bitPattern: number))
            }
        }
    }

    /// Span {trace_id = 1, span_id = 2, parent_span_id = 4, name = 5, kind = 6,
    /// start_time_unix_nano = 7, end_time_unix_nano = 8, attributes = 9,
    /// events = 11, status = 15}; Event {time_unix_nano = 1, name = 2,
    /// attributes = 3}; Status {message = 2, code = 3}.
    private static func protobuf(_ span: Span, _ out: inout ProtobufWriter) {
        out.data(1, span.traceId)
        out.data(2, span.spanId)
        out.data(4, span.parentSpanId)
        out.string(5, span.name)
        out.uint(6, 1)  // SPAN_KIND_INTERNAL
        out.fixed64(7, span.startUnixNano)
        out.fixed64(8, span.endUnixNano)
        for attribute in span.attributes { out.message(9) { protobuf(attribute, &$0) } }
        for event in span.events {
            out.message(11) { message in
                message.fixed64(1, event.timeUnixNano)
                message.string(2, event.name)
                for attribute in event.attributes { message.message(3) { protobuf(attribute, &$0) } }
            }
        }
        if let error = span.error {
            out.message(15) { $0.string(2, error); $0.uint(3, 2) }  // STATUS_CODE_ERROR
        }
    }
}

extension OTLPExporter {
    /// What an OTLP/HTTP receiver's `ExportTraceServiceResponse` says it
    /// refused: `partial_success = 1 {rejected_spans = 1, error_message = 2}`.
    /// Nil when it accepted everything (an empty message) or the body is not
    /// that message.
    package static func rejection(inResponse body: [UInt8]) -> (spans: Int64, message: String)? {
        var reader = ProtobufReader(body)
        while let field = reader.next() {
            guard field.number == 1, case .bytes(let inner) = field.value else { continue }
            var partial = ProtobufReader(inner)
            var spans: Int64 = 0, message = ""
            while let member = partial.next() {
                switch (member.number, member.value) {
                case (1, .varint(let value)): spans = Int64(bitPattern: value)
                case (2, .bytes(let text)): message = String(decoding: text, as: UTF8.self)
                default: break
                }
            }
            return spans == 0 && message.isEmpty ? nil : (spans, message)
        }
        return nil
    }
}

/// Reads the fields of one protobuf message; stops at the first malformed one.
private struct ProtobufReader {
    enum Value { case varint(UInt64), bytes([UInt8]), fixed }
    private let bytes: [UInt8]
    private var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    private mutating func varint() -> UInt64? {
        var value: UInt64 = 0
        for shift in stride(from: 0, to: 64, by: 7) {
            guard position < bytes.count else { return nil }
            let byte = bytes[position]
            position += 1
            value |= UInt64(byte & 0x7F) << UInt64(shift)
            if byte < 0x80 { return value }
        }
        return nil
    }

    mutating func next() -> (number: Int, value: Value)? {
        guard let key = varint() else { return nil }
        let number = Int(key >> 3)
        switch key & 7 {
        case 0: return varint().map { (number, .varint($0)) }
        case 1, 5:
            let size = key & 7 == 1 ? 8 : 4
            guard position + size <= bytes.count else { return nil }
            position += size
            return (number, .fixed)
        case 2:
            guard let length = varint(), length <= UInt64(bytes.count - position) else { return nil }
            let start = position
            position += Int(length)
            return (number, .bytes(Array(bytes[start..<position])))
        default: return nil
        }
    }
}
