/// How the text report is laid out for where it goes: a terminal's width and
/// whether it shows colour. The CLI decides (a TTY, `COLUMNS`, `NO_COLOR`);
/// the renderer only obeys, so the same report renders the same way in tests.
package struct TextStyle: Sendable {
    /// Columns available; nil: no limit (a file or a pipe keeps whole names).
    package var width: Int?
    /// ANSI colour and bold.
    package var color: Bool

    package init(width: Int? = nil, color: Bool = false) {
        self.width = width.map { max($0, 40) }
        self.color = color
    }

    /// One finished line, coloured by what it is: section titles bold, the
    /// completion verdict green or red, waterfall bars cyan, warnings yellow.
    /// Colour is added after layout, so it never changes a column's width.
    func colored(_ line: String) -> String {
        guard color, !line.isEmpty else { return line }
        var line = line
        if line.contains("█") {
            line = line.replacingOccurrences(of: "█+", with: "\u{1B}[36m$0\u{1B}[39m", options: .regularExpression)
        }
        if line.contains("NOT completed") {
            line = line.replacingOccurrences(of: "NOT completed", with: "\u{1B}[1;31mNOT completed\u{1B}[22;39m")
        } else if line.hasPrefix("Launch: completed") {
            line = "Launch: \u{1B}[32m" + line.dropFirst("Launch: ".count) + "\u{1B}[39m"
        }
        if line.contains("warning:") {
            line = line.replacingOccurrences(of: "warning:", with: "\u{1B}[33mwarning:\u{1B}[39m")
        }
        if let first = line.first, first != " " {
            line = "\u{1B}[1m" + line + "\u{1B}[22m"
        }
        return line
    }
}
