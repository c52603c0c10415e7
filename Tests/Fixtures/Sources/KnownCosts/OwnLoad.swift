import Glibc

/// How much this process had to wait for a CPU, read by the program itself
/// (never by Coldstart, whose accuracy the tests judge by it): each thread's
/// /proc/self/task/TID/schedstat (ns on a CPU, ns waiting on a run queue)
/// and getrusage's involuntary context switches.
struct OwnLoad {
    var mainCpuNs: UInt64 = 0
    var mainWaitNs: UInt64 = 0
    /// The other threads': Coldstart's scan thread and watcher.
    var otherWaitNs: UInt64 = 0
    var otherWaitMaxNs: UInt64 = 0
    var threads = 0
    var involuntarySwitches = 0

    static func read() -> OwnLoad {
        var load = OwnLoad()
        let main = getpid()
        if let dir = opendir("/proc/self/task") {
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                guard let tid = Int32(name), let (cpu, wait) = schedstat("/proc/self/task/\(name)/schedstat") else { continue }
                load.threads += 1
                if tid == main {
                    load.mainCpuNs = cpu
                    load.mainWaitNs = wait
                } else {
                    load.otherWaitNs += wait
                    load.otherWaitMaxNs = max(load.otherWaitMaxNs, wait)
                }
            }
        }
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        load.involuntarySwitches = usage.ru_nivcsw
        return load
    }

    private static func schedstat(_ path: String) -> (UInt64, UInt64)? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let n = Glibc.read(fd, &buffer, buffer.count)
        guard n > 0 else { return nil }
        let fields = String(decoding: buffer[..<n], as: UTF8.self).split(separator: " ")
        guard fields.count >= 2, let cpu = UInt64(fields[0]), let wait = UInt64(fields[1]) else { return nil }
        return (cpu, wait)
    }

    var json: String {
        #"{"mainCpuNs":\#(mainCpuNs),"mainWaitNs":\#(mainWaitNs),"otherWaitNs":\#(otherWaitNs),"#
            + #""otherWaitMaxNs":\#(otherWaitMaxNs),"threads":\#(threads),"involuntarySwitches":\#(involuntarySwitches)}"#
    }
}
