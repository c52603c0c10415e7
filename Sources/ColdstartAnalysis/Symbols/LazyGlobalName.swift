import Foundation

/// The global a Swift one-time initialization function (`…_WZ`) sets up,
/// with the type that declares it: the demangler's own text, "one-time
/// initialization function for configuration", drops the context, so four
/// `configuration` statics of four types would read as one global.
package struct LazyGlobalName: Equatable, Sendable {
    /// The module the global is declared in.
    package var module: String
    /// `Type.global` for a static member (nested types dotted), `global`
    /// for a global variable.
    package var name: String

    package init(module: String, name: String) {
        self.module = module
        self.name = name
    }

    /// `$s4Tool6ConfigV13configuration_WZ` → module `Tool`, name
    /// `Config.configuration`; nil for any other name. A name this cannot
    /// take apart (a substituted word, an extension's context) gives the
    /// global's bare name, as the demangler prints it.
    package init?(linkageName mangled: String) {
        guard mangled.hasPrefix("$s"), mangled.hasSuffix("_WZ") else { return nil }
        // `$ss…` is the standard library's own context (`Swift.`).
        module = ProfileAnalysis.swiftModuleName(mangled) ?? "Swift"
        var body = Array(mangled.dropLast(3).utf8)
        // A private global's discriminator follows its name: `…1x33_<hash>LL`.
        if let range = String(decoding: body, as: UTF8.self).range(of: #"[0-9]+_[0-9A-F]+LL$"#, options: .regularExpression) {
            body.removeLast(String(decoding: body, as: UTF8.self)[range].utf8.count)
        }
        if let (context, identifier) = Self.splitLastIdentifier(body) {
            let moduleOnly = "$s\(module.utf8.count)\(module)"
            if context != moduleOnly, let type = Self.typeName(context: context, module: module) {
                name = "\(type).\(identifier)"
            } else {
                name = identifier
            }
            return
        }
        let prefix = "one-time initialization function for "
        guard let demangled = Demangler.demangle(mangled), demangled.hasPrefix(prefix) else { return nil }
        name = String(demangled.dropFirst(prefix.count))
    }

    /// The context's mangling and the last identifier (`<count><text>`):
    /// the shortest tail whose length is the number written just before it.
    private static func splitLastIdentifier(_ bytes: [UInt8]) -> (String, String)? {
        let isDigit = { (byte: UInt8) in byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        for length in 1..<min(bytes.count, 200) {
            let start = bytes.count - length
            var digitsStart = start
            while digitsStart > 0, isDigit(bytes[digitsStart - 1]) { digitsStart -= 1 }
            guard digitsStart < start, !isDigit(bytes[start]),
                  let count = Int(String(decoding: bytes[digitsStart..<start], as: UTF8.self)), count == length
            else { continue }
            return (String(decoding: bytes[..<digitsStart], as: UTF8.self), String(decoding: bytes[start...], as: UTF8.self))
        }
        return nil
    }

    /// The declaring type, from the demangled nominal type descriptor of the
    /// context, without the module and private discriminators.
    private static func typeName(context: String, module: String) -> String? {
        let prefix = "nominal type descriptor for "
        guard let kind = context.last, "VCO".contains(kind),
              let demangled = Demangler.demangle(context + "Mn"), demangled.hasPrefix(prefix)
        else { return nil }
        var type = Demangler.shortSwiftName(String(demangled.dropFirst(prefix.count)))
        if type.hasPrefix(module + ".") { type.removeFirst(module.count + 1) }
        return type
    }
}
