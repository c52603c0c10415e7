import Foundation

/// The objects loaded before `main`, counted one way for every figure that
/// says how many: the loader finding, the objects mapped before `main` and
/// the loader statistics (one report read 54, 56 and 57, each counting
/// another set). Shared libraries are every object but the executable, the
/// dynamic loader itself and the vDSO, which are counted apart; Coldstart's
/// LD_AUDIT module, in a namespace of its own, is none of them.
package struct LoadedObjects: Codable, Sendable, Equatable {
    /// "LD_AUDIT la_objopen" (the objects the loader opened in the
    /// program's namespace) or "modules mapped" (the modules in the
    /// timeline, which also hold what was `dlopen`ed after `main`).
    package var source: String
    package var libraries: Int
    package var executable: Bool
    package var loader: Bool
    package var vdso: Bool

    /// The objects of `timeline`: those the audit module saw opened, when
    /// it ran, else the modules mapped; nil when it has neither.
    package init?(_ timeline: Timeline) {
        guard let (paths, source) = Self.paths(timeline) else { return nil }
        self.init(paths: paths, executable: timeline.process.executable, source: source)
    }

    init(paths: [String], executable: String, source: String) {
        self.source = source
        (libraries, self.executable, loader, vdso) = (0, false, false, false)
        let executablePath = SharedLibraries.canonicalPath(executable)
        for path in paths {
            let name = (path as NSString).lastPathComponent
            if path == executable || SharedLibraries.canonicalPath(path) == executablePath {
                self.executable = true
            } else if LauncherTimeline.isDynamicLoader(path) {
                loader = true
            } else if Self.isVDSO(name) {
                vdso = true
            } else {
                libraries += 1
            }
        }
    }

    static func isVDSO(_ name: String) -> Bool { name.hasPrefix("linux-vdso") || name.hasPrefix("linux-gate") || name == "[vdso]" }

    /// The object list `LoadedObjects` and `LoaderStatistics` both count:
    /// paths (the executable's own), each once, without the audit module.
    static func paths(_ timeline: Timeline) -> (paths: [String], source: String)? {
        let launcher = (timeline.parsedDocument["coldstart"] as? [String: Any])?["launcher"] as? [String: Any]
        let audited = ((launcher?["audit"] as? [String: Any])?["objects"] as? [[String: Any]])?.compactMap { $0["path"] as? String }
        var paths: [String]
        let source: String
        if let audited, !audited.isEmpty {
            source = "LD_AUDIT la_objopen"
            paths = audited.map { $0 == "-" ? timeline.process.executable : $0 }
        } else {
            source = "modules mapped"
            paths = timeline.modules.map(\.path)
        }
        var seen = Set<String>()
        paths = paths.filter { !LauncherTimeline.isAuditModule($0) && seen.insert(SharedLibraries.canonicalPath($0)).inserted }
        return paths.isEmpty ? nil : (paths, source)
    }

    /// "18 shared libraries".
    package var librariesPhrase: String { Self.librariesPhrase(libraries) }

    static func librariesPhrase(_ count: Int) -> String { "\(count) shared librar\(count == 1 ? "y" : "ies")" }

    /// "18 shared libraries, the executable, the loader and the vDSO";
    /// `withVDSO` false leaves the vDSO out (it has no file to read).
    package func phrase(withVDSO: Bool = true) -> String {
        let others = [executable ? "the executable" : nil, loader ? "the loader" : nil, vdso && withVDSO ? "the vDSO" : nil].compactMap { $0 }
        guard let last = others.last else { return librariesPhrase }
        return ([librariesPhrase] + others.dropLast()).joined(separator: ", ") + " and " + last
    }
}
