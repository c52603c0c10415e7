import Foundation

/// `coldstart completion bash|zsh|fish`: a completion script made from the
/// commands' help texts.
enum CompletionCommand: Command {
    static let name = "completion"
    static let summary = "Print a shell completion script (bash, zsh or fish)"
    static let help = """
    Usage: coldstart completion bash|zsh|fish

    Prints a completion script for the shell: command names, each command's
    options (from its --help text), file names for files, and for `run` the
    app's own command line. To use it now:
      bash:  source <(coldstart completion bash)
      zsh:   source <(coldstart completion zsh)
      fish:  coldstart completion fish | source
    `make install` installs all three where the shells look for them.

    Options:
      -h, --help  Show this text.
    """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        let shell = try arguments.positional("the shell: bash, zsh or fish")
        try arguments.finish()
        let script = ShellScripts(commands: commands)
        switch shell {
        case "bash": try StandardOutput.print(script.bash(), terminator: "")
        case "zsh": try StandardOutput.print(script.zsh(), terminator: "")
        case "fish": try StandardOutput.print(script.fish(), terminator: "")
        default:
            let hint = closest(to: shell, among: ["bash", "zsh", "fish"]).map { "; did you mean \($0)?" } ?? ""
            throw UsageError(message: "no completion for '\(shell)': bash, zsh or fish\(hint)")
        }
        return ExitStatus.success
    }
}

/// `coldstart man`: the manual page, in roff, made from the help texts.
enum ManCommand: Command {
    static let name = "man"
    static let summary = "Print the manual page (roff), made from every command's --help"
    static let help = """
    Usage: coldstart man

    Prints coldstart(1) in roff: the overview and every command's --help text.
    Read it with `coldstart man | man -l -`; `make install` installs it as
    share/man/man1/coldstart.1.

    Options:
      -h, --help  Show this text.
    """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        try arguments.finish()
        try StandardOutput.print(ShellScripts(commands: commands).manPage(), terminator: "")
        return ExitStatus.success
    }
}

/// The completion scripts and the man page for a list of commands.
struct ShellScripts {
    var commands: [any Command.Type]

    private var helps: [(command: any Command.Type, help: HelpText)] {
        commands.map { ($0, HelpText($0.help)) }
    }

    /// The first sentence of an option's description, short enough for a
    /// completion menu.
    private static func brief(_ text: String) -> String {
        var sentence = text.components(separatedBy: ". ").first ?? text
        if sentence.hasSuffix(".") { sentence.removeLast() }
        if sentence.count > 70 { sentence = String(sentence.prefix(69)) + "…" }
        return sentence
    }

    /// `text` inside single quotes for bash and zsh.
    private static func quoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// `text` inside single quotes for fish, where `\\` and `\'` are escapes.
    private static func fishQuoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }

    // MARK: bash

    func bash() -> String {
        var cases: [String] = []
        for (command, help) in helps {
            let options = help.optionNames.joined(separator: " ")
            let values = help.valueOptions.sorted().joined(separator: " ")
            cases.append("        \(command.name)) options=\(Self.quoted(options)); values=\(Self.quoted(values)) ;;")
        }
        let names = (commands.map { $0.name } + ["--help", "--version"]).joined(separator: " ")
        let runners = commands.filter { $0.takesCommandLine }.map { $0.name }.joined(separator: "|")
        return """
        # bash completion for coldstart (made by `coldstart completion bash` from its --help texts)
        _coldstart() {
            local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
            if [ "$COMP_CWORD" -eq 1 ]; then
                mapfile -t COMPREPLY < <(compgen -W \(Self.quoted(names)) -- "$cur")
                return
            fi
            local command=${COMP_WORDS[1]} options= values=
            case $command in
        \(cases.joined(separator: "\n"))
                *) return ;;
            esac
            case $command in
                \(runners.isEmpty ? "__none__" : runners))
                    # From the app's name on, the words are the app's command line.
                    local i=2 word
                    while [ "$i" -lt "$COMP_CWORD" ]; do
                        word=${COMP_WORDS[i]}
                        if [ "$word" = -- ]; then i=$((i + 1)); break; fi
                        case " $values " in *" $word "*) i=$((i + 2)); continue ;; esac
                        case $word in -*) i=$((i + 1)) ;; *) break ;; esac
                    done
                    if [ "$i" -lt "$COMP_CWORD" ]; then
                        if declare -F _command_offset > /dev/null; then _command_offset "$i"; else mapfile -t COMPREPLY < <(compgen -f -- "$cur"); fi
                        return
                    fi ;;
            esac
            case " $values " in *" $prev "*) mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return ;; esac
            if [[ $cur == -* ]]; then
                mapfile -t COMPREPLY < <(compgen -W "$options" -- "$cur")
            else
                mapfile -t COMPREPLY < <(compgen -f -- "$cur")
            fi
        }
        complete -o filenames -F _coldstart coldstart

        """
    }

    // MARK: zsh

    func zsh() -> String {
        func zshText(_ text: String) -> String {
            Self.brief(text).replacingOccurrences(of: "[", with: "(").replacingOccurrences(of: "]", with: ")")
                .replacingOccurrences(of: ":", with: "\\:")
        }
        let described = commands.map { Self.quoted("\($0.name):\(zshText($0.summary))") }.joined(separator: " ")
        var cases: [String] = []
        for (command, help) in helps {
            var specs = help.options.flatMap { option in
                option.names.map { name in
                    Self.quoted("\(name)[\(zshText(option.description))]" + (option.value.map { ":\($0.lowercased()):_files" } ?? ""))
                }
            }
            specs.append(command.takesCommandLine ? Self.quoted("*::command line:_normal") : Self.quoted("*:file:_files"))
            cases.append("        \(command.name)) _arguments -s \(specs.joined(separator: " \\\n            ")) ;;")
        }
        return """
        #compdef coldstart
        # zsh completion for coldstart (made by `coldstart completion zsh` from its --help texts)
        _coldstart() {
            local state line
            local -a commands
            commands=(\(described))
            _arguments -C '(- *)--help[show the overview]' '(- *)--version[show the version]' '1: :->command' '*:: :->arguments'
            case $state in
            command) _describe 'coldstart command' commands ;;
            arguments)
                case $words[1] in
        \(cases.joined(separator: "\n"))
                esac ;;
            esac
        }
        if [ "$funcstack[1]" = _coldstart ]; then _coldstart "$@"; else compdef _coldstart coldstart; fi

        """
    }

    // MARK: fish

    func fish() -> String {
        var lines = [
            "# fish completion for coldstart (made by `coldstart completion fish` from its --help texts)",
            "complete -c coldstart -f",
            "complete -c coldstart -n __fish_use_subcommand -l help -d 'Show the overview'",
            "complete -c coldstart -n __fish_use_subcommand -l version -d 'Show the version'",
        ]
        for (command, help) in helps {
            lines.append("complete -c coldstart -n __fish_use_subcommand -a \(command.name) -d \(Self.fishQuoted(command.summary))")
            let condition = Self.fishQuoted("__fish_seen_subcommand_from \(command.name)")
            for option in help.options {
                let names = option.names.map { $0.hasPrefix("--") ? "-l \($0.dropFirst(2))" : "-s \($0.dropFirst())" }
                let value = option.value == nil ? "" : " -r -F"
                lines.append("complete -c coldstart -n \(condition) \(names.joined(separator: " "))\(value) -d \(Self.fishQuoted(Self.brief(option.description)))")
            }
            lines.append(command.takesCommandLine
                ? "complete -c coldstart -n \(condition) -a '(__fish_complete_subcommand --fcs-skip=2)'"
                : "complete -c coldstart -n \(condition) -F")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    // MARK: man

    func manPage() -> String {
        let overview = CommandLineTool(commands: commands).overview.components(separatedBy: "\n")
        var out = [
            ".\\\" coldstart(1), made by `coldstart man` from the --help texts: edit those, not this.",
            ".TH COLDSTART 1 \"\" \"coldstart \(Version.release)\" \"User Commands\"",
            ".SH NAME",
            "coldstart \\- " + Self.roff(overview[0].replacingOccurrences(of: "coldstart: ", with: "")),
            ".SH SYNOPSIS",
        ]
        out += verbatim(Array(overview.drop { !$0.hasPrefix("Usage:") }.prefix { !$0.isEmpty }))
        out += [".SH DESCRIPTION"]
        out += verbatim(Array(overview.drop { !$0.hasPrefix("Usage:") }.drop { !$0.isEmpty }))
        out += [".SH COMMANDS"]
        for (command, help) in helps {
            out.append(".SS \(command.name)")
            for block in help.blocks {
                switch block {
                case .verbatim(let lines):
                    out += verbatim(lines)
                case .options(let options):
                    for option in options {
                        out.append(".TP")
                        let names = option.names.map { "\\fB" + Self.roff($0) + "\\fR" }.joined(separator: ", ")
                        out.append(names + (option.value.map { " \\fI" + Self.roff($0) + "\\fR" } ?? ""))
                        out.append(Self.roff(option.description))
                    }
                }
            }
        }
        out += [".SH SEE ALSO", "README.md, docs/ci.md, docs/report.md and docs/export.md in Coldstart's source."]
        return out.joined(separator: "\n") + "\n"
    }

    /// Lines kept as they are: usage blocks, lists and examples.
    private func verbatim(_ lines: [String]) -> [String] {
        var lines = lines
        while lines.first?.isEmpty == true { lines.removeFirst() }
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard !lines.isEmpty else { return [] }
        return [".PP", ".nf"] + lines.map { $0.isEmpty ? ".sp" : Self.roff($0) } + [".fi"]
    }

    /// Text safe on a roff line: backslashes, dashes, a leading dot or quote,
    /// and non-ASCII characters (as \[uXXXX], so no input encoding matters).
    static func roff(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\e"
            case "-": out += "\\-"
            case _ where scalar.isASCII: out.unicodeScalars.append(scalar)
            default: out += String(format: "\\[u%04X]", scalar.value)
            }
        }
        if out.hasPrefix(".") || out.hasPrefix("'") { out = "\\&" + out }
        return out
    }
}
