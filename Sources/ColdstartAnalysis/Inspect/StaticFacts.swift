import Foundation

/// One object's start-up facts in a phrase, for a launch's findings to
/// name beside what was measured: "2 initializers, 5,746 symbolic
/// relocations (1,210 look-ups)" (`coldstart inspect` names the initializers).
/// Made from the loader statistics, so a symbolized timeline, whose report
/// reads no binary, says the same.
enum StaticFacts {
    static func phrase(_ object: ObjectRelocations) -> String {
        func n(_ value: Int) -> String { value.formatted(.number.grouping(.automatic).locale(Locale(identifier: "en_US"))) }
        let initializers = object.initializers.map { "\($0) initializer\($0 == 1 ? "" : "s"), " } ?? ""
        return "\(initializers)\(n(object.symbolic)) symbolic relocations (\(n(object.lookups)) look-ups)"
    }
}
