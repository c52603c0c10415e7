import Foundation

/// One `coldstart` subcommand. Arguments are parsed by hand (no outside
/// packages): `Arguments` does the common work.
protocol Command {
    /// The word after `coldstart`.
    static var name: String { get }
    /// One line for `coldstart --help`.
    static var summary: String { get }
    /// The full text for `coldstart NAME --help`.
    static var help: String { get }
    /// Runs with the arguments after the command's name; returns the exit code.
    /// Throws `UsageError` (exit 2) or `CommandError` (exit 1).
    static func run(_ arguments: inout Arguments) throws -> Int32
}

/// Wrong arguments: exit status 2, with a hint to use --help.
struct UsageError: Error { var message: String }

/// The command could not do its job (bad input file, failed spawn): exit 1.
struct CommandError: Error { var message: String }

/// Exit statuses shared by every command.
enum ExitStatus {
    static let success: Int32 = 0
    static let failure: Int32 = 1
    static let usage: Int32 = 2
}

/// A cursor over the arguments of one command.
struct Arguments {
    private(set) var remaining: [String]

    init(_ arguments: [String]) { remaining = arguments }

    /// Removes `--flag` wherever it is; true if it was there.
    mutating func flag(_ names: String...) -> Bool {
        guard let index = remaining.firstIndex(where: { names.contains($0) }) else { return false }
        remaining.remove(at: index)
        return true
    }

    /// Removes `--option VALUE` (or `--option=VALUE`) and returns VALUE.
    mutating func option(_ names: String...) throws -> String? {
        for (index, argument) in remaining.enumerated() {
            if let name = names.first(where: { argument.hasPrefix($0 + "=") }) {
                remaining.remove(at: index)
                return String(argument.dropFirst(name.count + 1))
            }
            if names.contains(argument) {
                guard index + 1 < remaining.count else { throw UsageError(message: "\(argument) needs a value") }
                let value = remaining[index + 1]
                remaining.removeSubrange(index...index + 1)
                return value
            }
        }
        return nil
    }

    /// Like `option`, parsed as a number within `range`.
    mutating func number<T: LosslessStringConvertible & Comparable>(
        _ name: String, in range: ClosedRange<T>
    ) throws -> T? {
        guard let text = try option(name) else { return nil }
        guard let value = T(text), range.contains(value) else {
            throw UsageError(message: "\(name) wants a number from \(range.lowerBound) to \(range.upperBound), got '\(text)'")
        }
        return value
    }

    /// Removes everything after `--` (the command to run, for example).
    mutating func afterDoubleDash() -> [String]? {
        guard let index = remaining.firstIndex(of: "--") else { return nil }
        let rest = Array(remaining[(index + 1)...])
        remaining.removeSubrange(index...)
        return rest
    }

    /// The next positional argument; an unknown `-option` is a usage error.
    mutating func positional(_ what: String) throws -> String {
        guard let index = remaining.firstIndex(where: { !$0.hasPrefix("-") || $0 == "-" }) else {
            if let unknown = remaining.first { throw UsageError(message: "unknown option \(unknown)") }
            throw UsageError(message: "missing \(what)")
        }
        return remaining.remove(at: index)
    }

    /// Fails on anything left over.
    func finish() throws {
        if let extra = remaining.first {
            throw UsageError(message: extra.hasPrefix("-") ? "unknown option \(extra)" : "unexpected argument '\(extra)'")
        }
    }
}

/// Dispatches to a command and turns errors into exit statuses and messages.
struct CommandLineTool {
    var commands: [any Command.Type]

    var overview: String {
        let width = commands.map { $0.name.count }.max() ?? 0
        let lines = commands.map { "  \($0.name.padding(toLength: width, withPad: " ", startingAt: 0))  \($0.summary)" }
        return """
        coldstart: where did the time go between process creation and "ready"?

        Usage: coldstart COMMAND [ARGS…]   (coldstart COMMAND --help for details)

        Commands:
        \(lines.joined(separator: "\n"))

        Profile an app linked with the Coldstart library by running it with
        COLDSTART=1 (see README.md). Exit status: 0 success, 1 failure, 2 usage error.
        """
    }

    func run(_ argv: [String]) -> Int32 {
        guard let first = argv.first else {
            printError(overview)
            return ExitStatus.usage
        }
        if first == "--help" || first == "-h" || first == "help" {
            print(overview)
            return ExitStatus.success
        }
        guard let command = commands.first(where: { $0.name == first }) else {
            printError("coldstart: unknown command '\(first)'. Run 'coldstart --help' for the list.")
            return ExitStatus.usage
        }
        var arguments = Arguments(Array(argv.dropFirst()))
        if arguments.flag("--help", "-h") {
            print(command.help)
            return ExitStatus.success
        }
        do {
            return try command.run(&arguments)
        } catch let error as UsageError {
            printError("coldstart \(command.name): \(error.message)\nRun 'coldstart \(command.name) --help' for usage.")
            return ExitStatus.usage
        } catch let error as CommandError {
            printError("coldstart \(command.name): \(error.message)")
            return ExitStatus.failure
        } catch let error as TimelineErrorDescribing {
            printError("coldstart \(command.name): \(error.lineDescription)")
            return ExitStatus.failure
        } catch {
            printError("coldstart \(command.name): \(error)")
            return ExitStatus.failure
        }
    }
}

/// Errors that already read as one line naming their file.
protocol TimelineErrorDescribing: Error { var lineDescription: String { get } }

/// The CLI's one way to standard error; `terminator: ""` for a progress line.
func printError(_ text: String, terminator: String = "\n") {
    FileHandle.standardError.write(Data((text + terminator).utf8))
}

import ColdstartAnalysis

extension TimelineError: TimelineErrorDescribing {
    var lineDescription: String { description }
}
