import CColdstart
@testable import ColdstartAnalysis
import Foundation
import XCTest

/// One table of wait causes: the capture layer's (names by the number the
/// watcher records), the reader's `Timeline.Cause` and the format's list in
/// docs/timeline-format.md are the same causes, in the same order.
final class WaitCauseTests: XCTestCase {
    /// The C table, by number, up to its first gap.
    private var captureNames: [String] {
        var names: [String] = []
        while let name = cs_watch_cause_name(Int32(names.count)) { names.append(String(cString: name)) }
        return names
    }

    func testTheReaderKnowsTheCaptureLayersCausesByNameAndNumber() {
        let names = captureNames
        XCTAssertEqual(names.count, 14, "every cause has a name, and a 15th is a change to this test's figure")
        XCTAssertNil(cs_watch_cause_name(Int32(names.count) + 1))
        XCTAssertNil(cs_watch_cause_name(-1))
        XCTAssertEqual(Timeline.Cause.known.map(\.name), names, "Timeline.Cause.known[n] is the capture layer's cause n")
        for (number, name) in names.enumerated() {
            XCTAssertEqual(Timeline.Cause(name: name), Timeline.Cause.known[number], name)
        }
    }

    func testTheFormatListsTheSameCausesInTheSameOrder() throws {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/timeline-format.md"), encoding: .utf8)
        let lines = text.components(separatedBy: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let header = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("| cause |") }, "the causes' table")
        let rows = lines[(header + 2)...].prefix { $0.hasPrefix("|") }
        let listed = rows.compactMap { row -> String? in
            let cell = row.split(separator: "|").first?.trimmingCharacters(in: .whitespaces) ?? ""
            return cell.hasPrefix("`") && cell.hasSuffix("`") ? String(cell.dropFirst().dropLast()) : nil
        }
        XCTAssertEqual(listed.count, rows.count, "each row names one cause in backticks")
        XCTAssertEqual(listed, captureNames)
    }

    func testACauseThisReaderDoesNotKnowIsUnknownWithItsName() {
        XCTAssertEqual(Timeline.Cause(name: "gpu-wait"), .unknown("gpu-wait"), "not taken for `other`")
        XCTAssertEqual(Timeline.Cause(name: "gpu-wait").name, "gpu-wait")
        XCTAssertEqual(Timeline.Cause(name: "other"), .other)
    }
}
