import ColdstartAnalysis

/// `coldstart export --format folded`: one line per distinct stack,
/// `root;caller;…;leaf COUNT`, the input of flame-graph tools. Frames are
/// function names; a name's `\` is written `\\`, its `;` `\x3b` and a line
/// break `\n`, so every `;` separates frames and every line is one stack.
/// Counts are samples (each one sampling period, as in `coldstart report`).
package enum FoldedExporter: StacksExporter {
    package static let name = "folded", suffix = ".folded"
    package static let help = [
        "one line per distinct stack, `root;…;leaf COUNT`, for",
        "flamegraph.pl, inferno and similar (`;` in a name is \\x3b).",
    ]

    package static func export(_ stacks: SampledStacks) -> [UInt8] {
        let names = stacks.functions.map { escape($0.name) }
        let totals = stacks.totals()
        var counts: [String: Int] = [:]
        counts.reserveCapacity(totals.count)
        for total in totals {
            counts[total.functions.map { names[$0] }.joined(separator: ";"), default: 0] += total.samples
        }
        // Written straight into the bytes: lines, then their join, then its
        // bytes were three copies of the file (1,000,000 samples: 150 MB each,
        // over 1 GiB at the peak).
        var bytes: [UInt8] = []
        bytes.reserveCapacity(counts.reduce(0) { $0 + $1.key.utf8.count + 12 })
        for key in counts.keys.sorted() {
            bytes += key.utf8
            bytes.append(UInt8(ascii: " "))
            bytes += String(counts[key]!).utf8
            bytes.append(UInt8(ascii: "\n"))
        }
        return bytes
    }

    static func escape(_ name: String) -> String {
        // Scalars, not Characters: "\r\n" is one Character.
        guard name.unicodeScalars.contains(where: { $0 == ";" || $0 == "\\" || $0 == "\n" || $0 == "\r" }) else { return name }
        var escaped = String.UnicodeScalarView()
        for scalar in name.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\".unicodeScalars
            case ";": escaped += "\\x3b".unicodeScalars
            case "\n": escaped += "\\n".unicodeScalars
            case "\r": escaped += "\\r".unicodeScalars
            default: escaped.append(scalar)
            }
        }
        return String(escaped)
    }
}
