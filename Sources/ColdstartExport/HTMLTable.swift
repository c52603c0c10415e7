import ColdstartAnalysis
import ColdstartText
import Foundation

/// A table whose numeric cells carry their exact value (`data-v`), so the
/// page's script sorts by number; it reads the same without the script.
struct HTMLTable {
    enum Column {
        case text(String)
        case number(String)
    }

    enum Cell {
        case text(String, title: String? = nil)
        /// One function's (or global's) name: as a person reads it
        /// (`LaunchReport.functionName`, the text report's), clipped to
        /// `nameWidth` characters so that no two names of its column read
        /// the same (`Table.clipDistinct`), the whole name as tooltip.
        case function(String)
        /// Long text of names (a list, a path), wrapped, never clipped.
        case name(String)
        case ms(Double)
        case percent(Double, decimals: Int = 1)
        case count(Int)
        case missing
    }

    var columns: [Column]
    var rows: [[Cell]] = []
    /// A function cell's characters at most: what `td.fn` shows whole.
    static let nameWidth = 64

    mutating func row(_ cells: [Cell]) { rows.append(cells) }

    func render(caption: String?, empty: String = "no rows") -> String {
        var html = "<div class=\"wrap\"><table class=\"sortable\"><thead><tr>"
        for column in columns {
            switch column {
            case .text(let title): html += "<th>\(Self.escape(title))</th>"
            case .number(let title): html += "<th class=\"num\">\(Self.escape(title))</th>"
            }
        }
        html += "</tr></thead><tbody>"
        if rows.isEmpty { html += "<tr><td colspan=\"\(columns.count)\" class=\"dim\">\(Self.escape(empty))</td></tr>" }
        let shown = shownFunctionNames()
        for (rowIndex, row) in rows.enumerated() {
            html += "<tr>"
            for (columnIndex, cell) in row.enumerated() {
                switch cell {
                case .text(let text, let title):
                    html += title.map { "<td title=\"\(Self.escape($0))\">" } ?? "<td>"
                    html += Self.escape(text) + "</td>"
                case .function(let name):
                    html += "<td class=\"fn\" title=\"\(Self.escape(name))\">\(Self.escape(shown[columnIndex]?[rowIndex] ?? name))</td>"
                case .name(let name):
                    html += "<td class=\"name\">\(Self.escape(name))</td>"
                case .ms(let value): html += number(value, fixed(value, 2))
                case .percent(let value, let decimals): html += number(value, fixed(value, decimals) + "%")
                case .count(let value): html += number(Double(value), String(value))
                case .missing: html += "<td class=\"num\" data-v=\"-1\">–</td>"
                }
            }
            html += "</tr>"
        }
        html += "</tbody></table></div>\n"
        if let caption { html += "<p class=\"caption\">\(Self.escape(caption))</p>\n" }
        return html
    }

    /// Per column of function cells, each row's name as shown.
    private func shownFunctionNames() -> [Int: [Int: String]] {
        var shown: [Int: [Int: String]] = [:]
        for column in columns.indices {
            let cells = rows.indices.compactMap { row -> (Int, String)? in
                guard column < rows[row].count, case .function(let name) = rows[row][column] else { return nil }
                return (row, LaunchReport.functionName(name))
            }
            guard !cells.isEmpty else { continue }
            shown[column] = Dictionary(uniqueKeysWithValues: zip(cells.map(\.0), Table.clipDistinct(cells.map(\.1), to: Self.nameWidth)))
        }
        return shown
    }

    private func number(_ value: Double, _ text: String) -> String {
        "<td class=\"num\" data-v=\"\(value.isFinite ? String(value) : "0")\">\(text)</td>"
    }

    /// Text for HTML content and attributes. `//` is broken up, and so is
    /// anything else that reads like a reference, so no text from the
    /// timeline can look like one.
    static func escape(_ text: String) -> String {
        let scalars = Array(text.unicodeScalars)
        var escaped = String.UnicodeScalarView()
        for (index, scalar) in scalars.enumerated() {
            let entity: String?
            switch scalar {
            case "&": entity = "&amp;"
            case "<": entity = "&lt;"
            case ">": entity = "&gt;"
            case "\"": entity = "&quot;"
            case "'": entity = "&#39;"
            case "/" where index > 0 && scalars[index - 1] == "/": entity = "&#47;"
            case _ where JSONText.looksLikeReference(scalars, at: index): entity = "&#\(scalar.value);"
            case _ where scalar.properties.generalCategory == .control: entity = "?"
            default: entity = nil
            }
            if let entity { escaped += entity.unicodeScalars } else { escaped.append(scalar) }
        }
        return String(escaped)
    }
}
