import ColdstartAnalysis
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
        /// A function or global name: long, so clipped with the whole name as tooltip.
        case name(String)
        case ms(Double)
        case percent(Double, decimals: Int = 1)
        case count(Int)
        case missing
    }

    var columns: [Column]
    var rows: [[Cell]] = []

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
        for row in rows {
            html += "<tr>"
            for cell in row {
                switch cell {
                case .text(let text, let title):
                    html += title.map { "<td title=\"\(Self.escape($0))\">" } ?? "<td>"
                    html += Self.escape(text) + "</td>"
                case .name(let name):
                    html += "<td class=\"name\" title=\"\(Self.escape(name))\">\(Self.escape(name))</td>"
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
