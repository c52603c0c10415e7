import Foundation

// The work of a small command-line tool, shared by FoundationTool (not linked
// with Coldstart) and CodableTool (linked with it): builds an inventory,
// round-trips it through JSON with Codable and returns the summary line it
// prints. Both executables thus run exactly the same code.

struct Item: Codable, Equatable {
    var id: Int
    var name: String
    var price: Double
    var tags: [String]
    var updated: Date
}

struct Inventory: Codable, Equatable {
    var warehouse: String
    var items: [Item]
}

public enum InventoryError: Error, CustomStringConvertible {
    case roundTripChanged
    public var description: String { "round trip changed the inventory" }
}

/// Encodes `count` items to JSON and decodes them back; the summary line.
public func inventoryRoundTrip(count: Int) throws -> String {
    let reference = Date(timeIntervalSince1970: 1_700_000_000)
    let inventory = Inventory(
        warehouse: "north",
        items: (0..<count).map { i in
            Item(id: i, name: "item-\(i)", price: Double(i) * 1.25, tags: ["t\(i % 7)", "g\(i % 3)"],
                 updated: reference.addingTimeInterval(Double(i) * 60))
        })
    let encoder = JSONEncoder()
    encoder.dateEncodingStrategy = .iso8601
    encoder.outputFormatting = [.sortedKeys]
    let decoder = JSONDecoder()
    decoder.dateDecodingStrategy = .iso8601
    let data = try encoder.encode(inventory)
    let decoded = try decoder.decode(Inventory.self, from: data)
    guard decoded == inventory else { throw InventoryError.roundTripChanged }
    let total = decoded.items.reduce(0) { $0 + $1.price }
    return "\(decoded.items.count) items, \(data.count) bytes of JSON, total price \(String(format: "%.2f", total))"
}

/// The tool's whole main: the item count from the first argument (300 by
/// default), the summary on stdout, an error on stderr with status 1.
public func inventoryToolMain(name: String) -> Never {
    let count = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 300
    do {
        print(try inventoryRoundTrip(count: count))
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("\(name): \(error)\n".utf8))
        exit(1)
    }
}
