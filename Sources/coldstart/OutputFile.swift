import Foundation

/// Files the CLI writes: never half-written, never through a planted link.
enum OutputFile {
    /// Writes a temporary file beside the destination, then renames it over
    /// the destination: a reader never sees a half-written file, and a
    /// failure leaves the old one untouched. The temporary name is
    /// unpredictable (16 random hex digits) and created with
    /// `O_CREAT | O_EXCL | O_NOFOLLOW`, so a file or symlink another user
    /// planted in a shared directory is never opened or written through; the
    /// rename replaces a link at the destination rather than following it.
    /// A new file is the user's output: mode 0644 less the umask; a
    /// regular file rewritten (`symbolize FILE` in place, an output written
    /// again) keeps its permission bits, owner and group. "-" is
    /// standard output. With `input`, the file the output is made from, an
    /// output that is that very file is refused (an HTML page written over
    /// its timeline lost the timeline). Any contiguous bytes: an export's
    /// array made into `Data` was one more copy of the file (150 MB for a
    /// million samples' folded stacks).
    static func write(_ data: some ContiguousBytes, to path: String, from input: String? = nil) throws {
        if path == "-" {
            try StandardOutput.write(data)
            return
        }
        var existing = stat(), source = stat()
        if let input, stat(path, &existing) == 0, stat(input, &source) == 0, existing.st_dev == source.st_dev, existing.st_ino == source.st_ino {
            throw CommandError(message: "\(path): is the file being read (\(input)); write the output elsewhere")
        }
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[...$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        func failure(_ code: Int32) -> CommandError {
            CommandError(message: "\(path): cannot write (\(String(cString: strerror(code))))")
        }
        var temporary = ""
        var descriptor: Int32 = -1
        for _ in 0..<16 {
            temporary = directory + ".\(name).\(String(format: "%016llx", UInt64.random(in: 0...UInt64.max))).tmp"
            descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
            if descriptor >= 0 || errno != EEXIST { break }
        }
        guard descriptor >= 0 else { throw failure(errno) }
        let written = data.withUnsafeBytes { StandardOutput.writeAll(descriptor, $0) }
        if written == 0, let kept = keptOwnership(of: path, on: descriptor) { printError("coldstart: warning: \(kept)") }
        let closed = close(descriptor) == 0 ? 0 : errno
        let problem = written != 0 ? written : closed != 0 ? closed : rename(temporary, path) == 0 ? 0 : errno
        if problem != 0 {
            unlink(temporary)
            throw failure(problem)
        }
    }

    /// Gives the temporary file `descriptor` the permission bits, owner and
    /// group of the regular file at `path`, if there is one (a symlink there
    /// is replaced, not followed, so its target's are not taken). Returns a
    /// warning when the owner could not be kept (only root may give a file
    /// away); the mode is kept either way. setuid and setgid bits are never
    /// copied onto an output.
    private static func keptOwnership(of path: String, on descriptor: Int32) -> String? {
        var existing = stat()
        guard lstat(path, &existing) == 0, (existing.st_mode & S_IFMT) == S_IFREG else { return nil }
        var warning: String?
        var mine = stat()
        if fstat(descriptor, &mine) == 0, mine.st_uid != existing.st_uid || mine.st_gid != existing.st_gid,
           fchown(descriptor, existing.st_uid, existing.st_gid) != 0 {
            warning = "\(path): rewritten as owner \(mine.st_uid):\(mine.st_gid), not \(existing.st_uid):\(existing.st_gid) "
                + "(\(String(cString: strerror(errno))))"
        }
        // After the chown, which clears set-id bits.
        fchmod(descriptor, existing.st_mode & 0o777)
        return warning
    }

    /// "1.2 MB", "830 kB", "512 bytes".
    static func size(_ bytes: Int) -> String {
        if bytes >= 1_000_000 { return String(format: "%.1f MB", Double(bytes) / 1e6) }
        if bytes >= 10_000 { return "\(bytes / 1000) kB" }
        return "\(bytes) bytes"
    }
}
