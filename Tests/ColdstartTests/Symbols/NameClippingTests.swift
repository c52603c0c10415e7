@testable import ColdstartAnalysis
@testable import ColdstartExport
@testable import ColdstartText
import XCTest

/// Function names clipped to a table column: two different functions must
/// not print the same, and a clipped name must still name something.
final class NameClippingTests: XCTestCase {
    func testSwiftNameLosesArgumentsThenResultThenQualifiers() {
        let name = "ArgumentParser.ParsableCommand.parseAsRoot(Swift.Optional<Swift.Array<Swift.String>>) throws -> ArgumentParser.ParsableCommand"
        XCTAssertEqual(Table.clip(name, to: 100), "ArgumentParser.ParsableCommand.parseAsRoot(…) throws -> ArgumentParser.ParsableCommand")
        XCTAssertEqual(Table.clip(name, to: 52), "ArgumentParser.ParsableCommand.parseAsRoot(…) throws")
        XCTAssertEqual(Table.clip(name, to: 30), "…Command.parseAsRoot(…) throws")
    }

    /// swift-format's profile: libswiftCore's `(anonymous namespace)::ConformanceCandidate`
    /// printed as `(…)`, and the conformance scan's lambda as the very function it is in.
    func testCxxNamesStayDistinct() {
        let candidate = "(anonymous namespace)::ConformanceCandidate::ConformanceCandidate(swift::TargetProtocolConformanceDescriptor<swift::InProcess> const&)"
        XCTAssertEqual(Table.clip(candidate, to: 32), "…didate::ConformanceCandidate(…)")
        XCTAssertEqual(Table.clip(candidate, to: 60), "(…)::ConformanceCandidate::ConformanceCandidate(…)")

        let function = "swift_conformsToProtocolMaybeInstantiateSuperclasses(swift::TargetMetadata<swift::InProcess> const*, swift::TargetProtocolDescriptor<swift::InProcess> const*, bool)"
        let lambda = function + "::$_2::operator()((anonymous namespace)::ConformanceSection const&) const::{lambda(swift::TargetProtocolConformanceDescriptor<swift::InProcess> const&)#1}::operator()(swift::TargetProtocolConformanceDescriptor<swift::InProcess> const&) const"
        for width in [24, 32, 40, 60, 100] {
            XCTAssertNotEqual(Table.clip(function, to: width), Table.clip(lambda, to: width), "width \(width)")
            XCTAssertLessThanOrEqual(Table.clip(lambda, to: width).count, width)
            XCTAssertLessThanOrEqual(Table.clip(function, to: width).count, width)
        }
        XCTAssertEqual(Table.clip(function, to: 60), "swift_conformsToProtocolMaybeInstantiateSuperclasses(…)")
    }

    /// Two overloads clipped to the same text read as one function twice
    /// (`…MaybeInstantiateSuperclasses(…` on two rows of one report).
    func testTwoFunctionsClippedAlikeAreNumberedInATable() {
        let one = "swift_conformsToProtocolMaybeInstantiateSuperclasses(swift::TargetMetadata<swift::InProcess> const*, bool)"
        let two = "swift_conformsToProtocolMaybeInstantiateSuperclasses(swift::TargetMetadata<swift::InProcess> const*, int)"
        XCTAssertEqual(Table.clip(one, to: 40), Table.clip(two, to: 40), "the bare clip cannot tell them apart")
        var table = Table(columns: [.init("ms", .right), .init("function", .left)])
        for (ms, name) in [("3.0", one), ("2.0", two), ("1.0", one), ("0.5", "main")] { table.add([ms, name]) }
        let lines = table.render(width: 2 + 3 + 2 + 40)
        let names = lines.dropFirst().map { String($0.dropFirst(7)).trimmingCharacters(in: .whitespaces) }
        XCTAssertEqual(names[0], names[2], "the same function reads the same: \(names)")
        XCTAssertNotEqual(names[0], names[1], "\(names)")
        XCTAssertTrue(names[0].hasSuffix(" #1") && names[1].hasSuffix(" #2"), "\(names)")
        XCTAssertEqual(names[3], "main")
        XCTAssertTrue(lines.allSatisfy { $0.count <= 47 }, "\(lines)")
    }

    /// The page clipped names too (the browser's ellipsis, at the end):
    /// two overloads read as one function on two rows. Its function cells
    /// are clipped as the text's columns are, alike names numbered.
    func testTwoFunctionsClippedAlikeReadApartOnThePage() throws {
        let one = "swift_conformsToProtocolMaybeInstantiateSuperclasses(swift::TargetMetadata<swift::InProcess> const*, bool)"
        let two = "swift_conformsToProtocolMaybeInstantiateSuperclasses(swift::TargetMetadata<swift::InProcess> const*, int)"
        var builder = SampledTimelineBuilder()
        let app = builder.module("/opt/app/App")
        let core = builder.module("/usr/lib/swift/linux/libswiftCore.so")
        let main = SampledTimelineBuilder.Frame(module: app, name: "App_main")
        for index in 0..<30 { builder.sample(at: 20 + Double(index) * 0.5, [main, .init(module: core, name: one)]) }
        for index in 0..<20 { builder.sample(at: 40 + Double(index) * 0.5, [main, .init(module: core, name: two)]) }
        let html = HTMLReport.render(try LaunchAnalysis(timeline: try builder.timeline(), path: "f.json"), source: "f.json")
        let tables = HTMLReportTests.functionCells(html)
        let functions = try XCTUnwrap(tables.first)
        let shown = try [one, two].map { name in try XCTUnwrap(functions.first { $0.whole == name }, "\(functions.map(\.whole))").shown }
        XCTAssertNotEqual(shown[0], shown[1])
        XCTAssertTrue(shown[0].hasSuffix(" #1") && shown[1].hasSuffix(" #2"), "\(shown)")
        for cells in tables {
            XCTAssertEqual(Set(cells.map(\.shown)).count, cells.count, "rows that read the same: \(cells.map(\.shown))")
            XCTAssertTrue(cells.allSatisfy { $0.shown.count <= HTMLTable.nameWidth }, "\(cells.map(\.shown))")
        }
        // Shown whole: the page itself never clips a function's cell.
        XCTAssertFalse(HTMLAssets.style.contains("td.fn { max-width") || HTMLAssets.style.contains("ellipsis"))
    }

    func testClosureKeepsTheFunctionItIsIn() {
        let closure = "closure #1 (Swift.Int) -> Swift.Bool in ServiceStartup.buildRoutingTable(count: Swift.Int) -> Swift.Array<Swift.UInt64>"
        XCTAssertEqual(Table.clip(closure, to: 70), "closure #1 (…) -> Swift.Bool in ServiceStartup.buildRoutingTable(…)")
        XCTAssertEqual(Table.clip(closure, to: 30), "…eStartup.buildRoutingTable(…)")
    }

    /// libswiftCore's conformance-scan lambda reads as the scan (the runtime
    /// kinds' table classifies the function it is in), innermost first.
    func testTheConformanceScansLambdaHasAHumanName() {
        let function = "swift_conformsToProtocolMaybeInstantiateSuperclasses(swift::TargetMetadata<swift::InProcess> const*, swift::TargetProtocolDescriptor<swift::InProcess> const*, bool)"
        let closure = function + "::$_2::operator()((anonymous namespace)::ConformanceSection const&) const"
        let lambda = closure + "::{lambda(swift::TargetProtocolConformanceDescriptor<swift::InProcess> const&)#1}::operator()(swift::TargetProtocolConformanceDescriptor<swift::InProcess> const&) const"
        XCTAssertEqual(RuntimeCostClassifier.displayName(lambda), "conformance scan: lambda #1 in $_2 in swift_conformsToProtocolMaybeInstantiateSuperclasses")
        XCTAssertEqual(RuntimeCostClassifier.displayName(closure), "conformance scan: $_2 in swift_conformsToProtocolMaybeInstantiateSuperclasses")
        XCTAssertEqual(RuntimeCostClassifier.displayName(function), function, "not a lambda: as it is")
        XCTAssertEqual(RuntimeCostClassifier.displayName("ns::f(int)::{lambda(int)#2}::operator()(int) const"), "lambda #2 in ns::f",
                       "outside every kind: no kind")
        XCTAssertTrue(LaunchReport.functionName(lambda, limit: 30).hasPrefix("conformance scan: lambda #1"), LaunchReport.functionName(lambda, limit: 30))
    }

    /// swift-format under `coldstart run`: its #1 function by self time is the
    /// conformance scan's lambda, which the report names as the scan, and no
    /// two rows of a function table read the same, in a file (the names were
    /// cut at 110 characters, which made the lambda and the function it is in
    /// one text) or on the first screen.
    func testSwiftFormatsFunctionRowsAreDistinctAndTheScanIsNamed() throws {
        let tool = try DocumentationTests.tool("swift-format")
        let directory = try makeTemporaryDirectory(for: self)
        let input = directory.appendingPathComponent("input.swift")
        try "let x = 1\n".write(to: input, atomically: true, encoding: .utf8)
        let out = directory.appendingPathComponent("runs").path
        let run = try coldstart(["run", "-n", "1", "--warmup", "0", "--out", out, "--", tool, "format", input.path])
        XCTAssertEqual(run.status, 0, run.stderr)
        let full = try coldstart(["report", "--full", "\(out)/run-1.json"])
        let first = try coldstart(["report", "\(out)/run-1.json"])
        XCTAssertEqual(full.status, 0, full.stderr)
        for text in [full.stdout, first.stdout] {
            // No lambda's call operator under its raw name. A lambda in a
            // template's arguments (`…<…{lambda(…)#1}>(…)`, a metadata
            // cache's) is another function and keeps its clipped name.
            XCTAssertNil(text.firstMatch(of: #/\{lambda\([^}]*\)#\d+\}::operator\(\)/#), text)
            // The human name, whole or clipped by the width its table gives
            // it (a run at load 5.9 left the first screen "…lambda #1…").
            XCTAssertNotNil(text.firstMatch(of: #/conformance scan: lambda #1( in|…)/#), text)
        }
        // Each function table of the full text, by its header's columns.
        let lines = full.stdout.components(separatedBy: "\n")
        var tables = 0
        for (index, line) in lines.enumerated() where line.contains("  function") && line.contains("  module") {
            let header = Array(line)
            guard let start = line.range(of: "function")?.lowerBound, let end = line.range(of: "module")?.lowerBound else { continue }
            let (from, to) = (line.distance(from: line.startIndex, to: start), line.distance(from: line.startIndex, to: end))
            let rows = lines[(index + 1)...].prefix { !$0.isEmpty && $0.count > from }.map { row in
                String(Array(row)[from..<min(to, row.count)]).trimmingCharacters(in: .whitespaces)
            }
            XCTAssertEqual(Set(rows).count, rows.count, "rows that read the same under \(String(header)): \(rows)")
            tables += 1
        }
        XCTAssertGreaterThanOrEqual(tables, 2, "the function tables were found")
        // Before main's lists of functions: counted by whole name (two cut
        // to one text were counted as one), clipped apart in the text.
        let json = try coldstart(["report", "--json", "\(out)/run-1.json"])
        let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let beforeMain = try XCTUnwrap(report["beforeMain"] as? [String: Any])
        let code = (beforeMain["phaseFaults"] as? [[String: Any]] ?? []).flatMap { $0["code"] as? [[String: Any]] ?? [] }
            + (beforeMain["loaderFunctions"] as? [[String: Any]] ?? [])
        let names = code.compactMap { $0["name"] as? String }
        XCTAssertFalse(names.isEmpty)
        XCTAssertFalse(names.contains { $0.hasSuffix("…") }, "whole names: \(names)")
        for line in lines where line.contains("; code ") {
            let entries = line.components(separatedBy: "; code ")[1].components(separatedBy: " · ").map { $0.split(separator: " ").dropLast().joined(separator: " ") }
            XCTAssertEqual(Set(entries).count, entries.count, line)
        }
    }

    /// Two findings of two overloads read apart on the first screen: their
    /// titles, cut to the line, were one text.
    func testTwoFindingsWhoseTitlesClipAlikeAreNumbered() {
        let stem = "slow function ArgumentParser.CommandParser.parseCurrentArgumentsAndSubcommands(inout ArgumentParser.SplitArguments, "
        let findings = ["first: Int)", "second: Int)"].map {
            Finding(kind: .slowFunction, title: stem + $0, ms: 2, percent: 5, location: "module App", certainty: .samples(20), advice: "make it cheaper")
        }
        let titles = Finding.lines(findings, width: 100).filter { $0.hasPrefix(" 1. ") || $0.hasPrefix(" 2. ") }
            .map { String($0.dropFirst(4)) }
        XCTAssertEqual(titles.count, 2)
        XCTAssertNotEqual(titles[0], titles[1], "\(titles)")
        XCTAssertTrue(titles[0].contains(" #1") && titles[1].contains(" #2"), "\(titles)")
        XCTAssertTrue(Finding.lines(findings, width: 100).allSatisfy { $0.count <= 100 })
    }

    /// A column's limit clips its cells in a file too (no width), alike
    /// cells numbered: the lazy globals' and functions' names, which were
    /// cut at 80 and 110 characters before the table saw them.
    func testAColumnLimitClipsWithoutAWidthAndKeepsCellsApart() {
        let stem = String(repeating: "Module.Namespace.", count: 6)
        var table = Table(columns: [.init("ms", .right), .init("global", .left, limit: 80)])
        table.add(["1.0", stem + "tableOfRoutes"])
        table.add(["0.5", stem + "tableOfRoles"])
        let cells = table.render().dropFirst().map { String($0.dropFirst(7)) }
        XCTAssertNotEqual(cells[0], cells[1], "\(cells)")
        XCTAssertTrue(cells.allSatisfy { $0.count <= 80 }, "\(cells)")
    }

    func testNameWithoutParenthesesIsCutAtItsEnd() {
        XCTAssertEqual(Table.clip("ServiceStartup.someVeryLongGlobalName", to: 20), "ServiceStartup.some…")
    }
}
