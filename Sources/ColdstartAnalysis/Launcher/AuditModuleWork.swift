import Foundation

/// The work the LD_AUDIT module adds to a launch under `coldstart run`,
/// which the program's own launch never does (perf's has no audit module):
/// ld.so loading the module and its namespace's libc on the program's main
/// thread (`LauncherTimeline.auditLoading`), and the module's callbacks. One
/// population for every figure that counts it as Coldstart's: the kernel
/// share's split, the Before main section's loader samples, functions and
/// page faults.
package struct AuditModuleWork {
    /// From the module's first mapping to its `la_version`, offsets from
    /// process start; nil without both stamps.
    package let loading: Range<Int64>?
    private let pid: Int
    private let modules: Set<Int>
    /// Its last callback, `la_preinit`.
    private let callbacksEndNs: Int64

    /// `launcher` is the timeline's launcher section.
    package init(_ timeline: Timeline, launcher: [String: Any]?) {
        loading = LauncherTimeline.auditLoading(launcher)
        pid = timeline.process.pid
        modules = Set(timeline.modules.indices.filter { LauncherTimeline.isAuditModule(timeline.modules[$0].path) })
        callbacksEndNs = ((launcher?["audit"] as? [String: Any])?["preinitNs"] as? NSNumber)?.int64Value ?? .max
    }

    /// A sample (either mode) or page fault of ld.so loading the module.
    package func isLoading(ns: Int64, tid: Int) -> Bool {
        tid == pid && loading?.contains(ns) == true
    }

    /// A user-mode sample that is the module's: ld.so loading it, or one of
    /// its callbacks on the stack.
    package func contains(_ sample: Timeline.Sample) -> Bool {
        isLoading(ns: sample.ns, tid: sample.tid)
            || (!modules.isEmpty && sample.ns <= callbacksEndNs && sample.frames.contains { modules.contains($0.module) })
    }
}
