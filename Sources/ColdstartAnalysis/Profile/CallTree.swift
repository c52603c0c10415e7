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
        // The last stack walked, root first, and its nodes: stacks in order
        // of first sighting mostly share their outer frames with the one
        // before (a launch goes on where it was), and the shared part is
        // walked without a look-up per frame: the children's hashing was
        // most of the merge on a 100k-sample file.
        var previous: [Int] = []
        var path: [MergedNode] = []
        for counted in counts {
            let samples = counted.samples
            let stack = shapes[counted.shape]
            let depth = stack.count
            var common = 0
            while common < depth, common < previous.count, stack[depth - 1 - common] == previous[common] { common += 1 }
            previous.removeLast(previous.count - common)
            path.removeLast(path.count - common)
            for node in path { node.samples += samples }
            var node = path.last ?? root
            for position in common..<depth {
                let function = stack[depth - 1 - position]
                let child: MergedNode
                if let existing = node.children[function] {
                    child = existing
                } else {
                    child = MergedNode(function)
                    node.children[function] = child
                }
                child.samples += samples
                previous.append(function)
                path.append(child)
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

    /// The samples `indices` merged by function and frozen in pre-order,
    /// each node's children sorted once (`ordered`): built once per
    /// analysis, for both the text report's pruned tree and the flame
    /// graph's whole one. Merging and sorting twice was half of
    /// `report --html`'s CPU over `report`'s on a 100k-sample file.
    func mergedCallTree(_ indices: [Int]) -> MergedCallTree {
        let (root, merged) = mergedTree(indices)
        var tree = MergedCallTree(merged: merged)
        // An explicit stack: a hostile file's stacks can be deeper than the
        // thread's stack allows recursion.
        var pending = ordered(root.children.values).reversed().map { ($0, 0) }
        var open: [Int] = []
        while let (node, depth) = pending.popLast() {
            let index = tree.function.count
            while let last = open.last, tree.depth[last] >= depth { tree.end[open.removeLast()] = index }
            open.append(index)
            tree.function.append(node.function)
            tree.depth.append(depth)
            tree.samples.append(node.samples)
            tree.selfSamples.append(node.selfSamples)
            tree.end.append(0)
            pending += ordered(node.children.values).reversed().map { ($0, depth + 1) }
        }
        for index in open { tree.end[index] = tree.function.count }
        return tree
    }

    /// The text report's call tree: `tree` (of the samples `indices`) pruned
    /// by `options` and named.
    func callTree(_ tree: MergedCallTree, of indices: [Int], options: ProfileOptions, minPercent: Double) -> [ProfileReport.CallNode] {
        let total = indices.count
        // What the nodes need, as locals: the analysis's own methods, called
        // at each node of a big tree (88,000 for 100,000 samples), copied the
        // whole analysis each time.
        let functions = functions, moduleNames = moduleNames, nsPerSample = nsPerSample
        func ms(_ samples: Int) -> Double { Double(samples) * nsPerSample / 1e6 }
        func percent(_ part: Int) -> Double { total > 0 ? Double(part) * 100 / Double(total) : 0 }
        /// The nodes of `range` one level down (each subtree skipped whole).
        func convert(_ range: Range<Int>, depth: Int) -> [ProfileReport.CallNode] {
            guard depth <= options.treeDepth else { return [] }
            var children: [Int] = []
            var next = range.lowerBound
            while next < range.upperBound {
                children.append(next)
                next = tree.end[next]
            }
            return children
                .filter { ms(tree.samples[$0]) >= options.minMs && percent(tree.samples[$0]) >= minPercent }
                .prefix(options.top)
                .map { child in
                    let function = tree.function[child], module = functions[function].module
                    return ProfileReport.CallNode(
                        name: functions[function].name, module: module >= 0 ? moduleNames[module] : "",
                        samples: tree.samples[child], ms: ms(tree.samples[child]), percent: percent(tree.samples[child]),
                        selfSamples: tree.selfSamples[child], children: convert(child + 1..<tree.end[child], depth: depth + 1))
                }
        }
        return convert(0..<tree.function.count, depth: 0)
    }
}

/// The samples merged by function, every node (nothing pruned) in
/// pre-order, children most samples first, then by name and module: the
/// call tree's order. No root node.
struct MergedCallTree: Sendable {
    /// The function (an id of `ProfileAnalysis.functions`) of each node.
    var function: [Int] = []
    /// 0 for the outermost frame.
    var depth: [Int] = []
    var samples: [Int] = []
    var selfSamples: [Int] = []
    /// One past the last node of each node's subtree.
    var end: [Int] = []
    /// The distinct stacks merged into it.
    let merged: Int

    init(merged: Int) { self.merged = merged }

    /// Each node in pre-order, by function id.
    func visit(_ visit: (_ function: Int, _ depth: Int, _ samples: Int, _ selfSamples: Int) -> Void) {
        for index in function.indices { visit(function[index], depth[index], samples[index], selfSamples[index]) }
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
        let ordered = inTimeOrder(indices)
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
