import ColdstartAnalysis

/// `coldstart export --format folded`: one line per distinct stack,
/// `root;caller;…;leaf COUNT`, the input of flame-graph tools. Frames are
/// function names; a name's `\` is written `\\`, its `;` `\x3b` and a line
/// break `\n`, so every `;` separates frames and every line is one stack.
/// Counts are samples (each one sampling period, as in `coldstart report`).
/// Lines are in the order of their bytes.
package enum FoldedExporter: StacksExporter {
    package static let name = "folded", suffix = ".folded"
    package static let help = [
        "one line per distinct stack, `root;…;leaf COUNT`, for",
        "flamegraph.pl, inferno and similar (`;` in a name is \\x3b).",
    ]

    package static func export(_ stacks: SampledStacks) -> [UInt8] {
        // Each distinct name once: two functions of one name (in two
        // modules) are one frame here, and a stack is a list of name ids.
        var nameIDs: [String: Int32] = [:]
        var names: [[UInt8]] = []
        let nameOf = stacks.functions.map { function -> Int32 in
            let escaped = escape(function.name)
            if let id = nameIDs[escaped] { return id }
            nameIDs[escaped] = Int32(names.count)
            names.append(Array(escaped.utf8))
            return Int32(names.count - 1)
        }
        let totals = stacks.totals()
        var position: [[Int32]: Int] = [:]
        position.reserveCapacity(totals.count)
        var lines: [(names: [Int32], samples: Int)] = []
        for total in totals {
            let key = total.functions.map { nameOf[$0] }
            if let at = position[key] {
                lines[at].samples += total.samples
            } else {
                position[key] = lines.count
                lines.append((key, total.samples))
            }
        }
        // Lines in the order of their bytes, compared name by name: a sort
        // of the joined lines (150 MB at 1,000,000 samples) grew faster
        // than the samples, from 6% of the export's CPU at 100k to 10% at 1M.
        lines.sort { precedes($0.names, $1.names, names: names) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(lines.reduce(0) { total, line in line.names.reduce(total + 12) { $0 + names[Int($1)].count + 1 } })
        for line in lines {
            for (index, name) in line.names.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ";")) }
                bytes += names[Int(name)]
            }
            bytes.append(UInt8(ascii: " "))
            bytes += String(line.samples).utf8
            bytes.append(UInt8(ascii: "\n"))
        }
        return bytes
    }

    /// Whether the line of frames `a` (name ids into `names`, which hold no
    /// `;`) comes before `b`'s in the order of their bytes, joined by `;`.
    static func precedes(_ a: [Int32], _ b: [Int32], names: [[UInt8]]) -> Bool {
        var frame = 0
        while frame < a.count, frame < b.count, a[frame] == b[frame] { frame += 1 }
        guard frame < a.count, frame < b.count else { return a.count < b.count }
        let x = names[Int(a[frame])], y = names[Int(b[frame])]
        let shared = min(x.count, y.count)
        var byte = 0
        while byte < shared, x[byte] == y[byte] { byte += 1 }
        if byte < shared { return x[byte] < y[byte] }
        // One name is the start of the other (they differ): the shorter's
        // line goes on with `;`, or ends, where the longer's has a byte.
        if x.count < y.count { return frame + 1 == a.count || UInt8(ascii: ";") < y[shared] }
        return !(frame + 1 == b.count || UInt8(ascii: ";") < x[shared])
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
