import ColdstartAnalysis
import Foundation
import XCTest

/// Issue 35 item 8: a host in a pid namespace that still sees its parent's
/// /proc (`unshare -p -f` without `--mount-proc`). The ids /proc/self/task
/// lists there are the parent namespace's, while perf_event_open and
/// sched_setaffinity take the host's own namespace's: opened as perf events,
/// those ids sampled other processes under a host thread's name, and the
/// watcher, looking for the main thread under its own id, said "this kernel
/// has no per-thread schedstat". The host is HostPatterns' `ns-threads`.
final class PidNamespaceTests: XCTestCase {
    private var host: String!
    private var directory: URL!

    override func setUpWithError() throws {
        host = try FixturePrograms.path("HostPatterns")
        directory = try makeTemporaryDirectory(for: self)
    }

    /// `unshare` where it can make a pid namespace here, independent of
    /// Coldstart (a container without CAP_SYS_ADMIN refuses).
    private func unshare() throws -> String {
        guard let path = ["/usr/bin/unshare", "/bin/unshare"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw XCTSkip("unshare (util-linux) is not installed")
        }
        let probe = try runProcess(path, ["-p", "-f", "true"], timeout: 30)
        guard probe.status == 0 else { throw XCTSkip("unshare -p -f refuses here: \(probe.stderr)") }
        return path
    }

    /// Inside the new namespace (the shell is its pid 1): 16 spinners whose
    /// ids *there* are the ids the parent namespace is about to give the
    /// host's threads (`ns_last_pid` moved past the spinners' own ids in the
    /// parent), so an id read from the parent's /proc and used in the
    /// namespace names a spinner: the collision the issue met by chance.
    /// Their ids go to $1; then the shell becomes the host. (A kernel or
    /// machine that moves the ids on meanwhile makes fewer collide; the
    /// schedstat line and the ids' check below fail without the fix anyway.)
    private static let colliding = #"""
        k=16
        o=$(readlink /proc/self)
        echo $((o + k)) > /proc/sys/kernel/ns_last_pid 2>/dev/null
        : > "$1"
        i=0
        while [ $i -lt $k ]; do
          /bin/sh -c 'while :; do :; done' &
          echo $! >> "$1"
          i=$((i + 1))
        done
        shift
        exec "$@"
        """#

    func testNoOtherProcessIsSampledUnderAParentNamespacesProc() throws {
        let unshare = try unshare()
        // One spinner outside the namespace too, on the other CPU: the
        // process a parent's id would name if the namespace were bypassed.
        let outside = Process()
        outside.executableURL = URL(fileURLWithPath: "/bin/sh")
        outside.arguments = ["-c", "while :; do :; done"]
        try outside.run()
        defer {
            outside.terminate()
            outside.waitUntilExit()
        }
        let timelinePath = directory.appendingPathComponent("timeline.json").path
        let spinnerFile = directory.appendingPathComponent("spinners").path
        let result = try runProcess(unshare, ["-p", "-f", "/bin/sh", "-c", Self.colliding, "sh", spinnerFile, host, "ns-threads", "100"],
                                    environment: ["COLDSTART": timelinePath], timeout: 60)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertFalse(result.stderr.contains("schedstat"), "no false complaint about the kernel: \(result.stderr)")
        XCTAssertEqual(result.stderr.components(separatedBy: "another pid namespace").count - 1, 1,
                       "one line says what is left on: \(result.stderr)")

        // The host's three threads, as its own namespace numbers them.
        let printed = try XCTUnwrap(result.stdout.split(separator: "\n").first { $0.hasPrefix("tids: ") }, result.stdout)
        let hostTids = Set(printed.dropFirst("tids: ".count).split(separator: " ").compactMap { Int($0) })
        XCTAssertEqual(hostTids.count, 3, result.stdout)
        let spinners = Set(try String(contentsOfFile: spinnerFile, encoding: .utf8).split(separator: "\n").compactMap { Int($0) })
        XCTAssertEqual(spinners.count, 16)

        let timeline = try Timeline(contentsOf: timelinePath)
        XCTAssertEqual(timeline.launch.endReason, "ready")
        let sampled = Set(timeline.samples.map(\.tid))
        XCTAssertEqual(sampled.subtracting(timeline.threads.map(\.tid)), [], "every sampled thread is one the timeline names")
        XCTAssertEqual(sampled.subtracting(hostTids), [], "only the host's threads were sampled (spinners: \(spinners.sorted()))")
        XCTAssertEqual(sampled.intersection(spinners), [], "no spinner in the namespace")
        XCTAssertFalse(sampled.contains(Int(outside.processIdentifier)), "not the spinner outside it")
        XCTAssertEqual(Set(timeline.threads.map(\.tid)).intersection(spinners), [], "no spinner's id named as a thread")
        // The main thread burned 100 ms: still sampled, by its own id.
        XCTAssertGreaterThan(timeline.samples.filter { $0.tid == timeline.process.pid }.count, 10, "the main thread was sampled")
    }
}
