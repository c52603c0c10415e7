@testable import ColdstartAnalysis
import XCTest

final class LazyGlobalNameTests: XCTestCase {
    /// One-time initialization functions from swift-format's symbol table
    /// (Swift 6.3): four statics named `configuration`, of four types.
    func testGlobalsOfTheSameNameInDifferentTypesStayApart() throws {
        let names = [
            "$s12swift_format18SwiftFormatCommandV13configuration_WZ",
            "$s12swift_format18SwiftFormatCommandV6FormatV13configuration_WZ",
            "$s12swift_format18SwiftFormatCommandV4LintV13configuration_WZ",
            "$s14ArgumentParser11HelpCommandV13configuration_WZ",
        ].map { LazyGlobalName(linkageName: $0) }
        XCTAssertEqual(names.map { $0.map { "\($0.module): \($0.name)" } }, [
            "swift_format: SwiftFormatCommand.configuration",
            "swift_format: SwiftFormatCommand.Format.configuration",
            "swift_format: SwiftFormatCommand.Lint.configuration",
            "ArgumentParser: HelpCommand.configuration",
        ])
    }

    func testTopLevelPrivateAndUntakeableNames() {
        XCTAssertEqual(LazyGlobalName(linkageName: "$s11SwiftFormat13ruleNameCache_WZ"),
                       LazyGlobalName(module: "SwiftFormat", name: "ruleNameCache"))
        XCTAssertEqual(LazyGlobalName(linkageName: "$s14ServiceStartup12routingTable_WZ"),
                       LazyGlobalName(module: "ServiceStartup", name: "routingTable"))
        // A private type's discriminator is dropped from the type's name.
        XCTAssertEqual(
            LazyGlobalName(linkageName: "$s11SwiftFormat27RuleStatusCollectionVisitor33_394CCCA886A18C25F04A357882180873LLC11ignoreRegex_WZ"),
            LazyGlobalName(module: "SwiftFormat", name: "RuleStatusCollectionVisitor.ignoreRegex"))
        // A word substitution in the name: the demangler's bare name.
        XCTAssertEqual(LazyGlobalName(linkageName: "$s14SwiftOperators13OperatorTableV08standardB0_WZ"),
                       LazyGlobalName(module: "SwiftOperators", name: "standardOperators"))
        XCTAssertNil(LazyGlobalName(linkageName: "$s14ServiceStartup12routingTable_Wz"), "the token, not the function")
        XCTAssertNil(LazyGlobalName(linkageName: "routingTable_WZ"))
    }
}
