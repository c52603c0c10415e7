import Foundation

/// A command's `--help` text read back as structure. The help text is the one
/// source: the options it lists are what argument errors suggest, where help
/// flags stop being looked for, and what the shell completions and the man
/// page offer, so none of them can drift from what `--help` says.
///
/// The format every command's help follows: a `Usage:` block, paragraphs, and
/// an `Options:` block whose entries start with two spaces and a dash:
/// `  -n, --name VALUE   description`, continued on lines indented further.
struct HelpText {
    struct Option: Equatable {
        /// `["-o", "--output"]`.
        var names: [String]
        /// The value's placeholder (`RUNS`), nil for a flag.
        var value: String?
        var description: String
    }

    enum Block: Equatable {
        /// Lines shown as they are (usage, lists, examples).
        case verbatim([String])
        case options([Option])
    }

    var blocks: [Block]

    var options: [Option] {
        blocks.flatMap { block -> [Option] in
            if case .options(let options) = block { return options }
            return []
        }
    }

    /// Every option name, `--help` included.
    var optionNames: [String] { options.flatMap(\.names) }

    /// The names of options that take a value.
    var valueOptions: Set<String> { Set(options.filter { $0.value != nil }.flatMap(\.names)) }

    init(_ text: String) {
        var blocks: [Block] = []
        var verbatim: [String] = []
        var options: [Option]?
        func flush() {
            if !verbatim.isEmpty { blocks.append(.verbatim(verbatim)); verbatim = [] }
            if let list = options, !list.isEmpty { blocks.append(.options(list)) }
            options = nil
        }
        for line in text.components(separatedBy: "\n") {
            if line == "Options:" {
                verbatim.append(line)
                flush()
                options = []
                continue
            }
            if options != nil {
                if let option = Self.optionLine(line) {
                    options!.append(option)
                    continue
                }
                if line.hasPrefix("    "), !options!.isEmpty {
                    options![options!.count - 1].description += " " + line.trimmingCharacters(in: .whitespaces)
                    continue
                }
                flush()
            }
            verbatim.append(line)
        }
        flush()
        self.blocks = blocks
    }

    /// `  -o, --output OUT   Write …` → names, value and description.
    private static func optionLine(_ line: String) -> Option? {
        guard line.hasPrefix("  -") else { return nil }
        let body = line.dropFirst(2)
        // Names and value end at the first run of two spaces.
        let head: Substring, description: String
        if let gap = body.range(of: "  ") {
            head = body[..<gap.lowerBound]
            description = body[gap.upperBound...].trimmingCharacters(in: .whitespaces)
        } else {
            head = body
            description = ""
        }
        var names: [String] = []
        var value: String?
        for word in head.split(separator: " ") {
            let token = word.hasSuffix(",") ? String(word.dropLast()) : String(word)
            if token.hasPrefix("-") { names.append(token) } else { value = (value.map { $0 + " " } ?? "") + token }
        }
        return names.isEmpty ? nil : Option(names: names, value: value, description: description)
    }
}

/// The candidate closest to `word` in edit distance, when close enough to be
/// a typo (at most a third of the word, and at least 1, edits away), as git
/// suggests for a mistyped command.
func closest(to word: String, among candidates: [String]) -> String? {
    let limit = max(1, word.count / 3)
    let scored = candidates.map { ($0, editDistance(word, $0)) }.filter { $0.1 <= limit }
    return scored.min { $0.1 < $1.1 }?.0
}

/// Levenshtein distance with adjacent transpositions counting one edit
/// (`reprot` is one edit from `report`).
func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a), b = Array(b)
    guard !a.isEmpty else { return b.count }
    guard !b.isEmpty else { return a.count }
    var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
    for i in 0...a.count { d[i][0] = i }
    for j in 0...b.count { d[0][j] = j }
    for i in 1...a.count {
        for j in 1...b.count {
            let cost = a[i - 1] == b[j - 1] ? 0 : 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1) }
        }
    }
    return d[a.count][b.count]
}
