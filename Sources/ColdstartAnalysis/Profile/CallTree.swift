import Foundation

/// The samples as trees: merged by function (the call tree, the flame
/// graph's input) and in time order (runs, the flame chart's).
extension ProfileAnalysis {
    func callTree(_ indices: [Int], options: ProfileOptions, minPercent: Double) -> [ProfileReport.CallNode] {
        final class Node {
            let function: Int
            var samples = 0
            var selfSamples = 0
            var children: [Int: Node] = [:]
            init(_ function: Int) { self.function = function }
        }
        let root = Node(-1)
        // Each distinct stack once, counted for its samples.
        for (shape, samples, _) in shapeCounts(indices) {
            var node = root
            for function in shapes[shape].reversed() {
                let child: Node
                if let existing = node.children[function] {
                    child = existing
                } else {
                    child = Node(function)
                    node.children[function] = child
                }
                child.samples += samples
                node = child
            }
            if node !== root { node.selfSamples += samples }
        }
        let total = indices.count
        func convert(_ node: Node, depth: Int) -> [ProfileReport.CallNode] {
            guard depth <= options.treeDepth else { return [] }
            return node.children.values
                .filter { ms($0.samples) >= options.minMs && percent($0.samples, of: total) >= minPercent }
                .sorted { byCountThenName($0.samples, $0.function, $1.samples, $1.function) }
                .prefix(options.top)
                .map { child in
                    ProfileReport.CallNode(
                        name: functions[child.function].name, module: moduleName(functions[child.function].module),
                        samples: child.samples, ms: ms(child.samples), percent: percent(child.samples, of: total),
                        selfSamples: child.selfSamples, children: convert(child, depth: depth + 1))
                }
        }
        return convert(root, depth: 0)
    }
}

/// A run of consecutive samples of one thread with the same function at the
/// same depth: a slice of a flame chart in time order.
package struct StackRun: Sendable, Equatable {
    /// A function id of `SampledStacks.functions`.
    package var function: Int
    /// 0 for the outermost frame.
    package var depth: Int
    package var startNs: Int64
    package var endNs: Int64
    package var samples: Int
}

extension ProfileAnalysis {
    /// The samples `indices` (one thread's) as nested runs, sorted by start
    /// then depth. A sample stands for the time up to the next one; a gap of
    /// more than two sampling periods (the thread slept, or was not sampled)
    /// ends every run one period after its last sample.
    func runs(_ indices: [Int]) -> [StackRun] {
        let period = Int64(nsPerSample.rounded())
        let ordered = indices.sorted { (stacks[$0].ns, $0) < (stacks[$1].ns, $1) }
        struct Open { var function: Int; var start: Int64; var samples: Int }
        var open: [Open] = []
        var runs: [StackRun] = []
        func close(from depth: Int, at end: Int64) {
            while open.count > depth {
                let run = open.removeLast()
                runs.append(StackRun(function: run.function, depth: open.count, startNs: run.start,
                                     endNs: max(end, run.start), samples: run.samples))
            }
        }
        var previous: Int64?
        for index in ordered {
            let sample = stacks[index]
            if let previous, sample.ns - previous > 2 * period { close(from: 0, at: previous + period) }
            let stack = sample.functions.reversed() as ReversedCollection<[Int]>
            var common = 0
            for function in stack {
                guard common < open.count, open[common].function == function else { break }
                common += 1
            }
            close(from: common, at: sample.ns)
            for function in stack.dropFirst(common) { open.append(Open(function: function, start: sample.ns, samples: 0)) }
            for position in open.indices { open[position].samples += 1 }
            previous = sample.ns
        }
        if let previous { close(from: 0, at: previous + period) }
        return runs.sorted { ($0.startNs, $0.depth) < ($1.startNs, $1.depth) }
    }
}
