import Foundation

/// The start-up work a stack is inside: a library's (or the program's)
/// initializer, or a Swift lazy global's one-time initializer.
extension ProfileAnalysis {
    /// The constructor frames (index into the leaf-first stack) of every
    /// initializer a stack is inside:
    /// - a shared library's (or the program's preinit) function: the first
    ///   frame of another module directly above the loader's `_dl_init` /
    ///   `call_init`, or above the loader's outermost frames when the loader
    ///   has no symbols (start-up stacks are rooted in the loader);
    /// - the program's constructors: the frame directly above
    ///   `__libc_start_main`, unless it is the libc frame that leads to
    ///   `main` (`__libc_start_call_main`, glibc ≥ 2.34) or `main` itself.
    func initializerFrames(_ stack: [Int]) -> [Int] {
        var found: [Int] = []
        var rootedInLoader = true
        for position in stride(from: stack.count - 1, through: 1, by: -1) {
            let id = stack[position]
            let inLoader = functions[id].inLoader
            rootedInLoader = rootedInLoader && inLoader
            if inLoader, !functions[stack[position - 1]].inLoader {
                let function = functions[id]
                let isInit = ["_dl_init", "call_init"].contains(function.baseName)
                    || (rootedInLoader && function.name == function.linkageName && function.name.containsBytes("+0x"))
                if isInit { found.append(position - 1) }
            }
            if functions[id].inLibc, functions[id].name == "__libc_start_main" {
                var constructor = position - 1
                while constructor > 0, ["call_init", "__libc_csu_init", "_init"].contains(functions[stack[constructor]].baseName) {
                    constructor -= 1
                }
                let candidate = functions[stack[constructor]]
                let leadsToMain = (constructor == position - 1 && libcModules.contains(candidate.module))
                    || candidate.name == "main" || candidate.name.hasSuffix("_main")
                if !leadsToMain { found.append(constructor) }
            }
        }
        return found
    }

    private func isLoaderOrLibc(_ module: Int) -> Bool {
        module < 0 || loaderModules.contains(module) || libcModules.contains(module)
    }

    func initializers(_ indices: [Int], options: ProfileOptions) -> ProfileReport.Initializers {
        struct Tally { var samples = 0; var first = Int64.max; var constructors: [Int: Int] = [:] }
        var byModule: [Int: Tally] = [:]
        var under = 0, unattributed = 0
        let initializerPhases = Set(timeline.phases.indices.filter { timeline.phases[$0].kind == "initializers" })
        var framesOfShape: [Int: [Int]] = [:]
        for index in indices {
            let stack = stacks[index]
            var frames: [Int]
            if let known = framesOfShape[stack.shape] {
                frames = known
            } else {
                frames = initializerFrames(stack.functions)
                framesOfShape[stack.shape] = frames
            }
            if frames.isEmpty, initializerPhases.contains(stack.phase) {
                // A stack of the initializers phase rooted in a library, not
                // the loader: the unwinder stopped in that library's
                // constructor (a library built without frame pointers ends
                // the kernel's chain); the loader's own work stays apart.
                if let root = stack.functions.indices.last, !isLoaderOrLibc(functions[stack.functions[root]].module) {
                    frames = [root]
                } else {
                    unattributed += 1
                    continue
                }
            }
            if frames.isEmpty { continue }
            under += 1
            var modulesSeen: Set<Int> = []
            for frame in frames {
                let function = stack.functions[frame]
                let module = functions[function].module
                if modulesSeen.insert(module).inserted {
                    byModule[module, default: Tally()].samples += 1
                    byModule[module]!.first = min(byModule[module]!.first, stack.ns)
                }
                byModule[module]!.constructors[function, default: 0] += 1
            }
        }
        var libraries: [ProfileReport.LibraryInitializer] = []
        for (module, tally) in byModule {
            let constructors = tally.constructors.sorted {
                byCountThenName($0.value, $0.key, $1.value, $1.key)
            }
            let row = ProfileReport.LibraryInitializer(
                module: moduleName(module), path: module >= 0 ? timeline.modules[module].path : "",
                isExecutable: executableModules.contains(module),
                samples: tally.samples, ms: ms(tally.samples), percent: percent(tally.samples, of: indices.count),
                firstSeenMs: Double(tally.first) / 1e6,
                constructors: constructors.prefix(options.top).map {
                    ProfileReport.NamedTime(name: functions[$0.key].name, samples: $0.value, ms: ms($0.value))
                })
            if row.ms >= options.minMs && row.percent >= options.minPercent { libraries.append(row) }
        }
        libraries.sort { $0.samples != $1.samples ? $0.samples > $1.samples : $0.path < $1.path }
        return ProfileReport.Initializers(samples: under, ms: ms(under), unattributedSamples: unattributed, libraries: Array(libraries.prefix(options.top)))
    }

    // MARK: Lazy globals

    /// The global a Swift one-time initialization function (`…WZ`) sets up,
    /// as `Module.Type.global` (`Module.global` at the top level), so
    /// same-named statics of different types stay apart; nil for any other
    /// function.
    func lazyGlobalName(_ function: Function) -> String? {
        guard let global = LazyGlobalName(linkageName: function.linkageName) else { return nil }
        return "\(global.module).\(global.name)"
    }

    /// The runtime's once, which calls a lazy global's initializer on first
    /// use: `swift_once` reaches `swift::threading_impl::once_slow`.
    func isRuntimeOnce(_ function: Function) -> Bool {
        function.name.containsBytes("once_slow") || function.name.containsBytes("swift_once")
    }

    /// The module a Swift mangled name starts in: `$s14ServiceStartup…` →
    /// `ServiceStartup` (nil for the standard library's `$sS…` and odd forms).
    static func swiftModuleName(_ mangled: String) -> String? {
        guard let marker = mangled.range(of: "$s") ?? mangled.range(of: "$e") else { return nil }
        let rest = mangled[marker.upperBound...]
        let digits = rest.prefix { $0.isASCII && $0.isNumber }
        guard let length = Int(digits), length > 0 else { return nil }
        let name = rest.dropFirst(digits.count).prefix(length)
        return name.count == length ? String(name) : nil
    }

    func lazyGlobals(_ indices: [Int], options: ProfileOptions) -> [ProfileReport.LazyGlobal] {
        struct Tally { var samples = 0; var first = Int64.max; var phases: Set<Int> = [] }
        var byName: [String: Tally] = [:]
        let globalNames = functions.map(lazyGlobalName)
        let onces = functions.map(isRuntimeOnce)
        for index in indices {
            let stack = stacks[index].functions
            var seen: Set<String> = []
            for position in stack.indices.dropLast() where onces[stack[position + 1]] {
                guard let name = globalNames[stack[position]], seen.insert(name).inserted else { continue }
                byName[name, default: Tally()].samples += 1
                byName[name]!.first = min(byName[name]!.first, stacks[index].ns)
                byName[name]!.phases.insert(stacks[index].phase)
            }
        }
        var globals: [ProfileReport.LazyGlobal] = []
        for (name, tally) in byName {
            let row = ProfileReport.LazyGlobal(
                name: name, samples: tally.samples, ms: ms(tally.samples), percent: percent(tally.samples, of: indices.count),
                firstSeenMs: Double(tally.first) / 1e6, phases: tally.phases.sorted().map { phaseNames[$0] })
            if row.ms >= options.minMs && row.percent >= options.minPercent { globals.append(row) }
        }
        globals.sort { $0.samples != $1.samples ? $0.samples > $1.samples : $0.name < $1.name }
        return Array(globals.prefix(options.top))
    }
}
