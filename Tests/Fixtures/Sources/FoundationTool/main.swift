// A plain command-line tool that does not link Coldstart: it builds an
// inventory, round-trips it through JSON and prints a summary (InventoryWork).
// Dynamically linked against Foundation like any SwiftPM tool on Linux, so most
// of its launch is the dynamic loader (docs/before-main.md).
import InventoryWork

inventoryToolMain(name: "FoundationTool")
