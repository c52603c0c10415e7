// FoundationTool's work (InventoryWork: Codable round trip of a few hundred
// values, a printed summary, exit) in a program linked with Coldstart, as a
// command-line tool would be: it never calls ready(), so its launch ends at
// exit. `make bench` measures what profiling costs such a ~10 ms launch.
import Coldstart
import InventoryWork

inventoryToolMain(name: "CodableTool")
