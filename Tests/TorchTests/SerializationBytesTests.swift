import XCTest
import Torch
final class SerializationBytesTests: XCTestCase { func testNothing() {} }
