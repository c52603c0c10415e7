import XCTest
final class TempTests: XCTestCase { func testTemp() {} }
