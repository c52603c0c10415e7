import CColdstart
import Foundation
import XCTest

/// Issue 23, item 3: how the capture layer writes a string into the
/// timeline: always valid UTF-8, whatever bytes it was given.
final class TimelineStringTests: XCTestCase {
    private func written(_ bytes: [UInt8]) -> (json: [UInt8], replaced: UInt64) {
        var out = [CChar](repeating: 0, count: 4 * bytes.count + 16)
        var replaced: UInt64 = 0
        let n = bytes.withUnsafeBufferPointer { raw in
            raw.baseAddress!.withMemoryRebound(to: CChar.self, capacity: max(bytes.count, 1)) {
                cs_json_string($0, bytes.count, &out, out.count, &replaced)
            }
        }
        return (out.prefix(n).map { UInt8(bitPattern: $0) }, replaced)
    }

    /// The string a JSON reader gets back.
    private func string(_ bytes: [UInt8]) throws -> (text: String, replaced: UInt64) {
        let (json, replaced) = written(bytes)
        XCTAssertNotNil(String(bytes: json, encoding: .utf8), "valid UTF-8: \(json)")
        let decoded = try JSONSerialization.jsonObject(with: Data(json), options: .fragmentsAllowed) as? String
        return (try XCTUnwrap(decoded, "a JSON string: \(json)"), replaced)
    }

    func testWellFormedUTF8IsKeptAsItIs() throws {
        let text = "plain ascii, longer than eight bytes, é ü → 日本 🙂 and \"quotes\" \\ and\ttab\nnewline \u{1}"
        let result = try string(Array(text.utf8))
        XCTAssertEqual(result.text, text)
        XCTAssertEqual(result.replaced, 0)
    }

    func testEachByteThatIsNotUTF8BecomesOneReplacementCharacter() throws {
        let cases: [(bytes: [UInt8], expected: String, replaced: UInt64)] = [
            (Array("caf".utf8) + [0xE9], "caf\u{FFFD}", 1),                            // Latin-1 é
            (Array("/tmp/caf".utf8) + [0xE9] + Array("/bin/tool".utf8), "/tmp/caf\u{FFFD}/bin/tool", 1),
            ([0xC0, 0x80], "\u{FFFD}\u{FFFD}", 2),                                  // overlong NUL
            ([0xE0, 0x80, 0xAF], "\u{FFFD}\u{FFFD}\u{FFFD}", 3),                      // overlong
            ([0xED, 0xA0, 0x80], "\u{FFFD}\u{FFFD}\u{FFFD}", 3),                      // a surrogate
            ([0xF4, 0x90, 0x80, 0x80], "\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}", 4),        // past U+10FFFF
            ([0xF5, 0x41], "\u{FFFD}A", 1),
            (Array("ab".utf8) + [0xE2, 0x82], "ab\u{FFFD}\u{FFFD}", 2),               // € cut short
            ([0x80] + Array("continuation first, then more than eight bytes".utf8), "\u{FFFD}continuation first, then more than eight bytes", 1),
            (Array("12345678".utf8) + [0xFF] + Array("12345678\"".utf8), "12345678\u{FFFD}12345678\"", 1),
        ]
        for (bytes, expected, replaced) in cases {
            let result = try string(bytes)
            XCTAssertEqual(result.text, expected, "\(bytes)")
            XCTAssertEqual(result.replaced, replaced, "\(bytes)")
        }
    }

    func testACutMovesBackToTheLastWholeCharacter() {
        func cut(_ bytes: [UInt8]) -> Int {
            bytes.withUnsafeBufferPointer { raw in
                raw.baseAddress!.withMemoryRebound(to: CChar.self, capacity: max(bytes.count, 1)) { cs_utf8_cut($0, bytes.count) }
            }
        }
        let kernelCut = Array(Array("aaaaaaaaaaaaaaé".utf8).prefix(15))                 // inside é
        XCTAssertEqual(cut(kernelCut), 14)
        XCTAssertEqual(cut(Array(Array("ab€".utf8).prefix(4))), 2)                     // 2 of €'s 3 bytes
        XCTAssertEqual(cut(Array(Array("ab🙂".utf8).prefix(5))), 2)                    // 3 of 🙂's 4
        XCTAssertEqual(cut(Array("ab🙂".utf8)), 6, "a whole character stays")
        XCTAssertEqual(cut(Array("abc".utf8)), 3)
        XCTAssertEqual(cut([]), 0)
    }
}
