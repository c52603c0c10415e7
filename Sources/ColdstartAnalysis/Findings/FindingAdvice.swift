/// What each finding tells the user to do: one place for the advice, by
/// the finding's cause (Findings.swift ranks them).
extension Finding {
    static func loaderAdvice(_ loader: FindingInputs.Loader) -> String {
        // -Bsymbolic binds a library's references to its own definitions at
        // link time (relative relocations, no look-up); fewer exported
        // symbols leave fewer to interpose. Prelinking left glibc in 2.36.
        if let library = loader.heaviest, library.isOwn {
            return "\(library.name) is yours: link it into the executable (a static product), or with -Xlinker -Bsymbolic "
                + "so its references to itself need no look-up, and export less (internal or package instead of public)"
        }
        if loader.swiftRuntimeIsShared {
            // Measured: a Foundation "hello" started in ~3 ms with
            // -static-stdlib, ~13 ms without (docs/performance.md).
            return "the Swift runtime\(loader.usesFoundation ? " and Foundation" : "") are shared libraries; "
                + "-static-stdlib removes most of this (a Foundation hello: ~13 → ~3 ms)"
        }
        return "the loader maps and relocates each library before main; link fewer libraries"
    }

    /// What to do about a wait, by its cause (the timeline's name for it:
    /// a `memory` wait is a brk or mmap, never I/O).
    static func blockingAdvice(cause: String, endsAtReady: Bool) -> String {
        let end = endsAtReady ? "ready()" : "exit"
        let later = endsAtReady ? ", or after ready()" : ""
        return switch Timeline.Cause(name: cause) {
        case .lock:
            "the thread waited for a lock or another thread; find who holds it, or do not wait for it before \(end)"
        case .sleep:
            "the thread slept; remove the sleep or move it off the critical path"
        case .pageFault:
            "the thread waited for a page from disk: a cold cache"
        case .fileRead:
            "the thread waited for a file read; read less, read in the background" + later
        case .fileWrite:
            "the thread waited for a file write; write less, write in the background" + later
        case .fileSystem:
            "the thread waited in the file system (open, stat, directory listing); touch fewer files, or cache what it looks up"
        case .memory:
            "the thread waited while the kernel mapped or unmapped memory (brk, mmap, munmap); allocate less, or reuse buffers"
        case .network:
            "the thread waited on the network; connect or fetch concurrently, or do not wait for it before \(end)"
        case .events:
            "the thread waited for events (poll, epoll): another thread, a peer or a timer; do not wait for it before \(end)"
        case .pipe:
            "the thread waited on a pipe: the other end (a child, another thread) was slow; start it earlier or do not wait for it"
        case .child:
            "the thread waited for a child process; start it earlier, or do not wait for it before \(end)"
        case .stopped:
            "the thread was stopped (a signal, or a debugger); nothing to change in the app"
        case .running, .other, .unknown:
            "the thread waited in a system call; find what it waited for, or do not wait for it before \(end)"
        }
    }
}
