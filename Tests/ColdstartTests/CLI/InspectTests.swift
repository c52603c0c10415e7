@testable import ColdstartAnalysis
import Foundation
import XCTest

/// `coldstart inspect`: a binary's start-up read from its files
/// (docs/inspect.md), and the allow-list gate (docs/ci.md).
final class InspectTests: XCTestCase {
    private static let gateSources = repositoryRoot.appendingPathComponent("Tests/Fixtures/AllowGate").path

    private func inspect(_ binary: String, _ options: [String] = []) throws -> [String: Any] {
        let result = try coldstart(["inspect", binary, "--json"] + options)
        XCTAssertEqual(result.status, 0, result.stderr)
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    private func objects(_ json: [String: Any]) -> [[String: Any]] { json["objects"] as? [[String: Any]] ?? [] }

    private func initializers(of name: String, in json: [String: Any]) -> [[String: Any]] {
        objects(json).first { $0["name"] as? String == name }?["initializers"] as? [[String: Any]] ?? []
    }

    /// Builds the gate's app against libone (and libtwo with `withTwo`) into
    /// `dir`, with `compiler`; returns the app's path.
    private func buildGateApp(in dir: String, withTwo: Bool, compiler: String = "clang") throws -> String {
        for library in ["one"] + (withTwo ? ["two"] : []) {
            let built = try runProcess("/usr/bin/env", [compiler, "-shared", "-fPIC", "-o", "\(dir)/lib\(library).so", "\(Self.gateSources)/\(library).c"])
            XCTAssertEqual(built.status, 0, built.stderr)
        }
        let app = "\(dir)/app"
        let built = try runProcess("/usr/bin/env", [compiler, "-o", app, "\(Self.gateSources)/app.c", "-L", dir, "-lone"]
            + (withTwo ? ["-DWITH_TWO", "-ltwo"] : []) + ["-Wl,-rpath,$ORIGIN"])
        XCTAssertEqual(built.status, 0, built.stderr)
        return app
    }

    /// The C library constructor (KnownCosts' libSlowInit), the C++ static
    /// constructor and the 400 conformances (ManyConformances), named and
    /// counted from the files.
    func testNamesInitializersAndCountsSwiftMetadataOfTheFixtures() throws {
        let many = try inspect(try FixturePrograms.path("ManyConformances"))
        let own = initializers(of: "ManyConformances", in: many)
        let cxx = try XCTUnwrap(own.first { $0["kind"] as? String == "C++ static constructors" }, "\(own)")
        XCTAssertEqual(cxx["symbol"] as? String, "_GLOBAL__sub_I_registry.cpp")
        XCTAssertEqual(cxx["displayName"] as? String, "static constructors of registry.cpp")
        XCTAssertEqual(cxx["source"] as? String, "DT_INIT_ARRAY")
        let executable = try XCTUnwrap(objects(many).first)
        XCTAssertEqual(executable["role"] as? String, "executable")
        let swift = try XCTUnwrap(executable["swift"] as? [String: Any])
        // 400 types conforming to Shape, each with its type-metadata record.
        XCTAssertEqual(swift["conformances"] as? Int, 400)
        XCTAssertEqual(swift["typeMetadata"] as? Int, 400)
        XCTAssertNotNil((swift["sectionBytes"] as? [String: Int])?["swift5_fieldmd"])
        let core = try XCTUnwrap(objects(many).first { $0["name"] as? String == "libswiftCore.so" }?["swift"] as? [String: Any])
        XCTAssertGreaterThan(core["conformances"] as? Int ?? 0, 500)
        let estimate = try XCTUnwrap(many["estimate"] as? [String: Any])
        let records = try XCTUnwrap(estimate["conformanceRecords"] as? Int)
        XCTAssertEqual(records, (many["totals"] as? [String: Any])?["conformances"] as? Int)
        XCTAssertTrue((estimate["conformanceBasis"] as? String ?? "").contains("\(records) conformance records"))

        let known = try inspect(try FixturePrograms.path("KnownCosts"))
        let slow = initializers(of: "libSlowInit.so", in: known)
        XCTAssertTrue(slow.contains { $0["symbol"] as? String == "slow_init_constructor" && $0["kind"] as? String == "constructor" }, "\(slow)")
        // The loader runs the library's constructors before the executable's.
        let order = try XCTUnwrap(known["initializerOrder"] as? [String])
        XCTAssertLessThan(try XCTUnwrap(order.firstIndex(of: "libSlowInit.so")), try XCTUnwrap(order.firstIndex(of: "KnownCosts")))
        XCTAssertLessThan(try XCTUnwrap(order.firstIndex(of: "libc.so.6")), try XCTUnwrap(order.firstIndex(of: "libSlowInit.so")))
        // Coldstart's own earliest hook is in the executable's preinit array.
        XCTAssertTrue(initializers(of: "KnownCosts", in: known).contains { $0["source"] as? String == "DT_PREINIT_ARRAY" })

        // The man page and the completions are made from the help text.
        let man = try coldstart(["man"])
        XCTAssertTrue(man.stdout.contains(".SS inspect") && man.stdout.contains("\\-\\-write\\-allow FILE"), "man page without inspect")
        let completion = try coldstart(["completion", "bash"])
        XCTAssertTrue(completion.stdout.contains("inspect") && completion.stdout.contains("--max-libraries"), completion.stdout)

        let text = try coldstart(["inspect", try FixturePrograms.path("ManyConformances")])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains("ManyConformances: static constructors of registry.cpp  DT_INIT_ARRAY[2]"), text.stdout)
        XCTAssertTrue(text.stdout.contains("ManyConformances: 400 conformances, 400 type metadata"), text.stdout)
    }

    /// The order the initializers run in is the order glibc calls them
    /// (`LD_DEBUG=libs`, "calling init"), the executable's own last.
    func testInitializerOrderIsTheLoaders() throws {
        for name in ["ManyConformances", "KnownCosts", "FoundationTool"] {
            let program = try FixturePrograms.path(name)
            let traced = try runProcess(program, environment: ["LD_DEBUG": "libs", "COLDSTART": nil])
            let called = traced.stderr.split(separator: "\n").filter { $0.contains("calling init:") }
                .compactMap { $0.split(separator: " ").last.map { (String($0) as NSString).lastPathComponent } }
            XCTAssertGreaterThan(called.count, 5, traced.stderr)
            let order = try XCTUnwrap(try inspect(program)["initializerOrder"] as? [String])
            XCTAssertEqual(order, called + [name], name)
        }
    }

    /// The toolchain's programs: the library set `ldd` prints (which runs
    /// the loader), and the relocation counts `coldstart report` gives for a
    /// launch of the program.
    func testToolchainProgramsMatchLddAndTheReport() throws {
        let toolchain = URL(fileURLWithPath: try DocumentationTests.tool("swift")).resolvingSymlinksInPath().deletingLastPathComponent()
        var checked = 0
        for name in ["swift-format", "swift-package", "sourcekit-lsp"] {
            let program = toolchain.appendingPathComponent(name).path
            guard FileManager.default.isExecutableFile(atPath: program) else { continue }
            checked += 1
            let json = try inspect(program, ["--library-path", ""])
            XCTAssertEqual((json["missing"] as? [Any])?.count, 0, "\(json["missing"] ?? "")")
            let ldd = try runProcess("/usr/bin/ldd", [program])
            XCTAssertEqual(ldd.status, 0, ldd.stderr)
            // "libfoo.so => /path (0x…)" and "/lib64/ld-linux-x86-64.so.2 (0x…)"; the vDSO has no file.
            let expected = Set(ldd.stdout.split(separator: "\n").compactMap { line -> String? in
                let words = line.split(separator: " ").map(String.init)
                let path = words.contains("=>") ? words.drop { $0 != "=>" }.dropFirst().first : words.first?.trimmingCharacters(in: .whitespaces)
                return path.flatMap { $0.hasPrefix("/") ? SharedLibraries.canonicalPath($0) : nil }
            })
            let found = Set(objects(json).filter { $0["role"] as? String != "executable" }.compactMap { $0["path"] as? String }
                .map(SharedLibraries.canonicalPath))
            XCTAssertEqual(found, expected, name)
        }
        guard checked > 0 else { throw XCTSkip("no toolchain program found next to swift") }

        // The same counts as the report of a launch (its objects from
        // LD_AUDIT), of a toolchain program that runs `--version` and stops:
        // every toolchain has swift-package (it built these tests).
        let candidates = ["swift-format", "swift-package"].map { toolchain.appendingPathComponent($0).path }
        guard let program = candidates.first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw XCTSkip("neither swift-format nor swift-package in \(toolchain.path), beside the swift on PATH")
        }
        let dir = try makeTemporaryDirectory(for: self).path
        let run = try coldstart(["run", "-n", "1", "--warmup", "0", "--out", dir, "--", program, "--version"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let statistics = try XCTUnwrap(LoaderStatistics(try Timeline(contentsOf: dir + "/run-1.json")))
        let inspection = try StaticInspection(executable: program, libraryPath: nil)
        let fromReport = Dictionary(statistics.objects.map { ($0.name, $0) }) { first, _ in first }
        let fromInspect = Dictionary(inspection.objects.compactMap(\.relocations).map { ($0.name, $0) }) { first, _ in first }
        XCTAssertEqual(fromInspect, fromReport)
        XCTAssertEqual(inspection.totals.lookups, statistics.lookups)
        XCTAssertEqual(inspection.totals.symbolic, statistics.symbolic)
    }

    /// Beside a launch: the report's slow-initializer finding names its
    /// library's initializers and relocations, the counts `inspect` reads
    /// from the same library (a symbolized timeline: its binaries are gone).
    func testTheReportsInitializerFindingStatesInspectsFacts() throws {
        let run = try KnownCostsRun.perf()
        try run.requireUnstarvedTimers()
        let findings = try XCTUnwrap(try LaunchAnalysis(timeline: try XCTUnwrap(run.symbolized?.timeline)).report.findings)
        let finding = try XCTUnwrap(findings.first { $0.title == "slow library initializer libSlowInit.so" }, "\(findings.map(\.title))")
        let known = try inspect(try FixturePrograms.path("KnownCosts"))
        let relocations = try XCTUnwrap(objects(known).first { $0["name"] as? String == "libSlowInit.so" }?["relocations"] as? [String: Any])
        let named = initializers(of: "libSlowInit.so", in: known).count
        // _init, frame_dummy, Swift's image registration, the C constructor.
        XCTAssertEqual(named, 4)
        func n(_ key: String) throws -> String {
            try XCTUnwrap(relocations[key] as? Int).formatted(.number.grouping(.automatic).locale(Locale(identifier: "en_US")))
        }
        XCTAssertEqual(finding.location, "slow_init_constructor; libSlowInit.so: \(named) initializers, "
            + "\(try n("symbolic")) symbolic relocations (\(try n("lookups")) look-ups)")
    }

    /// A library added between two builds fails the gate, which names it
    /// and its constructor; the first build passes; a count over
    /// `--max-libraries` fails.
    func testAllowListGateFailsOnALibraryAddedBetweenBuilds() throws {
        let base = try makeTemporaryDirectory(for: self).path
        try FileManager.default.createDirectory(atPath: base + "/v1", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: base + "/v2", withIntermediateDirectories: true)
        let first = try buildGateApp(in: base + "/v1", withTwo: false)
        let second = try buildGateApp(in: base + "/v2", withTwo: true)
        let list = base + "/start-up.allow"
        let write = try coldstart(["inspect", first, "--write-allow", list])
        XCTAssertEqual(write.status, 0, write.stderr)
        let text = try String(contentsOfFile: list, encoding: .utf8)
        let entries = text.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.map { String($0.prefix { $0 != " " }) + " " + $0.split(separator: " ")[1] }
        XCTAssertTrue(text.contains("library libone.so "), text)
        XCTAssertTrue(text.contains("initializer libone.so one_constructor "), text)
        XCTAssertTrue(text.contains("library libc.so.6 "), text)
        XCTAssertEqual(entries.filter { $0.hasPrefix("library") }, entries.filter { $0.hasPrefix("library") }.sorted(), "libraries sorted")
        XCTAssertTrue(text.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.allSatisfy { $0.contains("  # ") },
                      "every line says what it is:\n\(text)")
        XCTAssertEqual(try AllowList(text: text, file: list), AllowList(try StaticInspection(executable: first, libraryPath: nil)))

        let pass = try coldstart(["inspect", first, "--allow", list])
        XCTAssertEqual(pass.status, 0, pass.stdout + pass.stderr)
        XCTAssertTrue(pass.stdout.contains("allow-list gate: pass"), pass.stdout)

        let fail = try coldstart(["inspect", second, "--allow", list])
        XCTAssertEqual(fail.status, 1, fail.stdout + fail.stderr)
        XCTAssertTrue(fail.stdout.contains("not on the allow-list: library libtwo.so"), fail.stdout)
        XCTAssertTrue(fail.stdout.contains("not on the allow-list: initializer libtwo.so two_constructor"), fail.stdout)
        XCTAssertFalse(fail.stdout.contains("libone.so"), "only what is new is named:\n\(fail.stdout)")
        // libtwo's crt entries (_init, frame_dummy) are new initializers too.
        XCTAssertTrue(fail.stdout.contains("allow-list gate: FAIL: 4 not allowed"), fail.stdout)
        let json = try coldstart(["inspect", second, "--allow", list, "--json"])
        XCTAssertEqual(json.status, 1)
        let gate = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        XCTAssertEqual((gate["unlisted"] as? [[String: Any]])?.compactMap { $0["entry"] as? String },
                       ["initializer libtwo.so _init", "initializer libtwo.so frame_dummy", "initializer libtwo.so two_constructor", "library libtwo.so"])

        let count = try XCTUnwrap(Int(pass.stdout.split(separator: ":").last?.split(separator: " ").first ?? ""), pass.stdout)
        XCTAssertEqual(try coldstart(["inspect", first, "--max-libraries", "\(count)"]).status, 0)
        let over = try coldstart(["inspect", first, "--max-libraries", "\(count - 1)"])
        XCTAssertEqual(over.status, 1)
        XCTAssertTrue(over.stdout.contains("too many libraries: \(count) loaded, --max-libraries \(count - 1)"), over.stdout)

        try Data("library libone.so\nlibrary\n".utf8).write(to: URL(fileURLWithPath: base + "/bad.allow"))
        let bad = try coldstart(["inspect", first, "--allow", base + "/bad.allow"])
        XCTAssertEqual(bad.status, 1)
        XCTAssertTrue(bad.stderr.contains("bad.allow:2: expected 'library NAME' or 'initializer OBJECT SYMBOL'"), bad.stderr)
    }

    /// A library that cannot be found is named, with who needs it, and the
    /// gate does not pass what it cannot see.
    func testSaysWhenALibraryCannotBeFound() throws {
        let dir = try makeTemporaryDirectory(for: self).path
        let app = try buildGateApp(in: dir, withTwo: true)
        let list = dir + "/allow"
        XCTAssertEqual(try coldstart(["inspect", app, "--write-allow", list]).status, 0)
        try FileManager.default.removeItem(atPath: dir + "/libtwo.so")
        let text = try coldstart(["inspect", app])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains("NOT FOUND: libtwo.so (needed by app)"), text.stdout)
        let gate = try coldstart(["inspect", app, "--allow", list])
        XCTAssertEqual(gate.status, 1)
        XCTAssertTrue(gate.stdout.contains("cannot check: libtwo.so (needed by app) was not found"), gate.stdout)
        let notELF = try coldstart(["inspect", list])
        XCTAssertEqual(notELF.status, 1)
        XCTAssertTrue(notELF.stderr.contains("not an ELF file"), notELF.stderr)
    }

    /// A FIFO where a library should be (issue 35 item 6), reached the three
    /// ways a binary or its user can point at one: a `$ORIGIN` RUNPATH, an
    /// absolute `DT_NEEDED` and `--library-path`. A blocking `open` waited
    /// for a writer forever; now the library is listed as not read, not a
    /// regular file, and the rest is inspected.
    func testAFIFOWhereALibraryShouldBeIsReportedNotWaitedFor() throws {
        let dir = try makeTemporaryDirectory(for: self).path
        let app = try buildGateApp(in: dir, withTwo: true)
        // libone.so has no DT_SONAME: linked by its path, the path is the
        // DT_NEEDED. `plain` has no RPATH/RUNPATH to come first.
        let absolute = dir + "/absolute", plain = dir + "/plain"
        for (binary, library) in [(absolute, [dir + "/libone.so"]), (plain, ["-L", dir, "-lone"])] {
            let built = try runProcess("/usr/bin/env", ["clang", "-o", binary, "\(Self.gateSources)/app.c"] + library)
            XCTAssertEqual(built.status, 0, built.stderr)
        }
        let fifos = dir + "/fifos"
        try FileManager.default.createDirectory(atPath: fifos, withIntermediateDirectories: true)
        for path in [dir + "/libtwo.so", dir + "/libone.so", fifos + "/libone.so"] {
            try? FileManager.default.removeItem(atPath: path)
            XCTAssertEqual(mkfifo(path, 0o644), 0, "mkfifo \(path): \(String(cString: strerror(errno)))")
        }
        for (binary, options, fifo) in [(app, [], dir + "/libtwo.so"), (absolute, [], dir + "/libone.so"),
                                        (plain, ["--library-path", fifos], fifos + "/libone.so")] {
            // A hang is killed at the timeout, and fails the test by its throw.
            let text = try coldstart(["inspect", binary] + options, timeout: 30)
            XCTAssertEqual(text.status, 0, text.stderr)
            XCTAssertTrue(text.stdout.contains(": not read: \(fifo): not a regular file (a pipe, socket or device)"), text.stdout)
            XCTAssertTrue(text.stdout.contains("libc.so.6"), "the other libraries are read:\n\(text.stdout)")
            let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(try coldstart(["inspect", binary, "--json"] + options, timeout: 30).stdout.utf8))
                as? [String: Any])
            let object = try XCTUnwrap(objects(json).first { $0["path"] as? String == fifo }, "\(objects(json).map { $0["path"] ?? "" })")
            XCTAssertEqual(object["role"] as? String, "library")
            XCTAssertTrue((object["problem"] as? String ?? "").hasSuffix("not a regular file (a pipe, socket or device)"), "\(object)")
        }
    }

    /// A static executable has no dynamic section: its initializers come
    /// from the sections libc's start-up reads, and it loads no library.
    func testAStaticExecutablesInitializersComeFromItsSections() throws {
        let dir = try makeTemporaryDirectory(for: self).path
        try Data("int one_value(void);\nint main(void) { return one_value() == 0; }\n".utf8).write(to: URL(fileURLWithPath: dir + "/main.c"))
        // Whether there is a static libc, asked of the compiler itself (it
        // prints the bare name when it finds none), not read from a failed link.
        let libc = try runProcess("/usr/bin/env", ["clang", "-print-file-name=libc.a"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard libc.hasPrefix("/"), FileManager.default.fileExists(atPath: libc) else {
            throw XCTSkip("clang finds no static libc (-print-file-name=libc.a: \(libc); Debian: libc6-dev)")
        }
        let built = try runProcess("/usr/bin/env", ["clang", "-static", "-o", dir + "/static", dir + "/main.c", "\(Self.gateSources)/one.c"])
        XCTAssertEqual(built.status, 0, built.stderr)
        let json = try inspect(dir + "/static")
        XCTAssertEqual(objects(json).count, 1)
        XCTAssertTrue(initializers(of: "static", in: json).contains { $0["symbol"] as? String == "one_constructor" && $0["source"] as? String == "DT_INIT_ARRAY" },
                      "\(initializers(of: "static", in: json))")
    }

    /// An aarch64 binary read on this machine: its R_AARCH64_* relocations,
    /// its constructors, its libraries from a sysroot given as the search path.
    func testReadsAnAarch64Binary() throws {
        guard (try? runProcess("/usr/bin/env", ["aarch64-linux-gnu-gcc", "--version"]))?.status == 0 else {
            throw XCTSkip("aarch64-linux-gnu-gcc is not installed (apt-get install gcc-aarch64-linux-gnu)")
        }
        let dir = try makeTemporaryDirectory(for: self).path
        let app = try buildGateApp(in: dir, withTwo: true, compiler: "aarch64-linux-gnu-gcc")
        let alone = try inspect(app, ["--library-path", ""])
        XCTAssertEqual(alone["machine"] as? String, "EM_AARCH64")
        // This machine's libc is x86_64: the loader would skip it.
        XCTAssertTrue((alone["missing"] as? [[String: Any]] ?? []).contains { $0["name"] as? String == "libc.so.6" }, "\(alone)")
        let sysroot = "/usr/aarch64-linux-gnu/lib"
        guard FileManager.default.fileExists(atPath: sysroot + "/libc.so.6") else { throw XCTSkip("no aarch64 libc under \(sysroot)") }
        let json = try inspect(app, ["--library-path", sysroot])
        let libraries = objects(json).filter { $0["role"] as? String == "library" }.compactMap { $0["name"] as? String }
        XCTAssertEqual(Set(libraries), ["libone.so", "libtwo.so", "libc.so.6"], "\(libraries)")
        XCTAssertTrue(initializers(of: "libtwo.so", in: json).contains { $0["symbol"] as? String == "two_constructor" })
        let relocations = try XCTUnwrap(objects(json).first { $0["name"] as? String == "libone.so" }?["relocations"] as? [String: Any])
        // R_AARCH64_RELATIVE (init/fini array entries), R_AARCH64_GLOB_DAT, R_AARCH64_JUMP_SLOT.
        XCTAssertGreaterThan(relocations["relative"] as? Int ?? 0, 0, "\(relocations)")
        XCTAssertGreaterThan(relocations["symbolic"] as? Int ?? 0, 0, "\(relocations)")
    }
}
