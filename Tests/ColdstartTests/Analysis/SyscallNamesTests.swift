@testable import ColdstartAnalysis
import XCTest

final class SyscallNamesTests: XCTestCase {
    func testNamesTheCallsTheCaptureLayerLeavesNumbered() {
        XCTAssertEqual(SyscallNames.named("syscall 298"), "perf_event_open")
        XCTAssertEqual(SyscallNames.named("syscall 0"), "read")
        XCTAssertEqual(SyscallNames.named("syscall 202"), "futex")
        XCTAssertEqual(SyscallNames.named("syscall 435"), "clone3")
        XCTAssertEqual(SyscallNames.named("syscall 298", isX86_64: false), "syscall 298", "another machine's numbers differ")
        XCTAssertEqual(SyscallNames.named("syscall 99999"), "syscall 99999")
        XCTAssertEqual(SyscallNames.named("syscall 400"), "syscall 400", "no call has that number")
        XCTAssertEqual(SyscallNames.named("openat"), "openat")
    }
}
