import Foundation

/// The Swift runtime's metadata sections of one object (`swift5_*`, which
/// the runtime finds through each image's registration at start-up): how
/// many records each holds, or its size in bytes for those whose records
/// vary in length.
package struct SwiftMetadata: Codable, Sendable, Equatable {
    /// `swift5_protocol_conformances`: one 4-byte relative pointer per
    /// conformance. An uncached conformance check (`as?`, `is`, a generic
    /// call needing a witness table) scans every record of every image.
    package var conformances: Int
    /// `swift5_type_metadata`: one 4-byte record per nominal type the
    /// runtime can find by name (`_typeByName`, mangled-name look-ups).
    package var typeMetadata: Int
    /// `swift5_protocols`: one 4-byte record per protocol.
    package var protocols: Int
    /// Every `swift5_*` section by name, with its size in bytes.
    package var sectionBytes: [String: Int]

    private init(conformances: Int = 0, typeMetadata: Int = 0, protocols: Int = 0, sectionBytes: [String: Int] = [:]) {
        (self.conformances, self.typeMetadata, self.protocols, self.sectionBytes) = (conformances, typeMetadata, protocols, sectionBytes)
    }

    /// Whether the object has Swift metadata at all.
    package var isSwift: Bool { !sectionBytes.isEmpty }

    /// Reads the section headers of `path`; an object without them (or
    /// without Swift code) has none.
    init(path: String) throws {
        let file = try ELFFile(path: path)
        let header = try file.header()
        let sections = try file.sections(header)
        let names = try file.sectionNames(header, sections)
        self.init()
        for (section, name) in zip(sections, names) where name.hasPrefix("swift5_") {
            let size = Int(clamping: section.size)
            sectionBytes[name, default: 0] += size
            switch name {
            case "swift5_protocol_conformances": conformances += size / 4
            case "swift5_type_metadata": typeMetadata += size / 4
            case "swift5_protocols": protocols += size / 4
            default: break
            }
        }
    }
}
