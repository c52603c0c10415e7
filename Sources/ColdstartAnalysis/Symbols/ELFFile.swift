import Foundation

/// Bounds-checked reads of one ELF64 little-endian file: every table is read
/// whole with `pread` and checked against the file size, so a truncated or
/// hostile file throws instead of crashing. What one file can make the CLI
/// read and hold is capped too (`maxReadBytes`, `maxSections`): a sparse
/// file costs nothing on disk, so "fits in the file" alone let a 2 GiB file
/// of 8 KiB on disk claim 33 million section headers (9 GB resident; an
/// 8 GiB one aborted).
struct ELFFile {
    /// Bytes read from one file, all tables together: the largest modules
    /// seen (sourcekit-lsp, liblldb) read about 40 MiB of symbol and string
    /// tables. What is held for them is at most about twice this.
    static let maxReadBytes: UInt64 = 512 << 20
    /// Section headers (64 bytes each): linked modules have tens; extended
    /// numbering starts at 65,280.
    static let maxSections = 1 << 20
    /// `SHF_COMPRESSED`: libelf inflates such a section to its stated size.
    static let compressedFlag: UInt64 = 0x800

    static let symtabType: UInt32 = 2
    static let strtabType: UInt32 = 3
    static let noteType: UInt32 = 7
    static let dynsymType: UInt32 = 11
    static let noBitsType: UInt32 = 8
    /// `SHF_EXECINSTR`: the section holds code.
    static let executableFlag: UInt64 = 4

    struct Header {
        var machine: UInt16
        var programHeaderOffset: UInt64
        var sectionHeaderOffset: UInt64
        var programHeaderSize: Int
        var programHeaderCount: Int
        var sectionHeaderSize: Int
        var sectionHeaderCount: Int
        var sectionNamesIndex: Int
    }

    struct Section {
        /// Where the name starts in the section-name table (`e_shstrndx`).
        var nameOffset: UInt32 = 0
        var type: UInt32
        /// `SHF_*`; `executableFlag` marks code.
        var flags: UInt64 = 0
        /// Where the section is loaded (0 when it is not).
        var address: UInt64 = 0
        var offset: UInt64
        var size: UInt64
        var link: UInt32
        var entrySize: UInt64
    }

    struct ProgramHeader {
        var type: UInt32
        var flags: UInt32
        var offset: UInt64
        var vaddr: UInt64
        var filesz: UInt64
        var memsz: UInt64
        var align: UInt64
    }

    let path: String
    let size: UInt64
    private let handle: FileHandleBox
    private let budget = ReadBudget(ELFFile.maxReadBytes)

    init(path: String) throws {
        self.path = path
        do {
            let file = try RegularFile(path: path)
            handle = file.handle
            size = file.size
        } catch let error as RegularFile.OpenError {
            throw ELFError(path: path, problem: error.problem)
        }
    }

    /// `count` bytes at `offset`, or a throw if they are not all in the file.
    func read(offset: UInt64, count: UInt64) throws -> [UInt8] {
        guard offset <= size, count <= size - offset else {
            throw ELFError(path: path, problem: "truncated ELF file (needs bytes \(offset)..<\(offset &+ count) of \(size))")
        }
        guard count <= budget.remaining else {
            throw ELFError(path: path, problem: "tables larger than coldstart reads from one file "
                + "(\(ELFFile.maxReadBytes >> 20) MiB; \(count) more bytes asked at offset \(offset))")
        }
        budget.remaining -= count
        var bytes = [UInt8](repeating: 0, count: Int(count))
        var done = 0
        while done < bytes.count {
            let got = bytes.withUnsafeMutableBytes {
                pread(handle.descriptor, $0.baseAddress! + done, $0.count - done, off_t(offset) + off_t(done))
            }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { throw ELFError(path: path, problem: "read failed at offset \(Int(offset) + done)") }
            done += got
        }
        return bytes
    }

    func header() throws -> Header {
        guard size > 0 else { throw ELFError(path: path, problem: "empty file, not ELF") }
        let magic = try read(offset: 0, count: min(size, 4))
        guard magic.elementsEqual([0x7F, 0x45, 0x4C, 0x46]) else { throw ELFError(path: path, problem: "not an ELF file") }
        guard size >= 64 else { throw ELFError(path: path, problem: "too short for an ELF header") }
        let bytes = try read(offset: 0, count: 64)
        guard bytes[4] == 2 else { throw ELFError(path: path, problem: "not a 64-bit ELF file") }
        guard bytes[5] == 1 else { throw ELFError(path: path, problem: "not a little-endian ELF file") }
        var header = Header(
            machine: bytes.u16(18),
            programHeaderOffset: bytes.u64(32),
            sectionHeaderOffset: bytes.u64(40),
            programHeaderSize: Int(bytes.u16(54)),
            programHeaderCount: Int(bytes.u16(56)),
            sectionHeaderSize: Int(bytes.u16(58)),
            sectionHeaderCount: Int(bytes.u16(60)),
            sectionNamesIndex: Int(bytes.u16(62))
        )
        if header.sectionHeaderOffset != 0 {
            guard header.sectionHeaderSize == 64 else {
                throw ELFError(path: path, problem: "section headers of \(header.sectionHeaderSize) bytes (expected 64)")
            }
            // Extended numbering: more than 0xFF00 sections keep the count in
            // section 0's size field, any 64-bit number.
            var count = UInt64(header.sectionHeaderCount)
            if count == 0 {
                count = try read(offset: header.sectionHeaderOffset, count: 64).u64(32)
            }
            let room = header.sectionHeaderOffset <= size ? (size - header.sectionHeaderOffset) / 64 : 0
            guard count <= room else {
                throw ELFError(path: path, problem: "claims \(count) section headers; the file holds at most \(room)")
            }
            guard count <= UInt64(ELFFile.maxSections) else {
                throw ELFError(path: path, problem: "claims \(count) section headers; coldstart reads at most \(ELFFile.maxSections)")
            }
            header.sectionHeaderCount = Int(count)
        } else {
            header.sectionHeaderCount = 0
        }
        if header.programHeaderCount > 0, header.programHeaderSize != 56 {
            throw ELFError(path: path, problem: "program headers of \(header.programHeaderSize) bytes (expected 56)")
        }
        return header
    }

    func sections(_ header: Header) throws -> [Section] {
        guard header.sectionHeaderCount > 0 else { return [] }
        let bytes = try read(offset: header.sectionHeaderOffset, count: UInt64(header.sectionHeaderCount) * 64)
        return (0..<header.sectionHeaderCount).map { index in
            let base = index * 64
            let type = bytes.u32(base + 4)
            return Section(
                nameOffset: bytes.u32(base),
                type: type,
                flags: bytes.u64(base + 8),
                address: bytes.u64(base + 16),
                offset: bytes.u64(base + 24),
                // NOBITS sections occupy no file bytes.
                size: type == ELFFile.noBitsType ? 0 : bytes.u64(base + 32),
                link: bytes.u32(base + 40),
                entrySize: bytes.u64(base + 56)
            )
        }
    }

    /// Checks what libelf and libdw would allocate for this file before they
    /// are given it: its section table (`header`, `sections`) and the
    /// inflated size of its compressed sections, each within the caps.
    func checkForLibdw() throws {
        let sections = try sections(try header())
        var inflated: UInt64 = 0
        for section in sections where section.flags & ELFFile.compressedFlag != 0 && section.size >= 24 {
            // Elf64_Chdr: type, reserved, then the uncompressed size.
            inflated = inflated.addingReportingOverflow(try read(offset: section.offset, count: 24).u64(8)).partialValue
            guard inflated <= ELFFile.maxReadBytes else {
                throw ELFError(path: path, problem: "compressed sections that inflate past \(ELFFile.maxReadBytes >> 20) MiB")
            }
        }
    }

    /// Each section's name, from the section-name table; empty names when
    /// the file has none.
    func sectionNames(_ header: Header, _ sections: [Section]) throws -> [String] {
        guard header.sectionNamesIndex < sections.count, sections[header.sectionNamesIndex].type == ELFFile.strtabType,
              sections[header.sectionNamesIndex].size < 1 << 24 else { return sections.map { _ in "" } }
        let table = sections[header.sectionNamesIndex]
        let strings = try read(offset: table.offset, count: table.size)
        return sections.map { section in
            let start = Int(section.nameOffset)
            guard start < strings.count else { return "" }
            return String(decoding: strings[start...].prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    func programHeaders(_ header: Header) throws -> [ProgramHeader] {
        guard header.programHeaderCount > 0 else { return [] }
        let bytes = try read(offset: header.programHeaderOffset, count: UInt64(header.programHeaderCount) * 56)
        return (0..<header.programHeaderCount).map { index in
            let base = index * 56
            return ProgramHeader(
                type: bytes.u32(base), flags: bytes.u32(base + 4), offset: bytes.u64(base + 8),
                vaddr: bytes.u64(base + 16), filesz: bytes.u64(base + 32), memsz: bytes.u64(base + 40),
                align: bytes.u64(base + 48)
            )
        }
    }

    /// The NT_GNU_BUILD_ID note, from the PT_NOTE segments or, when there are
    /// none (some debug files), the SHT_NOTE sections.
    func buildID(programHeaders: [ProgramHeader], sections: [Section]) throws -> String? {
        var regions = programHeaders.filter { $0.type == 4 }.map { ($0.offset, $0.filesz, $0.align) }
        if regions.isEmpty { regions = sections.filter { $0.type == ELFFile.noteType }.map { ($0.offset, $0.size, 4) } }
        for (offset, count, align) in regions where count > 0 && count < 1 << 20 {
            let notes = try read(offset: offset, count: count)
            let alignment = align == 8 ? 8 : 4
            func padded(_ n: Int) -> Int { (n + alignment - 1) / alignment * alignment }
            var cursor = 0
            while cursor + 12 <= notes.count {
                let nameSize = Int(notes.u32(cursor)), descSize = Int(notes.u32(cursor + 4))
                let type = notes.u32(cursor + 8)
                let nameStart = cursor + 12
                guard nameSize <= notes.count, descSize <= notes.count else { break }
                let descStart = nameStart + padded(nameSize)
                guard descStart + descSize <= notes.count else { break }
                if type == 3, nameSize == 4, notes[nameStart..<nameStart + 4].elementsEqual([0x47, 0x4E, 0x55, 0]), descSize > 0 {
                    return notes[descStart..<descStart + descSize].map { String(format: "%02x", $0) }.joined()
                }
                cursor = descStart + padded(descSize)
            }
        }
        return nil
    }
}

/// What is left of one file's `ELFFile.maxReadBytes`, shared by its copies.
final class ReadBudget {
    var remaining: UInt64
    init(_ bytes: UInt64) { remaining = bytes }
}

extension Array where Element == UInt8 {
    // Callers check bounds (whole tables are read and indexed in entry steps).
    func u16(_ at: Int) -> UInt16 { UInt16(self[at]) | UInt16(self[at + 1]) << 8 }
    func u32(_ at: Int) -> UInt32 { UInt32(u16(at)) | UInt32(u16(at + 2)) << 16 }
    func u64(_ at: Int) -> UInt64 { UInt64(u32(at)) | UInt64(u32(at + 4)) << 32 }
}
