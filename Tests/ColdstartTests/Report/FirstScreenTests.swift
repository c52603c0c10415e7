@testable import ColdstartAnalysis
import ColdstartExport
import Foundation
import XCTest

/// What a developer who has never read the docs sees first: the findings of
/// the first screen (40 lines) of `coldstart report` name every cost the
/// test programs are known to have.
final class FirstScreenTests: XCTestCase {
    private static let screen = 40

    private func firstScreen(of timeline: Timeline) throws -> [String] {
        let text = try LaunchAnalysis(timeline: timeline).report.text()
        return Array(text.split(separator: "\n", omittingEmptySubsequences: false).prefix(Self.screen).map(String.init))
    }

    private func assertNamed(_ what: String, in screen: [String], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(screen.contains { $0.contains(what) }, "'\(what)' in the first screen:\n\(screen.joined(separator: "\n"))",
                      file: file, line: line)
    }

    func testKnownCostsAreTheFindings() throws {
        let run = try KnownCostsRun.perf()
        try run.requireUnstarvedTimers()
        // The file `coldstart symbolize` named: the test moves the binaries away.
        let screen = try firstScreen(of: try XCTUnwrap(run.symbolized?.timeline))
        XCTAssertTrue(screen[0].hasPrefix("Launch of KnownCosts"), screen[0])
        XCTAssertTrue(screen.contains("Findings (most time first; % of the launch's wall time):"))
        for function in KnownCostsTests.functions.map(\.0) { assertNamed("slow function KnownCosts.\(function)()", in: screen) }
        assertNamed("slow library initializer libSlowInit.so", in: screen)
        assertNamed("slow lazy global KnownCosts.slowGlobalTable", in: screen)
        let findings = screen.drop { !$0.hasPrefix("Findings") }.prefix { !$0.isEmpty }
        XCTAssertTrue(findings.allSatisfy { $0.count <= 100 }, "the findings fit 100 columns")
        // The largest measured cost leads.
        XCTAssertTrue(screen.first { $0.hasPrefix(" 1. ") }?.contains("burnOneHundredFiftyMilliseconds") == true)
    }

    func testTheExamplesSlowGlobalLeads() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let path = directory.appendingPathComponent("launch.json").path
        let result = try runProcess(try Products.path("ServiceStartup"), environment: ["COLDSTART": path, "COLDSTART_HZ": "2000"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let timeline = try Timeline(contentsOf: path)
        let screen = try firstScreen(of: timeline)
        XCTAssertTrue(screen.first { $0.hasPrefix(" 1. ") }?.contains("slow lazy global ServiceStartup.routingTable") == true,
                      screen.joined(separator: "\n"))
        assertNamed("dynamic loading before any code runs", in: screen)
        assertNamed("-static-stdlib", in: screen)

        // The HTML page opens on the same findings.
        let page = HTMLReport.render(try LaunchAnalysis(timeline: timeline), source: path)
        let findings = try XCTUnwrap(page.range(of: "<section id=\"findings\">"))
        let waterfall = try XCTUnwrap(page.range(of: "<section id=\"waterfall\""))
        XCTAssertLessThan(findings.lowerBound, waterfall.lowerBound)
        XCTAssertTrue(page[findings.upperBound..<waterfall.lowerBound].contains("slow lazy global ServiceStartup.routingTable"))
    }
}

extension FirstScreenTests {
    func testTheDefaultTextIsAFirstLookInOneHundredColumnsAndFullHasTheRest() throws {
        let path = try KnownProfile.timelinePath()
        let coldstart = try Products.path("coldstart")
        let short = try runProcess(coldstart, ["report", path]).stdout
        let full = try runProcess(coldstart, ["report", "--full", path]).stdout
        let shortLines = short.split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssertTrue(shortLines.allSatisfy { $0.count <= 100 }, shortLines.filter { $0.count > 100 }.joined(separator: "\n"))
        XCTAssertLessThan(shortLines.count, 120, "a screen or two")
        XCTAssertTrue(short.contains("Findings (most time first"))
        XCTAssertTrue(short.contains("Top functions by self time"))
        XCTAssertFalse(short.contains("Call tree"))
        XCTAssertTrue(short.contains("More with --full: "))
        XCTAssertTrue(full.contains("Top functions by total time"))
        XCTAssertFalse(full.contains("More with --full"))
    }
}
