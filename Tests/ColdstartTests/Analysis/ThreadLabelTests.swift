@testable import ColdstartAnalysis
import XCTest

/// Thread names a person can read, from the kernel's 15-byte ones.
final class ThreadLabelTests: XCTestCase {
    func testDispatchWorkersAreNamedByTheirQueuesTruncatedLabel() {
        XCTAssertEqual(ThreadLabel.readable("oot.default-qos", tid: 7, mainTid: 1), "dispatch worker (default QoS)")
        XCTAssertEqual(ThreadLabel.readable("r-initiated-qos", tid: 7, mainTid: 1), "dispatch worker (user-initiated QoS)")
        XCTAssertEqual(ThreadLabel.readable(".background-qos", tid: 7, mainTid: 1), "dispatch worker (background QoS)")
        XCTAssertEqual(ThreadLabel.readable("interactive-qos", tid: 7, mainTid: 1), "dispatch worker (user-interactive QoS)")
        XCTAssertEqual(ThreadLabel.readable("-qos.overcommit", tid: 7, mainTid: 1), "dispatch worker (overcommit)",
                       "every overcommit label ends alike: the QoS is not in the kernel's name")
        XCTAssertEqual(ThreadLabel.readable("com.apple.root.default-qos.overcommit", tid: 7, mainTid: 1),
                       "dispatch worker (default QoS, overcommit)")
        XCTAssertTrue(ThreadLabel.isDispatchWorker("-qos.overcommit"))
        XCTAssertFalse(ThreadLabel.isDispatchWorker("fifo-writer"))
    }

    func testMainColdstartsOwnAndOtherThreads() {
        XCTAssertEqual(ThreadLabel.readable("AsyncService", tid: 1, mainTid: 1), "main")
        XCTAssertEqual(ThreadLabel.readable("coldstart-watch", tid: 2, mainTid: 1), "Coldstart's watcher (profiler)")
        XCTAssertEqual(ThreadLabel.readable("coldstart-scan", tid: 3, mainTid: 1), "Coldstart's thread scanner (profiler)")
        XCTAssertEqual(ThreadLabel.readable("NIO-ELT-0-#0", tid: 4, mainTid: 1), "NIO-ELT-0-#0", "anything else as the kernel has it")
        XCTAssertEqual(ThreadLabel.readable("", tid: 5, mainTid: 1), "thread 5")
    }
}
