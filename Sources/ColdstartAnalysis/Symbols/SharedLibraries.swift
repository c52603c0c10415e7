import Foundation

/// The shared libraries an executable maps at start-up, found the way the
/// dynamic loader finds them: its `PT_INTERP`, then the `DT_NEEDED` closure
/// searched through `DT_RPATH`, `LD_LIBRARY_PATH`, `DT_RUNPATH`,
/// `/etc/ld.so.cache` and the default directories.
///
/// Only files are read: nothing runs, so an executable that would misbehave
/// under `ldd` (which runs its loader) is safe. Libraries opened later with
/// `dlopen` are not in `DT_NEEDED`; a sampled timeline's `modules` lists them.
package struct SharedLibraries: Sendable {
    /// The executable, as given.
    package var executable: String
    /// The dynamic loader (`PT_INTERP`), nil for a static executable.
    package var interpreter: String?
    /// Resolved paths of every needed library, in breadth-first order.
    package var libraries: [String]
    /// Needed names no search path held.
    package var unresolved: [String]
    /// Who asked first: each library's path, and each unresolved name, to
    /// the path of the object whose `DT_NEEDED` named it.
    package var neededBy: [String: String] = [:]
    /// The `DT_NEEDED` name each library's path was found for (`libfoo.so.1`
    /// for `/usr/lib/libfoo.so.1.2.3`).
    package var neededName: [String: String] = [:]
    /// Each object's `DT_NEEDED` entries, resolved (a name no search path
    /// held is left out), by the object's path: the graph the loader sorts
    /// its initializers by.
    package var dependencies: [String: [String]] = [:]

    /// Reads `executable`; `libraryPath` is the `LD_LIBRARY_PATH` the program
    /// will run with.
    package init(executable: String, libraryPath: String? = ProcessInfo.processInfo.environment["LD_LIBRARY_PATH"]) throws {
        self.executable = executable
        let main = try ELFDynamicInfo(path: executable)
        interpreter = main.interpreter
        libraries = []
        unresolved = []
        let cache = LoaderCache.system
        let libraryPathDirs = (libraryPath ?? "").split(separator: ":").map(String.init).filter { !$0.isEmpty }
        var resolvedByName: [String: String] = [:]
        var seenPaths: Set<String> = [Self.canonicalPath(executable)]
        // An interpreter this machine lacks (another architecture's) is left
        // to be found in the search path like any other library.
        if let interpreter, FileManager.default.fileExists(atPath: interpreter) { seenPaths.insert(Self.canonicalPath(interpreter)) }
        let executableRpath = Self.expand(main.rpath, origin: (executable as NSString).deletingLastPathComponent)
        var queue: [(path: String, info: ELFDynamicInfo)] = [(executable, main)]
        var next = 0
        while next < queue.count {
            let (objectPath, object) = queue[next]
            next += 1
            let origin = (objectPath as NSString).deletingLastPathComponent
            // The loader ignores DT_RPATH when the object has DT_RUNPATH; the
            // executable's DT_RPATH applies to everything it loads.
            var rpath: [String] = []
            if object.runpath.isEmpty {
                rpath = Self.expand(object.rpath, origin: origin)
                if main.runpath.isEmpty && objectPath != executable { rpath += executableRpath }
            }
            let directories = rpath + libraryPathDirs + Self.expand(object.runpath, origin: origin)
            for name in object.needed {
                if let known = resolvedByName[name] {
                    dependencies[objectPath, default: []].append(known)
                    continue
                }
                let found: String?
                if name.contains("/") {
                    found = object.matches(name) ? name : nil
                } else {
                    found = directories.lazy.map { ($0 as NSString).appendingPathComponent(name) }.first(where: { object.matches($0) })
                        ?? cache.paths(for: name).first(where: { object.matches($0) })
                        ?? Self.defaultDirectories(machine: main.machine).lazy
                            .map { ($0 as NSString).appendingPathComponent(name) }.first(where: { object.matches($0) })
                }
                guard let found else {
                    if !unresolved.contains(name) {
                        unresolved.append(name)
                        neededBy[name] = objectPath
                    }
                    continue
                }
                resolvedByName[name] = found
                dependencies[objectPath, default: []].append(found)
                guard seenPaths.insert(Self.canonicalPath(found)).inserted else { continue }
                libraries.append(found)
                neededBy[found] = objectPath
                neededName[found] = name
                if let info = try? ELFDynamicInfo(path: found) { queue.append((found, info)) }
            }
        }
    }

    /// Every file the start-up maps: the executable, the loader, the libraries.
    package var allFiles: [String] { [executable] + (interpreter.map { [$0] } ?? []) + libraries }

    /// Splits search paths and substitutes `$ORIGIN`; entries with other
    /// dynamic string tokens (`$LIB`, `$PLATFORM`) are skipped.
    static func expand(_ list: [String], origin: String) -> [String] {
        list.flatMap { $0.split(separator: ":").map(String.init) }.compactMap { dir in
            let expanded = dir.replacingOccurrences(of: "${ORIGIN}", with: origin).replacingOccurrences(of: "$ORIGIN", with: origin)
            return expanded.contains("$") ? nil : expanded
        }
    }

    /// `realpath(3)`, or the path unchanged when it cannot be resolved.
    package static func canonicalPath(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    static func defaultDirectories(machine: UInt16) -> [String] {
        let triple: String? = switch machine {
        case 62: "x86_64-linux-gnu"
        case 183: "aarch64-linux-gnu"
        default: nil
        }
        let multiarch = triple.map { ["/lib/\($0)", "/usr/lib/\($0)"] } ?? []
        return multiarch + ["/lib64", "/usr/lib64", "/lib", "/usr/lib"]
    }
}

/// What the loader reads from one ELF file's program headers and dynamic
/// section. 64-bit little-endian only (x86_64, aarch64).
struct ELFDynamicInfo {
    var machine: UInt16
    var interpreter: String?
    var needed: [String] = []
    var rpath: [String] = []
    var runpath: [String] = []

    init(path: String) throws {
        let file = try ELFFile(path: path)
        let header = try file.header()
        machine = header.machine
        let programHeaders = try file.programHeaders(header)
        if let interp = programHeaders.first(where: { $0.type == 3 }), interp.filesz > 0, interp.filesz < 4096 {
            interpreter = String(decoding: try file.read(offset: interp.offset, count: interp.filesz).prefix { $0 != 0 }, as: UTF8.self)
        }
        guard let dynamic = try DynamicSection(file) else { return }  // static: no libraries
        let strings: [UInt8]
        do {
            guard let size = dynamic[DynamicSection.stringTableSize], size < 1 << 24 else { throw ELFError(path: path, problem: "") }
            strings = try dynamic.table(DynamicSection.stringTable, DynamicSection.stringTableSize)
        } catch {
            if !dynamic.values(DynamicSection.needed).isEmpty { throw ELFError(path: path, problem: "malformed dynamic section (no string table)") }
            return
        }
        func string(_ offset: UInt64) -> String? {
            guard offset < UInt64(strings.count) else { return nil }
            return String(decoding: strings[Int(offset)...].prefix { $0 != 0 }, as: UTF8.self)
        }
        needed = dynamic.values(DynamicSection.needed).compactMap(string)
        rpath = dynamic.values(DynamicSection.rpath).compactMap(string)
        runpath = dynamic.values(DynamicSection.runpath).compactMap(string)
    }

    /// Whether this object's loader would stop its search at `path`: an ELF
    /// file of the same class and machine (the loader skips others and
    /// files it cannot open), or a FIFO, socket, device or directory there.
    /// The loader opens those too (a FIFO blocks it until a writer comes),
    /// so the search ends; the path is listed, and reading it is refused
    /// with the reason (`RegularFile`), never waited on.
    func matches(_ path: String) -> Bool {
        let file: RegularFile
        do {
            file = try RegularFile(path: path)
        } catch RegularFile.OpenError.notRegular, RegularFile.OpenError.directory {
            return true
        } catch {
            return false
        }
        var header = [UInt8](repeating: 0, count: 20)
        guard pread(file.handle.descriptor, &header, header.count, 0) == header.count,
              header.starts(with: [0x7F, 0x45, 0x4C, 0x46]), header[4] == 2
        else { return false }
        return header.u16(18) == machine
    }
}

/// `/etc/ld.so.cache` (the "glibc-ld.so.cache1.1" format ldconfig writes):
/// library names to paths.
struct LoaderCache {
    private var entries: [String: [String]] = [:]

    static let system = LoaderCache(path: "/etc/ld.so.cache")

    /// Far above a real cache's size (this machine's: 38 KiB).
    static let maxFileBytes: UInt64 = 64 << 20

    init(path: String) {
        guard let data = try? RegularFile(path: path).readAll(limit: LoaderCache.maxFileBytes) else { return }
        let magic = Array("glibc-ld.so.cache1.1".utf8)
        // The new format stands alone, or follows the old "ld.so-1.7.0" table.
        guard let start = data.firstRange(of: magic)?.lowerBound else { return }
        let header = start - data.startIndex
        guard data.count >= header + 48 else { return }
        let count = Int(data.le(UInt32.self, at: header + 20))
        let entrySize = 24
        guard count < 1 << 20, data.count >= header + 48 + count * entrySize else { return }
        // Offsets in the new format count from its header.
        func string(_ offset: UInt32) -> String? {
            let at = header + Int(offset)
            guard at < data.count else { return nil }
            let bytes = data[(data.startIndex + at)...].prefix { $0 != 0 }
            return String(decoding: bytes, as: UTF8.self)
        }
        for i in 0..<count {
            let base = header + 48 + i * entrySize
            guard let key = string(data.le(UInt32.self, at: base + 4)),
                  let value = string(data.le(UInt32.self, at: base + 8)) else { continue }
            entries[key, default: []].append(value)
        }
    }

    /// Candidate paths for a library name, in the cache's order (the caller
    /// picks the first with the right machine).
    func paths(for name: String) -> [String] { entries[name] ?? [] }
}

extension Data {
    /// The little-endian integer at byte `offset` from the start.
    func le<T: FixedWidthInteger>(_ type: T.Type, at offset: Int) -> T {
        var value: T = 0
        let start = startIndex + offset
        for i in 0..<MemoryLayout<T>.size { value |= T(self[start + i]) << (8 * i) }
        return value
    }
}
