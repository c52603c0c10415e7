import Foundation

/// The parsed document, made from the bytes the scanner left (`rest`) when
/// first asked for: `coldstart aggregate` and most reports never ask, and
/// parsing it was a third of reading a small timeline.
final class DocumentBox: @unchecked Sendable {
    private let rest: Data
    /// The `dropped` counts to write into the document when the reader
    /// replaced bytes that were not UTF-8 (so a rewrite keeps them).
    private let dropped: Timeline.Dropped?
    private let lock = NSLock()
    private var parsed: [String: Any]?

    init(rest: Data, dropped: Timeline.Dropped?) {
        self.rest = rest
        self.dropped = dropped
    }

    /// The document (with `"samples": []`). The scanner refuses whatever
    /// JSONSerialization refuses, so the parse cannot fail on bytes it accepted.
    var value: [String: Any] {
        lock.lock()
        defer { lock.unlock() }
        if let parsed { return parsed }
        var root = (try? JSONSerialization.jsonObject(with: rest)) as? [String: Any] ?? [:]
        if let dropped, var section = root["coldstart"] as? [String: Any] {
            var counts = section["dropped"] as? [String: Any] ?? [:]
            (counts["events"], counts["nameBytes"]) = (dropped.events, dropped.nameBytes)
            counts["notUtf8Bytes"] = dropped.notUtf8Bytes
            section["dropped"] = counts
            root["coldstart"] = section
        }
        parsed = root
        return root
    }
}

extension Timeline {
    /// The newest format version this build reads.
    static let formatVersion = 1

    /// Reads and validates a timeline file: a regular file of at most
    /// `TimelineLimits.maxFileBytes`.
    package init(contentsOf path: String) throws {
        let data: Data
        do {
            data = try RegularFile(path: path).readAll(limit: TimelineLimits.maxFileBytes)
        } catch let error as RegularFile.OpenError {
            let problem: String
            switch error {
            case .directory, .notRegular: problem = error.problem + ", not a timeline file"
            case .tooLarge(let size, let limit):
                problem = "too large for a timeline (\(size / 1_000_000) MB; coldstart reads at most \(limit / 1_000_000) MB)"
            default: problem = error.problem
            }
            throw TimelineError(path: path, problem: problem)
        }
        try self.init(data: data, path: path)
    }

    /// Parses a timeline; `path` only names it in errors.
    ///
    /// One scan over the bytes (`TimelineScanner`), then one `JSONDecoder`
    /// pass over the `coldstart` section alone; the few values read as
    /// parsed JSON (`version`, `labels`, `watch`) are parsed from their own
    /// bytes, and the whole document only when asked for (`DocumentBox`).
    package init(data: Data, path: String = "<timeline>") throws {
        func fail(_ problem: String) -> TimelineError { TimelineError(path: path, problem: problem) }
        if data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            throw fail("empty file")
        }
        // JSON must be UTF-8, and one byte that is not (a Latin-1 file name
        // from an older recorder) made JSONSerialization refuse the whole
        // file: each such byte becomes U+FFFD, as the recorder writes it now.
        let (text, replaced) = UTF8Repair.replacingInvalidBytes(data)
        let scan: TimelineScanner.Scan
        do {
            scan = try TimelineScanner.scan(text)
        } catch {
            throw fail(TimelineScanner.problem(error, data: text))
        }
        guard scan.root == UInt8(ascii: "{") else {
            // JSONSerialization refused a top level that is not a container.
            throw fail(scan.root == UInt8(ascii: "[") ? "not a Coldstart timeline (top level is not an object)" : "not JSON")
        }
        guard let sectionBytes = scan.section else {
            throw fail("not a Coldstart timeline (no \"coldstart\" section; a plain Chrome trace?)")
        }
        /// A value of the section as JSONSerialization parses it; nil when absent.
        func parsed(_ key: String) -> Any? {
            guard let range = scan.sectionValues[key] else { return nil }
            let bytes = text.subdata(in: text.startIndex + range.lowerBound..<text.startIndex + range.upperBound)
            return try? JSONSerialization.jsonObject(with: bytes, options: [.fragmentsAllowed])
        }
        guard let version = parsed("version") as? Int else { throw fail("not a Coldstart timeline (no format version)") }
        guard version <= Timeline.formatVersion else {
            throw fail("format version \(version) is newer than this coldstart reads (\(Timeline.formatVersion)); update coldstart")
        }
        // The typed sections in one JSONDecoder pass over the section's bytes
        // (each section re-encoded and decoded on its own cost 2.5 ms per
        // 8 kB file; the whole file, trace events too, half as much again);
        // each section's failure is kept and reported as before, by key.
        //
        // The arrays of small objects are read from their bytes first
        // (`PlainSections`); the decoder skips those that were, and reads
        // any that were not (an escaped name, a mistyped field, a key
        // repeated: which value counts is the decoder's to say) as before.
        func bytes(_ key: String) -> Data? {
            guard !scan.repeatedSectionKeys.contains(key), !scan.repeatedSectionKeys.contains("") else { return nil }
            return scan.sectionValues[key].map { text.subdata(in: text.startIndex + $0.lowerBound..<text.startIndex + $0.upperBound) }
        }
        let plainPhases = bytes("phases").flatMap(PlainSections.phases), plainMarks = bytes("marks").flatMap(PlainSections.marks)
        let plainSpans = bytes("spans").flatMap(PlainSections.spans), plainRusage = bytes("rusage").flatMap(PlainSections.rusage)
        let typed: TypedSections
        do {
            let decoder = JSONDecoder()
            decoder.userInfo[TypedSections.readAlready] = Set([plainPhases.map { _ in "phases" }, plainMarks.map { _ in "marks" },
                                                              plainSpans.map { _ in "spans" }, plainRusage.map { _ in "rusage" }].compactMap { $0 })
            typed = try decoder.decode(TypedSections.self, from: scan.rest.subdata(in: sectionBytes))
        } catch {
            throw fail("malformed timeline: bad \"coldstart\" (\(Self.decodingSummary(error, dropping: 0)))")
        }
        /// nil when absent or null (an error if `required`).
        func decode<T>(_ result: Result<T, Error>?, _ key: String, required: Bool = true) throws -> T? {
            guard let result else {
                if required { throw fail("malformed timeline: missing \"\(key)\"") }
                return nil
            }
            do {
                return try result.get()
            } catch {
                throw fail("malformed timeline: bad \"\(key)\" (\(Self.decodingSummary(error, dropping: 1)))")
            }
        }
        launch = try decode(typed.launch, "launch")!
        process = try decode(typed.process, "process")!
        rusage = try plainRusage ?? decode(typed.rusage, "rusage") ?? []
        phases = try plainPhases ?? decode(typed.phases, "phases")!
        marks = try plainMarks ?? decode(typed.marks, "marks")!
        spans = try plainSpans ?? decode(typed.spans, "spans")!
        threads = try decode(typed.threads, "threads") ?? []
        ownThreads = try decode(typed.ownThreads, "ownThreads", required: false) ?? []
        dropped = try decode(typed.dropped, "dropped", required: false) ?? Dropped(events: 0, nameBytes: 0)
        if replaced > 0 { dropped.notUtf8Bytes = (dropped.notUtf8Bytes ?? 0) + replaced }
        sampling = try decode(typed.sampling, "sampling", required: false)
        modules = try decode(typed.modules, "modules", required: false) ?? []
        symbols = try decode(typed.symbols, "symbols", required: false) ?? [:]
        if let range = scan.sectionValues["samples"], ![UInt8(ascii: "["), UInt8(ascii: "n")].contains(text[text.startIndex + range.lowerBound]) {
            throw fail("malformed timeline: \"samples\" is not an array")
        }
        let moduleCount = modules.count
        // The scanner noted the highest module: the samples are searched
        // only for the error's row.
        if scan.maxModule >= moduleCount {
            for (index, sample) in scan.samples.enumerated() {
                if let frame = sample.frames.first(where: { $0.module >= moduleCount }) {
                    throw fail("malformed timeline: sample \(index) names module \(frame.module) of \(moduleCount)")
                }
            }
        }
        var samples = scan.samples, sampling = sampling
        if let range = scan.rawStacks {
            offlineUnwinding = try Self.unwind(text.subdata(in: text.startIndex + range.lowerBound..<text.startIndex + range.upperBound),
                                               samples: &samples, sampling: &sampling, modules: modules, fail: fail)
        }
        self.samples = samples
        self.sampling = sampling
        watch = try Watch.parse(parsed("watch"), moduleCount: modules.count, fail: fail)
        labels = (parsed("labels") as? [String: Any])?.compactMapValues { $0 as? String } ?? [:]
        documentBox = DocumentBox(rest: scan.rest, dropped: replaced > 0 ? dropped : nil)
        if phases.isEmpty { throw fail("malformed timeline: no phases") }
        try validate(TimelineValidator(fail: fail))
    }

    /// The file's stack copies (`rawStacks`) unwound into `samples`, and the
    /// online unwinder's counts in `sampling` for the same samples.
    private static func unwind(_ bytes: Data, samples: inout [Sample], sampling: inout Sampling?, modules: [Module],
                               fail: (String) -> TimelineError) throws -> OfflineUnwinding {
        let raw: RawStacks
        do {
            raw = try RawStacks.parse(bytes)
        } catch let error as RawStacks.Malformed {
            throw fail("malformed timeline: bad \"rawStacks\" (\(error.problem))")
        }
        let count = samples.count
        if let stack = raw.stacks.first(where: { $0.sample >= count }) {
            throw fail("malformed timeline: a stack copy names sample \(stack.sample) of \(count)")
        }
        let unwinding = OfflineUnwinding.apply(raw, to: &samples, modules: modules)
        if var kernel = sampling?.kernelStacks, unwinding.unavailable == nil {
            kernel.dwarf = unwinding.unwound
            kernel.chainTails = unwinding.chainTails
            sampling?.kernelStacks = kernel
            let failures = (sampling?.unwindFailures ?? 0) + unwinding.failures
            sampling?.unwindFailures = failures
        }
        return unwinding
    }

    /// `dropping` the leading keys of the coding path that name where the
    /// section sits (the section's key).
    private static func decodingSummary(_ error: Error, dropping: Int) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): return "missing \"\(key.stringValue)\""
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            let path = context.codingPath.dropFirst(dropping).map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? "wrong type" : "wrong type at \(path)"
        default: return "unreadable"
        }
    }

    /// Whether a parsed JSON value is `null`. By its type: `value is NSNull`
    /// bridged a whole array or dictionary to Foundation's classes first
    /// (a fifth of reading a small timeline).
    static func isNull(_ value: Any) -> Bool { type(of: value) == NSNull.self }

    /// The whole launch: process start to its end (ready, exit or signal).
    package var launchDurationNs: Int64 { launch.endNs }
}

/// The `coldstart` section's typed values, decoded in one pass; each
/// value's result kept apart so that a bad one is reported by its key.
private struct TypedSections: Decodable {
    /// The keys (`Set<String>`) already read by `PlainSections`: left alone.
    static let readAlready = CodingUserInfoKey(rawValue: "readAlready")!

    var launch: Result<Timeline.Launch, Error>?
    var process: Result<Timeline.Process, Error>?
    var rusage: Result<[Timeline.RusageSnapshot], Error>?
    var phases: Result<[Timeline.Phase], Error>?
    var marks: Result<[Timeline.Mark], Error>?
    var spans: Result<[Timeline.Span], Error>?
    var threads: Result<[Timeline.Thread], Error>?
    var ownThreads: Result<[Timeline.OwnThread], Error>?
    var dropped: Result<Timeline.Dropped, Error>?
    var sampling: Result<Timeline.Sampling, Error>?
    var modules: Result<[Timeline.Module], Error>?
    var symbols: Result<[String: Timeline.Symbol], Error>?

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        let readAlready = decoder.userInfo[Self.readAlready] as? Set<String> ?? []
        /// nil when absent or null (the caller says whether that is allowed),
        /// or read already.
        func section<T: Decodable>(_ key: String) -> Result<T, Error>? {
            if readAlready.contains(key) { return nil }
            let key = Key(stringValue: key)
            guard container.contains(key), (try? container.decodeNil(forKey: key)) == false else { return nil }
            return Result { try container.decode(T.self, forKey: key) }
        }
        launch = section("launch")
        process = section("process")
        rusage = section("rusage")
        phases = section("phases")
        marks = section("marks")
        spans = section("spans")
        threads = section("threads")
        ownThreads = section("ownThreads")
        dropped = section("dropped")
        sampling = section("sampling")
        modules = section("modules")
        symbols = section("symbols")
    }
}

