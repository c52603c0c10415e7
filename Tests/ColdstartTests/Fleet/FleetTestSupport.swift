import ColdstartAnalysis
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest

/// What the fleet tests (aggregate, OTLP, Prometheus) share: timelines with
/// labels, processes that serve on 127.0.0.1 for the length of a test.
enum Fleet {
    /// A committed timeline of the example (Fixtures/), as a JSON object.
    static func fixtureDocument(_ name: String) throws -> [String: Any] {
        let url = Bundle.module.resourceURL!.appendingPathComponent("Fixtures/\(name)")
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
    }

    /// Writes `document` with `coldstart.labels` set (what the host side will
    /// record) and `edit` applied to its `coldstart` section.
    @discardableResult
    static func write(
        _ document: [String: Any], labels: [String: String]? = nil, to url: URL,
        edit: (inout [String: Any]) -> Void = { _ in }
    ) throws -> URL {
        var document = document
        var section = try XCTUnwrap(document["coldstart"] as? [String: Any])
        if let labels { section["labels"] = labels }
        edit(&section)
        document["coldstart"] = section
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try JSONSerialization.data(withJSONObject: document).write(to: url)
        return url
    }

    /// Sets the duration of phase `name` to `ns` (moving nothing else: the
    /// aggregate reads each phase on its own).
    static func setPhase(_ name: String, durationNs ns: Int64, in section: inout [String: Any]) {
        guard var phases = section["phases"] as? [[String: Any]],
              let index = phases.firstIndex(where: { $0["name"] as? String == name }),
              let start = (phases[index]["startNs"] as? NSNumber)?.int64Value
        else { return }
        phases[index]["endNs"] = start + ns
        section["phases"] = phases
    }

    /// The interpreter with `opentelemetry-proto`, from
    /// scripts/ensure-python-deps.sh. A skip only for what is probed here
    /// of the machine, apart from the script: no python3 on PATH, no venv
    /// module, or no package index pip could reach (PIP_INDEX_URL or PyPI,
    /// and no wheel in PIP_FIND_LINKS). Any other failure of the script fails.
    static func python() throws -> String {
        let script = repositoryRoot.appendingPathComponent("scripts/ensure-python-deps.sh").path
        let result = try runProcess("/bin/bash", [script], timeout: 600)
        let path = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        if result.status == 0, FileManager.default.isExecutableFile(atPath: path) { return path }
        let said = result.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
        let python3 = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
            .map { "\($0)/python3" }.first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let python3 else { throw XCTSkip("python3 is not on PATH (make test installs python3): no OTLP receiver") }
        if try runProcess(python3, ["-c", "import venv, ensurepip"]).status != 0 {
            throw XCTSkip("\(python3) has no venv/ensurepip module (make test installs python3-venv)")
        }
        let environment = ProcessInfo.processInfo.environment
        let index = environment["PIP_INDEX_URL"] ?? "https://pypi.org/simple"
        let wheels = (environment["PIP_FIND_LINKS"]).map { directory in
            ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix("opentelemetry_proto-") }
        } ?? []
        let reach = try runProcess(python3, ["-c", "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=20)",
                                             index.hasSuffix("/") ? index + "opentelemetry-proto/" : index + "/opentelemetry-proto/"],
                                   timeout: 60)
        if reach.status != 0, wheels.isEmpty {
            let why = reach.stderr.split(separator: "\n").last.map(String.init) ?? "status \(reach.status)"
            throw XCTSkip("no package index reachable for opentelemetry-proto: \(index): \(why); no wheel in PIP_FIND_LINKS")
        }
        throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey:
            "scripts/ensure-python-deps.sh failed (status \(result.status)) though python3, venv and a package index are there: \(said)"])
    }

    static func script(_ name: String) -> String {
        repositoryRoot.appendingPathComponent("scripts/\(name)").path
    }

    /// A free TCP port on 127.0.0.1 (bound, read, released).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw CocoaError(.fileNoSuchFile) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw CocoaError(.fileNoSuchFile) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// GET `url` (127.0.0.1 only), the body; nil when unreachable or not 200.
    static func get(_ url: String, timeout: TimeInterval = 5) -> Data? {
        guard let url = URL(string: url) else { return nil }
        let semaphore = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var body: Data?
        let task = URLSession.shared.dataTask(with: URLRequest(url: url, timeoutInterval: timeout)) { data, response, _ in
            if (response as? HTTPURLResponse)?.statusCode == 200 { body = data }
            semaphore.signal()
        }
        task.resume()
        semaphore.wait()
        return body
    }
}

/// A server started for one test: stopped (SIGTERM, then SIGKILL after 5 s)
/// by the test's teardown, whatever the test did. Its standard error goes to
/// `log` (a server's chatter must not fill a pipe nobody reads).
final class BackgroundProcess {
    let process = Process()
    private let output = Pipe()
    private let log: URL

    init(_ executable: String, _ arguments: [String], log: URL, for test: XCTestCase) throws {
        self.log = log
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        test.addTeardownBlock { [self] in stop() }
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// The end of its standard error, for failure messages.
    var logTail: String {
        String(decoding: ((try? Data(contentsOf: log)) ?? Data()).suffix(2000), as: UTF8.self)
    }

    /// The first line the process prints (a port), within `timeout` seconds.
    func firstLine(timeout: TimeInterval = 30) throws -> String {
        let handle = output.fileHandleForReading
        var data = Data()
        let deadline = Date().addingTimeInterval(timeout)
        while !data.contains(0x0A) {
            guard Date() < deadline, process.isRunning else {
                XCTFail("\(process.executableURL?.path ?? "") printed no line: \(logTail)")
                throw CocoaError(.fileReadUnknown)
            }
            var poller = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
            if poll(&poller, 1, 100) > 0 {
                let chunk = handle.availableData
                if chunk.isEmpty { usleep(10_000) }
                data += chunk
            }
        }
        return String(decoding: data.prefix { $0 != 0x0A }, as: UTF8.self)
    }
}
