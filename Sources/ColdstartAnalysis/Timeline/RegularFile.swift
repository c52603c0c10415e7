import Foundation

/// A regular file opened for reading, and only that: a module path or a
/// timeline path from a hostile file may name a FIFO (an `open` for reading
/// would wait forever for a writer), a device that never ends, or a
/// directory. It is opened non-blocking, so opening a FIFO returns at once,
/// and `fstat` on the open descriptor decides, so the file checked is the
/// file read. The one way the CLI opens a file named by its input (a
/// timeline, a module, a library found by search).
package struct RegularFile {
    package enum OpenError: Error {
        case missing
        case directory
        /// A FIFO, socket or device.
        case notRegular
        case tooLarge(size: UInt64, limit: UInt64)
        case unreadable(String)

        /// One phrase for an error line: "no such file", "is a directory"…
        package var problem: String {
            switch self {
            case .missing: return "no such file"
            case .directory: return "is a directory"
            case .notRegular: return "not a regular file (a pipe, socket or device)"
            case .tooLarge(let size, let limit): return "too large (\(size) bytes; at most \(limit))"
            case .unreadable(let reason): return "cannot be read (\(reason))"
            }
        }
    }

    package let handle: FileHandleBox
    package let size: UInt64
    /// `st_uid`: whom the kernel lets see the file's page cache (`mincore`).
    package let owner: uid_t

    package init(path: String) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else {
            let code = errno
            throw code == ENOENT ? OpenError.missing : OpenError.unreadable(String(cString: strerror(code)))
        }
        handle = FileHandleBox(descriptor)
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw OpenError.unreadable(String(cString: strerror(errno))) }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw OpenError.directory
        default: throw OpenError.notRegular
        }
        size = UInt64(max(0, info.st_size))
        owner = info.st_uid
    }

    /// The whole file, read with `pread` until its end; throws when it holds
    /// more than `limit` bytes (checked before anything is allocated, and
    /// again while reading, in case the file grows).
    func readAll(limit: UInt64) throws -> Data {
        guard size <= limit else { throw OpenError.tooLarge(size: size, limit: limit) }
        // Read into memory the Data then owns: a zeroed array copied into a
        // Data touched every page of a big file three times (1,000,000
        // samples: 98 MB zeroed, read, copied; 30,000 of the 140,000 page
        // faults of reading it).
        let capacity = Int(size)
        guard let buffer = malloc(max(capacity, 1)) else { throw OpenError.unreadable(String(cString: strerror(ENOMEM))) }
        var done = 0
        while done < capacity {
            let got = pread(handle.descriptor, buffer + done, capacity - done, off_t(done))
            if got < 0, errno == EINTR || errno == EAGAIN { continue }
            guard got >= 0 else {
                let problem = String(cString: strerror(errno))
                free(buffer)
                throw OpenError.unreadable(problem)
            }
            if got == 0 { break }  // it shrank
            done += got
        }
        return Data(bytesNoCopy: buffer, count: done, deallocator: .free)
    }
}

/// Closes the descriptor when the last copy of the `RegularFile` (or of
/// the `ELFFile` reading through it) goes away.
package final class FileHandleBox {
    package let descriptor: Int32
    init(_ descriptor: Int32) { self.descriptor = descriptor }
    deinit { close(descriptor) }
}
