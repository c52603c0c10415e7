import CColdstart
@testable import ColdstartAnalysis
import Foundation
import XCTest

/// `rawStacks.packed` (docs/timeline-format.md): the writer's `cs_raw_pack`
/// and the reader's `RawStacks.unpack` agree on every byte, in each of the
/// packer's modes, and a file of the older whole-copy form still reads.
final class RawStacksPackingTests: XCTestCase {
    /// A stack-like copy: runs of zero words between non-zero ones, and a
    /// tail that is not a whole word.
    private func copy(words: Int, tail: Int, seed: UInt64) -> [UInt8] {
        var state = seed
        var bytes: [UInt8] = []
        for j in 0..<words {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let value: UInt64 = (j / 7 + Int(seed)) % 3 == 0 ? 0 : state | 1
            withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
        }
        for k in 0..<tail { bytes.append(UInt8(truncatingIfNeeded: k &* 37 &+ 1)) }
        return bytes
    }

    /// Packs `bytes` against `ref` (its row `dist` back), returning the
    /// packed bytes.
    private func pack(_ bytes: [UInt8], ref: [UInt8]?, dist: UInt32 = 1, off: Int64 = 0) -> Data {
        var out = [UInt8](repeating: 0xEE, count: 31 + 2 * ((bytes.count / 8 + 7) / 8) + bytes.count)
        let n = bytes.withUnsafeBufferPointer { c in
            if let ref {
                return ref.withUnsafeBufferPointer { r in
                    cs_raw_pack(c.baseAddress, UInt32(c.count), r.baseAddress, UInt32(r.count), dist, off, &out)
                }
            }
            return cs_raw_pack(c.baseAddress, UInt32(c.count), nil, 0, 0, 0, &out)
        }
        return Data(out[0..<n])
    }

    private func row(_ bytes: [UInt8]) -> RawStacks.Stack {
        RawStacks.Stack(sample: 0, registers: [], bytes: Data(bytes))
    }

    func testEachModeUnpacksToTheBytesPacked() throws {
        let first = copy(words: 512, tail: 0, seed: 1)
        // No reference: zero words elided (mode 0), the tail kept.
        let alone = copy(words: 300, tail: 5, seed: 2)
        let packedAlone = pack(alone, ref: nil)
        XCTAssertEqual(packedAlone.first, 0)
        XCTAssertLessThan(packedAlone.count, alone.count)
        XCTAssertEqual([UInt8](try RawStacks.unpack(packedAlone, row: 0, rows: [])), alone)

        // The same frames 3 words deeper, one word changed: the reference's
        // words (mode 1), at an offset, from two rows back.
        var deeper = [UInt8](repeating: 0x5A, count: 24) + first
        deeper[100] ^= 0xFF
        let packedDeeper = pack(deeper, ref: first, dist: 2, off: -3)
        XCTAssertEqual(packedDeeper.first, 1)
        XCTAssertLessThan(packedDeeper.count, 120)
        let rows = [row(first), row(alone)]
        XCTAssertEqual([UInt8](try RawStacks.unpack(packedDeeper, row: 2, rows: rows)), deeper)

        // Half the words the reference's, half new with zero runs: both
        // kinds elided (mode 2).
        var mixed = copy(words: 512, tail: 3, seed: 3)
        mixed.replaceSubrange(0..<2048, with: first[0..<2048])
        let packedMixed = pack(mixed, ref: first)
        XCTAssertEqual(packedMixed.first, 2)
        XCTAssertEqual([UInt8](try RawStacks.unpack(packedMixed, row: 1, rows: [row(first)])), mixed)

        // A reference that covers none of the copy elides nothing of it.
        let past = pack(alone, ref: first, off: 600)
        XCTAssertEqual([UInt8](try RawStacks.unpack(past, row: 1, rows: [row(first)])), alone)

        // Cut short, or pointing before the first row: malformed.
        XCTAssertThrowsError(try RawStacks.unpack(packedDeeper.dropLast(), row: 2, rows: rows))
        XCTAssertThrowsError(try RawStacks.unpack(packedDeeper, row: 0, rows: []))
    }

    func testPackedAndOlderWholeCopiesBothParse() throws {
        let first = copy(words: 64, tail: 0, seed: 4)
        var second = first
        second[8] = 7
        let registers = (0..<17).map(String.init).joined(separator: ",")
        // Written as the writer writes it: "stacks" empty, rows in "packed",
        // the second against the first.
        let packed = """
        {"arch":"x86_64","stacks":[],"packed":[
        [0,[\(registers)],"\(pack(first, ref: nil).base64EncodedString())"],
        [2,[\(registers)],"\(pack(second, ref: first).base64EncodedString())"]]}
        """
        let read = try RawStacks.parse(Data(packed.utf8))
        XCTAssertEqual(read.stacks.map(\.sample), [0, 2])
        XCTAssertEqual(read.stacks.map { [UInt8]($0.bytes) }, [first, second])
        XCTAssertEqual(read.stacks[1].registers, (0..<17).map(UInt64.init))

        // A file from before "packed": whole copies in base64.
        let older = """
        {"arch":"x86_64","stacks":[[1,[\(registers)],"\(Data(second).base64EncodedString())"]]}
        """
        let old = try RawStacks.parse(Data(older.utf8))
        XCTAssertEqual(old.stacks.map(\.sample), [1])
        XCTAssertEqual([UInt8](old.stacks[0].bytes), second)
    }
}
