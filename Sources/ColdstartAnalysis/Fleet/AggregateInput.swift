import Foundation

extension Timeline {
    /// The executable's GNU build-id, from the module table (written when
    /// sampling or the watcher ran); nil otherwise.
    package var executableBuildId: String? {
        modules.first { $0.path == process.executable }?.buildId
    }

    /// The executable's file name: what `service.name` and the `executable`
    /// label carry.
    package var executableName: String {
        (process.executable as NSString).lastPathComponent
    }

    /// The value that groups this launch under `--by name`: the label of that
    /// name, else one of the built-in keys `executable`, `build-id`, `kernel`.
    package func groupValue(_ name: String) -> String? {
        if let label = labels[name] { return label }
        switch name {
        case "executable": return executableName
        case "build-id": return executableBuildId
        case "kernel": return process.kernelRelease
        default: return nil
        }
    }
}

/// The timeline files under some paths, one at a time: a named file as it
/// is, and every `*.json` file in a named directory and its sub-directories
/// (hidden entries, symbolic links to directories, and files ending in one of
/// `exportSuffixes` — an export written beside its timeline — skipped). Nothing is
/// listed ahead: memory holds one directory handle per level being read.
package final class TimelineFiles: Sequence, IteratorProtocol {
    package enum Entry: Equatable {
        case file(String)
        /// A path that could not be listed, with the reason.
        case unreadable(String, String)
    }

    private var pending: [String]
    private var open: [(path: String, handle: OpaquePointer)] = []
    private let exportSuffixes: [String]

    /// `exportSuffixes`: ColdstartExport's `Exporters.suffixes`.
    package init(_ paths: [String], exportSuffixes: [String]) {
        pending = paths.reversed()
        self.exportSuffixes = exportSuffixes
    }

    deinit { for directory in open { closedir(directory.handle) } }

    package func next() -> Entry? {
        while true {
            if let (directory, handle) = open.last {
                guard let entry = readdir(handle) else {
                    closedir(handle)
                    open.removeLast()
                    continue
                }
                let name = withUnsafePointer(to: &entry.pointee.d_name) {
                    String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))
                }
                if name.hasPrefix(".") { continue }
                let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
                var kind = Int32(entry.pointee.d_type)
                if kind == Int32(DT_UNKNOWN) || kind == Int32(DT_LNK) {
                    var info = stat()
                    guard stat(path, &info) == 0 else { continue }  // a dangling link
                    let isDirectory = (info.st_mode & S_IFMT) == S_IFDIR
                    // A linked directory could lead back up: never followed.
                    if isDirectory && kind == Int32(DT_LNK) { continue }
                    kind = isDirectory ? Int32(DT_DIR) : Int32(DT_REG)
                }
                if kind == Int32(DT_DIR) {
                    if let entry = openDirectory(path) { return entry }
                } else if name.hasSuffix(".json") && !exportSuffixes.contains(where: name.hasSuffix) {
                    return .file(path)
                }
                continue
            }
            guard let path = pending.popLast() else { return nil }
            var info = stat()
            if stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
                if let entry = openDirectory(path) { return entry }
                continue
            }
            // Files, and paths that do not exist: the reader says what is wrong.
            return .file(path)
        }
    }

    /// Opens a directory to be read next; an entry when it cannot be.
    private func openDirectory(_ path: String) -> Entry? {
        guard let handle = opendir(path) else {
            return .unreadable(path, "cannot list the directory (\(String(cString: strerror(errno))))")
        }
        open.append((path, handle))
        return nil
    }
}

extension LaunchAggregate {
    /// Reads every timeline under `paths` (see `TimelineFiles`) on `threads`
    /// threads, each folding its files into an aggregate of its own, merged
    /// at the end: memory is one timeline, one aggregate and one symbol
    /// cache per thread.
    /// Unreadable files are skipped with their reason; exports beside them
    /// (`exportSuffixes`) are not read.
    package init(reading paths: [String], exportSuffixes: [String], groupLabel: String? = nil, slowestCount: Int = 10, profileTop: Int = 10,
                 threads: Int) {
        let reader = ParallelReader(TimelineFiles(paths, exportSuffixes: exportSuffixes),
                                    template: LaunchAggregate(groupLabel: groupLabel, slowestCount: slowestCount, profileTop: profileTop),
                                    threads: max(1, threads))
        DispatchQueue.concurrentPerform(iterations: reader.threads) { reader.work($0) }
        self = reader.merged
    }
}

/// The shared state of `LaunchAggregate(reading:)`: the file iterator and
/// each thread's result, behind one lock.
private final class ParallelReader: @unchecked Sendable {
    let threads: Int
    private let lock = NSLock()
    private let files: TimelineFiles
    private let template: LaunchAggregate
    private var partials: [LaunchAggregate?]

    init(_ files: TimelineFiles, template: LaunchAggregate, threads: Int) {
        self.files = files
        self.template = template
        self.threads = threads
        partials = Array(repeating: nil, count: threads)
    }

    private func next() -> TimelineFiles.Entry? {
        lock.lock()
        defer { lock.unlock() }
        return files.next()
    }

    func work(_ worker: Int) {
        var aggregate = template
        let symbols = SymbolCache()
        while let entry = next() {
            switch entry {
            case .file(let path):
                do {
                    aggregate.add(try Timeline(contentsOf: path), file: path, symbols: symbols)
                } catch let error as TimelineError {
                    aggregate.skip(path, reason: error.problem)
                } catch {
                    aggregate.skip(path, reason: "\(error)")
                }
            case .unreadable(let path, let reason):
                aggregate.skip(path, reason: reason)
            }
        }
        lock.lock()
        partials[worker] = aggregate
        lock.unlock()
    }

    var merged: LaunchAggregate {
        var result = template
        for partial in partials { if let partial { result.merge(partial) } }
        return result
    }
}
