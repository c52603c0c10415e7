import Foundation

/// Names for every distinct frame of a set of samples, and what went wrong
/// while finding them.
package struct Symbolization: Sendable {
    /// Keyed by `Timeline.Frame.key` ("m:a"), as `coldstart.symbols` stores them.
    package var symbols: [String: Timeline.Symbol]
    /// One line per module that could not be used (missing, unreadable, or
    /// not the build that ran).
    package var warnings: [String]
    /// Frames in a module whose build-id differs from the one that ran.
    package var mismatchedFrames: Int
    /// Frames left with a `module+0xoffset` (or `0xaddress`) name; one
    /// outside the module's code reads `module+0xoffset (not code)`.
    package var unnamedFrames: Int
}

/// Resolves sampled frames (module + ELF virtual address) to function names
/// from the modules' files on disk: ELF `.symtab`, then `.dynsym`, then a
/// separate debug file found by build-id. Each module's file is read once.
///
/// Symbolizers of several timelines of one build can share a `SymbolCache`:
/// a module (path and build-id) is then read once across them all, and a
/// frame that another timeline already named is not looked up again.
///
/// A frame that is not the leaf is a return address: the call that made it
/// ends just before it, and a call that is the last instruction of a function
/// returns to the *next* function's first byte, so those frames are looked up
/// at `address − 1`. The leaf is the interrupted instruction itself.
package final class Symbolizer {
    private let modules: [Timeline.Module]
    private let debugDirectory: String?
    private let cache: SymbolCache
    /// Frames looked up so far (not found in the cache): each distinct frame
    /// of every `symbolize` call.
    package private(set) var framesLookedUp = 0

    fileprivate enum ModuleFile {
        case usable(ELFImage, DWARFModule?)
        case mismatched(fileBuildID: String)
        case unusable(reason: String)
    }

    /// `debugDirectory` is where separate debug files live
    /// (`<dir>/.build-id/xx/yyyy.debug`); nil disables the search. `cache`
    /// is shared with the symbolizers of other timelines of the same build
    /// (and the same `debugDirectory`); by default this one's own.
    package init(modules: [Timeline.Module], debugDirectory: String? = "/usr/lib/debug", cache: SymbolCache = SymbolCache()) {
        self.modules = modules
        self.debugDirectory = debugDirectory
        self.cache = cache
    }

    /// Names every distinct frame of `samples`.
    package func symbolize(_ samples: [Timeline.Sample]) -> Symbolization {
        // A frame seen as a return address anywhere is looked up as one: an
        // address that is both a leaf and a return address names the same
        // function unless a call ends its function, which is rarer still.
        var returnAddress: [Timeline.Frame: Bool] = [:]
        for sample in samples {
            for (depth, frame) in sample.frames.enumerated() {
                returnAddress[frame, default: false] = returnAddress[frame, default: false] || depth > 0
            }
        }
        var result = Symbolization(symbols: [:], warnings: [], mismatchedFrames: 0, unnamedFrames: 0)
        var unnamedPerModule: [Int: Int] = [:]
        for (frame, isReturnAddress) in returnAddress {
            let (symbol, found) = self.symbol(for: frame, isReturnAddress: isReturnAddress)
            result.symbols[frame.key] = symbol
            if !found {
                result.unnamedFrames += 1
                unnamedPerModule[frame.module, default: 0] += 1
            }
            if frame.module >= 0, frame.module < modules.count, case .mismatched = file(for: frame.module) { result.mismatchedFrames += 1 }
        }
        for (module, count) in unnamedPerModule.sorted(by: { $0.key < $1.key }) where module >= 0 {
            let path = modules[module].path
            switch file(for: module) {
            case .mismatched(let fileBuildID):
                result.warnings.append(
                    "\(path): build-id mismatch (file \(fileBuildID), timeline \(modules[module].buildId ?? "none")): "
                        + "\(count) frame\(count == 1 ? "" : "s") left unnamed; symbolize on the machine that ran the launch")
            case .unusable(let reason) where path.hasPrefix("/"):
                result.warnings.append("\(path): \(reason): \(count) frame\(count == 1 ? "" : "s") left unnamed")
            default:
                break
            }
        }
        result.warnings.sort()
        return result
    }

    /// The symbol for one frame, and whether a real name was found.
    func symbol(for frame: Timeline.Frame, isReturnAddress: Bool) -> (Timeline.Symbol, Bool) {
        guard frame.module >= 0, frame.module < modules.count else {
            return (Timeline.Symbol(name: Self.fallbackName(for: frame, modules: modules)), false)
        }
        let key = SymbolCache.FrameKey(module: moduleKey(frame.module), address: frame.address, isReturnAddress: isReturnAddress)
        if let known = cache.symbols[key] { return known }
        framesLookedUp += 1
        cache.framesLookedUp += 1
        let found = lookUp(frame, isReturnAddress: isReturnAddress)
        cache.symbols[key] = found
        return found
    }

    private func lookUp(_ frame: Timeline.Frame, isReturnAddress: Bool) -> (Timeline.Symbol, Bool) {
        switch file(for: frame.module) {
        case .usable(let image, let dwarf):
            let lookup = isReturnAddress && frame.address > 0 ? frame.address - 1 : frame.address
            // No function runs outside code: such a frame is a bad unwind,
            // and the name says so rather than borrow a data symbol's.
            guard image.isCode(lookup) else {
                return (Timeline.Symbol(name: Self.fallbackName(for: frame, modules: modules) + Self.notCodeSuffix), false)
            }
            // The symbol table names the function (its plainest alias);
            // DWARF adds what it inlined there, the source line, and names
            // the functions the symbol tables lack.
            let sourceFrames = dwarf?.frames(at: lookup) ?? []
            let outer = sourceFrames.last { !$0.isInlined }
            let linkageName = image.symbol(containing: lookup).map(\.name).flatMap { $0.isEmpty ? nil : $0 } ?? outer?.name
            if let linkageName {
                var symbol = self.symbol(linkageName, file: outer?.file, line: outer?.line)
                let inlined = sourceFrames.filter(\.isInlined).map { self.symbol($0.name, file: $0.file, line: $0.line) }
                if !inlined.isEmpty { symbol.inlined = inlined }
                return (symbol, true)
            }
        case .mismatched:
            return (Timeline.Symbol(name: Self.fallbackName(for: frame, modules: modules) + " (build-id mismatch)"), false)
        case .unusable:
            break
        }
        return (Timeline.Symbol(name: Self.fallbackName(for: frame, modules: modules)), false)
    }

    private func symbol(_ linkageName: String, file: String?, line: Int?) -> Timeline.Symbol {
        let display = displayName(linkageName)
        return Timeline.Symbol(name: display, system: display == linkageName ? nil : linkageName, file: file, line: line)
    }

    /// `libfoo.so+0x1a2b` inside a module, `0x7f…` outside every module.
    static func fallbackName(for frame: Timeline.Frame, modules: [Timeline.Module]) -> String {
        guard frame.module >= 0, frame.module < modules.count else { return "0x" + String(frame.address, radix: 16) }
        return moduleName(modules[frame.module].path) + "+0x" + String(frame.address, radix: 16)
    }

    /// What ends the name of a frame whose address lies outside its module's code.
    static let notCodeSuffix = " (not code)"

    /// Whether `name`, as `symbol(for:)` gives it, names a function in a
    /// module's code, fit to be shown as a caller: not a frame left
    /// unnamed (`module+0x…` or `0x…`, with or without " (not code)"),
    /// whose address names no place to act on and is most often a bad
    /// unwind's, nor a symbol the linker defines for the file's layout
    /// (`__ehdr_start`: timelines symbolized before the symbolizer knew
    /// code from data name a return address in the ELF header by it).
    package static func namesFunction(_ name: String) -> Bool {
        if let plus = name.range(of: "+0x") {
            let hex = name[plus.upperBound...].prefix { $0.isHexDigit }
            let rest = name[plus.upperBound...].dropFirst(hex.count)
            if !hex.isEmpty, !name[..<plus.lowerBound].contains(" "), rest.isEmpty || rest.hasPrefix(" (") { return false }
        }
        if name.hasPrefix("0x"), name.dropFirst(2).allSatisfy(\.isHexDigit) { return false }
        return !layoutSymbols.contains(name)
    }

    /// Symbols the static linker defines at the bounds of a file's
    /// segments and tables: data, or the first byte past code, never a function.
    private static let layoutSymbols: Set<String> = [
        "__ehdr_start", "__executable_start", "_DYNAMIC", "_GLOBAL_OFFSET_TABLE_", "__dso_handle", "__GNU_EH_FRAME_HDR",
        "__FRAME_END__", "__TMC_END__", "_IO_stdin_used", "data_start", "__data_start", "_edata", "_end", "__bss_start",
        "_etext", "__etext", "etext", "__init_array_start", "__init_array_end", "__fini_array_start", "__fini_array_end",
        "__preinit_array_start", "__preinit_array_end",
    ]

    /// The file name of a module's path.
    static func moduleName(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    private func displayName(_ linkageName: String) -> String {
        if let cached = cache.displayNames[linkageName] { return cached }
        let display = Demangler.displayName(linkageName)
        cache.displayNames[linkageName] = display
        return display
    }

    /// A module as the cache knows it: the same path and build-id is the same file.
    private func moduleKey(_ module: Int) -> String {
        modules[module].path + "\u{1}" + (modules[module].buildId?.lowercased() ?? "")
    }

    private func file(for module: Int) -> ModuleFile {
        let key = moduleKey(module)
        if let cached = cache.files[key] { return cached }
        cache.modulesRead += 1
        let entry = modules[module]
        let loaded: ModuleFile
        do {
            // The bounded reader looks first: libelf allocates per section
            // and inflates compressed ones, whatever the file claims.
            try ELFFile(path: entry.path).checkForLibdw()
            // libdw finds the debug file (build-id, .gnu_debuglink) for both readers.
            let dwarf = try? DWARFModule(path: entry.path, debugDirectory: debugDirectory)
            let image = try ELFImage(path: entry.path, debugFile: dwarf?.separateDebugFile)
            if let expected = entry.buildId?.lowercased(), !expected.isEmpty, image.buildID?.lowercased() != expected {
                loaded = .mismatched(fileBuildID: image.buildID ?? "none")
            } else {
                // DWARF is an addition: a file libdw cannot read still has its symbol tables.
                loaded = .usable(image, dwarf)
            }
        } catch let error as ELFError {
            loaded = .unusable(reason: error.problem)
        } catch {
            loaded = .unusable(reason: "\(error)")
        }
        cache.files[key] = loaded
        return loaded
    }
}

/// What `Symbolizer`s of timelines of one build share: each module's file
/// (by path and build-id) and each frame's name. Grows with the distinct
/// modules and frames, not with the number of timelines. Not thread-safe:
/// one per thread.
package final class SymbolCache {
    fileprivate struct FrameKey: Hashable {
        var module: String
        var address: UInt64
        var isReturnAddress: Bool
    }

    fileprivate var files: [String: Symbolizer.ModuleFile] = [:]
    fileprivate var symbols: [FrameKey: (Timeline.Symbol, Bool)] = [:]
    fileprivate var displayNames: [String: String] = [:]
    /// Module files opened, across every symbolizer sharing the cache.
    package fileprivate(set) var modulesRead = 0
    /// Frames looked up in a module, across every symbolizer sharing the cache.
    package fileprivate(set) var framesLookedUp = 0

    package init() {}
}

extension Timeline {
    /// True once `coldstart symbolize` has written names into the file: a
    /// report then reads no binary.
    package var isSymbolized: Bool {
        (documentBox.value["coldstart"] as? [String: Any])?["symbolized"] as? Bool ?? false
    }
}
