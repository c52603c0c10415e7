import Foundation
import XCTest

/// `coldstart push` against servers that misbehave (issue 23 item 6), all
/// on loopback addresses (scripts/misbehaving-http.py): redirects, a
/// credential that must not reach another host, a body dripped a byte at a
/// time, a 1 GiB response, and text meant for a terminal.
final class PushTests: XCTestCase {
    private var directory: URL!
    private var timeline: String!

    override func setUpWithError() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else {
            throw XCTSkip("no /usr/bin/python3 for the test servers (make test installs python3)")
        }
        directory = try makeTemporaryDirectory(for: self)
        timeline = directory.appendingPathComponent("launch.json").path
        let run = try runProcess(try Products.path("ServiceStartup"), environment: ["COLDSTART": timeline])
        XCTAssertEqual(run.status, 0, run.stderr)
    }

    /// A server of the script's `mode` on `address`; its base URL.
    private func server(_ address: String, _ mode: [String]) throws -> String {
        let server = try BackgroundProcess("/usr/bin/python3", [Fleet.script("misbehaving-http.py"), address] + mode,
                                           log: directory.appendingPathComponent("server-\(UUID().uuidString).log"), for: self)
        return "http://\(address):\(try server.firstLine().trimmingCharacters(in: .whitespacesAndNewlines))"
    }

    private func requests(_ file: URL) -> [[String: Any]] {
        ((try? String(contentsOf: file, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// Before: a 307/308 was followed without the body (exit 0, "1 launch
    /// sent", an empty POST arrived), and with `Authorization` to another
    /// host (127.0.0.1 → 127.0.0.2).
    func testRedirectsAreRefusedAndCredentialsStayWithTheirHost() throws {
        let log = directory.appendingPathComponent("elsewhere.jsonl")
        let elsewhere = try server("127.0.0.2", ["record", log.path])
        for status in ["307", "308", "301", "302"] {
            let redirecting = try server("127.0.0.1", ["redirect", status, elsewhere + "/v1/traces"])
            let push = try coldstart(["push", "--otlp", redirecting, "--header", "Authorization: Bearer s3cret", timeline], timeout: 60)
            XCTAssertEqual(push.status, 1, "\(status): \(push.stdout) \(push.stderr)")
            XCTAssertTrue(push.stderr.contains("HTTP \(status) redirect to \(elsewhere)/v1/traces, not followed"), push.stderr)
            XCTAssertTrue(push.stderr.contains("0 launches sent before"), push.stderr)
            XCTAssertFalse(push.stdout.contains("1 launch sent"), push.stdout)
        }
        XCTAssertEqual(requests(log).count, 0, "nothing reached the other host: \(requests(log))")

        // The same request sent straight there arrives whole, with its header.
        let direct = try coldstart(["push", "--otlp", elsewhere, "--header", "Authorization: Bearer s3cret", timeline], timeout: 60)
        XCTAssertEqual(direct.status, 0, direct.stderr)
        let arrived = requests(log)
        XCTAssertEqual(arrived.count, 1)
        XCTAssertEqual(arrived.first?["authorization"] as? String, "Bearer s3cret")
        XCTAssertGreaterThan(arrived.first?["bodyBytes"] as? Int ?? 0, 100)
    }

    /// Before: `--timeout` was URLSession's wait between two bytes, so a
    /// server sending one byte a second held `--timeout 5` for 1000 s.
    func testTheTimeoutBoundsTheWholeRequestEvenADrippedBody() throws {
        let dripping = try server("127.0.0.1", ["drip", "0.5"])
        let started = Date()
        let push = try coldstart(["push", "--otlp", dripping, "--timeout", "3", timeline], timeout: 60)
        let took = Date().timeIntervalSince(started)
        XCTAssertEqual(push.status, 1, push.stderr)
        XCTAssertTrue(push.stderr.contains("no complete response within 3 s (--timeout)"), push.stderr)
        XCTAssertLessThan(took, 20, "3 s asked, coldstart's own start-up on a busy machine on top")
    }

    /// Before: a 1 GiB response was held whole (2.1 GB resident).
    func testAHugeResponseIsReadOnlyUpToTheBound() throws {
        for mode in ["huge", "huge-chunked"] {
            let huge = try server("127.0.0.1", [mode, "1024"])
            let push = try runMeasuringMemory(try Products.path("coldstart"), ["push", "--otlp", huge, "--timeout", "60", timeline])
            XCTAssertEqual(push.status, 0, "\(mode): \(push.stderr)")
            XCTAssertTrue(push.stderr.contains("response longer than 1 MiB; the rest was not read"), "\(mode): \(push.stderr)")
            XCTAssertLessThan(try XCTUnwrap(push.maxResidentMiB, "\(mode): VmHWM was read while it ran"), 200,
                              "\(mode): the CLI's own ~50 MiB and at most a few MiB of response")
        }
    }

    /// Before: a 500's body went to stderr as it came, NULs and escape
    /// sequences included.
    func testServerTextIsShownEscaped() throws {
        let hostile = try server("127.0.0.1", ["hostile"])
        let push = try runMeasuringMemory(try Products.path("coldstart"), ["push", "--otlp", hostile, timeline])
        XCTAssertEqual(push.status, 1, push.stderr)
        XCTAssertTrue(push.stderr.contains(#"HTTP 500 (bad\x00news \x1B[31mred\x1B[0m\r\x1B]0;title\x07 caf\#u{FFFD} \u{202E}evil)"#), push.stderr)
        XCTAssertFalse(push.rawStderr.contains(0x00) || push.rawStderr.contains(0x1B) || push.rawStderr.contains(0x0D)
            || push.rawStderr.contains(0x07), "no control byte reaches the terminal")
    }
}
