import ColdstartBuildInfo
import Foundation

/// What `coldstart --version` says: the release, the commit and the Swift
/// compiler it was built from, each only as far as it is known.
///
/// SwiftPM offers no way to stamp a commit into a binary without unsafeFlags
/// or a generated source file, so the release is a constant here, the
/// compiler's version comes from `#if compiler`, and the exact commit and
/// `swift --version` are read from `share/coldstart/build-info`, which
/// `make install` writes next to the binary it installs.
enum Version {
    /// Bumped with each entry of CHANGELOG.md.
    static let release = "0.1.0"

    static func text(executable: String = CommandLine.executablePath) -> String {
        let info = buildInfo(executable: executable)
        let commit = info["commit"].map { "\($0) (recorded by make install)" }
            ?? checkoutCommit(executable: executable).map { "unknown; the checkout this binary sits in is now at \($0) (`make install` records the exact one)" }
            ?? "unknown (not installed by `make install`, which records it)"
        let swift = info["swift"].map { "\($0) (recorded by make install)" } ?? "Swift \(swiftCompilerVersion) (the compiler's version at build time)"
        return """
        coldstart \(release)
        commit: \(commit)
        swift: \(swift)
        """
    }

    /// `git describe` of the checkout holding `executable` (a `.build`
    /// product), which may have moved on since the build.
    static func checkoutCommit(executable: String) -> String? {
        var directory = (executable as NSString).deletingLastPathComponent
        while directory.count > 1 {
            if FileManager.default.fileExists(atPath: directory + "/.git") { break }
            directory = (directory as NSString).deletingLastPathComponent
        }
        guard directory.count > 1, let git = try? Launcher.resolve("git") else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: git)
        process.arguments = ["-C", directory, "describe", "--always", "--dirty"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return process.terminationStatus == 0 && !text.isEmpty ? text : nil
    }

    /// `key: value` lines of `<prefix>/share/coldstart/build-info` for a
    /// binary in `<prefix>/bin`.
    static func buildInfo(executable: String) -> [String: String] {
        let bin = ((executable as NSString).resolvingSymlinksInPath as NSString).deletingLastPathComponent
        let file = ((bin as NSString).deletingLastPathComponent as NSString).appendingPathComponent("share/coldstart/build-info")
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return [:] }
        var info: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if !value.isEmpty { info[String(line[..<colon])] = value }
        }
        return info
    }
}

extension CommandLine {
    /// This executable's path, from /proc (argv[0] may be a bare name).
    static var executablePath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? arguments[0]
    }
}
