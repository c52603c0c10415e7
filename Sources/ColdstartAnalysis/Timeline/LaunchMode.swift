import Foundation

/// How a launch was profiled, which decides what its timeline can show
/// before `main` (docs/before-main.md): the report names it in its first lines.
package enum LaunchMode: String, Codable, Sendable {
    /// Linked with Coldstart and started by `coldstart run`, whose perf
    /// events sampled the loader from exec; the app's own sampler did the rest.
    case runLinked = "run-linked"
    /// Not linked with Coldstart, run by `coldstart run`: every sample and
    /// phase comes from the launcher's perf events and LD_AUDIT module.
    case runUnlinked = "run-unlinked"
    /// Linked with Coldstart, with no launcher sampling: nothing before
    /// `.preinit_array` is sampled, and unless `coldstart run` passed its
    /// stamp the start is estimated.
    case linked

    /// The mode `timeline` was recorded in (its launcher section, if any).
    init(_ timeline: Timeline) {
        let launcher = (timeline.parsedDocument["coldstart"] as? [String: Any])?["launcher"] as? [String: Any]
        switch launcher?["mode"] as? String {
        case "not linked": self = .runUnlinked
        case .some: self = .runLinked
        case nil: self = .linked
        }
    }

    /// One line for the report's header; `startSource` as in the timeline,
    /// `traced` when the launcher sampled by ptrace (perf refused).
    func description(startSource: String, traced: Bool = false) -> String {
        switch self {
        case .runLinked where traced: "linked with Coldstart, under `coldstart run`: every thread sampled from exec by ptrace (perf refused)"
        case .runUnlinked where traced: "not linked with Coldstart, under `coldstart run`: every thread sampled from exec by ptrace (perf refused)"
        case .runLinked: "linked with Coldstart, under `coldstart run`: loader sampled from exec, the rest by the app"
        case .runUnlinked: "not linked with Coldstart, under `coldstart run`: sampled from exec by its perf events"
        case .linked where startSource == "spawn-env": "linked with Coldstart, launcher-stamped start (exact); loader not sampled"
        case .linked: "linked with Coldstart, on its own: start estimated, loader not sampled"
        }
    }
}
