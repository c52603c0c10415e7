import Foundation

/// Files the CLI writes: never half-written.
enum OutputFile {
    /// Writes next to the destination, then renames: a reader never sees a
    /// half-written file, and a failure leaves the old one untouched. "-" is
    /// standard output.
    static func write(_ data: Data, to path: String) throws {
        if path == "-" {
            FileHandle.standardOutput.write(data)
            return
        }
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).tmp.\(getpid())")
        do {
            try data.write(to: temporary)
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw CommandError(message: "\(path): cannot write (\(error.localizedDescription))")
        }
        guard rename(temporary.path, url.path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(at: temporary)
            throw CommandError(message: "\(path): cannot write (\(reason))")
        }
    }

    /// "1.2 MB", "830 kB", "512 bytes".
    static func size(_ bytes: Int) -> String {
        if bytes >= 1_000_000 { return String(format: "%.1f MB", Double(bytes) / 1e6) }
        if bytes >= 10_000 { return "\(bytes / 1000) kB" }
        return "\(bytes) bytes"
    }
}
