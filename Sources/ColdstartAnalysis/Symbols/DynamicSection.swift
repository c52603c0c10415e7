import Foundation

/// One object's dynamic section (`PT_DYNAMIC`) and the tables it points at,
/// read from the file: what the relocation counts (`ObjectRelocations`) and
/// the initializer list (`ObjectInitializers`) are both made of.
struct DynamicSection {
    static let needed: UInt64 = 1, pltRelocationsSize: UInt64 = 2, stringTable: UInt64 = 5, stringTableSize: UInt64 = 10
    static let initFunction: UInt64 = 12, rpath: UInt64 = 15, bindNowTag: UInt64 = 24
    static let initArray: UInt64 = 25, initArraySize: UInt64 = 27, runpath: UInt64 = 29, flags: UInt64 = 30
    static let preinitArray: UInt64 = 32, preinitArraySize: UInt64 = 33
    static let rela: UInt64 = 7, relaSize: UInt64 = 8, rel: UInt64 = 17, relSize: UInt64 = 18
    static let pltRelocationKind: UInt64 = 20, pltRelocations: UInt64 = 23
    static let relrSize: UInt64 = 35, relr: UInt64 = 36, flags1: UInt64 = 0x6FFF_FFFB

    /// One relocation entry. `addend` is the entry's own for `DT_RELA`, nil
    /// for `DT_REL` (its addend is the word at `offset`).
    struct Relocation {
        var offset: UInt64
        var type: UInt32
        var symbol: Int
        var addend: UInt64?
    }

    let file: ELFFile
    let header: ELFFile.Header
    let programHeaders: [ELFFile.ProgramHeader]
    /// Every entry up to `DT_NULL`, in file order (`DT_NEEDED` repeats).
    let entries: [(tag: UInt64, value: UInt64)]

    /// Nil when the file has no dynamic section (a static executable).
    init?(_ file: ELFFile) throws {
        self.file = file
        header = try file.header()
        programHeaders = try file.programHeaders(header)
        guard let dynamic = programHeaders.first(where: { $0.type == 2 }), dynamic.filesz >= 16, dynamic.filesz < 1 << 20 else { return nil }
        let bytes = try file.read(offset: dynamic.offset, count: dynamic.filesz)
        var entries: [(tag: UInt64, value: UInt64)] = []
        for base in stride(from: 0, through: bytes.count - 16, by: 16) {
            let tag = bytes.u64(base)
            if tag == 0 { break }
            entries.append((tag, bytes.u64(base + 8)))
        }
        self.entries = entries
    }

    /// The entry's value (the last one when a tag repeats, as the loader reads it).
    subscript(tag: UInt64) -> UInt64? { entries.last { $0.tag == tag }?.value }

    func values(_ tag: UInt64) -> [UInt64] { entries.filter { $0.tag == tag }.map(\.value) }

    /// `count` bytes at virtual `address`, through the `PT_LOAD` segment
    /// that holds them in the file.
    func bytes(at address: UInt64, count: UInt64, what: String) throws -> [UInt8] {
        guard count < 1 << 28, let segment = programHeaders.first(where: {
            $0.type == 1 && address >= $0.vaddr && address - $0.vaddr < $0.filesz && count <= $0.filesz - (address - $0.vaddr)
        }) else { throw ELFError(path: file.path, problem: "\(what) outside the file's segments") }
        return try file.read(offset: segment.offset &+ (address - segment.vaddr), count: count)
    }

    /// The table at the address in `addressTag` with the size in `sizeTag`; empty when absent.
    func table(_ addressTag: UInt64, _ sizeTag: UInt64) throws -> [UInt8] {
        guard let address = self[addressTag], let size = self[sizeTag], size > 0 else { return [] }
        return try bytes(at: address, count: size, what: "dynamic table \(addressTag)")
    }

    /// `DT_RELA` (or `DT_REL`) and `DT_JMPREL`, in the order glibc applies them.
    func relocations() throws -> (eager: [Relocation], plt: [Relocation]) {
        var sizes: [UInt64: UInt64] = [:]
        // Some linkers make DT_RELASZ (DT_RELSZ) cover the PLT's entries too;
        // glibc then leaves them out of the first range (dynamic-link.h).
        for (address, size) in [(Self.rela, Self.relaSize), (Self.rel, Self.relSize)] {
            guard var length = self[size] else { continue }
            if let start = self[address], let plt = self[Self.pltRelocations], let pltLength = self[Self.pltRelocationsSize],
               start &+ length == plt &+ pltLength, length >= pltLength {
                length -= pltLength
            }
            sizes[address] = length
        }
        func parse(_ address: UInt64, size: UInt64?, withAddend: Bool) throws -> [Relocation] {
            guard let start = self[address], let size, size > 0 else { return [] }
            let bytes = try self.bytes(at: start, count: size, what: "relocation table")
            let entrySize = withAddend ? 24 : 16
            return stride(from: 0, through: bytes.count - entrySize, by: entrySize).map { base in
                let info = bytes.u64(base + 8)
                return Relocation(offset: bytes.u64(base), type: UInt32(truncatingIfNeeded: info), symbol: Int(info >> 32),
                                  addend: withAddend ? bytes.u64(base + 16) : nil)
            }
        }
        let eager = self[Self.rela] != nil
            ? try parse(Self.rela, size: sizes[Self.rela], withAddend: true)
            : try parse(Self.rel, size: sizes[Self.rel], withAddend: false)
        let plt = try parse(Self.pltRelocations, size: self[Self.pltRelocationsSize], withAddend: self[Self.pltRelocationKind] != 17)
        return (eager, plt)
    }

    /// The addresses `DT_RELR` relocates: an address entry (even) is one,
    /// a bitmap entry (odd) one per bit set after the first, each bit a word
    /// after the last address.
    func packedRelativeAddresses() throws -> [UInt64] {
        let relr = try table(Self.relr, Self.relrSize)
        var addresses: [UInt64] = []
        var next: UInt64 = 0
        for base in stride(from: 0, through: relr.count - 8, by: 8) {
            let entry = relr.u64(base)
            if entry & 1 == 0 {
                addresses.append(entry)
                next = entry &+ 8
            } else {
                for bit in 1..<64 where entry >> UInt64(bit) & 1 != 0 { addresses.append(next &+ UInt64(bit - 1) * 8) }
                next = next &+ 63 * 8
            }
        }
        return addresses
    }
}
