import Foundation
import XCTest

/// Every code block of README.md and docs/*.md is checked, so that the docs
/// cannot rot (the convention is in README.md, "Code in these docs"):
///
/// - ```swift: type-checked against the Coldstart library as a main.swift;
///   a block that imports PackageDescription is a Package.swift, loaded by
///   `swift package dump-package`.
/// - ```sh: `bash -n`; ```sh run: also run, with `coldstart` on PATH.
/// - ```swift skip / ```sh skip: a fragment not meant to compile alone.
/// - Other blocks (output, JSON) are text.
final class DocumentationTests: XCTestCase {
    struct Block {
        var file: String
        var line: Int
        var language: String
        var mode: String?
        var code: String
        var place: String { "\(file):\(line)" }
    }

    static func documents() throws -> [URL] {
        let docs = repositoryRoot.appendingPathComponent("docs")
        let names = try FileManager.default.contentsOfDirectory(atPath: docs.path).filter { $0.hasSuffix(".md") }.sorted()
        return [repositoryRoot.appendingPathComponent("README.md")] + names.map { docs.appendingPathComponent($0) }
    }

    /// The fenced blocks of a Markdown text, with their info strings.
    static func blocks(in text: String, file: String) -> [Block] {
        var blocks: [Block] = []
        var current: Block?
        for (index, line) in text.components(separatedBy: "\n").enumerated() {
            if var block = current {
                if line.trimmingCharacters(in: .whitespaces) == "```" {
                    blocks.append(block)
                    current = nil
                } else {
                    block.code += line + "\n"
                    current = block
                }
            } else if line.hasPrefix("```") {
                let info = line.dropFirst(3).split(separator: " ").map(String.init)
                current = Block(file: file, line: index + 1, language: info.first ?? "", mode: info.dropFirst().first, code: "")
            }
        }
        return blocks
    }

    private func allBlocks() throws -> [Block] {
        try Self.documents().flatMap { url in
            Self.blocks(in: try String(contentsOf: url, encoding: .utf8), file: url.path.replacingOccurrences(of: repositoryRoot.path + "/", with: ""))
        }
    }

    func testExtractsBlocksWithTheirMode() {
        let text = "a\n```swift\nlet x = 1\n```\n```sh run\necho hi\n```\n```\nplain\n```\n"
        let blocks = Self.blocks(in: text, file: "t.md")
        XCTAssertEqual(blocks.map(\.language), ["swift", "sh", ""])
        XCTAssertEqual(blocks.map(\.mode), [nil, "run", nil])
        XCTAssertEqual(blocks.map(\.line), [2, 5, 8])
        XCTAssertEqual(blocks[0].code, "let x = 1\n")
    }

    func testEveryModeIsKnown() throws {
        for block in try allBlocks() where ["swift", "sh"].contains(block.language) {
            XCTAssertTrue([nil, "skip", "run"].contains(block.mode) && !(block.language == "swift" && block.mode == "run"),
                          "\(block.place): unknown mode '\(block.mode ?? "")' for \(block.language)")
        }
    }

    func testSwiftBlocksTypeCheckAgainstColdstart() throws {
        let blocks = try allBlocks().filter { $0.language == "swift" && $0.mode == nil }
        XCTAssertFalse(blocks.isEmpty, "README.md has Swift code")
        let scratch = try makeTemporaryDirectory(for: self)
        let products = Products.directory
        // The C modules Coldstart's interface imports, as SwiftPM built them.
        let moduleMaps = try FileManager.default.contentsOfDirectory(atPath: products.path)
            .filter { $0.hasSuffix(".build") }
            .map { products.appendingPathComponent($0).appendingPathComponent("module.modulemap").path }
            .filter { FileManager.default.fileExists(atPath: $0) }
        let swiftc = try Self.tool("swiftc")
        for (index, block) in blocks.enumerated() {
            if block.code.contains("import PackageDescription") {
                let package = scratch.appendingPathComponent("package-\(index)")
                try FileManager.default.createDirectory(at: package, withIntermediateDirectories: true)
                try Data(block.code.utf8).write(to: package.appendingPathComponent("Package.swift"))
                let dump = try runProcess(try Self.tool("swift"), ["package", "dump-package"], currentDirectory: package.path)
                XCTAssertEqual(dump.status, 0, "\(block.place): not a valid Package.swift:\n\(dump.stderr)")
                continue
            }
            let file = scratch.appendingPathComponent("block-\(index)").appendingPathComponent("main.swift")
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(block.code.utf8).write(to: file)
            let check = try runProcess(swiftc, ["-typecheck", "-I", products.appendingPathComponent("Modules").path]
                + moduleMaps.flatMap { ["-Xcc", "-fmodule-map-file=\($0)"] } + [file.path])
            XCTAssertEqual(check.status, 0, "\(block.place): does not compile:\n\(check.stderr)")
        }
    }

    func testShellBlocksParseAndTheRunnableOnesRun() throws {
        let blocks = try allBlocks().filter { $0.language == "sh" && $0.mode != "skip" }
        XCTAssertFalse(blocks.isEmpty)
        let scratch = try makeTemporaryDirectory(for: self)
        for (index, block) in blocks.enumerated() {
            let file = scratch.appendingPathComponent("block-\(index).sh")
            try Data(block.code.utf8).write(to: file)
            let syntax = try runProcess("/bin/bash", ["-n", file.path])
            XCTAssertEqual(syntax.status, 0, "\(block.place): \(syntax.stderr)")
            guard block.mode == "run" else { continue }
            let path = Products.directory.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
            let run = try runProcess("/bin/bash", ["-euo", "pipefail", file.path], environment: ["PATH": path], currentDirectory: scratch.path)
            XCTAssertEqual(run.status, 0, "\(block.place) failed:\n\(run.stdout)\(run.stderr)")
        }
    }

    /// No build machine's paths in the docs: examples use placeholders.
    func testDocsShowNoMachinePaths() throws {
        for url in try Self.documents() {
            let text = try String(contentsOf: url, encoding: .utf8)
            for machinePath in ["/work/"] {
                XCTAssertFalse(text.contains(machinePath), "\(url.lastPathComponent) shows a machine path (\(machinePath))")
            }
        }
    }

    /// A toolchain program: next to the running swift, or on PATH.
    static func tool(_ name: String) throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"
        for directory in path.split(separator: ":") where FileManager.default.isExecutableFile(atPath: "\(directory)/\(name)") {
            return "\(directory)/\(name)"
        }
        throw XCTSkip("\(name) is not on PATH")
    }
}
