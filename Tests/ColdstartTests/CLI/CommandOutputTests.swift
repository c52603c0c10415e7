import Foundation
import XCTest

/// What the CLI does with its outputs when they fail or already exist:
/// a closed or full stdout (issue 23 item 8), a file rewritten in place
/// (item 9).
final class CommandOutputTests: XCTestCase {
    /// `coldstart ARGS` with stdout redirected by the shell (`>&-`,
    /// `>/dev/full`), stderr captured.
    private func redirected(_ arguments: [String], stdout redirection: String) throws -> ProcessResult {
        try runProcess("/bin/sh", ["-c", "exec \"$0\" \"$@\" \(redirection)", try Products.path("coldstart")] + arguments,
                       environment: ["SWIFT_BACKTRACE": "enable=no"])
    }

    /// Every command that writes to stdout: before, the ones writing through
    /// `FileHandle` died of SIGILL (132) and the `print` ones exited 0 with
    /// their output lost.
    func testAClosedOrFullStandardOutputIsOneLineAndExitStatus1InEveryCommand() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let runs = directory.appendingPathComponent("runs").path
        try FileManager.default.createDirectory(atPath: runs, withIntermediateDirectories: true)
        for index in 1...5 { try FileManager.default.copyItem(atPath: try KnownProfile.timelinePath(), toPath: "\(runs)/run-\(index).json") }
        let timeline = "\(runs)/run-1.json"
        let commands: [[String]] = [
            ["report", timeline], ["report", timeline, "--json"], ["report", timeline, "--html", "-"], ["report", runs],
            ["aggregate", runs], ["aggregate", runs, "--json"], ["export", timeline, "--format", "folded", "-o", "-"],
            ["export", timeline, "--format", "otlp", "-o", "-"], ["symbolize", timeline, "-o", "-"],
            ["export", timeline, "--format", "speedscope", "-o", directory.appendingPathComponent("x.speedscope.json").path],
            ["compare", runs, runs], ["--help"], ["--version"], ["report", "--help"], ["help", "run"], ["man"],
            ["completion", "bash"], ["completion", "fish"], ["run", "--", "/bin/true"],
            ["inspect", "/bin/true"], ["inspect", "/bin/true", "--json"], ["inspect", "/bin/true", "--write-allow", "-"],
            ["inspect", "/bin/true", "--max-libraries", "100"],
        ]
        for arguments in commands {
            for redirection in [">&-", ">/dev/full"] {
                // `run` records its launches under --out (by default a new directory in the current one).
                let arguments = arguments.first == "run"
                    ? ["run", "--out", directory.appendingPathComponent("run-\(redirection.count)").path] + arguments.dropFirst() : arguments
                let result = try redirected(arguments, stdout: redirection)
                let lines = result.stderr.split(separator: "\n")
                XCTAssertEqual(result.status, 1, "\(arguments) \(redirection): \(result.stderr)")
                XCTAssertNil(result.signal, "\(arguments) \(redirection)")
                XCTAssertTrue(lines.last?.contains("cannot write to standard output (\(redirection == ">&-" ? "Bad file descriptor" : "No space left on device"))") ?? false,
                              "\(arguments) \(redirection): \(result.stderr)")
                XCTAssertEqual(lines.filter { $0.contains("cannot write") }.count, 1, "\(arguments) \(redirection): \(result.stderr)")
            }
        }
        XCTAssertEqual(try redirected(["report", timeline], stdout: ">/dev/null").status, 0, "a working stdout still works")
    }

    /// With stdout closed, the next file opened took descriptor 1: an
    /// output's temporary file would have received what was meant for stdout.
    func testAClosedStandardOutputIsNotTakenByAnOutputFile() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let output = directory.appendingPathComponent("stacks.folded").path
        let result = try redirected(["export", try KnownProfile.timelinePath(), "--format", "folded", "-o", output], stdout: ">&-")
        XCTAssertEqual(result.status, 1, result.stderr)
        let folded = try String(contentsOfFile: output, encoding: .utf8)
        XCTAssertFalse(folded.contains("folded, "), "the summary line stayed out of the file")
        XCTAssertEqual(try coldstart(["export", try KnownProfile.timelinePath(), "--format", "folded", "-o", output]).stdout
            .contains("folded"), true)
        XCTAssertEqual(try String(contentsOfFile: output, encoding: .utf8), folded, "the same file either way")
    }

    /// `symbolize FILE` rewrote a 0600 timeline as 0644 (readable by all).
    func testRewritingAFileKeepsItsModeAndOwner() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let timeline = directory.appendingPathComponent("launch.json").path
        try FileManager.default.copyItem(atPath: try KnownProfile.timelinePath(), toPath: timeline)
        var info = stat()
        XCTAssertEqual(stat(timeline, &info), 0)
        let inode = info.st_ino
        XCTAssertEqual(chmod(timeline, 0o600), 0)
        // As root, the file is given away first: the rewrite must give it back.
        let nobody = getuid() == 0 ? (uid: uid_t(65534), gid: gid_t(65534)) : (uid: getuid(), gid: getgid())
        XCTAssertEqual(chown(timeline, nobody.uid, nobody.gid), 0)
        let symbolize = try coldstart(["symbolize", timeline])
        XCTAssertEqual(symbolize.status, 0, symbolize.stderr)
        XCTAssertEqual(stat(timeline, &info), 0)
        XCTAssertNotEqual(info.st_ino, inode, "a new file, renamed into place")
        XCTAssertEqual(info.st_mode & 0o7777, 0o600)
        XCTAssertEqual(info.st_uid, nobody.uid)
        XCTAssertEqual(info.st_gid, nobody.gid)

        // An output written again keeps the mode it was given; a new one is 0644 less the umask.
        let page = directory.appendingPathComponent("launch.html").path
        XCTAssertEqual(try coldstart(["report", timeline, "--html", page]).status, 0)
        XCTAssertEqual(stat(page, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o644 & ~Self.umask)
        XCTAssertEqual(chmod(page, 0o640), 0)
        XCTAssertEqual(try coldstart(["report", timeline, "--html", page]).status, 0)
        XCTAssertEqual(stat(page, &info), 0)
        XCTAssertEqual(info.st_mode & 0o7777, 0o640)
    }

    private static var umask: mode_t {
        let mask = Foundation.umask(0o022)
        Foundation.umask(mask)
        return mask
    }
}
