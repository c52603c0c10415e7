import Foundation

/// The samples merged by function while they are merged: every node in one
/// array, a node's children a list through it (first child, next sibling),
/// and one table over the whole tree finding a node's child by function.
/// A class per node with a dictionary of its children cost more to make,
/// sort and release (88,000 nodes for 100,000 samples) than the merging.
private struct MergingTree {
    struct Node {
        var function: Int32
        var parent: Int32
        var firstChild: Int32 = -1
        var nextSibling: Int32 = -1
        var samples = 0
        var selfSamples = 0
    }

    /// Node 0 is the root: no function (-1).
    private(set) var nodes = [Node(function: -1, parent: -1)]
    /// Each node but the root by (parent, function): one table for the
    /// whole tree.
    private var index: [UInt64: Int32] = [:]
    /// The calls of `child`: the merge's work, per distinct stack.
    private(set) var lookups = 0

    /// The child of `parent` for `function`, made if it is new.
    mutating func child(of parent: Int32, _ function: Int32) -> Int32 {
        lookups += 1
        let key = UInt64(UInt32(bitPattern: parent)) << 32 | UInt64(UInt32(bitPattern: function))
        if let known = index[key] { return known }
        let child = Int32(nodes.count)
        nodes.append(Node(function: function, parent: parent, nextSibling: nodes[Int(parent)].firstChild))
        nodes[Int(parent)].firstChild = child
        index[key] = child
        return child
    }

    mutating func add(samples: Int, to node: Int32) { nodes[Int(node)].samples += samples }
    mutating func add(selfSamples: Int, to node: Int32) { nodes[Int(node)].selfSamples += selfSamples }

    /// The tree in pre-order without its root, each node's children most
    /// samples first, then by `rank` (a function's place by name, then
    /// module): sorted in one buffer shared by every node.
    func frozen(rank: [Int32], merged: Int) -> MergedCallTree {
        // A node comes after its parent in `nodes`, so one backward pass
        // adds up the subtrees' sizes.
        var size = [Int32](repeating: 1, count: nodes.count)
        for index in nodes.indices.dropFirst().reversed() { size[Int(nodes[index].parent)] += size[index] }
        var tree = MergedCallTree(merged: merged, lookups: lookups)
        tree.nodes.reserveCapacity(nodes.count - 1)
        var children: [Int32] = []
        // An explicit stack: a hostile file's stacks can be deeper than the
        // thread's stack allows recursion.
        var pending: [(node: Int32, depth: Int32)] = []
        func push(childrenOf parent: Int32, depth: Int32) {
            children.removeAll(keepingCapacity: true)
            var child = nodes[Int(parent)].firstChild
            while child >= 0 {
                children.append(child)
                child = nodes[Int(child)].nextSibling
            }
            // Most nodes have one child or none: no sort to call.
            if children.count > 1 {
                children.sort { a, b in
                    let a = nodes[Int(a)], b = nodes[Int(b)]
                    return a.samples != b.samples ? a.samples > b.samples : rank[Int(a.function)] < rank[Int(b.function)]
                }
            }
            for child in children.reversed() { pending.append((child, depth)) }
        }
        push(childrenOf: 0, depth: 0)
        while let (index, depth) = pending.popLast() {
            let node = nodes[Int(index)]
            tree.nodes.append(MergedCallTree.Node(samples: node.samples, selfSamples: node.selfSamples, function: node.function,
                                                  depth: depth, end: Int32(tree.nodes.count) + size[Int(index)]))
            push(childrenOf: index, depth: depth + 1)
        }
        return tree
    }
}

/// The samples as trees: merged by function (the call tree, the flame
/// graph's input) and in time order (runs, the flame chart's).
extension ProfileAnalysis {
    /// The samples `indices` merged by function and frozen in pre-order,
    /// each node's children sorted once: built once per analysis, for both
    /// the text report's pruned tree and the flame graph's whole one.
    /// Merging and sorting twice was half of `report --html`'s CPU over
    /// `report`'s on a 100k-sample file. Each distinct stack is walked into
    /// the tree once, counted for its samples.
    func mergedCallTree(_ indices: [Int]) -> MergedCallTree {
        var tree = MergingTree()
        let counts = shapeCounts(indices)
        // The last stack walked, root first, and its nodes: stacks in order
        // of first sighting mostly share their outer frames with the one
        // before (a launch goes on where it was), and the shared part is
        // walked without a look-up per frame.
        var previous: [Int] = []
        var path: [Int32] = []
        for counted in counts {
            let samples = counted.samples
            let stack = shapes[counted.shape]
            let depth = stack.count
            var common = 0
            while common < depth, common < previous.count, stack[depth - 1 - common] == previous[common] { common += 1 }
            previous.removeLast(previous.count - common)
            path.removeLast(path.count - common)
            for node in path { tree.add(samples: samples, to: node) }
            var node = path.last ?? 0
            for position in common..<depth {
                let function = stack[depth - 1 - position]
                node = tree.child(of: node, Int32(function))
                tree.add(samples: samples, to: node)
                previous.append(function)
                path.append(node)
            }
            if node != 0 { tree.add(selfSamples: samples, to: node) }
        }
        return tree.frozen(rank: functionRanks(), merged: counts.count)
    }

    /// Each function's place among all of them by name, then module: the
    /// call tree's order for siblings of the same samples, worked out once
    /// instead of comparing names at each sort of each node's children.
    private func functionRanks() -> [Int32] {
        // The functions as a local: the analysis's own property, read at
        // each comparison, copied the whole analysis each time.
        let functions = functions
        var rank = [Int32](repeating: 0, count: functions.count)
        let order = functions.indices.sorted { a, b in
            if functions[a].name != functions[b].name { return functions[a].name < functions[b].name }
            return functions[a].module < functions[b].module
        }
        for (place, function) in order.enumerated() { rank[function] = Int32(place) }
        return rank
    }

    /// The text report's call tree: `tree` (of the samples `indices`) pruned
    /// by `options` and named.
    func callTree(_ tree: MergedCallTree, of indices: [Int], options: ProfileOptions, minPercent: Double) -> [ProfileReport.CallNode] {
        let total = indices.count
        // What the nodes need, as locals: the analysis's own methods, called
        // at each node of a big tree (88,000 for 100,000 samples), copied the
        // whole analysis each time.
        let functions = functions, moduleNames = moduleNames, nsPerSample = nsPerSample
        let nodes = tree.nodes
        func ms(_ samples: Int) -> Double { Double(samples) * nsPerSample / 1e6 }
        func percent(_ part: Int) -> Double { total > 0 ? Double(part) * 100 / Double(total) : 0 }
        /// The nodes of `range` one level down (each subtree skipped whole).
        func convert(_ range: Range<Int>, depth: Int) -> [ProfileReport.CallNode] {
            guard depth <= options.treeDepth else { return [] }
            var children: [Int] = []
            var next = range.lowerBound
            while next < range.upperBound {
                children.append(next)
                next = Int(nodes[next].end)
            }
            return children
                .filter { ms(nodes[$0].samples) >= options.minMs && percent(nodes[$0].samples) >= minPercent }
                .prefix(options.top)
                .map { child in
                    let node = nodes[child], function = Int(node.function), module = functions[function].module
                    return ProfileReport.CallNode(
                        name: functions[function].name, module: module >= 0 ? moduleNames[module] : "",
                        samples: node.samples, ms: ms(node.samples), percent: percent(node.samples),
                        selfSamples: node.selfSamples, children: convert(child + 1..<Int(node.end), depth: depth + 1))
                }
        }
        return convert(0..<nodes.count, depth: 0)
    }
}

/// The samples merged by function, every node (nothing pruned) in
/// pre-order, children most samples first, then by name and module: the
/// call tree's order. No root node.
struct MergedCallTree: Sendable {
    struct Node: Sendable {
        var samples: Int
        var selfSamples: Int
        /// An id of `ProfileAnalysis.functions`.
        var function: Int32
        /// 0 for the outermost frame.
        var depth: Int32
        /// One past the last node of its subtree.
        var end: Int32
    }

    var nodes: [Node] = []
    /// The distinct stacks merged into it.
    let merged: Int
    /// The children the merge looked up (or made): a distinct stack's
    /// frames past those it shares with the stack before, however many
    /// samples have it.
    let lookups: Int

    init(merged: Int, lookups: Int) {
        self.merged = merged
        self.lookups = lookups
    }

    /// Each node in pre-order, by function id.
    func visit(_ visit: (_ function: Int, _ depth: Int, _ samples: Int, _ selfSamples: Int) -> Void) {
        for node in nodes { visit(Int(node.function), Int(node.depth), node.samples, node.selfSamples) }
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
        // A run takes its place in `runs` when it opens, and runs open in
        // time order, outer first: the list comes out sorted by start, then
        // depth, mostly without a sort. Its samples are those walked between its
        // opening and its end (`walked`), not a count kept at each open run
        // for each sample.
        struct Open { var function: Int; var place: Int; var walked: Int }
        var open: [Open] = []
        var runs: [StackRun] = []
        var walked = 0
        func close(from depth: Int, at end: Int64) {
            while open.count > depth {
                let run = open.removeLast()
                runs[run.place].endNs = max(end, runs[run.place].startNs)
                runs[run.place].samples = walked - run.walked
            }
        }
        var previous: (ns: Int64, shape: Int)?
        for index in ordered {
            let ns = stacks[index].ns, shape = stacks[index].shape
            if let previous, ns - previous.ns > 2 * period { close(from: 0, at: previous.ns + period) }
            // The same stack as the sample before, still open: nothing ends
            // or begins (the reader's consecutive samples often repeat).
            if shape != previous?.shape || open.isEmpty {
                let stack = stacks[index].functions
                var common = 0
                while common < stack.count, common < open.count, open[common].function == stack[stack.count - 1 - common] { common += 1 }
                close(from: common, at: ns)
                for position in common..<stack.count {
                    open.append(Open(function: stack[stack.count - 1 - position], place: runs.count, walked: walked))
                    runs.append(StackRun(function: open[position].function, depth: position, startNs: ns, endNs: ns, samples: 0))
                }
            }
            walked += 1
            previous = (ns, shape)
        }
        if let previous { close(from: 0, at: previous.ns + period) }
        // Samples of one time (a file's repeated timestamps) can open a
        // deeper run before a shallower one of the same start.
        func precedes(_ a: StackRun, _ b: StackRun) -> Bool { (a.startNs, a.depth) < (b.startNs, b.depth) }
        if zip(runs, runs.dropFirst()).contains(where: { precedes($1, $0) }) { runs.sort(by: precedes) }
        return runs
    }
}
