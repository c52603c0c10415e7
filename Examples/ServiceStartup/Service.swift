import Foundation

struct ServiceConfig {
    var port = 8080
    var recordCount = 2_000

    /// Parses `key = value` lines from the config file next to this source
    /// file, or from SERVICE_CONFIG.
    static func load() -> ServiceConfig {
        let path = ProcessInfo.processInfo.environment["SERVICE_CONFIG"]
            ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("service.conf").path
        var config = ServiceConfig()
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return config }
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: "=").map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, let value = Int(parts[1]) else { continue }
            switch parts[0] {
            case "port": config.port = value
            case "records": config.recordCount = value
            default: continue
            }
        }
        return config
    }
}

/// A toy key-value store persisted as one JSON file in the temporary directory.
final class Store {
    private var records: [String: String] = [:]
    var recordCount: Int { records.count }

    static func open(recordCount: Int) -> Store {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("coldstart-example-store.json")
        let store = Store()
        if let data = try? Data(contentsOf: url),
           let decoded = try? JSONDecoder().decode([String: String].self, from: data),
           decoded.count == recordCount {
            store.records = decoded
        } else {
            for i in 0..<recordCount { store.records["record-\(i)"] = String(repeating: "v\(i % 97)", count: 8) }
            try? JSONEncoder().encode(store.records).write(to: url, options: .atomic)
        }
        return store
    }

    /// Precomputes a route for every record: the cache a real service warms.
    func warm(using table: [UInt64]) -> Int {
        var cache: [String: UInt64] = [:]
        for (key, value) in records {
            var h: UInt64 = 1469598103934665603
            for byte in (key + value).utf8 { h = (h ^ UInt64(byte)) &* table[Int(byte)] }
            cache[key] = h
        }
        return cache.count
    }

    func lookup(key: String) -> String { records[key] ?? "none" }
}
