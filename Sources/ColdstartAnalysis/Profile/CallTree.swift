import Foundation

/// A node of the samples merged by function: `ProfileAnalysis`'s working
/// tree, before it is pruned and named.
private final class MergedNode {
    let function: Int
    var samples = 0
    var selfSamples = 0
    var children: [Int: MergedNode] = [:]
    init(_ function: Int) { self.function = function }
}

/// The samples as trees: merged by function (the call tree, the flame
/// graph's input) and in time order (runs, the flame chart's).
extension ProfileAnalysis {
    /// The samples `indices` merged by function, each distinct stack once,
    /// counted for its samples; the root is no function (-1). `merged`: the
    /// stacks walked into the tree.
    private func mergedTree(_ indices: [Int]) -> (root: MergedNode, merged: Int) {
        let root = MergedNode(-1)
        let counts = shapeCounts(indices)
        for counted in counts {
            let samples = counted.samples
            var node = root
            for function in shapes[counted.shape].reversed() {
                let child: MergedNode
                if let existing = node.children[function] {
                    child = existing
                } else {
                    child = MergedNode(function)
                    node.children[function] = child
                }
                child.samples += samples
                node = child
            }
            if node !== root { node.selfSamples += samples }
        }
        return (root, counts.count)
    }

    /// A node's children in the call tree's order: most samples first, then
    /// by name and module.
    private func ordered(_ children: Dictionary<Int, MergedNode>.Values) -> [MergedNode] {
        // The functions as a local: the analysis's own property, read at
        // each comparison, copied the whole analysis each time.
        let functions = functions
        return children.sorted { a, b in
            if a.samples != b.samples { return a.samples > b.samples }
            if functions[a.function].name != functions[b.function].name { return functions[a.function].name < functions[b.function].name }
            return functions[a.function].module < functions[b.function].module
        }
    }

    func callTree(_ indices: [Int], options: ProfileOptions, minPercent: Double) -> [ProfileReport.CallNode] {
        let root = mergedTree(indices).root
        let total = indices.count
        // What the nodes need, as locals: the analysis's own methods, called
        // at each node of a big tree (88,000 for 100,000 samples), copied the
        // whole analysis each time.
        let functions = functions, moduleNames = moduleNames, nsPerSample = nsPerSample
        func ms(_ samples: Int) -> Double { Double(samples) * nsPerSample / 1e6 }
        func percent(_ part: Int) -> Double { total > 0 ? Double(part) * 100 / Double(total) : 0 }
        func convert(_ node: MergedNode, depth: Int) -> [ProfileReport.CallNode] {
            guard depth <= options.treeDepth else { return [] }
            return ordered(node.children.values)
                .filter { ms($0.samples) >= options.minMs && percent($0.samples) >= minPercent }
                .prefix(options.top)
                .map { child in
                    let module = functions[child.function].module
                    return ProfileReport.CallNode(
                        name: functions[child.function].name, module: module >= 0 ? moduleNames[module] : "",
                        samples: child.samples, ms: ms(child.samples), percent: percent(child.samples),
                        selfSamples: child.selfSamples, children: convert(child, depth: depth + 1))
                }
        }
        return convert(root, depth: 0)
    }

    /// Every node of the samples' whole call tree (nothing pruned), in
    /// pre-order, children in `callTree`'s order: the flame graph's input.
    /// By function id, without building a `CallNode` (its name and module
    /// copied, its children in arrays) per node: that was a third of the
    /// HTML page's flame data. Returns the stacks merged into the tree (one
    /// per distinct stack: the work does not grow with repeated samples).
    @discardableResult
    func visitCallTree(_ indices: [Int], _ visit: (_ function: Int, _ depth: Int, _ samples: Int, _ selfSamples: Int) -> Void) -> Int {
        let (root, merged) = mergedTree(indices)
        // An explicit stack: a hostile file's stacks can be deeper than the
        // thread's stack allows recursion.
        var pending = ordered(root.children.values).reversed().map { ($0, 0) }
        while let (node, depth) = pending.popLast() {
            visit(node.function, depth, node.samples, node.selfSamples)
            pending += ordered(node.children.values).reversed().map { ($0, depth + 1) }
        }
        return merged
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
