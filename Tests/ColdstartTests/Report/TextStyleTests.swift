@testable import ColdstartAnalysis
@testable import ColdstartText
import Foundation
import XCTest

/// The text report in a terminal: it fits the width, it is coloured only on
/// a terminal and never with NO_COLOR, and --thread takes a name.
final class TextStyleTests: XCTestCase {
    private func knownReport() throws -> LaunchReport {
        let timeline = try Timeline(contentsOf: try KnownProfile.timelinePath())
        return try LaunchAnalysis(timeline: timeline, path: "known.json").report
    }

    /// The rows of the table under the first line starting with `title`.
    private func table(_ text: String, after title: String) -> [String] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let start = lines.firstIndex(where: { $0.hasPrefix(title) }) else { return [] }
        return Array(lines[(start + 1)...].prefix { !$0.isEmpty })
    }

    func testTablesFitTheTerminalWidth() throws {
        let report = try knownReport()
        let wide = report.text()
        XCTAssertTrue(wide.contains("ColdstartTests.knownProfileHashIndex() -> Array<UInt64>"), "no width: whole names")
        for width in [100, 120, 160] {
            let text = report.text(style: TextStyle(width: width))
            for title in ["Phases", "Top functions by self time", "Top functions by total time", "Threads", "Call tree"] {
                let rows = table(text, after: title)
                XCTAssertFalse(rows.isEmpty, "\(title) at \(width)")
                for row in rows { XCTAssertLessThanOrEqual(row.count, width, "\(title) at \(width) columns: \(row)") }
            }
            // Clipped names lose the argument list and qualifiers first, never the function's own name.
            let top = try XCTUnwrap(table(text, after: "Top functions by self time").dropFirst().first)
            XCTAssertTrue(top.contains("knownProfileHashIndex("), top)
            XCTAssertFalse(text.contains("\u{1B}["), "no colour unless asked")
            // The sentences too (the phase table's legend was one 260-column line).
            for line in text.split(separator: "\n") { XCTAssertLessThanOrEqual(line.count, width, String(line)) }
        }
        let narrow = report.text(style: TextStyle(width: 100))
        let bars = table(narrow, after: "Phases").filter { $0.contains("|") }
        XCTAssertEqual(bars.count, 4, "a bar per phase")
        XCTAssertTrue(bars.allSatisfy { !$0.contains("…") }, "the waterfall is never clipped")
    }

    func testColourMarksTitlesBarsAndTheVerdictOnly() throws {
        let report = try knownReport()
        let plain = report.text(style: TextStyle(width: 140))
        let colored = report.text(style: TextStyle(width: 140, color: true))
        XCTAssertTrue(colored.contains("\u{1B}[1mPhases"), "titles bold")
        XCTAssertTrue(colored.contains("\u{1B}[36m█"), "bars coloured")
        XCTAssertTrue(colored.contains("Launch: \u{1B}[32mcompleted"), "the verdict green")
        let stripped = colored.replacingOccurrences(of: "\u{1B}\\[[0-9;]*m", with: "", options: .regularExpression)
        XCTAssertEqual(stripped, plain, "colour changes no character of the layout")
    }

    /// Runs `coldstart report` on a pseudo-terminal (util-linux `script`).
    private func onTerminal(_ arguments: [String], environment: [String: String?]) throws -> String {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else {
            throw XCTSkip("util-linux `script` is not installed: no pseudo-terminal to test on")
        }
        let command = ([try Products.path("coldstart")] + arguments).map { "'\($0)'" }.joined(separator: " ")
        let result = try runProcess("/usr/bin/script", ["-qec", command, "/dev/null"], environment: environment)
        XCTAssertEqual(result.status, 0, result.stderr)
        return result.stdout
    }

    func testCLIColoursOnlyATerminalWithoutNoColor() throws {
        let path = try KnownProfile.timelinePath()
        let terminal = try onTerminal(["report", path], environment: ["COLUMNS": "120", "NO_COLOR": nil, "TERM": "xterm"])
        XCTAssertTrue(terminal.contains("\u{1B}[1m"), "a terminal gets colour")
        let noColor = try onTerminal(["report", path], environment: ["COLUMNS": "120", "NO_COLOR": "1", "TERM": "xterm"])
        XCTAssertFalse(noColor.contains("\u{1B}["), "NO_COLOR is honoured")
        let piped = try coldstart(["report", "--full", path], environment: ["TERM": "xterm", "NO_COLOR": nil])
        XCTAssertFalse(piped.stdout.contains("\u{1B}["), "a pipe gets no colour")
        XCTAssertTrue(piped.stdout.contains("ColdstartTests.knownProfileHashIndex() -> Array<UInt64>"), "a pipe gets whole names")
        let narrow = try coldstart(["report", path], environment: ["COLUMNS": "100"])
        for row in table(narrow.stdout, after: "Top functions by self time") {
            XCTAssertLessThanOrEqual(row.count, 100, "COLUMNS is honoured: \(row)")
        }
    }

    func testThreadIsChosenByNameOrID() throws {
        let path = try KnownProfile.timelinePath()
        let worker = Int(getpid()) + 1
        for selector in ["worker", String(worker)] {
            let result = try coldstart(["report", path, "--json", "--thread", selector])
            XCTAssertEqual(result.status, 0, result.stderr)
            let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            let selection = (json?["profile"] as? [String: Any])?["selection"] as? [String: Any]
            XCTAssertEqual(selection?["thread"] as? Int, worker, selector)
            XCTAssertEqual(selection?["samples"] as? Int, KnownProfile.workerSamples, selector)
        }
        let main = try coldstart(["report", path, "--thread", "main", "--phase", "config loaded → ready"])
        XCTAssertEqual(main.status, 0, main.stderr)
        XCTAssertTrue(main.stdout.contains("selected: phase 'config loaded → ready', thread \(getpid())"), main.stdout)
        let unknown = try coldstart(["report", path, "--thread", "renderer"])
        XCTAssertEqual(unknown.status, 1)
        XCTAssertEqual(unknown.stderr, "coldstart report: \(path): no sampled thread named 'renderer' "
            + "(sampled threads: 'main' (\(getpid())), 'worker' (\(worker)))\n")
    }
}
