import ColdstartAnalysis
import Foundation
import XCTest

/// The conventions of the `coldstart` command line (git's and hyperfine's):
/// suggestions, errors that name the option, `run` without `--`, --version,
/// shell completion and the man page.
final class CommandLineTests: XCTestCase {

    private func which(_ tool: String) -> String? {
        ["/usr/bin/", "/bin/", "/usr/local/bin/"].map { $0 + tool }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    func testMistypedCommandsAndOptionsGetASuggestion() throws {
        let command = try coldstart(["reprot", "x.json"])
        XCTAssertEqual(command.status, 2)
        XCTAssertTrue(command.stderr.contains("unknown command 'reprot'"), command.stderr)
        XCTAssertTrue(command.stderr.contains("The most similar command is\n\treport"), command.stderr)

        let option = try coldstart(["run", "--col", "/bin/true"])
        XCTAssertEqual(option.status, 2)
        XCTAssertTrue(option.stderr.contains("unknown option --col; did you mean --cold?"), option.stderr)

        let far = try coldstart(["frobnicate"])
        XCTAssertEqual(far.status, 2)
        XCTAssertFalse(far.stderr.contains("most similar"), "no suggestion for a word unlike any command: \(far.stderr)")
    }

    /// `coldstart report T.json --html T.json` wrote its page over the
    /// timeline and exited 0: an output that is the input is refused.
    func testAnOutputThatIsTheTimelineItselfIsRefused() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let timeline = directory.appendingPathComponent("launch.json").path
        try FileManager.default.copyItem(atPath: try KnownProfile.timelinePath(), toPath: timeline)
        let original = try Data(contentsOf: URL(fileURLWithPath: timeline))
        for arguments in [["report", timeline, "--html", timeline], ["export", timeline, "--format", "folded", "-o", timeline],
                          ["report", timeline, "--html", directory.path + "/./launch.json"]] {
            let result = try coldstart(arguments)
            XCTAssertEqual(result.status, 1, "\(arguments): \(result.stdout)")
            XCTAssertTrue(result.stderr.contains("is the file being read"), result.stderr)
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: timeline)), original, "\(arguments) left the timeline alone")
        }
        let page = try coldstart(["report", timeline, "--html", directory.appendingPathComponent("launch.html").path])
        XCTAssertEqual(page.status, 0, page.stderr)
    }

    func testAMissingValueNamesTheOption() throws {
        for arguments in [["run", "-n"], ["run", "-n", "--", "/bin/true"], ["compare", "a", "b", "--fail-if-slower"]] {
            let result = try coldstart(arguments)
            XCTAssertEqual(result.status, 2, "\(arguments)")
            let option = arguments.first { $0.hasPrefix("-") && $0 != "--" }!
            XCTAssertTrue(result.stderr.hasPrefix("coldstart \(arguments[0]): \(option) needs a value\n"), "\(arguments): \(result.stderr)")
        }
        let missing = try coldstart(["run", "-n", "3"])
        XCTAssertTrue(missing.stderr.contains("missing COMMAND [ARGS…] (the app to launch)"), missing.stderr)
    }

    /// `--` is optional, and what follows the app's name is the app's, help
    /// flags included: `/bin/echo` runs (and, not being linked with
    /// Coldstart, is explained) instead of run's help being printed.
    func testRunTakesTheCommandWithoutDashDashAndLeavesItsHelpFlagAlone() throws {
        let dir = try makeTemporaryDirectory(for: self).path
        // Without loader sampling, a program not linked with Coldstart is refused after its run.
        for arguments in [["run", "--no-sample-loader", "--out", dir + "/a", "/bin/echo", "--help"],
                          ["run", "--no-sample-loader", "--out", dir + "/b", "--", "/bin/echo", "-h"]] {
            let result = try coldstart(arguments)
            XCTAssertEqual(result.status, 1, "\(arguments): \(result.stdout)")
            XCTAssertFalse(result.stdout.contains("Usage: coldstart run"), "run's help printed for \(arguments)")
            XCTAssertTrue(result.stdout.contains(arguments.last!), "the app's output: \(result.stdout)")
            XCTAssertTrue(result.stderr.contains("/bin/echo exited (status 0) without writing a timeline"), result.stderr)
        }
        // Before the app's name, --help is run's own.
        let help = try coldstart(["run", "-n", "3", "--help", "/bin/echo"])
        XCTAssertEqual(help.status, 0)
        XCTAssertTrue(help.stdout.hasPrefix("Usage: coldstart run"), help.stdout)
        XCTAssertEqual(try coldstart(["help", "compare"]).stdout, try coldstart(["compare", "--help"]).stdout)
    }

    func testVersionNamesReleaseCommitAndSwift() throws {
        let result = try coldstart(["--version"])
        XCTAssertEqual(result.status, 0)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 3, result.stdout)
        XCTAssertNotNil(lines[0].range(of: #"^coldstart \d+\.\d+\.\d+$"#, options: .regularExpression), lines[0])
        XCTAssertTrue(lines[1].hasPrefix("commit: "), lines[1])
        XCTAssertNotNil(lines[2].range(of: #"^swift: Swift \d+\.\d+"#, options: .regularExpression), lines[2])
        // The release matches the newest entry of CHANGELOG.md.
        let changelog = try String(contentsOf: repositoryRoot.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let release = String(lines[0].dropFirst("coldstart ".count))
        XCTAssertTrue(changelog.contains("## \(release)"), "CHANGELOG.md has no section for \(release)")
    }

    func testBashCompletionParsesAndCompletes() throws {
        let script = try coldstart(["completion", "bash"])
        XCTAssertEqual(script.status, 0, script.stderr)
        let file = try makeTemporaryDirectory(for: self).appendingPathComponent("coldstart.bash")
        try Data(script.stdout.utf8).write(to: file)
        let syntax = try runProcess("/bin/bash", ["-n", file.path])
        XCTAssertEqual(syntax.status, 0, syntax.stderr)
        // Ask the completion function, as bash would on TAB.
        func complete(_ words: [String]) throws -> [String] {
            let quoted = words.map { "'\($0)'" }.joined(separator: " ")
            let run = try runProcess("/bin/bash", ["-c", "source '\(file.path)'; COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1); _coldstart; printf '%s\\n' \"${COMPREPLY[@]}\""])
            XCTAssertEqual(run.status, 0, run.stderr)
            return run.stdout.split(separator: "\n").map(String.init)
        }
        XCTAssertEqual(try complete(["coldstart", "rep"]), ["report"])
        XCTAssertEqual(try complete(["coldstart", "run", "--co"]), ["--cold"])
        XCTAssertEqual(Set(try complete(["coldstart", "compare", "--min"])), ["--min-effect-ms"])
        // After the app's name the words are the app's: no coldstart options.
        XCTAssertFalse(try complete(["coldstart", "run", "-n", "3", "./app", "--co"]).contains("--cold"))
    }

    func testZshAndFishCompletionsParse() throws {
        var checked = 0
        for (shell, check) in [("zsh", ["-n"]), ("fish", ["--no-execute"])] {
            guard let path = which(shell) else { continue }
            let script = try coldstart(["completion", shell])
            XCTAssertEqual(script.status, 0, script.stderr)
            let file = try makeTemporaryDirectory(for: self).appendingPathComponent("coldstart.\(shell)")
            try Data(script.stdout.utf8).write(to: file)
            let syntax = try runProcess(path, check + [file.path])
            XCTAssertEqual(syntax.status, 0, "\(shell): \(syntax.stderr)")
            checked += 1
        }
        let unknown = try coldstart(["completion", "fihs"])
        XCTAssertEqual(unknown.status, 2)
        XCTAssertTrue(unknown.stderr.contains("did you mean fish?"), unknown.stderr)
        if checked == 0 { throw XCTSkip("neither zsh nor fish is installed (make test installs them)") }
    }

    /// The man page renders without a warning and carries every command's
    /// options, from the same help text as --help.
    func testManPageRendersEveryCommandsOptions() throws {
        let page = try coldstart(["man"])
        XCTAssertEqual(page.status, 0, page.stderr)
        guard let groff = which("groff") else { throw XCTSkip("groff is not installed") }
        let file = try makeTemporaryDirectory(for: self).appendingPathComponent("coldstart.1")
        try Data(page.stdout.utf8).write(to: file)
        let rendered = try runProcess(groff, ["-man", "-Tutf8", "-ww", file.path], environment: ["GROFF_NO_SGR": "1"])
        XCTAssertEqual(rendered.status, 0)
        XCTAssertEqual(rendered.stderr, "", "groff warnings")
        // groff marks bold by overstriking; read the text without it.
        let text = rendered.stdout.replacingOccurrences(of: ".\u{8}", with: "", options: .regularExpression)
        for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS"] {
            XCTAssertTrue(text.contains("\n\(section)\n"), "no \(section) section")
        }
        for option in ["--fail-if-slower", "--min-effect-ms", "--stop-after-ready", "--tree-depth", "--format"] {
            XCTAssertTrue(text.contains(option), "\(option) missing from the man page")
        }
        XCTAssertTrue(text.contains("launch (start → ready)") || text.contains("Mann–Whitney"), "non-ASCII text survives")
    }
}
