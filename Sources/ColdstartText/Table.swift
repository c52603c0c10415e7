import ColdstartAnalysis
import Foundation

/// A text table: columns padded to their widest cell, counted in characters.
package struct Table {
    package enum Alignment { case left, right }
    package struct Column {
        var title: String
        var alignment: Alignment
        /// Left out, rightmost first, when the table cannot fit otherwise.
        var droppable: Bool
        /// The widest the column gets, at any width (a function's name in a
        /// file): its cells are clipped as for a narrow terminal.
        var limit: Int?
        package init(_ title: String, _ alignment: Alignment, droppable: Bool = false, limit: Int? = nil) {
            self.title = title
            self.alignment = alignment
            self.droppable = droppable
            self.limit = limit
        }
    }

    var columns: [Column]
    var rows: [[String]] = []
    /// The column narrowed to fit a width; by default the widest left-aligned one.
    var flexible: Int?

    package init(columns: [Column], flexible: Int? = nil) {
        self.columns = columns
        self.flexible = flexible
    }

    package mutating func add(_ row: [String]) { rows.append(row) }

    /// The header and rows. With `width`, a line that would be wider first
    /// loses characters from its name column (`flexible`, by default the
    /// widest left-aligned one) down to 24, then its droppable columns
    /// (rightmost first), then every left-aligned column shrinks to 12.
    package func render(width maxWidth: Int? = nil) -> [String] {
        var shown = Array(columns.indices)
        var widths = columns.indices.map { index in
            min(([columns[index].title] + rows.map { $0[index] }).map(\.count).max() ?? 0, columns[index].limit ?? .max)
        }
        if let maxWidth {
            func total() -> Int { 2 + shown.map { widths[$0] }.reduce(0, +) + 2 * max(shown.count - 1, 0) }
            func shrink(_ column: Int, floor: Int) {
                let excess = total() - maxWidth
                guard excess > 0 else { return }
                widths[column] = max(widths[column] - excess, min(widths[column], max(floor, columns[column].title.count)))
            }
            let left = columns.indices.filter { columns[$0].alignment == .left }
            let flexible = self.flexible ?? left.max { widths[$0] < widths[$1] }
            if let flexible { shrink(flexible, floor: 24) }
            while total() > maxWidth, let drop = shown.last(where: { columns[$0].droppable }) {
                shown.removeAll { $0 == drop }
                let natural = min(([columns[flexible ?? drop].title] + rows.map { $0[flexible ?? drop] }).map(\.count).max() ?? 0,
                                  columns[flexible ?? drop].limit ?? .max)
                if let flexible { widths[flexible] = natural; shrink(flexible, floor: 24) }
            }
            for column in left.sorted(by: { widths[$0] > widths[$1] }) where column != flexible { shrink(column, floor: 12) }
            if let flexible { shrink(flexible, floor: 12) }
        }
        let cells = [columns.map(\.title)] + rows
        let clippedColumns = columns.indices.map { index in Self.clipDistinct(cells.map { $0[index] }, to: widths[index]) }
        func line(_ row: Int) -> String {
            let padded = shown.map { index in
                let clipped = clippedColumns[index][row]
                let fill = String(repeating: " ", count: widths[index] - clipped.count)
                return columns[index].alignment == .left ? clipped + fill : fill + clipped
            }
            return ("  " + padded.joined(separator: "  ")).replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }
        return cells.indices.map(line)
    }

    /// `cells` each in `width` characters, where two different cells never
    /// read the same: clipping can make two functions one text (two
    /// overloads whose arguments fold to `(…)`), and those are numbered in
    /// the order they first appear (`… #1`, `… #2`), clipped a little more.
    /// `clip` shortens one text (by default a function name's way).
    package static func clipDistinct(_ cells: [String], to width: Int, clip: (String, Int) -> String = Table.clip) -> [String] {
        var clipped = cells.map { $0.count > width ? clip($0, width) : $0 }
        var originals: [String: [String]] = [:]
        for (cell, text) in zip(cells, clipped) where !(originals[text]?.contains(cell) ?? false) {
            originals[text, default: []].append(cell)
        }
        for index in clipped.indices {
            guard let sources = originals[clipped[index]], sources.count > 1,
                  let number = sources.firstIndex(of: cells[index]) else { continue }
            let suffix = " #\(number + 1)"
            clipped[index] = clip(cells[index], max(width - suffix.count, 1)) + suffix
        }
        return clipped
    }

    /// `text` in `width` characters. A function name loses the contents of
    /// its parenthesised groups first (`M.f(a: Int) -> T` → `M.f(…) -> T`;
    /// C++'s `(anonymous namespace)::C::C(int)` → `(…)::C::C(…)`), then its
    /// result, then characters from the left (`…f(…)`), so the end that tells
    /// two functions apart (a C++ lambda's `{lambda(…)#1}::operator()` after
    /// its enclosing function's name) is kept.
    package static func clip(_ text: String, to width: Int) -> String {
        // No more characters than bytes: counting them is only needed when
        // the bytes are over.
        guard text.utf8.count > width, text.count > width else { return text }
        var collapsed = ""
        var depth = 0
        for character in text {
            switch character {
            case "(":
                if depth == 0 { collapsed.append("(") }
                depth += 1
            case ")" where depth > 0:
                depth -= 1
                if depth == 0 { collapsed.append(")") }
            default:
                if depth == 0 {
                    collapsed.append(character)
                } else if !collapsed.hasSuffix("…") {
                    collapsed.append("…")
                }
            }
        }
        guard collapsed.contains("(") else { return String(text.prefix(max(width - 1, 0))) + "…" }
        if collapsed.count <= width { return collapsed }
        // A result type never holds " in ": the arrow before one is a closure's, inside the name.
        var signature = collapsed
        if let arrow = collapsed.range(of: " -> ", options: .backwards), !collapsed[arrow.upperBound...].contains(" in ") {
            signature = String(collapsed[..<arrow.lowerBound])
        }
        if signature.count <= width { return signature }
        return "…" + signature.suffix(max(width - 1, 0))
    }
}
