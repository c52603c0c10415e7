import Foundation

/// What the dynamic loader has to do to one object before any of its code
/// runs, read from the object's dynamic section (`DT_RELA`/`DT_REL`,
/// `DT_JMPREL`, `DT_RELR`) and `.dynsym`: how many relocations of each kind,
/// and how many of them need a symbol look-up at start-up.
///
/// Exact and free at run time: the file is read offline, in the analysis.
/// The look-ups follow glibc's rules (`elf/dl-reloc.c`, `RESOLVE_MAP`): a
/// relocation against a local, hidden, internal or protected symbol needs
/// none; one against the same symbol and type class as the relocation just
/// before it in the same object reuses that result ("from cache" in
/// `LD_DEBUG=statistics`); PLT slots are bound lazily, at their first call,
/// unless the object asks for `BIND_NOW`. Summed over every loaded object,
/// `lookups` is glibc's "number of relocations" and `cachedLookups` its
/// "number of relocations from cache" (docs/before-main.md, measured).
package struct ObjectRelocations: Codable, Sendable, Equatable {
    /// The file's name (its last path component, symbolic links resolved:
    /// `libstdc++.so.6.0.30`, as the loader's mappings name it).
    package var name: String
    /// `R_*_RELATIVE` entries: the load address added to a pointer, no
    /// symbol involved (a position-independent pointer).
    package var relative: Int
    /// The same, packed in `DT_RELR` (`-z pack-relative-relocs`): glibc's
    /// statistics leave these out.
    package var packedRelative: Int
    /// Relocations against a symbol outside the PLT (`GLOB_DAT`, `R_*_64`,
    /// TLS, copy relocations): data pointers, vtables, type metadata.
    package var symbolic: Int
    /// `DT_JMPREL` entries: one per function the object calls in another.
    package var plt: Int
    /// Symbol look-ups at start-up (not from the per-object cache).
    package var lookups: Int
    /// Symbolic relocations that reused the previous look-up.
    package var cachedLookups: Int
    /// PLT slots are bound at start-up (`-z now`), not at their first call.
    package var bindNow: Bool
    /// The functions the loader calls in it before `main`: its
    /// `DT_PREINIT_ARRAY` and `DT_INIT_ARRAY` entries and its `DT_INIT`
    /// (`coldstart inspect` names them). Nil in statistics an older
    /// `coldstart symbolize` stored.
    package var initializers: Int?
    /// Neither the system's (`/lib`, `/usr/lib`, `/lib64`) nor the Swift
    /// toolchain's (a `lib/swift/` directory), nor the executable itself:
    /// a library built with the app, whose relocations its developer can change.
    package var isOwn: Bool

    package init(name: String, relative: Int, packedRelative: Int = 0, symbolic: Int, plt: Int, lookups: Int, cachedLookups: Int,
                 bindNow: Bool, isOwn: Bool = false, initializers: Int? = nil) {
        (self.name, self.relative, self.packedRelative, self.symbolic, self.plt) = (name, relative, packedRelative, symbolic, plt)
        (self.lookups, self.cachedLookups, self.bindNow, self.isOwn, self.initializers) = (lookups, cachedLookups, bindNow, isOwn, initializers)
    }

    /// Reads `path`; throws `ELFError` for a file that is not a readable
    /// ELF64 little-endian object. An object with no dynamic section (a
    /// static executable) has no relocations.
    init(path: String, executable: String) throws {
        let file = try ELFFile(path: path)
        let canonical = SharedLibraries.canonicalPath(path)
        name = (canonical as NSString).lastPathComponent
        isOwn = canonical != SharedLibraries.canonicalPath(executable) && !canonical.contains("/lib/swift/")
            && !["/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/"].contains { canonical.hasPrefix($0) }
        (relative, packedRelative, symbolic, plt, lookups, cachedLookups, bindNow) = (0, 0, 0, 0, 0, 0, false)
        guard let dynamic = try DynamicSection(file) else { return }
        initializers = ((dynamic[DynamicSection.preinitArraySize] ?? 0) / 8 + (dynamic[DynamicSection.initArraySize] ?? 0) / 8)
            .clampedInt + (dynamic[DynamicSection.initFunction] == nil ? 0 : 1)
        let kind = RelocationMachine(dynamic.header.machine)
        // DT_FLAGS & DF_BIND_NOW, DT_BIND_NOW, DT_FLAGS_1 & DF_1_NOW.
        // The loader relocates its own PLT at start-up too (rtld.c, lazy 0).
        bindNow = (dynamic[DynamicSection.flags] ?? 0) & 0x8 != 0 || dynamic[DynamicSection.bindNowTag] != nil
            || (dynamic[DynamicSection.flags1] ?? 0) & 1 != 0 || LauncherTimeline.isDynamicLoader(path)

        let symbols = try Self.dynamicSymbols(file, dynamic.header)
        var cache: (symbol: Int, typeClass: Int)?
        func count(_ relocations: [DynamicSection.Relocation], lazy: Bool, isPLT: Bool) {
            for relocation in relocations {
                let (type, symbol) = (relocation.type, relocation.symbol)
                if kind.isRelative(type) {
                    relative += 1
                    continue
                }
                if type == 0 { continue }  // R_*_NONE
                if isPLT { plt += 1 } else if symbol != 0 { symbolic += 1 }
                guard !lazy, symbol != 0, !symbols.bindsLocally(symbol) else { continue }
                let typeClass = kind.typeClass(type)
                if let cache, cache.symbol == symbol, cache.typeClass == typeClass {
                    cachedLookups += 1
                } else {
                    lookups += 1
                    cache = (symbol, typeClass)
                }
            }
        }
        // glibc relocates DT_RELA (or DT_REL) first, then DT_JMPREL; the
        // look-up cache carries over from one to the next.
        let tables = try dynamic.relocations()
        count(tables.eager, lazy: false, isPLT: false)
        count(tables.plt, lazy: !bindNow, isPLT: true)
        packedRelative = try dynamic.packedRelativeAddresses().count
    }

    /// Every count of `objects` summed, under the name "total".
    static func total(_ objects: [ObjectRelocations]) -> ObjectRelocations {
        objects.reduce(into: ObjectRelocations(name: "total", relative: 0, symbolic: 0, plt: 0, lookups: 0, cachedLookups: 0, bindNow: false)) {
            $0.relative += $1.relative
            $0.packedRelative += $1.packedRelative
            $0.symbolic += $1.symbolic
            $0.plt += $1.plt
            $0.lookups += $1.lookups
            $0.cachedLookups += $1.cachedLookups
        }
    }

    /// `.dynsym`'s binding and visibility, from the section headers; empty
    /// when the file has none (every symbol then counts as global).
    private static func dynamicSymbols(_ file: ELFFile, _ header: ELFFile.Header) throws -> DynamicSymbols {
        guard let section = try file.sections(header).first(where: { $0.type == ELFFile.dynsymType }),
              section.size >= 24, section.size < 1 << 30 else { return DynamicSymbols(bytes: []) }
        return DynamicSymbols(bytes: try file.read(offset: section.offset, count: section.size))
    }

    private struct DynamicSymbols {
        var bytes: [UInt8]
        /// STB_LOCAL, or STV_INTERNAL/HIDDEN: bound to the object's own
        /// definition. A protected symbol is still looked up (measured
        /// against glibc 2.36's statistics: 8473 look-ups counted this way
        /// against its 8487, 8025 with protected ones left out).
        func bindsLocally(_ index: Int) -> Bool {
            let base = index * 24
            guard base + 24 <= bytes.count else { return false }
            return bytes[base + 4] >> 4 == 0 || (1...2).contains(bytes[base + 5] & 3)
        }
    }
}

/// Every object the loader relocated before `main`, with totals: the Linux
/// counterpart of DYLD's start-up statistics, and what the relocation
/// finding is made of.
package struct LoaderStatistics: Codable, Sendable {
    /// Most symbolic relocations first: those are the ones that cost a
    /// look-up (or a cache check) each at start-up.
    package var objects: [ObjectRelocations]
    package var relative: Int
    package var packedRelative: Int
    package var symbolic: Int
    package var plt: Int
    package var lookups: Int
    package var cachedLookups: Int
    /// Where the object list came from: "LD_AUDIT la_objopen" or "modules mapped".
    package var source: String
    /// Objects whose file could not be read or no longer matches (skipped).
    package var unreadable: [String]
    /// The objects counted as every other figure of the report counts
    /// them (`LoadedObjects`); nil only in a value decoded on its own.
    package var loaded: LoadedObjects?

    /// The statistics of `timeline`: those `coldstart symbolize` wrote into
    /// it (`coldstart.loaderStatistics`), else, unless it is symbolized (a
    /// report then reads no binary), read from the objects' files.
    package init?(_ timeline: Timeline) {
        let section = timeline.parsedDocument["coldstart"] as? [String: Any]
        if let stored = section?["loaderStatistics"] {
            guard JSONSerialization.isValidJSONObject(stored), let data = try? JSONSerialization.data(withJSONObject: stored),
                  let decoded = try? JSONDecoder().decode(LoaderStatistics.self, from: data),
                  decoded.isPlausible else { return nil }
            self = decoded
            loaded = LoadedObjects(timeline)
            return
        }
        guard !timeline.isSymbolized else { return nil }
        self.init(readingFilesOf: timeline)
    }

    /// Every count in 0...2^40 (no object has that many relocations), so a
    /// hostile file's stored statistics cannot make the report's sums overflow.
    private var isPlausible: Bool {
        let limit = 1 << 40
        let counts = [relative, packedRelative, symbolic, plt, lookups, cachedLookups]
            + objects.flatMap { [$0.relative, $0.packedRelative, $0.symbolic, $0.plt, $0.lookups, $0.cachedLookups, $0.initializers ?? 0] }
        return objects.count <= 1 << 16 && counts.allSatisfy { (0...limit).contains($0) }
    }

    /// The objects of `timeline`: those the audit module saw opened in the
    /// program's namespace when it ran (the executable as "-"), else the
    /// modules it had mapped, less the audit module's own namespace and the
    /// vDSO, each read from its file. Nil when there is no object to read.
    init?(readingFilesOf timeline: Timeline) {
        guard let (all, source) = LoadedObjects.paths(timeline) else { return nil }
        self.source = source
        loaded = LoadedObjects(paths: all, executable: timeline.process.executable, source: source)
        let paths = all.filter { $0.hasPrefix("/") }
        guard !paths.isEmpty else { return nil }
        let buildIDs = Dictionary(timeline.modules.compactMap { module in module.buildId.map { (module.path, $0) } }) { first, _ in first }
        var objects: [ObjectRelocations] = []
        unreadable = []
        for path in paths {
            // A file rebuilt since the launch would give another program's counts.
            if let expected = buildIDs[path], let found = Self.buildID(path), found != expected {
                unreadable.append((path as NSString).lastPathComponent)
                continue
            }
            guard let object = try? ObjectRelocations(path: path, executable: timeline.process.executable) else {
                unreadable.append((path as NSString).lastPathComponent)
                continue
            }
            objects.append(object)
        }
        guard !objects.isEmpty else { return nil }
        self.objects = objects.sorted { ($0.symbolic, $1.name) > ($1.symbolic, $0.name) }
        let total = ObjectRelocations.total(objects)
        (relative, packedRelative, symbolic, plt) = (total.relative, total.packedRelative, total.symbolic, total.plt)
        (lookups, cachedLookups) = (total.lookups, total.cachedLookups)
    }

    /// The file's GNU build-id, read from its notes alone.
    static func buildID(_ path: String) -> String? {
        guard let file = try? ELFFile(path: path), let header = try? file.header(),
              let headers = try? file.programHeaders(header) else { return nil }
        return (try? file.buildID(programHeaders: headers, sections: [])) ?? nil
    }
}

/// The relocation types that matter here, per machine.
struct RelocationMachine {
    var relativeTypes: Set<UInt32>
    var pltClassTypes: Set<UInt32>
    var copyType: UInt32

    init(_ machine: UInt16) {
        switch machine {
        case 183:  // EM_AARCH64: RELATIVE; JUMP_SLOT, TLS_DTPMOD64, TLS_DTPREL64, TLS_TPREL64, TLSDESC; COPY
            self.init(relativeTypes: [1027], pltClassTypes: [1026, 1028, 1029, 1030, 1031], copyType: 1024)
        default:  // EM_X86_64: RELATIVE, RELATIVE64; JUMP_SLOT, DTPMOD64, DTPOFF64, TPOFF64, TLSDESC; COPY
            self.init(relativeTypes: [8, 38], pltClassTypes: [7, 16, 17, 18, 36], copyType: 5)
        }
    }

    private init(relativeTypes: Set<UInt32>, pltClassTypes: Set<UInt32>, copyType: UInt32) {
        (self.relativeTypes, self.pltClassTypes, self.copyType) = (relativeTypes, pltClassTypes, copyType)
    }

    func isRelative(_ type: UInt32) -> Bool { relativeTypes.contains(type) }

    /// `elf_machine_type_class`: PLT 1, copy 2, else 0.
    func typeClass(_ type: UInt32) -> Int { pltClassTypes.contains(type) ? 1 : type == copyType ? 2 : 0 }
}

private extension UInt64 {
    /// A count from a file, as an `Int` that a hostile value cannot overflow.
    var clampedInt: Int { Int(clamping: Swift.min(self, 1 << 40)) }
}
