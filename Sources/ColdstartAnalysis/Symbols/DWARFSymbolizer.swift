import CDw
import Foundation

/// One function at a sampled address, as the module's debug information
/// describes it.
struct SourceFrame: Equatable, Sendable {
    /// The linkage name when DWARF or the symbol table has one (`$s…`,
    /// `_Z…`, `malloc`), else DWARF's plain name.
    var name: String
    /// True for a function the compiler inlined into the next frame out.
    var isInlined: Bool
    /// Source file and line of the address inside this function: from the
    /// line table for the innermost frame, from the inlined call's
    /// `DW_AT_call_file`/`DW_AT_call_line` for the frames around it.
    var file: String?
    var line: Int?
}

/// Names from one module's DWARF through elfutils' libdwfl: functions that
/// only DWARF knows, the functions inlined at an address (innermost first),
/// source files and lines, with the debug information found in the file
/// itself, in a separate file by build-id
/// (`<debugDirectory>/.build-id/xx/yyyy….debug`) or by `.gnu_debuglink`.
/// Without DWARF at an address, the symbol tables (`.symtab`, `.dynsym`, a
/// debug file's, MiniDebugInfo) name the function.
///
/// Addresses are ELF virtual addresses, as `Timeline.Frame` stores them: the
/// module is reported at base 0, so libdwfl's bias is 0.
///
/// Only regular files are opened (a FIFO planted where a binary or debug
/// file was expected would block `open` for ever), without following the
/// read past a descriptor's check. libelf bounds-checks every section and
/// DWARF unit against the file, so a corrupt file yields an error or no
/// name, never a crash. libelf maps the files: a file truncated while the
/// CLI reads it is the one case left that can stop the CLI (SIGBUS).
final class DWARFModule {
    let path: String
    /// Lowercase hex, as `readelf -n` prints it; nil when the file has none.
    let buildID: String?

    private let session: OpaquePointer
    private let module: OpaquePointer
    private let callbacks: UnsafeMutablePointer<Dwfl_Callbacks>
    private let search: DebugFileSearch

    /// Opens `path` (a regular file). Throws with libdwfl's reason when it is
    /// no ELF file libdwfl can use.
    init(path: String, debugDirectory: String? = "/usr/lib/debug") throws {
        self.path = path
        let descriptor = try Self.openRegularFile(path)
        search = DebugFileSearch(debugDirectory: debugDirectory)
        callbacks = .allocate(capacity: 1)
        callbacks.initialize(to: Dwfl_Callbacks(
            find_elf: { _, _, _, _, _, _ in -1 },  // the file is reported with its descriptor
            find_debuginfo: { module, userdata, _, _, fileName, debuglink, _, debugName in
                guard let module, let context = userdata?.pointee else { return -1 }
                let search = Unmanaged<DebugFileSearch>.fromOpaque(context).takeUnretainedValue()
                return search.open(
                    for: module, fileName: fileName.map { String(cString: $0) },
                    debuglink: debuglink.map { String(cString: $0) }, chosenPath: debugName)
            },
            section_address: dwfl_offline_section_address,
            debuginfo_path: nil
        ))
        guard let session = dwfl_begin(callbacks) else {
            close(descriptor)
            callbacks.deallocate()
            throw ELFError(path: path, problem: "libdwfl: \(Self.lastError())")
        }
        // On success libdwfl owns the descriptor and closes it in dwfl_end.
        guard let module = dwfl_report_elf(session, Symbolizer.moduleName(path), path, descriptor, 0, false) else {
            let reason = Self.lastError()
            close(descriptor)
            dwfl_end(session)
            callbacks.deallocate()
            throw ELFError(path: path, problem: reason)
        }
        dwfl_report_end(session, nil, nil)
        self.session = session
        self.module = module
        var userdata: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        _ = dwfl_module_info(module, &userdata, nil, nil, nil, nil, nil, nil)
        userdata?.pointee = Unmanaged.passUnretained(search).toOpaque()
        var bits: UnsafePointer<UInt8>?
        var address: GElf_Addr = 0
        let length = dwfl_module_build_id(module, &bits, &address)
        if length > 0, let bits {
            buildID = UnsafeBufferPointer(start: bits, count: Int(length)).map { String(format: "%02x", $0) }.joined()
        } else {
            buildID = nil
        }
    }

    deinit {
        dwfl_end(session)
        callbacks.deallocate()
    }

    /// The separate file the DWARF came from, nil when it is the module's
    /// own file or there is no DWARF.
    var debugFilePath: String? {
        var bias: Dwarf_Addr = 0
        guard dwfl_module_getdwarf(module, &bias) != nil else { return nil }
        var debugFile: UnsafePointer<CChar>?
        _ = dwfl_module_info(module, nil, nil, nil, nil, nil, nil, &debugFile)
        guard let debugFile else { return nil }
        let found = String(cString: debugFile)
        return found == path ? nil : found
    }

    /// The separate debug file libdw found for the module's DWARF or symbol
    /// table (by build-id or `.gnu_debuglink`), nil when there is none.
    var separateDebugFile: String? {
        var bias: Dwarf_Addr = 0
        _ = dwfl_module_getdwarf(module, &bias)
        _ = dwfl_module_getsymtab(module)
        var debugFile: UnsafePointer<CChar>?
        _ = dwfl_module_info(module, nil, nil, nil, nil, nil, nil, &debugFile)
        guard let debugFile else { return nil }
        let found = String(cString: debugFile)
        return found == path ? nil : found
    }

    /// True when the module (or its debug file) has DWARF.
    var hasDWARF: Bool {
        var bias: Dwarf_Addr = 0
        return dwfl_module_getdwarf(module, &bias) != nil
    }

    /// The functions at `address`, innermost first: inlined ones (marked),
    /// then the function they were inlined into. Empty when neither DWARF
    /// nor a symbol table covers the address. A return address should be
    /// looked up at `address − 1` (see `Symbolizer`).
    func frames(at address: UInt64) -> [SourceFrame] {
        let fromDWARF = dwarfFrames(at: address)
        if !fromDWARF.isEmpty { return fromDWARF }
        guard let name = symbolName(at: address) else { return [] }
        return [SourceFrame(name: name, isInlined: false, file: nil, line: nil)]
    }

    /// The symbol-table name of the function containing `address`.
    func symbolName(at address: UInt64) -> String? {
        var offset: GElf_Off = 0
        var symbol = GElf_Sym()
        guard let name = dwfl_module_addrinfo(module, address, &offset, &symbol, nil, nil, nil), name.pointee != 0
        else { return nil }
        return Self.unversioned(String(cString: name))
    }

    /// Every compile unit's address ranges, read once, for the units
    /// libdw's own look-up cannot find: it builds one table from every unit
    /// and gives up on all of them when one has no address (a Clang
    /// module's skeleton unit, in every Swift binary), so a Swift program's
    /// functions had no file and line.
    private lazy var unitRanges: [(start: UInt64, end: UInt64, offset: Dwarf_Off)] = {
        var bias: Dwarf_Addr = 0
        guard let dwarf = dwfl_module_getdwarf(module, &bias) else { return [] }
        var ranges: [(start: UInt64, end: UInt64, offset: Dwarf_Off)] = []
        var offset: Dwarf_Off = 0, next: Dwarf_Off = 0
        var headerSize = 0
        while dwarf_nextcu(dwarf, offset, &next, &headerSize, nil, nil, nil) == 0 {
            var unit = Dwarf_Die()
            if dwarf_offdie(dwarf, offset + Dwarf_Off(headerSize), &unit) != nil {
                var base: Dwarf_Addr = 0, start: Dwarf_Addr = 0, end: Dwarf_Addr = 0
                var position = dwarf_ranges(&unit, 0, &base, &start, &end)
                while position > 0 {
                    if end > start { ranges.append((start + bias, end + bias, offset + Dwarf_Off(headerSize))) }
                    position = dwarf_ranges(&unit, position, &base, &start, &end)
                }
            }
            offset = next
        }
        return ranges
    }()

    /// The compile unit holding `address` (and the module's bias), by
    /// libdw's look-up or else `unitRanges`, into `storage`.
    private func unit(at address: UInt64, storage: UnsafeMutablePointer<Dwarf_Die>) -> (UnsafeMutablePointer<Dwarf_Die>, Dwarf_Addr)? {
        var bias: Dwarf_Addr = 0
        if let unit = dwfl_module_addrdie(module, address, &bias) { return (unit, bias) }
        guard let dwarf = dwfl_module_getdwarf(module, &bias),
              let range = unitRanges.first(where: { address >= $0.start && address < $0.end }),
              dwarf_offdie(dwarf, range.offset, storage) != nil
        else { return nil }
        return (storage, bias)
    }

    private func dwarfFrames(at address: UInt64) -> [SourceFrame] {
        let storage = UnsafeMutablePointer<Dwarf_Die>.allocate(capacity: 1)
        defer { storage.deallocate() }
        guard let (unit, bias) = self.unit(at: address, storage: storage), address >= bias else { return [] }
        // `dwarf_getscopes` continues an inlined instance with its abstract
        // definition's scopes; the concrete nesting (inlined call, the
        // function it sits in, …) comes from the innermost DIE's parents.
        var scopes: UnsafeMutablePointer<Dwarf_Die>?
        let count = dwarf_getscopes(unit, address - bias, &scopes)
        guard count > 0, let scopes else {
            free(scopes)
            // The unit's functions unreadable to libdw (their addresses in
            // DWARF 5's address table, in a Swift binary): its line table
            // still gives the place, the symbol table the name.
            let place = lineTablePlace(at: address, unit: unit, bias: bias)
            guard place.line != nil, let name = symbolName(at: address) else { return [] }
            return [SourceFrame(name: name, isInlined: false, file: place.file, line: place.line)]
        }
        var innermost = scopes.pointee
        free(scopes)
        var nesting: UnsafeMutablePointer<Dwarf_Die>?
        let depth = dwarf_getscopes_die(&innermost, &nesting)
        guard depth > 0, let nesting else {
            free(nesting)
            return []
        }
        defer { free(nesting) }
        var frames: [SourceFrame] = []
        // The line table gives the innermost frame's place; each inlined
        // call records where it sits in the function around it.
        var place = lineTablePlace(at: address, unit: unit, bias: bias)
        for index in 0..<Int(depth) {
            let scope = nesting + index
            let tag = dwarf_tag(scope)
            guard tag == Int32(DW_TAG_subprogram) || tag == Int32(DW_TAG_inlined_subroutine) else { continue }
            let inlined = tag == Int32(DW_TAG_inlined_subroutine)
            frames.append(SourceFrame(
                name: Self.name(of: scope) ?? "", isInlined: inlined, file: place.file, line: place.line))
            guard inlined else { break }
            place = callPlace(of: scope, unit: unit)
        }
        // A function DWARF leaves unnamed (rare: artificial code) takes the
        // symbol table's name.
        if let last = frames.indices.last, frames[last].name.isEmpty {
            frames[last].name = symbolName(at: address) ?? ""
        }
        return frames.filter { !$0.name.isEmpty }
    }

    private func lineTablePlace(at address: UInt64, unit: UnsafeMutablePointer<Dwarf_Die>, bias: Dwarf_Addr) -> (file: String?, line: Int?) {
        var number: Int32 = 0
        if let line = dwfl_module_getsrc(module, address) {
            guard let file = dwfl_lineinfo(line, nil, &number, nil, nil, nil) else { return (nil, nil) }
            return (String(cString: file), number > 0 ? Int(number) : nil)
        }
        // libdw's module-wide look-up fails where `unitRanges` is needed: the unit's own table.
        guard let line = dwarf_getsrc_die(unit, address - bias), let file = dwarf_linesrc(line, nil, nil),
              dwarf_lineno(line, &number) == 0
        else { return (nil, nil) }
        return (String(cString: file), number > 0 ? Int(number) : nil)
    }

    private func callPlace(of scope: UnsafeMutablePointer<Dwarf_Die>, unit: UnsafeMutablePointer<Dwarf_Die>) -> (file: String?, line: Int?) {
        var attribute = Dwarf_Attribute()
        var fileIndex: Dwarf_Word = 0, lineNumber: Dwarf_Word = 0
        let line = dwarf_attr(scope, UInt32(DW_AT_call_line), &attribute) != nil
            && dwarf_formudata(&attribute, &lineNumber) == 0 && lineNumber > 0 && lineNumber < Int.max
            ? Int(lineNumber) : nil
        guard dwarf_attr(scope, UInt32(DW_AT_call_file), &attribute) != nil,
              dwarf_formudata(&attribute, &fileIndex) == 0
        else { return (nil, line) }
        var files: OpaquePointer?
        var fileCount = 0
        guard dwarf_getsrcfiles(unit, &files, &fileCount) == 0, fileIndex < fileCount,
              let name = dwarf_filesrc(files, Int(fileIndex), nil, nil)
        else { return (nil, line) }
        return (String(cString: name), line)
    }

    /// The linkage name (through `DW_AT_abstract_origin` and
    /// `DW_AT_specification`), else the plain name.
    private static func name(of die: UnsafeMutablePointer<Dwarf_Die>) -> String? {
        var attribute = Dwarf_Attribute()
        for code in [DW_AT_linkage_name, DW_AT_MIPS_linkage_name] {
            if dwarf_attr_integrate(die, UInt32(code), &attribute) != nil, let text = dwarf_formstring(&attribute) {
                return String(cString: text)
            }
        }
        return dwarf_diename(die).map { String(cString: $0) }
    }

    /// `__libc_start_main@@GLIBC_2.34` → `__libc_start_main`.
    private static func unversioned(_ name: String) -> String {
        guard let at = name.firstIndex(of: "@"), at != name.startIndex else { return name }
        return String(name[..<at])
    }

    fileprivate static func lastError() -> String {
        dwfl_errmsg(-1).map { String(cString: $0) } ?? "unknown libdwfl error"
    }

    /// A read-only descriptor for `path` that the caller owns (libdwfl
    /// takes it), refused unless it is a regular file (`RegularFile`).
    fileprivate static func openRegularFile(_ path: String) throws -> Int32 {
        let file: RegularFile
        do {
            file = try RegularFile(path: path)
        } catch let error as RegularFile.OpenError {
            throw ELFError(path: path, problem: error.problem)
        }
        let descriptor = fcntl(file.handle.descriptor, F_DUPFD_CLOEXEC, 0)
        guard descriptor >= 0 else { throw ELFError(path: path, problem: "cannot be read (\(String(cString: strerror(errno))))") }
        return descriptor
    }
}

/// libdwfl's `find_debuginfo` callback: the places `dwfl_standard_find_debuginfo`
/// looks (build-id under the debug directory, then `.gnu_debuglink` next to
/// the file, in its `.debug` directory and under the debug directory), but
/// opening regular files only and keeping a build-id file only when its
/// build-id is the module's.
final class DebugFileSearch {
    private let debugDirectory: String?

    init(debugDirectory: String?) {
        self.debugDirectory = debugDirectory
    }

    /// A descriptor for the debug file (libdwfl takes it), or -1.
    func open(
        for module: OpaquePointer, fileName: String?, debuglink: String?,
        chosenPath: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
    ) -> Int32 {
        var bits: UnsafePointer<UInt8>?
        var address: GElf_Addr = 0
        let length = dwfl_module_build_id(module, &bits, &address)
        let buildID = length > 0 && bits != nil
            ? Array(UnsafeBufferPointer(start: bits, count: Int(length))) : nil
        for candidate in candidates(buildID: buildID, fileName: fileName, debuglink: debuglink) {
            // A debug file is as untrusted as the module (a debuglink names any file).
            guard (try? ELFFile(path: candidate).checkForLibdw()) != nil,
                  let descriptor = try? DWARFModule.openRegularFile(candidate) else { continue }
            // An absolute debuglink is a dwz alternate file, with its own build-id.
            if let buildID, !(debuglink?.hasPrefix("/") ?? false) || candidate != debuglink,
               Self.buildID(of: descriptor) != buildID {
                close(descriptor)
                continue
            }
            chosenPath?.pointee = strdup(candidate)
            return descriptor
        }
        return -1
    }

    private func candidates(buildID: [UInt8]?, fileName: String?, debuglink: String?) -> [String] {
        var paths: [String] = []
        if let buildID, buildID.count > 1, let debugDirectory {
            let hex = buildID.map { String(format: "%02x", $0) }.joined()
            paths.append("\(debugDirectory)/.build-id/\(hex.prefix(2))/\(hex.dropFirst(2)).debug")
        }
        if let debuglink, !debuglink.isEmpty {
            if debuglink.hasPrefix("/") {
                paths.append(debuglink)
            } else if let fileName {
                let directory = (fileName as NSString).deletingLastPathComponent
                paths.append("\(directory)/\(debuglink)")
                paths.append("\(directory)/.debug/\(debuglink)")
                if let debugDirectory { paths.append("\(debugDirectory)\(directory)/\(debuglink)") }
            }
        }
        // The file itself is no separate debug file.
        return paths.filter { $0 != fileName }
    }

    /// The GNU build-id note of an open ELF file, read through libelf.
    private static func buildID(of descriptor: Int32) -> [UInt8]? {
        guard elf_version(UInt32(EV_CURRENT)) != UInt32(EV_NONE),
              let elf = elf_begin(descriptor, ELF_C_READ_MMAP, nil)
        else { return nil }
        defer { elf_end(elf) }
        var bits: UnsafeRawPointer?
        let length = dwelf_elf_gnu_build_id(elf, &bits)
        guard length > 0, let bits else { return nil }
        return Array(UnsafeRawBufferPointer(start: bits, count: length))
    }
}
