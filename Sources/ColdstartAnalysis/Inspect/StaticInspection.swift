import Foundation

/// What a binary's start-up will do, read from its ELF file and those of
/// the libraries it would load, without running anything (`coldstart
/// inspect`): the load order, every initializer, the relocations and look-ups
/// of each object, its Swift metadata, and what those predict.
package struct StaticInspection: Codable, Sendable {
    package struct Object: Codable, Sendable {
        package enum Role: String, Codable, Sendable {
            case executable, library
            /// `PT_INTERP`: mapped by the kernel with the executable.
            case loader
        }

        /// The name the loader was asked for (`DT_NEEDED`, or the file's
        /// name for the executable and the loader).
        package var name: String
        package var path: String
        package var role: Role
        /// The object whose `DT_NEEDED` asked for it first (nil for the
        /// executable and the loader).
        package var neededBy: String?
        package var relocations: ObjectRelocations?
        /// In the order the loader calls them.
        package var initializers: [Initializer]
        package var swift: SwiftMetadata?
        /// Why the file could not be read, when it could not.
        package var problem: String?
    }

    /// A `DT_NEEDED` name that no search path held.
    package struct MissingLibrary: Codable, Sendable, Equatable {
        package var name: String
        package var neededBy: String
    }

    package var executable: String
    /// `EM_X86_64`, `EM_AARCH64`, or the number.
    package var machine: String
    /// The executable first, then the libraries breadth-first as the loader
    /// maps them, the loader itself last (as `ldd` lists it).
    package var objects: [Object]
    package var missing: [MissingLibrary]
    /// Object names, in the order their initializers run: the executable's
    /// `DT_PREINIT_ARRAY` first, then each library after those it needs, the
    /// executable's own last (as glibc 2.35+ sorts them).
    package var initializerOrder: [String]
    package var estimate: StartupEstimate

    /// Reads `executable` and every library it needs; `libraryPath` stands
    /// for the `LD_LIBRARY_PATH` the program would run with. Throws when the
    /// executable itself is not a readable ELF file; a library that is not
    /// is listed with its problem.
    package init(executable: String, libraryPath: String?) throws {
        self.executable = executable
        let libraries = try SharedLibraries(executable: executable, libraryPath: libraryPath)
        let header = try ELFFile(path: executable).header()
        machine = switch header.machine {
        case 62: "EM_X86_64"
        case 183: "EM_AARCH64"
        default: "EM_\(header.machine)"
        }
        func object(_ path: String, role: Object.Role) -> Object {
            var object = Object(name: role == .library ? libraries.neededName[path].map { ($0 as NSString).lastPathComponent } ?? (path as NSString).lastPathComponent : (path as NSString).lastPathComponent,
                                path: path, role: role, neededBy: libraries.neededBy[path].map { (($0 as NSString).lastPathComponent) },
                                relocations: nil, initializers: [], swift: nil, problem: nil)
            do {
                object.relocations = try ObjectRelocations(path: path, executable: executable)
                object.initializers = try ObjectInitializers.read(path: path)
                object.swift = try SwiftMetadata(path: path)
            } catch {
                object.problem = "\(error)"
            }
            return object
        }
        objects = [object(executable, role: .executable)] + libraries.libraries.map { object($0, role: .library) }
        var missing: [MissingLibrary] = []
        if let interpreter = libraries.interpreter {
            let name = (interpreter as NSString).lastPathComponent
            if FileManager.default.fileExists(atPath: interpreter) {
                objects.append(object(interpreter, role: .loader))
            } else if let index = objects.firstIndex(where: { $0.role == .library && $0.name == name }) {
                // Another machine's loader, found where its libraries are (--library-path).
                var loader = objects.remove(at: index)
                (loader.role, loader.neededBy) = (.loader, nil)
                objects.append(loader)
            } else {
                missing = [MissingLibrary(name: interpreter, neededBy: (executable as NSString).lastPathComponent)]
            }
        }
        self.missing = missing + libraries.unresolved.map {
            MissingLibrary(name: $0, neededBy: ((libraries.neededBy[$0] ?? executable) as NSString).lastPathComponent)
        }
        initializerOrder = Self.initializerOrder(libraries, names: Dictionary(objects.map { ($0.path, $0.name) }) { first, _ in first })
        estimate = StartupEstimate(ObjectTotals(objects))
    }

    /// glibc's order (`elf/dl-sort-maps.c`, `_dl_sort_maps_dfs`, then
    /// `_dl_init` walking the result backwards): a depth-first walk from
    /// each library in reverse load order, each object after the objects it
    /// needs; the executable's own constructors last (libc's start-up calls
    /// them, after every library's).
    private static func initializerOrder(_ libraries: SharedLibraries, names: [String: String]) -> [String] {
        let named = Dictionary(names.map { (SharedLibraries.canonicalPath($0.key), $0.value) }) { first, _ in first }
        let executable = SharedLibraries.canonicalPath(libraries.executable)
        var order: [String] = []
        var visited: Set<String> = [executable]
        func visit(_ path: String) {
            let canonical = SharedLibraries.canonicalPath(path)
            guard visited.insert(canonical).inserted else { return }
            for dependency in libraries.dependencies[path] ?? [] { visit(dependency) }
            if let name = named[canonical] { order.append(name) }
        }
        for library in (libraries.libraries + (libraries.interpreter.map { [$0] } ?? [])).reversed() { visit(library) }
        if let name = named[executable] { order.append(name) }
        return order
    }

    /// Every object's counts, summed.
    package var totals: ObjectTotals { ObjectTotals(objects) }

    package struct ObjectTotals: Codable, Sendable {
        package var libraries: Int
        package var initializers: Int
        package var symbolic: Int
        package var lookups: Int
        package var cachedLookups: Int
        package var relative: Int
        package var packedRelative: Int
        package var plt: Int
        package var conformances: Int
        package var typeMetadata: Int

        init(_ objects: [Object]) {
            libraries = objects.filter { $0.role != .executable }.count
            initializers = objects.reduce(0) { $0 + $1.initializers.count }
            let total = ObjectRelocations.total(objects.compactMap(\.relocations))
            (symbolic, lookups, cachedLookups) = (total.symbolic, total.lookups, total.cachedLookups)
            (relative, packedRelative, plt) = (total.relative, total.packedRelative, total.plt)
            conformances = objects.reduce(0) { $0 + ($1.swift?.conformances ?? 0) }
            typeMetadata = objects.reduce(0) { $0 + ($1.swift?.typeMetadata ?? 0) }
        }
    }

    package func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        var data = try encoder.encode(JSONView(self))
        data.append(0x0A)
        return data
    }

    /// The JSON form: the inspection with its totals.
    private struct JSONView: Encodable {
        var inspection: StaticInspection
        init(_ inspection: StaticInspection) { self.inspection = inspection }
        func encode(to encoder: Encoder) throws {
            try inspection.encode(to: encoder)
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(inspection.totals, forKey: .totals)
        }
        enum Key: String, CodingKey { case totals }
    }
}
