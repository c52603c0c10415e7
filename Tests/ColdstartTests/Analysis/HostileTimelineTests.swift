@testable import ColdstartAnalysis
import Foundation
import XCTest

/// Issue 14, items 11–13: values that crashed the CLI, a FIFO that hung it,
/// and sizes that made it allocate without bound are each a one-line error
/// naming the file and the field or bound.
final class HostileTimelineTests: XCTestCase {
    /// A sampled, watched timeline with `change` applied to its `coldstart` section.
    private func timeline(_ change: (inout [String: Any]) -> Void) throws -> Timeline {
        var builder = SampledTimelineBuilder()
        let app = builder.module("/opt/app/App")
        builder.sample(at: 21, [.init(module: app, name: "main")])
        var document = builder.document
        var section = document["coldstart"] as! [String: Any]
        change(&section)
        document["coldstart"] = section
        return try Timeline(data: JSONSerialization.data(withJSONObject: document), path: "hostile.json")
    }

    private func assertRefused(_ problem: String, file: StaticString = #filePath, line: UInt = #line,
                               _ change: (inout [String: Any]) -> Void) {
        XCTAssertThrowsError(try timeline(change), file: file, line: line) { error in
            XCTAssertTrue("\(error)".hasPrefix("hostile.json: \(problem)"), "\(error)", file: file, line: line)
            XCTAssertFalse("\(error)".contains("\n"), file: file, line: line)
        }
    }

    private func set(_ key: String, in object: String, to value: Any) -> (inout [String: Any]) -> Void {
        { section in
            var inner = section[object] as! [String: Any]
            inner[key] = value
            section[object] = inner
        }
    }

    /// `coldstart symbolize` stores the loader statistics in the file; stored
    /// counts that could overflow the report's sums are ignored, not trusted.
    func testStoredLoaderStatisticsOutOfRangeAreIgnored() throws {
        func statistics(symbolic: Int) throws -> LoaderStatistics? {
            LoaderStatistics(try timeline { section in
                section["loaderStatistics"] = [
                    "objects": [["name": "libA.so", "relative": 1, "packedRelative": 0, "symbolic": symbolic, "plt": 2,
                                 "lookups": 3, "cachedLookups": 0, "bindNow": false, "isOwn": true]],
                    "relative": 1, "packedRelative": 0, "symbolic": symbolic, "plt": 2, "lookups": 3, "cachedLookups": 0,
                    "source": "modules mapped", "unreadable": [String](),
                ] as [String: Any]
            })
        }
        XCTAssertEqual(try statistics(symbolic: 40)?.symbolic, 40, "plausible stored counts are read")
        XCTAssertNil(try statistics(symbolic: Int.max))
        XCTAssertNil(try statistics(symbolic: -1))
    }

    func testNumbersThatTrappedAreErrorsNamingTheField() throws {
        XCTAssertNoThrow(try timeline { _ in }, "the unchanged timeline reads")
        assertRefused("malformed timeline: sampling.effectiveHz is 1e-300 Hz, out of range",
                      set("effectiveHz", in: "sampling", to: 1e-300))
        assertRefused("malformed timeline: sampling.handlerNs.totalNs is -1.0, out of range",
                      set("handlerNs", in: "sampling", to: ["median": 800, "p99": 4000, "max": 9000, "totalNs": -1]))
        assertRefused("malformed timeline: sampling.requestedHz 4000.0 Hz is neither the boost's rate nor the rate after it") { section in
            var sampling = section["sampling"] as! [String: Any]
            sampling["requestedHz"] = 4000
            sampling["boost"] = ["hz": 4000, "untilNs": 50_000_000, "thinned": true, "afterHz": 1000] as [String: Any]
            section["sampling"] = sampling
        }
        assertRefused("malformed timeline: sampling.clockArmedNs is -1, out of range", set("clockArmedNs", in: "sampling", to: -1))
        assertRefused("malformed timeline: launch.startRealtimeUs is 18446744073709551615, out of range",
                      set("startRealtimeUs", in: "launch", to: UInt64.max))
        assertRefused("malformed timeline: launch.endNs is 9223372036854775807, out of range",
                      set("endNs", in: "launch", to: Int64.max))
        assertRefused("malformed timeline: sample 0 has a time out of range (9223372036854775807)") { section in
            section["samples"] = [[Int64.max, 4242, [0, 4096]]]
        }
        assertRefused("malformed timeline: phases[0] start is -9223372036854775808, out of range") { section in
            var phases = section["phases"] as! [[String: Any]]
            phases[0]["startNs"] = Int64.min
            phases[0]["endNs"] = Int64.max
            section["phases"] = phases
        }
        // A resource-use delta out of range is set aside, not the launch (issue 35, item 12).
        let wrapped = try timeline { section in
            var phases = section["phases"] as! [[String: Any]]
            phases[1]["rusage"] = ["minorFaults": UInt64.max, "majorFaults": 0, "voluntarySwitches": 0,
                                   "involuntarySwitches": 0, "userNs": 0, "systemNs": 0]
            section["phases"] = phases
        }
        XCTAssertEqual(wrapped.setAside, ["phases[1].rusage.minorFaults is 18446744073709551615, out of range (0 to \(TimelineLimits.maxCount))"])
        XCTAssertNil(wrapped.phases[1].rusage)
        assertRefused("malformed timeline: watch start is 9223372036854775807, out of range") { section in
            section["watch"] = [
                "requestedHz": 1000, "effectiveHz": 1000, "startNs": Int64.max, "stopNs": 10, "ticks": 1, "cpuNs": 0,
                "threads": [[String: Any]](), "paths": [String](), "stacks": [[Any]](), "segments": [[Any]](), "runnable": [[Any]](),
            ] as [String: Any]
        }
    }

    func testTheCLISaysWhichFieldAndExitsOne() throws {
        let directory = try makeTemporaryDirectory(for: self)
        var builder = SampledTimelineBuilder()
        builder.hz = 1e-300
        builder.sample(at: 21, [.init(module: builder.module("/opt/app/App"), name: "main")])
        let path = directory.appendingPathComponent("hostile.json").path
        try builder.data().write(to: URL(fileURLWithPath: path))
        for arguments in [["report", path], ["report", path, "--html", path + ".html"], ["export", path, "--format", "pprof"]] {
            let result = try coldstart(arguments)
            XCTAssertEqual(result.status, 1, "\(arguments): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("\(path): malformed timeline: sampling.effectiveHz is 1e-300 Hz, out of range"), result.stderr)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + ".html"), "no partial output")
    }

    func testAFIFONamedAsAModuleOrATimelineIsRefusedWithoutWaiting() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let fifo = directory.appendingPathComponent("module.fifo").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        // Before: `open` for reading waited forever for a writer.
        XCTAssertThrowsError(try ELFImage(path: fifo, debugDirectory: nil)) { error in
            XCTAssertEqual("\(error)", "\(fifo): not a regular file (a pipe, socket or device)")
        }
        var builder = SampledTimelineBuilder()
        builder.symbolized = false
        builder.sample(at: 21, [.init(module: builder.module(fifo), name: "main")])
        let warnings = try LaunchAnalysis(timeline: builder.timeline()).report.profile?.warnings ?? []
        XCTAssertTrue(warnings.contains { $0.hasPrefix("\(fifo): not a regular file") }, "\(warnings)")
        XCTAssertThrowsError(try Timeline(contentsOf: fifo)) { error in
            XCTAssertEqual("\(error)", "\(fifo): not a regular file (a pipe, socket or device), not a timeline file")
        }
    }

    func testWhatAFileCanMakeTheCLIAllocateIsBounded() throws {
        assertRefused("beyond what coldstart reads: a string longer than 65536 bytes") { section in
            section["marks"] = [["name": String(repeating: "x", count: 70_000), "ns": 1, "tid": 1, "phaseBoundary": false, "extended": false]]
        }
        assertRefused("beyond what coldstart reads: sample 0 has more than 1024 frames") { section in
            section["samples"] = [[1, 4242, Array(repeating: [0, 4096], count: 1025).flatMap { $0 }]]
        }
        assertRefused("beyond what coldstart reads: nested more than 64 levels deep") { section in
            var deep: Any = [Int]()
            for _ in 0..<100 { deep = [deep] }
            section["futureSection"] = deep
        }
        let rows = "[0,1,[]]," + String(repeating: "[0,1,[]],", count: TimelineLimits.maxSamples)
        let huge = #"{"coldstart":{"version":1,"samples":["# + rows.dropLast() + "]}}"
        XCTAssertThrowsError(try Timeline(data: Data(huge.utf8), path: "many.json")) { error in
            XCTAssertEqual("\(error)", "many.json: beyond what coldstart reads: more than 1000000 samples (the recorder writes at most that many)")
        }
        // The size is checked before a byte is read: a sparse file costs nothing.
        let directory = try makeTemporaryDirectory(for: self)
        let big = directory.appendingPathComponent("big.json").path
        XCTAssertTrue(FileManager.default.createFile(atPath: big, contents: nil))
        XCTAssertEqual(truncate(big, off_t(TimelineLimits.maxFileBytes) + 1), 0)
        XCTAssertThrowsError(try Timeline(contentsOf: big)) { error in
            XCTAssertEqual("\(error)", "\(big): too large for a timeline (1073 MB; coldstart reads at most 1073 MB)")
        }
    }

    /// Issue 23 item 3: one string that was not UTF-8 (a Latin-1 thread
    /// name, a mark cut inside a character, a module under a Latin-1
    /// directory, as older recorders wrote them; an unpaired surrogate's
    /// `\u` escape) made the whole file
    /// "not JSON". Now each bad byte reads as U+FFFD, the rest of the file as
    /// it is, and the report says how many bytes were replaced.
    func testStringsThatAreNotUTF8ReadWithEachBadByteReplaced() throws {
        var builder = SampledTimelineBuilder()
        builder.threads = [["tid": 4242, "name": "main"], ["tid": 4243, "name": "cafLATIN1"], ["tid": 4244, "name": "aSURROGATE"]]
        builder.sample(at: 21, [.init(module: builder.module("/opt/binLATIN1/App"), name: "main")])
        var document = builder.document
        var section = document["coldstart"] as! [String: Any]
        section["marks"] = [["name": "config CUT", "ns": 30_000_000, "tid": 4242, "phaseBoundary": false, "extended": false]]
        document["coldstart"] = section
        var bytes = try JSONSerialization.data(withJSONObject: document)
        for (placeholder, raw) in [("LATIN1", [UInt8(0xE9)]), (" CUT", [0x20, 0xC3]), ("SURROGATE", Array(#"\ud800b\ud83d\ude00"#.utf8))] {
            while let range = bytes.range(of: Data(placeholder.utf8)) { bytes.replaceSubrange(range, with: raw) }
        }
        XCTAssertThrowsError(try JSONSerialization.jsonObject(with: bytes), "the bytes are not UTF-8")

        let timeline = try Timeline(data: bytes, path: "latin1.json")
        XCTAssertEqual(timeline.threads.map(\.name), ["main", "caf\u{FFFD}", "a\u{FFFD}b\u{1F600}"])
        XCTAssertEqual(timeline.marks.map(\.name), ["config \u{FFFD}"])
        XCTAssertEqual(timeline.modules.map(\.path), ["/opt/bin\u{FFFD}/App"])
        XCTAssertEqual(timeline.samples.count, 1, "the samples around them read as before")
        XCTAssertEqual(timeline.dropped.notUtf8Bytes, 4)

        let directory = try makeTemporaryDirectory(for: self)
        let path = directory.appendingPathComponent("latin1.json").path
        try bytes.write(to: URL(fileURLWithPath: path))
        let report = try coldstart(["report", path, "--full"], environment: ["COLUMNS": "200"])
        XCTAssertEqual(report.status, 0, report.stderr)
        XCTAssertTrue(report.stdout.contains("config \u{FFFD}"), report.stdout)
        XCTAssertTrue(report.stdout.contains("Not UTF-8: 4 bytes of names or paths, each shown as \u{FFFD}"), report.stdout)
        let json = try coldstart(["report", path, "--json"])
        let launch = try XCTUnwrap((JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])?["launch"] as? [String: Any])
        XCTAssertEqual(launch["notUtf8Bytes"] as? Int, 4)
        // Rewritten (`symbolize`), the file is UTF-8 and keeps the count.
        XCTAssertEqual(try coldstart(["symbolize", path]).status, 0)
        XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))))
        XCTAssertEqual(try Timeline(contentsOf: path).dropped.notUtf8Bytes, 4)
    }

    /// Issue 23 item 7: a sparse ELF file (8 KiB on disk) with extended
    /// section numbering claiming every 64 bytes of 2 GiB as a section
    /// header made `report` take 9 GB for 45 s (libelf, then the symbol
    /// reader, allocated per claimed section); an 8 GiB one aborted.
    func testAHugeSparseModuleFileIsRefusedWithinAStatedMemoryCap() throws {
        let directory = try makeTemporaryDirectory(for: self)
        func sparseELF(_ name: String, gibibytes: UInt64) throws -> String {
            let path = directory.appendingPathComponent(name).path
            var header = [UInt8](repeating: 0, count: 128)
            header.replaceSubrange(0..<6, with: [0x7F, 0x45, 0x4C, 0x46, 2, 1])  // ELF64, little-endian
            header[6] = 1
            header[16] = 3  // ET_DYN
            header[18] = 0x3E  // x86-64
            func put(_ value: UInt64, at offset: Int, bytes: Int) {
                for index in 0..<bytes { header[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(index))) }
            }
            put(64, at: 40, bytes: 8)  // e_shoff: right after the header
            put(64, at: 52, bytes: 2)  // e_ehsize
            put(64, at: 58, bytes: 2)  // e_shentsize; e_shnum 0: the count is section 0's size
            put((gibibytes << 30 - 64) / 64, at: 64 + 32, bytes: 8)
            XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(header)))
            XCTAssertEqual(truncate(path, off_t(gibibytes << 30)), 0)
            return path
        }
        let two = try sparseELF("two.so", gibibytes: 2), eight = try sparseELF("eight.so", gibibytes: 8)
        XCTAssertThrowsError(try ELFImage(path: two, debugDirectory: nil)) { error in
            XCTAssertEqual("\(error)", "\(two): claims 33554431 section headers; coldstart reads at most 1048576")
        }

        var builder = SampledTimelineBuilder()
        builder.symbolized = false
        builder.sample(at: 21, [.init(module: builder.module(two), name: "f"), .init(module: builder.module(eight), name: "g")])
        let timeline = directory.appendingPathComponent("hostile.json").path
        try builder.data().write(to: URL(fileURLWithPath: timeline))
        let started = Date()
        let report = try runMeasuringMemory(try Products.path("coldstart"), ["report", timeline, "--full"], timeout: 60)
        XCTAssertEqual(report.status, 0, report.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(started), 30)
        XCTAssertLessThan(try XCTUnwrap(report.maxResidentMiB, "VmHWM was read while it ran"), 300,
                          "the CLI's own ~50 MiB, no allocation per claimed section")
        XCTAssertTrue(report.stderr.isEmpty, report.stderr)

        let analysis = try LaunchAnalysis(timeline: Timeline(contentsOf: timeline))
        let warnings = analysis.report.profile?.warnings ?? []
        XCTAssertTrue(warnings.contains { $0.hasPrefix("\(two): claims 33554431 section headers; coldstart reads at most 1048576") }, "\(warnings)")
        XCTAssertTrue(warnings.contains { $0.hasPrefix("\(eight): claims 134217727 section headers") }, "\(warnings)")

        // A count the file cannot hold is refused whatever the cap.
        let short = directory.appendingPathComponent("short.so").path
        var bytes = try Data(contentsOf: URL(fileURLWithPath: two)).prefix(128)
        bytes[64 + 32] = 3
        for index in 1..<8 { bytes[64 + 32 + index] = 0 }
        try bytes.write(to: URL(fileURLWithPath: short))
        XCTAssertThrowsError(try ELFImage(path: short, debugDirectory: nil)) { error in
            XCTAssertEqual("\(error)", "\(short): claims 3 section headers; the file holds at most 1")
        }
    }

    /// The typed sections are decoded in one pass over the file; a bad one
    /// is still named by its key, with the path inside it.
    func testABadSectionIsNamedWithThePathInsideIt() throws {
        assertRefused("malformed timeline: bad \"phases\" (wrong type at Index 1.startNs)") { section in
            var phases = section["phases"] as! [[String: Any]]
            phases[1]["startNs"] = "x"
            section["phases"] = phases
        }
        assertRefused("malformed timeline: bad \"phases\" (missing \"name\")") { section in
            var phases = section["phases"] as! [[String: Any]]
            phases[0]["name"] = nil
            section["phases"] = phases
        }
        assertRefused("malformed timeline: missing \"launch\"") { section in section["launch"] = NSNull() }
        assertRefused("malformed timeline: missing \"threads\"") { section in section["threads"] = nil }
        assertRefused("malformed timeline: bad \"threads\" (wrong type)") { section in section["threads"] = [String: Any]() }
        assertRefused("malformed timeline: bad \"sampling\" (wrong type at clock)", set("clock", in: "sampling", to: 1))
        assertRefused("malformed timeline: bad \"modules\" (wrong type at Index 0.path)") { section in
            section["modules"] = [["path": 1]]
        }
        // Optional sections may be null; a whole number written as a float still reads.
        let timeline = try timeline { section in
            section["dropped"] = NSNull()
            var launch = section["launch"] as! [String: Any]
            launch["mainNs"] = Double(launch["mainNs"] as! Int64)
            section["launch"] = launch
        }
        XCTAssertEqual(timeline.dropped.events, 0)
    }
}
