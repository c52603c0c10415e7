import Foundation

/// The libraries and initializers a binary is allowed to bring to its
/// start-up: a sorted text file made by `coldstart inspect --write-allow`,
/// reviewed like code, and checked by `coldstart inspect --allow` in CI.
///
/// Each entry is one line, `library NAME` or `initializer OBJECT SYMBOL`,
/// with a comment after `#` saying what it is; blank lines and comment lines
/// are ignored, so the file can be annotated by hand.
package struct AllowList: Equatable, Sendable {
    package struct Entry: Hashable, Comparable, Sendable, CustomStringConvertible {
        package enum Kind: String, Sendable { case library, initializer }
        package var kind: Kind
        /// `libfoo.so.1`, or `libfoo.so.1 foo_init`.
        package var name: String

        package var description: String { "\(kind.rawValue) \(name)" }
        package static func < (a: Entry, b: Entry) -> Bool { (a.kind.rawValue, a.name) < (b.kind.rawValue, b.name) }
    }

    package var entries: Set<Entry>

    /// What `inspection` loads and runs: every library (the loader
    /// included) and every initializer, by object and symbol.
    package init(_ inspection: StaticInspection) {
        entries = Set(Self.described(inspection).map(\.entry))
    }

    /// Each entry with the comment the file gives it.
    private static func described(_ inspection: StaticInspection) -> [(entry: Entry, comment: String)] {
        var lines: [(Entry, String)] = []
        for object in inspection.objects where object.role != .executable {
            let why = object.role == .loader ? "the dynamic loader (PT_INTERP)" : "needed by \(object.neededBy ?? "?")"
            lines.append((Entry(kind: .library, name: object.name), why))
        }
        for object in inspection.objects {
            for initializer in object.initializers {
                let entry = Entry(kind: .initializer, name: "\(object.name) \(initializer.allowName)")
                let comment = "\(initializer.source.rawValue), \(initializer.kind.rawValue)"
                    + (initializer.displayName == initializer.symbol ? "" : ": \(initializer.displayName)")
                lines.append((entry, comment))
            }
        }
        // An initializer listed twice (two array entries naming one symbol) is one line.
        var seen = Set<Entry>()
        return lines.filter { seen.insert($0.0).inserted }.map { (entry: $0.0, comment: $0.1) }
    }

    /// The file's text for `inspection`: a header saying what the lines
    /// are, then the libraries and the initializers, each sorted.
    package static func text(for inspection: StaticInspection, binaryName: String) -> String {
        let lines = described(inspection).sorted { $0.entry < $1.entry }
        let width = min(72, lines.map { $0.entry.description.count }.max() ?? 0)
        func line(_ item: (entry: Entry, comment: String)) -> String {
            item.entry.description.padding(toLength: max(width, item.entry.description.count), withPad: " ", startingAt: 0) + "  # " + item.comment
        }
        let libraries = lines.filter { $0.entry.kind == .library }, initializers = lines.filter { $0.entry.kind == .initializer }
        return """
        # coldstart allow-list for \(binaryName): what it loads and runs before main.
        # `coldstart inspect BINARY --allow FILE` fails (exit 1) on a library or
        # initializer that is not listed here; `--write-allow FILE` rewrites it.
        # Review a change to this file as you would a change to the code.
        #   library NAME               a shared library the loader maps (as DT_NEEDED names it)
        #   initializer OBJECT SYMBOL  a function the loader calls before main: an entry of
        #                              OBJECT's DT_PREINIT_ARRAY, DT_INIT or DT_INIT_ARRAY, by
        #                              its symbol (or its place in the array when unnamed)
        # Text after # is a comment; the gate reads the first words of each line.

        # libraries (\(libraries.count))
        \(libraries.map(line).joined(separator: "\n"))

        # initializers (\(initializers.count))
        \(initializers.map(line).joined(separator: "\n"))

        """
    }

    package struct ParseError: Error, CustomStringConvertible {
        package var description: String
    }

    /// Reads a file's text; throws for a line that is neither an entry, a
    /// comment nor blank, naming its number.
    package init(text: String, file: String) throws {
        entries = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let content = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let words = content.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).map(String.init)
            guard let first = words.first else { continue }
            switch (first, words.count) {
            case ("library", 2): entries.insert(Entry(kind: .library, name: words[1]))
            case ("initializer", 3): entries.insert(Entry(kind: .initializer, name: "\(words[1]) \(words[2])"))
            default:
                throw ParseError(description: "\(file):\(number + 1): expected 'library NAME' or 'initializer OBJECT SYMBOL', got '\(raw)'")
            }
        }
    }

    /// The gate: what `inspection` brings that `list` does not allow (nil:
    /// only the library count is checked), and the count against `maxLibraries`.
    package static func check(_ inspection: StaticInspection, against list: AllowList?, maxLibraries: Int?) -> AllowListCheck {
        let found = described(inspection)
        let current = Set(found.map(\.entry))
        let comments = Dictionary(found.map { ($0.entry, $0.comment) }) { first, _ in first }
        let allowed = list?.entries ?? current
        let unlisted = current.subtracting(allowed).sorted().map { AllowListCheck.Item(entry: $0.description, comment: comments[$0] ?? "") }
        let libraries = inspection.objects.filter { $0.role != .executable }.count
        return AllowListCheck(unlisted: unlisted, gone: allowed.subtracting(current).sorted().map(\.description),
                              missing: inspection.missing, libraries: libraries, maxLibraries: maxLibraries)
    }
}

/// The outcome of `AllowList.check`.
package struct AllowListCheck: Codable, Sendable {
    package struct Item: Codable, Sendable, Equatable {
        /// The line the list would need (`library libfoo.so.1`).
        package var entry: String
        package var comment: String
    }

    /// Loaded or run, but not on the list: each fails the gate.
    package var unlisted: [Item]
    /// On the list, but no longer loaded or run: the list can shrink.
    package var gone: [String]
    /// Libraries no search path held: the gate cannot see what they bring.
    package var missing: [StaticInspection.MissingLibrary]
    /// Libraries loaded (the loader included), and the bound `--max-libraries` set.
    package var libraries: Int
    package var maxLibraries: Int?

    package var overLimit: Bool { maxLibraries.map { libraries > $0 } ?? false }
    package var passed: Bool { unlisted.isEmpty && missing.isEmpty && !overLimit }
}
