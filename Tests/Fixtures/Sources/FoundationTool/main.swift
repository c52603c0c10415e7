import Foundation

// A plain command-line tool that does not link Coldstart: it builds an
// inventory, round-trips it through JSON and prints a summary. Dynamically
// linked against Foundation like any SwiftPM tool on Linux, so most of its
// launch is the dynamic loader (docs/before-main.md).

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

let count = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 300
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
do {
    let data = try encoder.encode(inventory)
    let decoded = try decoder.decode(Inventory.self, from: data)
    guard decoded == inventory else {
        FileHandle.standardError.write(Data("FoundationTool: round trip changed the inventory\n".utf8))
        exit(1)
    }
    let total = decoded.items.reduce(0) { $0 + $1.price }
    print("\(decoded.items.count) items, \(data.count) bytes of JSON, total price \(String(format: "%.2f", total))")
} catch {
    FileHandle.standardError.write(Data("FoundationTool: \(error)\n".utf8))
    exit(1)
}
