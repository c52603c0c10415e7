import Foundation

/// The CLI's one way to standard output. Every write is checked: a closed
/// descriptor (`>&-`), a full device (`>/dev/full`) or a failing disk is one
/// line on stderr and exit status 1, never output lost with status 0
/// (`print` buffers in stdio, whose flush at exit fails silently) and never
/// a crash (`FileHandle.write` traps on any error).
enum StandardOutput {
    /// Why standard output took no more: `CommandLineTool` prints it as the
    /// command's one error line.
    struct WriteError: Error {
        var code: Int32
        var message: String { "cannot write to standard output (\(String(cString: strerror(code))))" }
    }

    /// Gives each of descriptors 0, 1 and 2 that the caller closed a
    /// read-only `/dev/null`, before anything is opened: otherwise the next
    /// file opened (a timeline, an output's temporary file) takes the number
    /// 1, and what is meant for stdout would be written into it. Writes to
    /// such a stdout fail with EBADF, as they would have.
    static func holdClosedDescriptors() {
        for descriptor in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] where fcntl(descriptor, F_GETFD) == -1 && errno == EBADF {
            let null = open("/dev/null", O_RDONLY)
            if null >= 0, null != descriptor {
                dup2(null, descriptor)
                close(null)
            }
        }
    }

    /// Writes all of `data`; throws `WriteError` when stdout refuses.
    static func write(_ data: some ContiguousBytes) throws {
        let code = data.withUnsafeBytes { writeAll(STDOUT_FILENO, $0) }
        if code != 0 { throw WriteError(code: code) }
    }

    /// `text` and a newline (`terminator`), as `print` would, but checked.
    static func print(_ text: String, terminator: String = "\n") throws {
        try write(Data((text + terminator).utf8))
    }

    /// 0 once every byte is written, else the errno that stopped it.
    static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
        var done = 0
        while done < bytes.count {
            let count = Foundation.write(descriptor, bytes.baseAddress! + done, bytes.count - done)
            if count < 0, errno == EINTR { continue }
            if count < 0, errno == EAGAIN {  // a non-blocking pipe, full: wait for room
                var ready = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                _ = poll(&ready, 1, -1)
                continue
            }
            guard count > 0 else { return count < 0 ? errno : EIO }
            done += count
        }
        return 0
    }
}
