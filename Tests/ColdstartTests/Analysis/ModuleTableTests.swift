import CColdstart
import XCTest

/// The module table that names a launch's frames (docs/timeline-format.md,
/// "Sampling sections"): before `main` the scan thread asks the kernel for
/// the executable mappings one by one, and must get the table the maps text
/// gives.
final class ModuleTableTests: XCTestCase {
    func testTheTableAskedOneMappingAtATimeIsTheTableOfTheMapsText() throws {
        // This test process maps the Swift runtime, Foundation and XCTest:
        // a few dozen objects, as a real launch does.
        let result = cs_modules_query_matches_text()
        try XCTSkipIf(result < 0, "no PROCMAP_QUERY on this kernel (Linux 6.11), or a mapping the loader did not make")
        XCTAssertEqual(result, 1, "the paths, ranges, load biases or build-ids differ")
    }
}
