import CColdstart
import XCTest

final class ProcStatTests: XCTestCase {
    private func starttime(_ line: String) -> UInt64? {
        var ticks: UInt64 = 0
        let rc = line.withCString { cs_parse_proc_stat_starttime($0, strlen($0), &ticks) }
        return rc == 0 ? ticks : nil
    }

    private func statLine(comm: String, starttime: UInt64) -> String {
        // Fields 3…21, then 22 = starttime, then more.
        let middle = ["S"] + (4...21).map { String($0 * 10) }
        return "4242 (\(comm)) " + middle.joined(separator: " ") + " \(starttime) 123456 789\n"
    }

    func testParsesStarttimeOfAPlainName() {
        XCTAssertEqual(starttime(statLine(comm: "swift-app", starttime: 987654)), 987654)
    }

    func testCountsFieldsFromTheLastParenthesis() {
        // A command name can hold spaces and ')' — field counting must not start inside it.
        XCTAssertEqual(starttime(statLine(comm: "evil ) 1 2 3 (name", starttime: 31337)), 31337)
        XCTAssertEqual(starttime(statLine(comm: "a b", starttime: 5)), 5)
        XCTAssertEqual(starttime(statLine(comm: "))", starttime: 77)), 77)
    }

    func testRejectsMalformedLines() {
        XCTAssertNil(starttime(""))
        XCTAssertNil(starttime("4242 no parenthesis at all 1 2 3"))
        XCTAssertNil(starttime("4242 (short) S 1 2 3\n"))
        XCTAssertNil(starttime(statLine(comm: "x", starttime: 1).replacingOccurrences(of: " 1 123456", with: " 1x 123456")))
    }

    func testReadsThisProcessStat() throws {
        let text = try String(contentsOfFile: "/proc/self/stat", encoding: .utf8)
        let ticks = try XCTUnwrap(starttime(text))
        // Started after boot and before now (in ticks since boot).
        var now = timespec()
        clock_gettime(CLOCK_BOOTTIME, &now)
        let hz = UInt64(sysconf(Int32(_SC_CLK_TCK)))
        XCTAssertLessThanOrEqual(cs_ticks_to_ns(ticks, hz), UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec))
    }

    func testTickConversion() {
        XCTAssertEqual(cs_ticks_to_ns(1, 100), 10_000_000)
        XCTAssertEqual(cs_ticks_to_ns(12345, 100), 123_450_000_000)
        XCTAssertEqual(cs_ticks_to_ns(3, 1000), 3_000_000)
        XCTAssertEqual(cs_ticks_to_ns(7, 0), 0, "a zero tick rate must not divide by zero")
        // Large uptimes must not overflow: 200 days at 100 Hz.
        XCTAssertEqual(cs_ticks_to_ns(200 * 86_400 * 100, 100), 200 * 86_400 * 1_000_000_000)
    }

    func testBoottimeToMonotonic() {
        XCTAssertEqual(cs_boottime_to_monotonic(5_000, 1_000), 4_000)
        XCTAssertEqual(cs_boottime_to_monotonic(5_000, 0), 5_000)
        XCTAssertEqual(cs_boottime_to_monotonic(500, 1_000), 0, "saturates instead of wrapping")
    }

    func testParsesUnsignedDecimals() {
        var value: UInt64 = 0
        XCTAssertEqual(cs_parse_u64("1234567890123", &value), 0)
        XCTAssertEqual(value, 1_234_567_890_123)
        XCTAssertEqual(cs_parse_u64("", &value), -1)
        XCTAssertEqual(cs_parse_u64("12a", &value), -1)
        XCTAssertEqual(cs_parse_u64("-1", &value), -1)
        XCTAssertEqual(cs_parse_u64("99999999999999999999999", &value), -1, "overflow is rejected")
    }
}
