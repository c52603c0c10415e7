import Foundation

/// Why an ELF file could not be read; `description` is one line naming it.
struct ELFError: Error, CustomStringConvertible {
    var path: String
    var problem: String
    var description: String { "\(path): \(problem)" }
}

/// The parts of an ELF64 little-endian file that name a sampled address:
/// function symbols (`.symtab` and `.dynsym`, plus a separate debug file's
/// `.symtab` when the file is stripped), loadable segments and the GNU
/// build-id.
///
/// Only the headers, notes and symbol tables are read (with `pread`, not a
/// mapping: a file that shrinks while mapped would kill the reader with
/// SIGBUS). Every offset and size is checked against the file, so a truncated
/// or corrupt file throws instead of crashing.
final class ELFImage {
    struct Segment {
        var virtualAddress: UInt64
        var memorySize: UInt64
        var isExecutable: Bool
        func contains(_ address: UInt64) -> Bool {
            address >= virtualAddress && address - virtualAddress < memorySize
        }
    }

    /// A function symbol. `name` is the linkage name without a symbol
    /// version (`__libc_start_main@@GLIBC_2.34` → `__libc_start_main`).
    struct Symbol: Equatable {
        var name: String
        var value: UInt64
        var size: UInt64
    }

    let path: String
    /// Lowercase hex, as `readelf -n` prints it; nil when the file has none.
    let buildID: String?
    let segments: [Segment]
    /// The code sections (`.init`, `.plt`, `.text`, …), empty when the file
    /// has no section headers.
    let codeSections: [Segment]
    /// True when the file itself has a `.symtab` (it is not stripped).
    let hasSymbolTable: Bool
    /// The debug file whose `.symtab` was merged in, if one was used.
    private(set) var debugFilePath: String?

    private var entries: [Entry] = []
    private var stringTables: [[UInt8]] = []

    /// One symbol, packed: names stay in their string table until asked for.
    private struct Entry {
        var value: UInt64
        var size: UInt64
        var nameOffset: UInt32
        var table: UInt16
        /// Higher wins when several symbols share an address.
        var rank: UInt16
    }

    /// Reads `path`, and when the file has no `.symtab`, the `.symtab` of
    /// the separate debug file libdw finds for it (by build-id under
    /// `debugDirectory`, or by `.gnu_debuglink`); nil `debugDirectory` reads
    /// the file alone.
    convenience init(path: String, debugDirectory: String? = "/usr/lib/debug") throws {
        try ELFFile(path: path).checkForLibdw()
        let debugFile = debugDirectory == nil ? nil : (try? DWARFModule(path: path, debugDirectory: debugDirectory))?.separateDebugFile
        try self.init(path: path, debugFile: debugFile)
    }

    /// Reads `path`, merging in `debugFile`'s `.symtab` when `path` has
    /// none and the two build-ids match.
    init(path: String, debugFile debugPath: String?) throws {
        self.path = path
        let file = try ELFFile(path: path)
        let header = try file.header()
        let sections = try file.sections(header)
        let programHeaders = try file.programHeaders(header)
        segments = programHeaders.filter { $0.type == 1 }.map {
            Segment(virtualAddress: $0.vaddr, memorySize: $0.memsz, isExecutable: $0.flags & 1 != 0)
        }
        codeSections = sections.filter { $0.flags & ELFFile.executableFlag != 0 && $0.address != 0 }.map {
            Segment(virtualAddress: $0.address, memorySize: $0.size, isExecutable: true)
        }
        buildID = try file.buildID(programHeaders: programHeaders, sections: sections)
        let symtabs = sections.filter { $0.type == ELFFile.symtabType }
        hasSymbolTable = symtabs.contains { $0.size > 0 }
        for table in symtabs + sections.filter({ $0.type == ELFFile.dynsymType }) {
            try load(table, sections: sections, from: file)
        }
        if !hasSymbolTable, let debugPath, let buildID,
           let debug = try? ELFFile(path: debugPath),
           let debugHeader = try? debug.header(),
           let debugSections = try? debug.sections(debugHeader),
           let debugProgramHeaders = try? debug.programHeaders(debugHeader),
           (try? debug.buildID(programHeaders: debugProgramHeaders, sections: debugSections)) == buildID {
            for table in debugSections where table.type == ELFFile.symtabType {
                try? load(table, sections: debugSections, from: debug)
            }
            debugFilePath = debugPath
        }
        finishTable()
    }

    /// True when `address` (an ELF virtual address) lies in a code section,
    /// or in an executable segment when the file has no section headers.
    func isCode(_ address: UInt64) -> Bool {
        (codeSections.isEmpty ? segments.filter(\.isExecutable) : codeSections).contains { $0.contains(address) }
    }

    /// The function containing `address` (an ELF virtual address), or nil.
    /// Only code is named: an address in data (a bad unwind's "return
    /// address" in relocations, the ELF header) has no function, whatever
    /// symbol precedes it.
    func symbol(containing address: UInt64) -> Symbol? {
        guard isCode(address) else { return nil }
        // The last entry starting at or below the address.
        let low = entries.partitionPoint { $0.value <= address }
        guard low > 0 else { return nil }
        let nearest = low - 1
        // A sized symbol containing the address, possibly an enclosing one a
        // few entries back (a function with a labelled symbol inside it).
        for index in stride(from: nearest, through: max(0, nearest - 8), by: -1) {
            let entry = entries[index]
            if entry.size > 0, address - entry.value < entry.size { return symbol(entry) }
        }
        // An unsized symbol (hand-written assembly) reaches to the next
        // symbol, within the code section that holds it: crti's `_init` is
        // followed by the PLT, whose stubs are no part of it.
        let entry = entries[nearest]
        guard entry.size == 0 else { return nil }
        let next = nearest + 1 < entries.count ? entries[nearest + 1].value : UInt64.max
        let code = codeSections.isEmpty ? segments.filter(\.isExecutable) : codeSections
        guard address < next, code.contains(where: { $0.contains(entry.value) && $0.contains(address) }) else { return nil }
        return symbol(entry)
    }

    /// Every function symbol, sorted by address (tests compare it with `nm`).
    var allSymbols: [Symbol] { entries.map(symbol) }

    private func symbol(_ entry: Entry) -> Symbol {
        Symbol(name: name(entry), value: entry.value, size: entry.size)
    }

    private func name(_ entry: Entry) -> String {
        let table = stringTables[Int(entry.table)]
        let start = Int(entry.nameOffset)
        guard start < table.count else { return "" }
        var end = start
        while end < table.count, table[end] != 0 { end += 1 }
        var name = String(decoding: table[start..<end], as: UTF8.self)
        if let at = name.firstIndex(of: "@"), at != name.startIndex { name = String(name[..<at]) }
        return name
    }

    private func load(_ table: ELFFile.Section, sections: [ELFFile.Section], from file: ELFFile) throws {
        let entrySize = 24
        guard table.entrySize == 0 || table.entrySize == UInt64(entrySize) else {
            throw ELFError(path: file.path, problem: "symbol table entries of \(table.entrySize) bytes (expected 24)")
        }
        guard Int(table.link) < sections.count, sections[Int(table.link)].type == ELFFile.strtabType else {
            throw ELFError(path: file.path, problem: "symbol table without a string table")
        }
        let symbolBytes = try file.read(offset: table.offset, count: table.size)
        let strings = try file.read(offset: sections[Int(table.link)].offset, count: sections[Int(table.link)].size)
        guard stringTables.count < Int(UInt16.max) else { return }
        let tableIndex = UInt16(stringTables.count)
        stringTables.append(strings)
        let isDynamic = table.type == ELFFile.dynsymType
        let count = symbolBytes.count / entrySize
        entries.reserveCapacity(entries.count + count)
        for index in 0..<count {
            let base = index * entrySize
            let nameOffset = symbolBytes.u32(base)
            let info = symbolBytes[base + 4]
            let sectionIndex = symbolBytes.u16(base + 6)
            let value = symbolBytes.u64(base + 8)
            let size = symbolBytes.u64(base + 16)
            let type = info & 0xF, binding = info >> 4
            // Functions (and GNU indirect functions), and untyped symbols: the
            // loader's `_start` and `_dl_start_user` are unsized labels.
            // Unsized ones only ever name an address inside an executable
            // segment (see `symbol(containing:)`), which keeps section
            // markers such as `_end` out; ARM mapping symbols are no names.
            guard type == 2 || type == 10 || type == 0 else { continue }
            guard sectionIndex != 0, sectionIndex < 0xFF00, value != 0, nameOffset != 0,
                  !(type == 0 && Self.isMappingSymbol(strings, at: Int(nameOffset)))
            else { continue }
            var rank: UInt16 = size > 0 ? 8 : 0
            switch binding {
            case 1: rank += 4  // global
            case 2: rank += 3  // weak
            default: break
            }
            if type == 2 || type == 10 { rank += 2 }
            if !isDynamic { rank += 1 }  // same symbol in both tables: either is fine
            entries.append(Entry(value: value, size: size, nameOffset: nameOffset, table: tableIndex, rank: rank))
        }
    }

    /// `$x`, `$d`, `$a`, `$t`, optionally `.suffix`: ARM/AArch64 code and data
    /// markers (Swift names start with `$s`, so the letter matters).
    private static func isMappingSymbol(_ strings: [UInt8], at offset: Int) -> Bool {
        guard offset + 1 < strings.count, strings[offset] == UInt8(ascii: "$"),
              [UInt8(ascii: "x"), UInt8(ascii: "d"), UInt8(ascii: "a"), UInt8(ascii: "t")].contains(strings[offset + 1])
        else { return false }
        return offset + 2 >= strings.count || strings[offset + 2] == 0 || strings[offset + 2] == UInt8(ascii: ".")
    }

    /// Sorts by address and keeps one symbol per address: sized before
    /// unsized, global before weak before local, then the plainest alias
    /// (`malloc` over `__libc_malloc`: fewest leading underscores, then the
    /// shortest). Versions are stripped from names, so `f@@V2` and `f@V1`
    /// read alike. The choice is the same on every run.
    private func finishTable() {
        entries.sort {
            if $0.value != $1.value { return $0.value < $1.value }
            if $0.rank != $1.rank { return $0.rank > $1.rank }
            return ($0.table, $0.nameOffset) < ($1.table, $1.nameOffset)
        }
        func plainness(_ entry: Entry) -> (Int, Int, String) {
            let name = name(entry)
            return (name.prefix { $0 == "_" }.count, name.count, name)
        }
        var kept: [Entry] = []
        kept.reserveCapacity(entries.count)
        for entry in entries {
            guard let last = kept.last, last.value == entry.value else {
                kept.append(entry)
                continue
            }
            if entry.rank == last.rank, plainness(entry) < plainness(last) { kept[kept.count - 1] = entry }
        }
        entries = kept
    }
}

/// Bounds-checked reads of one ELF64 little-endian file.
