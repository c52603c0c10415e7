import Foundation

/// Turns linkage names into readable ones with the demanglers already in this
/// process: `swift_demangle` from libswiftCore (loaded in every Swift program)
/// and `__cxa_demangle` from libstdc++ (loaded with Foundation on Linux). A
/// name neither understands is returned unchanged.
enum Demangler {
    /// `char *swift_demangle(const char *, size_t, char *out, size_t *outlen, uint32_t flags)`:
    /// with no output buffer it returns malloc'd text, or NULL for a non-Swift name.
    private typealias SwiftDemangle = @convention(c) (
        UnsafePointer<CChar>?, Int, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?, UInt32
    ) -> UnsafeMutablePointer<CChar>?

    /// `char *__cxa_demangle(const char *, char *buf, size_t *len, int *status)`.
    private typealias CxxDemangle = @convention(c) (
        UnsafePointer<CChar>?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<Int32>?
    ) -> UnsafeMutablePointer<CChar>?

    private static let swiftDemangle: SwiftDemangle? = lookUp("swift_demangle")
    private static let cxxDemangle: CxxDemangle? = lookUp("__cxa_demangle")

    /// Whether each demangler was found (a report says when names stay mangled).
    static var hasSwiftDemangler: Bool { swiftDemangle != nil }
    static var hasCxxDemangler: Bool { cxxDemangle != nil }

    private static func lookUp<T>(_ name: String) -> T? {
        // A null handle is RTLD_DEFAULT: every object already loaded.
        guard let address = dlsym(nil, name) else { return nil }
        return unsafeBitCast(address, to: T.self)
    }

    static func isSwiftMangled(_ name: String) -> Bool {
        for prefix in ["$s", "_$s", "$S", "_$S", "$e", "_$e", "_T0"] where name.hasPrefix(prefix) { return true }
        return false
    }

    /// The full demangled name, or nil when `name` is not a mangled Swift or
    /// C++ name (or the demangler is missing).
    static func demangle(_ name: String) -> String? {
        if isSwiftMangled(name), let swiftDemangle {
            return name.withCString { text in
                guard let result = swiftDemangle(text, strlen(text), nil, nil, 0) else { return nil }
                defer { free(result) }
                return String(cString: result)
            }
        }
        if name.hasPrefix("_Z"), let cxxDemangle {
            return name.withCString { text in
                var status: Int32 = -1
                guard let result = cxxDemangle(text, nil, nil, &status) else { return nil }
                defer { free(result) }
                return status == 0 ? String(cString: result) : nil
            }
        }
        return nil
    }

    /// The name a report shows: Swift names shortened by `shortSwiftName`,
    /// C++ names demangled in full, anything else as it is.
    static func displayName(_ name: String) -> String {
        guard let demangled = demangle(name) else { return name }
        return isSwiftMangled(name) ? shortSwiftName(demangled) : demangled
    }

    /// Drops what `swift_demangle`'s full form repeats on every line without
    /// helping to tell functions apart, keeping argument labels and types:
    /// - `(extension in Foundation):` before an extension member, and the
    ///   extension's constraints: `Measurement< where A: Dimension>` → `Measurement`;
    /// - the private discriminator: `(records in _A5432246…)` → `records`;
    /// - the standard library's module prefix: `Swift.Int` → `Int`;
    /// - parameter ownership: `__owned`, `__shared`.
    static func shortSwiftName(_ demangled: String) -> String {
        shortenings.reduce(demangled) { text, rule in
            rule.regex.stringByReplacingMatches(in: text, range: NSRange(text.startIndex..., in: text), withTemplate: rule.template)
        }
    }

    private static let shortenings: [(regex: NSRegularExpression, template: String)] = [
        (#"\(extension in [^():]+\):"#, ""),
        (#"< where [^<>]*>"#, ""),
        (#"\(([^()\s]+) in _[0-9A-F]+\)"#, "$1"),
        (#"(?<![A-Za-z0-9_.])Swift\."#, ""),
        (#"\b__(owned|shared) "#, ""),
    ].map { (try! NSRegularExpression(pattern: $0.0), $0.1) }
}
