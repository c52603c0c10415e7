import ColdstartAnalysis
import Foundation

/// Drops files from the kernel's page cache so that the next launch reads
/// them from disk, as a first launch after boot would.
///
/// `posix_fadvise(POSIX_FADV_DONTNEED)` is advice: the kernel keeps pages that
/// are dirty, locked, or mapped by a running process (other processes using
/// the same library, and this very process for the Swift runtime it shares
/// with a Swift app). So residency is measured with `mincore` before and
/// after, and what stayed is reported.
///
/// `mincore` tells the page cache's truth only about files the caller owns
/// or may write (or to root): for any other file the kernel reports every
/// page resident, so as not to leak what others read. Such a file's
/// residency is unknown here, never "stayed", and the launches' major page
/// faults decide whether eviction took effect.
enum PageCache {
    struct FileEviction: Codable {
        var path: String
        var bytes: UInt64
        /// Bytes of the file in the page cache before and after the advice;
        /// nil when `mincore` cannot tell (see above).
        var residentBefore: UInt64?
        var residentAfter: UInt64?
        /// Why the file could not be measured or advised, if it could not.
        var error: String?
    }

    /// Advises the kernel to drop every page of each file; returns what was
    /// resident before and after.
    static func evict(_ paths: [String]) -> [FileEviction] {
        paths.map { path in
            var result = FileEviction(path: path, bytes: 0)
            // The library search's paths: a FIFO among them blocks a plain open.
            let file: RegularFile
            do {
                file = try RegularFile(path: path)
            } catch {
                result.error = (error as? RegularFile.OpenError)?.problem ?? "\(error)"
                return result
            }
            let fd = file.handle.descriptor, size = Int(file.size)
            result.bytes = file.size
            let measurable = mincoreTellsTruth(path: path, owner: file.owner)
            if measurable { result.residentBefore = residentBytes(fd, size: size) }
            if posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0 { result.error = "posix_fadvise refused" }
            if measurable { result.residentAfter = residentBytes(fd, size: size) }
            return result
        }
    }

    /// Whether `mincore` reports the page cache for this file rather than
    /// "all resident": the kernel's `can_do_mincore` (owner, write access,
    /// or root).
    static func mincoreTellsTruth(path: String, owner: uid_t) -> Bool {
        geteuid() == 0 || owner == geteuid() || faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) == 0
    }

    /// How much of the open file is in the page cache. The mapping is only
    /// looked at, never touched, and unmapped before returning: a page this
    /// process mapped and touched could not be evicted.
    static func residentBytes(_ fd: Int32, size: Int) -> UInt64? {
        guard size > 0 else { return 0 }
        let pageSize = sysconf(Int32(_SC_PAGESIZE))
        let pages = (size + pageSize - 1) / pageSize
        guard let map = mmap(nil, size, PROT_READ, MAP_SHARED, fd, 0), map != MAP_FAILED else { return nil }
        defer { munmap(map, size) }
        var vector = [UInt8](repeating: 0, count: pages)
        guard mincore(map, size, &vector) == 0 else { return nil }
        return UInt64(vector.reduce(0) { $0 + Int($1 & 1) }) * UInt64(pageSize)
    }

    /// The processes that map each of `paths` right now ("coldstart (this
    /// process)", "swift-frontend 1234"): why their pages stayed.
    static func mappers(of paths: [String]) -> [String: [String]] {
        let wanted = Set(paths.map(SharedLibraries.canonicalPath))
        var found: [String: [String]] = [:]
        let me = getpid()
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.compactMap { Int32($0) } ?? []
        for pid in pids {
            guard let maps = readProcFile("/proc/\(pid)/maps") else { continue }
            var mapped: Set<String> = []
            for line in maps.split(separator: "\n") {
                guard let slash = line.firstIndex(of: "/") else { continue }
                let path = String(line[slash...])
                if wanted.contains(path) { mapped.insert(path) }
            }
            guard !mapped.isEmpty else { continue }
            let name: String
            if pid == me {
                name = "coldstart (this process)"
            } else {
                let comm = readProcFile("/proc/\(pid)/comm")?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
                name = "\(comm) \(pid)"
            }
            for path in mapped { found[path, default: []].append(name) }
        }
        return found
    }

    /// A /proc file read to its end (`String(contentsOfFile:)` stops after
    /// 4 KiB there: /proc reports a size of 0).
    private static func readProcFile(_ path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        return (try? handle.readToEnd()).map { String(decoding: $0, as: UTF8.self) }
    }
}
