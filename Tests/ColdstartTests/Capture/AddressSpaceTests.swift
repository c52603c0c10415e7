import ColdstartAnalysis
import Foundation
import XCTest

/// Issue 35, item 11: a host that runs under RLIMIT_AS (`ulimit -v`) must run
/// under Coldstart as it does without it. Coldstart's buffers, thread stacks
/// and its threads' malloc arenas grew VmSize at main by 21–87 MB, and under
/// a limit the host's own allocations then failed: the Swift runtime crashed
/// in its initializers (SIGSEGV, or SIGILL in a release build). Coldstart now
/// keeps to a quarter of the room the limit leaves, shrinking or switching
/// parts off with one line on stderr.
final class AddressSpaceTests: XCTestCase {
    private var host: String!
    private var directory: URL!

    override func setUpWithError() throws {
        host = try FixturePrograms.path("HostPatterns")
        directory = try makeTemporaryDirectory(for: self)
    }

    /// HostPatterns `never-ready 30` under `ulimit -v kib`, through /bin/sh.
    private func run(limitKiB kib: Int, profiled timeline: String?) throws -> ProcessResult {
        let environment: [String: String?] = ["COLDSTART": timeline]
        return try runProcess("/bin/sh", ["-c", "ulimit -v \(kib) && exec \"$0\" \"$@\"", host, "never-ready", "30"],
                              environment: environment, timeout: 60)
    }

    /// Limits from where the program barely loads to where the arenas fit
    /// (the crash fell between: at 38 MB for the debug build here, 20 MB for
    /// the release one). A limit is used only where the program, unprofiled,
    /// passes in three quarters of it, an independent fact of the machine
    /// and the build: Coldstart may take the other quarter.
    func testAHostUnderAnAddressSpaceLimitRunsAsWithoutColdstart() throws {
        let limits = Array(stride(from: 20_000, through: 48_000, by: 1_000)) + [64_000, 100_000, 160_000, 250_000]
        var used: [Int] = []
        for kib in limits {
            let tight = try run(limitKiB: kib * 3 / 4, profiled: nil)
            guard tight.status == 0 else { continue }
            let plain = try run(limitKiB: kib, profiled: nil)
            guard plain.status == 0 else { continue }
            used.append(kib)

            let timeline = directory.appendingPathComponent("timeline-\(kib).json").path
            let result = try run(limitKiB: kib, profiled: timeline)
            XCTAssertEqual(result.status, 0, "ulimit -v \(kib): \(result.signal.map { "signal \($0)" } ?? "") \(result.stderr)")
            XCTAssertEqual(result.stdout, plain.stdout, "ulimit -v \(kib)")
            let ours = result.stderr.split(separator: "\n").filter { $0.hasPrefix("coldstart: ") && $0.contains("RLIMIT_AS") }
            XCTAssertLessThanOrEqual(ours.count, 1, "ulimit -v \(kib): one line says what the limit changed: \(result.stderr)")
            if FileManager.default.fileExists(atPath: timeline) {
                XCTAssertNoThrow(try Timeline(contentsOf: timeline), "ulimit -v \(kib)")
            } else {
                XCTAssertEqual(ours.count, 1, "ulimit -v \(kib): no timeline, and no line saying why: \(result.stderr)")
                XCTAssertTrue(ours.first?.contains("profiling off") ?? false, "ulimit -v \(kib): \(result.stderr)")
            }
        }
        // The fixture loads in 3/4 of 48 MB on any build seen; fewer limits
        // than this would leave the band where the host crashed untested.
        XCTAssertGreaterThanOrEqual(used.count, 10, "limits the unprofiled program passes: \(used)")
    }
}
