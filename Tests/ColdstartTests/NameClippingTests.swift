@testable import ColdstartAnalysis
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

    func testClosureKeepsTheFunctionItIsIn() {
        let closure = "closure #1 (Swift.Int) -> Swift.Bool in ServiceStartup.buildRoutingTable(count: Swift.Int) -> Swift.Array<Swift.UInt64>"
        XCTAssertEqual(Table.clip(closure, to: 70), "closure #1 (…) -> Swift.Bool in ServiceStartup.buildRoutingTable(…)")
        XCTAssertEqual(Table.clip(closure, to: 30), "…eStartup.buildRoutingTable(…)")
    }

    func testNameWithoutParenthesesIsCutAtItsEnd() {
        XCTAssertEqual(Table.clip("ServiceStartup.someVeryLongGlobalName", to: 20), "ServiceStartup.some…")
    }
}
