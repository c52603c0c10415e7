import CTestOnly
import XCTest

/// The module table that names a launch's frames (docs/timeline-format.md,
/// "Sampling sections"): before `main` the scan thread asks the kernel for
/// the executable mappings one by one, and must get the table the maps text
/// gives.
final class ModuleTableTests: XCTestCase {
    func testTheTableAskedOneMappingAtATimeIsTheTableOfTheMapsText() throws {
        // Whether the kernel answers the query at all is asked directly, not
        // by the code under test: a broken query must fail here, not skip.
        let probe = cs_test_procmap_query_probe()
        let error = errno
        try XCTSkipIf(probe == 0, "this kernel refuses PROCMAP_QUERY (Linux 6.11): \(String(cString: strerror(error))) "
                      + "on /proc/self/maps (kernel \(ProcessInfo.processInfo.operatingSystemVersionString))")
        XCTAssertEqual(probe, 1, "/proc/self/maps is readable")
        // This test process maps the Swift runtime, Foundation and XCTest:
        // a few dozen objects, as a real launch does.
        let result = cs_modules_query_matches_text()
        XCTAssertNotEqual(result, -1, "the query gave no table though the kernel answers it")
        XCTAssertEqual(result, 1, "the paths, ranges, load biases or build-ids differ")
    }
}
