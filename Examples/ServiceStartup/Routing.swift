// A global outside main.swift is initialised lazily, on first use, through
// swift_once: its cost lands wherever it is first touched, not before main.
let routingTable: [UInt64] = buildRoutingTable()

private func buildRoutingTable() -> [UInt64] {
    var table = [UInt64](repeating: 0, count: 256)
    var x: UInt64 = 0x9E3779B97F4A7C15
    for round in 0..<40_000 {
        for i in 0..<256 {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17
            table[i] = table[i] &+ (x | 1) &* UInt64(round + 1)
        }
    }
    return table.map { $0 | 1 }
}
