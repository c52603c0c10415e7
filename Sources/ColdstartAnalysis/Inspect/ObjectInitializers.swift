import Foundation

/// One function the loader calls before `main`: an entry of an object's
/// `DT_PREINIT_ARRAY`, its `DT_INIT` or an entry of its `DT_INIT_ARRAY`,
/// named from the object's symbol tables.
package struct Initializer: Codable, Sendable, Equatable {
    package enum Source: String, Codable, Sendable {
        /// The executable's `.preinit_array`: before every library's.
        case preinitArray = "DT_PREINIT_ARRAY"
        /// The object's `_init` (crti's `.init` section).
        case initFunction = "DT_INIT"
        case initArray = "DT_INIT_ARRAY"
    }

    package var source: Source
    /// The entry's place in its array (0 for `DT_INIT`).
    package var index: Int
    /// The function's virtual address in the object.
    package var address: UInt64
    /// The linkage name of the symbol at that address, nil when no symbol
    /// table names it (a stripped library's local function).
    package var symbol: String?
    /// The readable name: demangled, a C++ translation unit's static
    /// constructors as "static constructors of FILE".
    package var displayName: String
    /// What kind of code it is, when the name says.
    package var kind: Kind

    package enum Kind: String, Codable, Sendable {
        /// `_GLOBAL__sub_I_*`: a C++ translation unit's static constructors.
        case cxxStaticConstructors = "C++ static constructors"
        /// Swift's image registration (`swiftrt.o`): every Swift object has one.
        case swiftImageRegistration = "Swift image registration"
        /// crtstuff's `frame_dummy` / `_init`: added by the toolchain to every object.
        case toolchain = "toolchain (crt)"
        /// Anything else: a `__attribute__((constructor))` function, usually.
        case constructor = "constructor"
    }

    /// The line an allow-list holds for it: the symbol, else the entry's place.
    package var allowName: String { symbol ?? "\(source == .initFunction ? "DT_INIT" : source.rawValue)[\(index)]" }
}

enum ObjectInitializers {
    /// The object's initializers in the order the loader calls them:
    /// `DT_PREINIT_ARRAY` (only an executable's runs), `DT_INIT`, then
    /// `DT_INIT_ARRAY` (glibc `elf/dl-init.c`, `call_init`). An array's
    /// entries are read from the file and relocated as the loader would:
    /// the addend of the `R_*_RELATIVE` relocation at the entry (RELA), else
    /// the word in the file (REL, `DT_RELR`, or a fixed-address executable).
    /// A static executable has no dynamic section: libc's start-up
    /// (`csu/libc-start.c`) calls the same three from the sections.
    static func read(path: String) throws -> [Initializer] {
        let file = try ELFFile(path: path)
        let found = try DynamicSection(file).map(entries) ?? staticEntries(file)
        return found.isEmpty ? [] : named(found, path: path)
    }

    private typealias Entry = (source: Initializer.Source, index: Int, address: UInt64)

    private static func entries(_ dynamic: DynamicSection) throws -> [Entry] {
        let machine = RelocationMachine(dynamic.header.machine)
        var addends: [UInt64: UInt64] = [:]
        for relocation in try dynamic.relocations().eager where machine.isRelative(relocation.type) {
            if let addend = relocation.addend { addends[relocation.offset] = addend }
        }
        var found: [Entry] = []
        func array(_ addressTag: UInt64, _ sizeTag: UInt64, _ source: Initializer.Source) throws {
            guard let address = dynamic[addressTag], let size = dynamic[sizeTag], size >= 8 else { return }
            let bytes = try dynamic.bytes(at: address, count: size / 8 * 8, what: "\(source.rawValue)")
            for index in 0..<bytes.count / 8 {
                let slot = address &+ UInt64(index * 8)
                found.append((source, index, addends[slot] ?? bytes.u64(index * 8)))
            }
        }
        try array(DynamicSection.preinitArray, DynamicSection.preinitArraySize, .preinitArray)
        if let function = dynamic[DynamicSection.initFunction] { found.append((.initFunction, 0, function)) }
        try array(DynamicSection.initArray, DynamicSection.initArraySize, .initArray)
        return found
    }

    /// `.preinit_array`, `.init` and `.init_array` by section name; the
    /// words are addresses already (a static executable is not relocated).
    private static func staticEntries(_ file: ELFFile) throws -> [Entry] {
        let header = try file.header()
        let sections = try file.sections(header)
        let names = try file.sectionNames(header, sections)
        func section(_ name: String) -> ELFFile.Section? { names.firstIndex(of: name).map { sections[$0] } }
        var found: [Entry] = []
        func array(_ name: String, _ source: Initializer.Source) throws {
            guard let section = section(name), section.size >= 8, section.size < 1 << 24 else { return }
            let bytes = try file.read(offset: section.offset, count: section.size / 8 * 8)
            found += (0..<bytes.count / 8).map { (source, $0, bytes.u64($0 * 8)) }
        }
        try array(".preinit_array", .preinitArray)
        if let initCode = section(".init"), initCode.address != 0 { found.append((.initFunction, 0, initCode.address)) }
        try array(".init_array", .initArray)
        return found
    }

    private static func named(_ found: [Entry], path: String) -> [Initializer] {
        let image = try? ELFImage(path: path)
        return found.map { source, index, address in
            let symbol = image?.symbol(containing: address).map { $0.value == address ? $0.name : "\($0.name)+0x\(String(address - $0.value, radix: 16))" }
            let (kind, display) = describe(symbol, source: source)
            return Initializer(source: source, index: index, address: address, symbol: symbol, displayName: display, kind: kind)
        }
    }

    /// The kind and readable name of an initializer's symbol.
    static func describe(_ symbol: String?, source: Initializer.Source) -> (Initializer.Kind, String) {
        guard let symbol else {
            return (source == .initFunction ? .toolchain : .constructor, "(no symbol: the object is stripped)")
        }
        if symbol.hasPrefix("_GLOBAL__sub_I_") {
            let key = String(symbol.dropFirst("_GLOBAL__sub_I_".count))
            return (.cxxStaticConstructors, "static constructors of \(Demangler.demangle(key) ?? key)")
        }
        let display = Demangler.displayName(symbol)
        if display.contains("swift_image_constructor") { return (.swiftImageRegistration, display) }
        if ["frame_dummy", "_init", "__do_global_ctors_aux", "register_tm_clones"].contains(symbol) {
            return (.toolchain, display)
        }
        return (.constructor, display)
    }
}
