import Foundation

/// A thread's name as a person reads it.
///
/// The kernel keeps 15 bytes of a thread's name, and libdispatch on Linux
/// names its workers after the *end* of their root queue's label:
/// "com.apple.root.default-qos" shows as "oot.default-qos", and every
/// overcommit root queue ("com.apple.root.<qos>-qos.overcommit", the one that
/// drains the main queue after `dispatch_main()` among them) as
/// "-qos.overcommit", which no longer says which QoS.
enum ThreadLabel {
    /// libdispatch's root queues by QoS, as their labels spell it.
    static let qualities: [(label: String, reads: String)] = [
        ("maintenance", "maintenance"), ("background", "background"), ("utility", "utility"),
        ("default", "default"), ("user-initiated", "user-initiated"), ("user-interactive", "user-interactive"),
    ]

    /// What a root queue's worker looks like in the kernel (the last 15
    /// bytes of the queue's label), and how it reads.
    static let dispatchWorkers: [String: String] = {
        var names: [String: String] = [:]
        for (label, reads) in qualities {
            names[String("com.apple.root.\(label)-qos".suffix(15))] = "dispatch worker (\(reads) QoS)"
        }
        // Every overcommit label ends the same way: the QoS is cut off.
        names["-qos.overcommit"] = "dispatch worker (overcommit)"
        return names
    }()

    /// The readable name of thread `tid` whose kernel name is `name`.
    static func readable(_ name: String, tid: Int, mainTid: Int) -> String {
        // "main", as `--thread main` names it.
        if tid == mainTid { return "main" }
        if let worker = dispatchWorker(name) { return worker }
        switch name {
        case "coldstart-watch": return "Coldstart's watcher (profiler)"
        case "coldstart-scan": return "Coldstart's thread scanner (profiler)"
        case _ where name.hasPrefix("coldstart-"): return "Coldstart's \(name.dropFirst(10)) (profiler)"
        case "": return "thread \(tid)"
        default: return name
        }
    }

    /// "dispatch worker (…)" for a dispatch root queue's worker, else nil.
    static func dispatchWorker(_ name: String) -> String? {
        if let known = dispatchWorkers[name] { return known }
        // A full label (a kernel that kept it, or a name set by hand).
        guard name.hasPrefix("com.apple.root.") else { return nil }
        let rest = name.dropFirst("com.apple.root.".count)
        let overcommit = rest.hasSuffix(".overcommit")
        let quality = rest.replacingOccurrences(of: ".overcommit", with: "").replacingOccurrences(of: "-qos", with: "")
        guard let reads = qualities.first(where: { $0.label == quality })?.reads else { return nil }
        return "dispatch worker (\(reads) QoS\(overcommit ? ", overcommit" : ""))"
    }

    /// Whether a thread of this kernel name runs dispatch (and so Swift
    /// concurrency) jobs.
    static func isDispatchWorker(_ name: String) -> Bool { dispatchWorker(name) != nil }
}
