import Foundation

/// Who calls a finding's function, and from which line of the app: a leaf
/// named alone ("slow function spin(Double)") or a library's internals say
/// what is slow, not what to change.
extension ProfileAnalysis {
    /// The source place of the frame at `position` of sample `index` (leaf
    /// first, inlined calls expanded as `stacks` has them), "File.swift:8",
    /// when DWARF gave one. For a return address it is the line of the call.
    func place(at position: Int, ofSample index: Int) -> String? {
        var remaining = position
        for frame in timeline.samples[index].frames {
            let symbol = symbols[frame.key]
            let expanded = (symbol?.inlined ?? []) + (symbol.map { [$0] } ?? [])
            if remaining < max(expanded.count, 1) {
                guard remaining < expanded.count, let file = expanded[remaining].file, let line = expanded[remaining].line else { return nil }
                return "\((file as NSString).lastPathComponent):\(line)"
            }
            remaining -= max(expanded.count, 1)
        }
        return nil
    }

    /// The callers of the frame at `position` of sample `index`, nearest
    /// first, closures and thunks passed through, up to the first frame of
    /// the program's own code (the entry point reads "main"), with that
    /// frame's call place: ["KeyedDecodingContainer.decode(_:forKey:)", "…",
    /// "App.load() at Store.swift:12"]. A longer chain keeps its two ends.
    func callers(of position: Int, inSample index: Int) -> (names: [String], callSite: String?) {
        let stack = stacks[index].functions
        var names: [String] = []
        var site: String?
        for above in stack.indices.dropFirst(position + 1) {
            let function = functions[stack[above]]
            guard function.namesFunction else { continue }
            let isOwn = function.inExecutable
            let isEntry = Self.isPlumbing(function.name) && (function.name == "main" || function.name.hasSuffix("_main") || function.name.hasSuffix("$main"))
            guard isEntry || !Self.isPlumbing(function.name) else { continue }
            var name = isEntry ? "main" : Self.briefName(RuntimeCostClassifier.displayName(Self.shortName(function.name)))
            if isOwn, let place = place(at: above, ofSample: index) {
                site = place
                name += " at \(place)"
            }
            names.append(name)
            if isOwn || isEntry { break }
        }
        if names.count > 3 { names = [names[0], "…", names[names.count - 1]] }
        return (names, site)
    }

    /// Per function of `ids`: its samples as the leaf and anywhere on the
    /// stack (once per sample) of `indices`.
    func stackTimes(of ids: Set<Int>, over indices: [Int]) -> [Int: (leaf: Int, onStack: Int)] {
        var times: [Int: (leaf: Int, onStack: Int)] = [:]
        // Per function id, as arrays: a set made and hashed per stack.
        var wanted = [Bool](repeating: false, count: functions.count)
        for id in ids where id >= 0 && id < functions.count { wanted[id] = true }
        var seen = [Int](repeating: -1, count: functions.count)
        for (position, counted) in shapeCounts(indices).enumerated() {
            let stack = shapes[counted.shape]
            if let leaf = stack.first, wanted[leaf] { times[leaf, default: (0, 0)].leaf += counted.samples }
            for id in stack where wanted[id] && seen[id] != position {
                seen[id] = position
                times[id, default: (0, 0)].onStack += counted.samples
            }
        }
        return times
    }

    /// `cost` with its self and on-the-stack time over `times`.
    func withStackTimes(_ cost: FindingInputs.NamedCost, _ times: (leaf: Int, onStack: Int)?) -> FindingInputs.NamedCost {
        var cost = cost
        let times = times ?? (0, 0)
        (cost.selfSamples, cost.selfMs, cost.totalSamples, cost.totalMs) = (times.leaf, ms(times.leaf), times.onStack, ms(times.onStack))
        return cost
    }

    /// The app's calls into libraries that hold the critical path: on each
    /// stack of `indices` outside lazy globals and initializers (their own
    /// findings), the outermost frame of another module that the program's
    /// own code calls, closures and thunks passed through. A runtime
    /// function (a kind of `RuntimeCostClassifier`) is no such call: its
    /// kind is the finding. Runtime work inside a call is the call's. Most
    /// samples first, each named from the app frame that makes most of them.
    func libraryCalls(_ indices: [Int], limit: Int, rules: inout FrameRules) -> [FindingInputs.NamedCost] {
        struct Site { var samples = 0; var sample: Int; var position: Int }
        struct Tally { var samples = 0; var phase: Int; var sites: [Int: Site] = [:] }
        var tallies: [Int: Tally] = [:]
        var globals = [Int8](repeating: -1, count: functions.count)
        for counted in shapeCounts(indices) {
            let stack = shapes[counted.shape]
            let isGlobal = stack.contains { id in
                if globals[id] < 0 { globals[id] = lazyGlobalName(functions[id]) != nil ? 1 : 0 }
                return globals[id] == 1
            }
            guard !isGlobal, initializerFrames(stack).isEmpty else { continue }
            var caller: Int?
            for position in stack.indices.reversed() {
                let function = functions[stack[position]]
                // A bad unwind's frame is neither the app's call nor the library's.
                guard function.namesFunction else { continue }
                if function.inExecutable {
                    caller = position
                    continue
                }
                guard let app = caller, function.module >= 0, !Self.isPlumbing(function.name) else { continue }
                if rules.rule(stack[position], isLeaf: position == 0) == RuntimeCostClassifier.rules.count {
                    var tally = tallies[stack[position]] ?? Tally(phase: stacks[counted.first].phase)
                    tally.samples += counted.samples
                    tally.sites[stack[app], default: Site(sample: counted.first, position: position)].samples += counted.samples
                    tallies[stack[position]] = tally
                }
                break
            }
        }
        let ranked = tallies.sorted { ($0.value.samples, functions[$1.key].name) > ($1.value.samples, functions[$0.key].name) }.prefix(limit)
        let times = stackTimes(of: Set(ranked.map(\.key)), over: indices)
        return ranked.map { id, tally in
            var call = FindingInputs.NamedCost(
                name: Self.withoutModule(Self.briefName(RuntimeCostClassifier.displayName(Self.shortName(functions[id].name)))),
                module: moduleName(functions[id].module),
                ms: ms(tally.samples), samples: tally.samples, phase: phaseNames[tally.phase])
            if let site = tally.sites.values.max(by: { $0.samples < $1.samples }) {
                (call.callers, call.callSite) = callers(of: site.position, inSample: site.sample)
            }
            return withStackTimes(call, times[id])
        }
    }

    /// A function's name short enough for a finding: its generic clauses and
    /// result left out, its arguments as their labels
    /// (`Item.init(from: Decoder) throws -> Item` → `Item.init(from:)`); a
    /// C++ name without its arguments.
    static func briefName(_ name: String) -> String {
        let isSwift = !name.containsBytes("::")
        var result = ""
        var angle = 0
        var characters = Substring(name)
        while let character = characters.first {
            if character == "<" { angle += 1 }
            if angle == 0 {
                if character == "(" {
                    guard isSwift else { break }
                    result += "(" + labels(in: characters) + ")"
                    break
                }
                if characters.hasPrefix(" : ") || characters.hasPrefix(" -> ") { break }
                result.append(character)
            }
            if character == ">", angle > 0 { angle -= 1 }
            characters = characters.dropFirst()
        }
        return result.isEmpty ? name : result
    }

    /// The argument labels of the parenthesised group `group` starts with: `(from: Decoder, _: Int)` → `from:_:`.
    private static func labels(in group: Substring) -> String {
        var depth = 0, labels = "", current = "", sawColon = false
        var previous: Character = "("
        for character in group.dropFirst() {
            defer { previous = character }
            if "([<".contains(character) { depth += 1 }
            if ")]".contains(character) || (character == ">" && previous != "-") {
                if depth == 0 { break }
                depth -= 1
            }
            guard depth == 0 else { continue }
            if character == ":" && !sawColon {
                labels += current.trimmingCharacters(in: .whitespaces) + ":"
                sawColon = true
            } else if character == "," {
                if !sawColon { labels += "_:" }
                (current, sawColon) = ("", false)
            } else if !sawColon {
                current.append(character)
            }
        }
        if !sawColon && !current.trimmingCharacters(in: .whitespaces).isEmpty { labels += "_:" }
        return labels
    }

    /// A library's function without its module when a type follows it:
    /// `FoundationEssentials.JSONEncoder.encode(_:)` → `JSONEncoder.encode(_:)`.
    static func withoutModule(_ name: String) -> String {
        let head = name.prefix { $0 != "(" }
        let parts = head.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count >= 3, parts[1].first?.isUppercase == true else { return name }
        return String(name.dropFirst(parts[0].count + 1))
    }
}
