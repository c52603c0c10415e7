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
    /// True when the first non-option argument starts a command line of its
    /// own (`coldstart run ./app --help`): help flags after it are the app's.
    static var takesCommandLine: Bool { get }
}

extension Command {
    static var takesCommandLine: Bool { false }
}

/// Wrong arguments: exit status 2, with a hint to use --help.
struct UsageError: Error { var message: String }

/// The command could not do its job (bad input file, failed spawn): exit 1,
/// or the status a command gives such a failure (compare: 2, "cannot
/// compare", apart from its gate's 1).
struct CommandError: Error {
    var message: String
    var status: Int32 = ExitStatus.failure
}

/// Exit statuses shared by every command.
enum ExitStatus {
    static let success: Int32 = 0
    static let failure: Int32 = 1
    static let usage: Int32 = 2
}

/// A cursor over the arguments of one command.
struct Arguments {
    private(set) var remaining: [String]
    /// The options the command's help lists: what a mistyped one is compared
    /// with, and which take a value.
    let known: HelpText

    init(_ arguments: [String], help: HelpText = HelpText("")) {
        remaining = arguments
        known = help
    }

    /// Whether `--help` or `-h` is among the command's own arguments.
    func asksForHelp(stoppingAtPositional: Bool) -> Bool {
        remaining[..<ownArgumentsEnd(commandLine: stoppingAtPositional)].contains { $0 == "--help" || $0 == "-h" }
    }

    /// Removes the command line to run: everything after `--`, or else from
    /// the first argument that is neither an option nor an option's value
    /// (hyperfine's and env's convention). Nil when there is none.
    mutating func commandLine() -> [String]? {
        let end = ownArgumentsEnd(commandLine: true)
        guard end < remaining.count else { return nil }
        let rest = Array(remaining[(remaining[end] == "--" ? end + 1 : end)...])
        remaining.removeSubrange(end...)
        return rest
    }

    /// Where the command's own arguments end: at `--`, or, when it takes a
    /// command line, at the first argument that is neither an option nor an
    /// option's value. `-n --` and a trailing `-n` are left for `option` to
    /// report as a missing value.
    private func ownArgumentsEnd(commandLine: Bool) -> Int {
        var index = 0
        while index < remaining.count {
            let argument = remaining[index]
            if argument == "--" { return index }
            if known.valueOptions.contains(argument) {
                index += index + 1 < remaining.count && remaining[index + 1] != "--" ? 2 : 1
                continue
            }
            if commandLine && (!argument.hasPrefix("-") || argument == "-") { return index }
            index += 1
        }
        return index
    }

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
                guard index + 1 < remaining.count, remaining[index + 1] != "--" else {
                    throw UsageError(message: "\(argument) needs a value")
                }
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

    /// The next positional argument; an unknown `-option` is a usage error.
    mutating func positional(_ what: String) throws -> String {
        guard let index = remaining.firstIndex(where: { !$0.hasPrefix("-") || $0 == "-" }) else {
            if let unknown = remaining.first { throw unknownOption(unknown) }
            throw UsageError(message: "missing \(what)")
        }
        return remaining.remove(at: index)
    }

    /// Fails on anything left over.
    func finish() throws {
        if let extra = remaining.first {
            throw extra.hasPrefix("-") ? unknownOption(extra) : UsageError(message: "unexpected argument '\(extra)'")
        }
    }

    private func unknownOption(_ option: String) -> UsageError {
        let name = option.split(separator: "=", maxSplits: 1).first.map(String.init) ?? option
        let hint = closest(to: name, among: known.optionNames).map { "; did you mean \($0)?" } ?? ""
        return UsageError(message: "unknown option \(option)\(hint)")
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
               coldstart --version

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
        if first == "--version" || first == "-V" {
            return printing("coldstart") { try StandardOutput.print(Version.text()) }
        }
        if first == "--help" || first == "-h" || first == "help" {
            let command = argv.count > 1 ? commands.first(where: { $0.name == argv[1] }) : nil
            return printing("coldstart") { try StandardOutput.print(command?.help ?? overview) }
        }
        guard let command = commands.first(where: { $0.name == first }) else {
            let isOption = first.hasPrefix("-")
            let candidates = isOption ? ["--help", "--version"] : commands.map { $0.name }
            let kind = isOption ? "option" : "command"
            var message = "coldstart: unknown \(kind) '\(first)'. Run 'coldstart --help' for the list."
            if let similar = closest(to: first, among: candidates) {
                message += "\n\nThe most similar \(kind) is\n\t\(similar)"
            }
            printError(message)
            return ExitStatus.usage
        }
        var arguments = Arguments(Array(argv.dropFirst()), help: HelpText(command.help))
        if arguments.asksForHelp(stoppingAtPositional: command.takesCommandLine) {
            return printing("coldstart \(command.name)") { try StandardOutput.print(command.help) }
        }
        do {
            return try command.run(&arguments)
        } catch let error as UsageError {
            printError("coldstart \(command.name): \(error.message)\nRun 'coldstart \(command.name) --help' for usage.")
            return ExitStatus.usage
        } catch let error as CommandError {
            printError("coldstart \(command.name): \(error.message)")
            return error.status
        } catch let error as StandardOutput.WriteError {
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

    /// Help and version text: exit 0 once it is all written, else one line
    /// and 1.
    private func printing(_ prefix: String, _ body: () throws -> Void) -> Int32 {
        do {
            try body()
            return ExitStatus.success
        } catch let error as StandardOutput.WriteError {
            printError("\(prefix): \(error.message)")
        } catch {
            printError("\(prefix): \(error)")
        }
        return ExitStatus.failure
    }
}

/// Errors that already read as one line naming their file.
protocol TimelineErrorDescribing: Error { var lineDescription: String { get } }

/// The CLI's one way to standard error; `terminator: ""` for a progress line.
/// A closed or full stderr loses the line, nothing more: there is nowhere
/// left to say so, and the exit status still tells.
func printError(_ text: String, terminator: String = "\n") {
    _ = Data((text + terminator).utf8).withUnsafeBytes { StandardOutput.writeAll(STDERR_FILENO, $0) }
}

import ColdstartAnalysis

extension TimelineError: TimelineErrorDescribing {
    var lineDescription: String { description }
}
