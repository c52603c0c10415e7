import Foundation

extension Timeline {
    /// Reads the launch's binaries under `root`: the root of the file system
    /// the launch ran in (a container's, an emulated or remote machine's),
    /// when that is not this one. A module whose file exists under `root` is
    /// read from there; the others keep their path. The build-ids recorded
    /// in the timeline still have to match, so a wrong root names nothing
    /// rather than naming it wrongly.
    package mutating func readModules(under root: String) {
        let prefix = root.hasSuffix("/") ? String(root.dropLast()) : root
        for index in modules.indices where modules[index].path.hasPrefix("/") {
            let moved = prefix + modules[index].path
            if FileManager.default.fileExists(atPath: moved) { modules[index].path = moved }
        }
    }
}
