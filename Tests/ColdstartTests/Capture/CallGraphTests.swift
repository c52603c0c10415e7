import Foundation
import XCTest

/// The capture layer's C files call each other only as docs/ARCHITECTURE.md's
/// list of allowed calls says, and never in a cycle: read from the symbols of
/// the objects `swift build` made (`nm`: a symbol one object leaves undefined
/// and another defines is a call from the first file to the second).
final class CallGraphTests: XCTestCase {
    /// The one struct every file reads (internal.h): state, not a call.
    static let sharedState: Set<String> = ["cs_g"]

    /// The list: `a → b, c` lines in the ```calls block; `* → x, y` lets
    /// every other file call the leaves x and y, which call none of ours.
    struct Allowed: Equatable {
        var calls: [String: Set<String>] = [:]
        var everyFileMayCall: Set<String> = []
        var files: Set<String> { Set(calls.keys).union(calls.values.joined()).union(everyFileMayCall) }

        func allows(_ caller: String, _ callee: String) -> Bool {
            (everyFileMayCall.contains(callee) && !everyFileMayCall.contains(caller)) || calls[caller, default: []].contains(callee)
        }
    }

    /// A call from one file to another, with the symbols it goes through.
    struct Edge: Hashable { var from: String, to: String }

    static func parseAllowed(_ markdown: String) throws -> Allowed {
        var allowed = Allowed(), inBlock = false, found = false
        for raw in markdown.components(separatedBy: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if !inBlock {
                if line == "```calls" { inBlock = true; found = true }
                continue
            }
            if line == "```" { inBlock = false; continue }
            let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            if content.trimmingCharacters(in: .whitespaces).isEmpty { continue }
            let sides = content.components(separatedBy: "→")
            guard sides.count == 2 else { throw ListError("not `file → file, file`: \(line)") }
            let callers = names(sides[0]), callees = names(sides[1])
            guard !callers.isEmpty else { throw ListError("no caller: \(line)") }
            for caller in callers {
                if caller == "*" { allowed.everyFileMayCall.formUnion(callees) } else { allowed.calls[caller, default: []].formUnion(callees) }
            }
        }
        guard found else { throw ListError("no ```calls block") }
        return allowed
    }

    private static func names(_ side: String) -> [String] {
        side.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    struct ListError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// File-to-file calls from `nm -P -A` output over the objects; `file(of:)`
    /// names an object's file.
    static func edges(nmOutput: String, file: (String) -> String) -> [Edge: Set<String>] {
        var defined: [String: String] = [:], undefined: [(String, String)] = []
        for line in nmOutput.split(separator: "\n") {
            // "<object>: <name> <type> [<value> <size>]"
            guard let colon = line.range(of: ": ") else { continue }
            let fields = line[colon.upperBound...].split(separator: " ")
            guard fields.count >= 2 else { continue }
            let object = file(String(line[..<colon.lowerBound])), name = String(fields[0]), type = fields[1]
            if type == "U" { undefined.append((object, name)) } else if type.first?.isUppercase == true { defined[name] = object }
        }
        var edges: [Edge: Set<String>] = [:]
        for (object, name) in undefined where !sharedState.contains(name) {
            guard let owner = defined[name], owner != object else { continue }
            edges[Edge(from: object, to: owner), default: []].insert(name)
        }
        return edges
    }

    /// A cycle of `graph` as its files in order (the first repeated at the end), or nil.
    static func cycle(in graph: [String: Set<String>]) -> [String]? {
        var state: [String: Int] = [:], path: [String] = []   // 1 on the path, 2 done
        func visit(_ node: String) -> [String]? {
            state[node] = 1
            path.append(node)
            for next in graph[node, default: []].sorted() {
                if state[next] == 1 { return Array(path[path.firstIndex(of: next)!...]) + [next] }
                if state[next] == nil, let found = visit(next) { return found }
            }
            path.removeLast()
            state[node] = 2
            return nil
        }
        for node in graph.keys.sorted() where state[node] == nil {
            if let found = visit(node) { return found }
        }
        return nil
    }

    /// What is wrong with the built calls against the list: one line each.
    static func violations(edges: [Edge: Set<String>], built: Set<String>, allowed: Allowed) -> [String] {
        var problems: [String] = []
        var allowedGraph = allowed.calls
        for file in allowed.files.subtracting(allowed.everyFileMayCall) { allowedGraph[file, default: []].formUnion(allowed.everyFileMayCall) }
        if let loop = cycle(in: allowedGraph) { problems.append("the list allows a cycle: \(loop.joined(separator: " → "))") }
        for file in built.subtracting(allowed.files).sorted() { problems.append("\(file).c is not in the list") }
        for file in allowed.files.subtracting(built).sorted() { problems.append("the list names \(file), which is not a built C file") }
        for (edge, symbols) in edges.sorted(by: { ($0.key.from, $0.key.to) < ($1.key.from, $1.key.to) }) where !allowed.allows(edge.from, edge.to) {
            problems.append("\(edge.from).c calls \(edge.to).c (\(symbols.sorted().joined(separator: ", "))), which the list does not allow")
        }
        var builtGraph: [String: Set<String>] = [:]
        for edge in edges.keys { builtGraph[edge.from, default: []].insert(edge.to) }
        if let loop = cycle(in: builtGraph) { problems.append("the files call in a cycle: \(loop.joined(separator: " → "))") }
        for (caller, callees) in allowed.calls.sorted(by: { $0.key < $1.key }) {
            for callee in callees.sorted() where edges[Edge(from: caller, to: callee)] == nil && !allowed.everyFileMayCall.contains(callee) {
                problems.append("the list allows \(caller) → \(callee), but \(caller).c calls nothing of \(callee).c: take it out")
            }
        }
        return problems
    }

    // MARK: - The checks

    func testTheCaptureLayerCallsOnlyAsTheArchitectureAllows() throws {
        let sources = repositoryRoot.appendingPathComponent("CSupport/CColdstart")
        let objects = Products.objects(of: "CColdstart", sources: sources)
        let built = Set(objects.map(Self.fileName))
        let cFiles = try FileManager.default.subpathsOfDirectory(atPath: sources.path).filter { $0.hasSuffix(".c") }
        XCTAssertEqual(built, Set(cFiles.map(Self.fileName)),
                       "every C file's object, in \(Products.directory.path)/CColdstart.build: run `swift build` first (make test does)")
        XCTAssertEqual(built.count, cFiles.count, "no two C files of one name")
        let nm = try runProcess("/usr/bin/env", ["nm", "-P", "-A"] + objects)
        XCTAssertEqual(nm.status, 0, nm.stderr)
        let edges = Self.edges(nmOutput: nm.stdout, file: Self.fileName)
        XCTAssertGreaterThan(edges.count, 20, "nm found the calls")
        let allowed = try Self.parseAllowed(String(contentsOf: repositoryRoot.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8))
        let problems = Self.violations(edges: edges, built: built, allowed: allowed)
        XCTAssertEqual(problems, [], "docs/ARCHITECTURE.md, \"Allowed calls\":\n" + problems.joined(separator: "\n"))
    }

    /// The C files of the `| folder | file | job |` table, as "folder/file.c"
    /// ("file.c" for the top folder, `.`); an empty folder cell is the row above's.
    static func tabledFiles(_ markdown: String) throws -> [String] {
        let lines = markdown.components(separatedBy: "\n")
        guard let header = lines.firstIndex(where: { $0.hasPrefix("| folder | file |") }) else { throw ListError("no `| folder | file | job |` table") }
        var files: [String] = [], folder = ""
        for row in lines[(header + 2)...].prefix(while: { $0.hasPrefix("|") }) {
            let cells = row.split(separator: "|", omittingEmptySubsequences: false).dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2 else { throw ListError("not a row of three cells: \(row)") }
            if !cells[0].isEmpty { folder = cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`")) }
            let file = cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            files.append(folder == "." ? file : folder + file)
        }
        return files
    }

    func testTheArchitectureNamesEveryCFileInItsFolder() throws {
        let sources = repositoryRoot.appendingPathComponent("CSupport/CColdstart")
        let onDisk = try FileManager.default.subpathsOfDirectory(atPath: sources.path).filter { $0.hasSuffix(".c") }.sorted()
        let tabled = try Self.tabledFiles(String(contentsOf: repositoryRoot.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8))
        XCTAssertEqual(tabled.sorted(), onDisk, "docs/ARCHITECTURE.md's table of files by folder")
        XCTAssertEqual(Set(tabled).count, tabled.count, "each file once")
        XCTAssertEqual(try Self.tabledFiles("| folder | file | job |\n|---|---|---|\n| `.` | `a.c` | x |\n| `base/` | `b.c` | y |\n| | `c.c` | z |\n"),
                       ["a.c", "base/b.c", "base/c.c"])
    }

    /// The folders of the `| folder | what |` table ("Timeline/", …).
    static func tabledFolders(_ markdown: String) throws -> [String] {
        let lines = markdown.components(separatedBy: "\n")
        guard let header = lines.firstIndex(where: { $0.hasPrefix("| folder | what |") }) else { throw ListError("no `| folder | what |` table") }
        return lines[(header + 2)...].prefix { $0.hasPrefix("|") }.map { row in
            (row.split(separator: "|").first ?? "").trimmingCharacters(in: .whitespaces.union(CharacterSet(charactersIn: "`")))
        }
    }

    /// ColdstartAnalysis is one folder per subsystem, each in the table, and
    /// keeps no file outside them.
    func testTheArchitectureNamesEveryAnalysisFolder() throws {
        let sources = repositoryRoot.appendingPathComponent("Sources/ColdstartAnalysis").path
        var onDisk: [String] = [], loose: [String] = []
        for entry in try FileManager.default.contentsOfDirectory(atPath: sources) {
            var isFolder: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: sources + "/" + entry, isDirectory: &isFolder)
            if isFolder.boolValue { onDisk.append(entry + "/") } else { loose.append(entry) }
        }
        let tabled = try Self.tabledFolders(String(contentsOf: repositoryRoot.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8))
        XCTAssertEqual(tabled.sorted(), onDisk.sorted(), "docs/ARCHITECTURE.md's table of ColdstartAnalysis's folders")
        XCTAssertEqual(loose, [], "a file of ColdstartAnalysis outside its subsystems' folders")
        XCTAssertEqual(try Self.tabledFolders("| folder | what |\n|---|---|\n| `A/` | x |\n| `B/` | y |\n\nafter\n"), ["A/", "B/"])
    }

    /// "writer/outfile.c.o" or a path ending so → "outfile".
    static func fileName(_ path: String) -> String {
        var name = (path as NSString).lastPathComponent
        for suffix in [".o", ".c"] where name.hasSuffix(suffix) { name = String(name.dropLast(suffix.count)) }
        return name
    }

    func testAForbiddenCallACycleAndAStaleEntryAreEachNamed() throws {
        let allowed = try Self.parseAllowed("""
            text
            ```calls
            a → b   # a comment
            b, c → d
            * → leaf, leaf2
            ```
            """)
        XCTAssertEqual(allowed.calls, ["a": ["b"], "b": ["d"], "c": ["d"]])
        XCTAssertEqual(allowed.everyFileMayCall, ["leaf", "leaf2"])
        XCTAssertTrue(allowed.allows("d", "leaf2"))
        XCTAssertFalse(allowed.allows("leaf", "leaf2"), "a leaf calls none of ours")
        let nm = """
            a.c.o: f U
            a.c.o: helper U
            a.c.o: cs_g U
            b.c.o: f T 0 10
            b.c.o: g U
            c.c.o: d_fn U
            d.c.o: d_fn T 0 4
            d.c.o: g T 0 4
            d.c.o: a_fn U
            a.c.o: a_fn T 0 4
            leaf.c.o: helper T 0 4
            core.c.o: cs_g B 0 8
            """
        let edges = Self.edges(nmOutput: nm, file: Self.fileName)
        XCTAssertEqual(edges, [Edge(from: "a", to: "b"): ["f"], Edge(from: "a", to: "leaf"): ["helper"],
                               Edge(from: "b", to: "d"): ["g"], Edge(from: "c", to: "d"): ["d_fn"], Edge(from: "d", to: "a"): ["a_fn"]],
                       "cs_g is state, not a call")
        let problems = Self.violations(edges: edges, built: ["a", "b", "c", "d", "leaf", "leaf2", "core"], allowed: allowed)
        XCTAssertEqual(problems, [
            "core.c is not in the list",
            "d.c calls a.c (a_fn), which the list does not allow",
            "the files call in a cycle: a → b → d → a",
        ])
        let stale = Self.violations(edges: [Edge(from: "a", to: "b"): ["f"]], built: ["a", "b", "c", "d", "leaf", "leaf2"], allowed: allowed)
        XCTAssertEqual(stale, ["the list allows b → d, but b.c calls nothing of d.c: take it out",
                               "the list allows c → d, but c.c calls nothing of d.c: take it out"])
        XCTAssertThrowsError(try Self.parseAllowed("```calls\na b\n```"))
        XCTAssertThrowsError(try Self.parseAllowed("no list"))
        let looping = try Self.parseAllowed("```calls\na → b\nb → a\n```")
        XCTAssertEqual(Self.violations(edges: [Edge(from: "a", to: "b"): ["f"], Edge(from: "b", to: "a"): ["g"]], built: ["a", "b"], allowed: looping),
                       ["the list allows a cycle: a → b → a", "the files call in a cycle: a → b → a"])
    }
}
