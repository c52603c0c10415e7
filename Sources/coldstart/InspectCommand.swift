import ColdstartAnalysis
import Foundation

/// `coldstart inspect BINARY`: the start-up a binary will have, read from
/// its ELF files without running it; with `--allow`, a CI gate on its
/// libraries and initializers.
enum InspectCommand: Command {
    static let name = "inspect"
    static let summary = "Read a binary's start-up from its ELF files, without running it; gate CI on an allow-list"
    static let help = """
    Usage: coldstart inspect BINARY [--json] [--library-path DIRS]
           coldstart inspect BINARY --write-allow FILE
           coldstart inspect BINARY [--allow FILE] [--max-libraries N] [--json]

    Reads BINARY and every library it would load, as the dynamic loader
    would find them (DT_NEEDED through DT_RPATH, LD_LIBRARY_PATH, DT_RUNPATH
    with $ORIGIN, /etc/ld.so.cache and the default directories, breadth
    first), and prints, without running anything:
      - the load order, with each library's path and who needs it, and each
        name no directory held ("NOT FOUND");
      - every initializer, in the order the loader runs them: the
        executable's DT_PREINIT_ARRAY, each object's DT_INIT and
        DT_INIT_ARRAY entries named from .symtab/.dynsym (C++ static
        constructors as "static constructors of FILE", names demangled);
      - per object: symbolic relocations, the symbol look-ups they take at
        start-up, relative relocations and PLT slots (the same counts
        `coldstart report` gives for a launch), and its Swift metadata:
        protocol-conformance records, type-metadata records and the other
        swift5_* sections;
      - estimates where a relation was measured (docs/inspect.md): the
        loader's relocation time from the look-ups, and the time of one
        uncached conformance check from the conformance records.
    x86_64 and aarch64 ELF files are read on either machine.

    The allow-list gate (docs/ci.md): --write-allow records today's
    libraries and initializers in a sorted text file, one per line with a
    comment saying what it is, to commit and review; --allow checks the
    binary against it and names each library or initializer not on it.

    Options:
      --json               Print the inspection (or, with --allow or
                           --max-libraries, the gate) as JSON.
      --library-path DIRS  Search DIRS (colon-separated) where the loader
                           would search LD_LIBRARY_PATH (default: $LD_LIBRARY_PATH).
      --write-allow FILE   Write the allow-list of today's libraries and
                           initializers to FILE ("-": standard output).
      --allow FILE         Fail (exit 1) on each library or initializer
                           that FILE does not list, or a library not found.
      --max-libraries N    Fail (exit 1) when more than N libraries are
                           loaded (the dynamic loader counts as one).
      --help               Show this text.

    Exit status: 0 printed, written, or the gate passed; 1 the gate failed,
    or BINARY or FILE is unreadable; 2 wrong arguments.
    """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        let json = arguments.flag("--json")
        let libraryPath = try arguments.option("--library-path")
        let writeAllow = try arguments.option("--write-allow")
        let allow = try arguments.option("--allow")
        let maxLibraries: Int? = try arguments.number("--max-libraries", in: 0...1_000_000)
        let binary = try arguments.positional("BINARY (an ELF executable or library)")
        try arguments.finish()
        if writeAllow != nil, allow != nil || maxLibraries != nil || json {
            throw UsageError(message: "--write-allow writes the list; check it in another run with --allow")
        }
        let inspection: StaticInspection
        do {
            inspection = try StaticInspection(
                executable: binary, libraryPath: libraryPath ?? ProcessInfo.processInfo.environment["LD_LIBRARY_PATH"])
        } catch {
            throw CommandError(message: "\(error)")
        }
        let binaryName = (binary as NSString).lastPathComponent
        if let writeAllow {
            let text = AllowList.text(for: inspection, binaryName: binaryName)
            try OutputFile.write(Data(text.utf8), to: writeAllow, from: binary)
            let list = AllowList(inspection)
            if writeAllow != "-" {
                let libraries = list.entries.filter { $0.kind == .library }.count
                try StandardOutput.print("\(writeAllow): allow-list of \(libraries) libraries and \(list.entries.count - libraries) initializers of \(binaryName)")
            }
            for library in inspection.missing {
                printError("coldstart inspect: warning: \(library.name) (needed by \(library.neededBy)) was not found; its initializers are not listed")
            }
            return ExitStatus.success
        }
        if allow != nil || maxLibraries != nil {
            var list: AllowList?
            if let allow {
                guard let data = FileManager.default.contents(atPath: allow) else {
                    throw CommandError(message: "\(allow): cannot read the allow-list")
                }
                do {
                    list = try AllowList(text: String(decoding: data, as: UTF8.self), file: allow)
                } catch let error as AllowList.ParseError {
                    throw CommandError(message: error.description)
                }
            }
            let check = AllowList.check(inspection, against: list, maxLibraries: maxLibraries)
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                try StandardOutput.write(try encoder.encode(check) + Data("\n".utf8))
            } else {
                try StandardOutput.print(check.text, terminator: "")
            }
            return check.passed ? ExitStatus.success : ExitStatus.failure
        }
        try StandardOutput.write(json ? try inspection.jsonData() : Data(inspection.text(style: Terminal.style()).utf8))
        return ExitStatus.success
    }
}
