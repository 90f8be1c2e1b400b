import Foundation
import XCTest
@testable import Torch

/// ONNX's backend node conformance suite (onnx 1.22.0; fetched outside the repo by scripts/fetch-onnx-conformance):
/// every test Tests/Fixtures/onnx/conformance-expectations.txt lists as `pass` must still pass. Skips, saying
/// what is missing, when the suite is not on this machine.
final class ONNXConformanceTests: XCTestCase {
    static var expectationsURL: URL {
        fixturesURL.appendingPathComponent("onnx").appendingPathComponent("conformance-expectations.txt")
    }

    /// The suite's folder: $ONNX_CONFORMANCE_DIR (the node folder, or the folder the fetch script filled), else
    /// the fetch script's default, ~/.cache/swifttorch/onnx-conformance.
    static func suiteDirectory() -> String? {
        var candidates: [String] = []
        if let d = ProcessInfo.processInfo.environment["ONNX_CONFORMANCE_DIR"] { candidates += [d, d + "/onnx/backend/test/data/node"] }
        let env = ProcessInfo.processInfo.environment
        let cache = env["XDG_CACHE_HOME"] ?? ((env["HOME"] ?? "/root") + "/.cache")
        candidates += [cache + "/swifttorch/onnx-conformance/onnx/backend/test/data/node"]
        return candidates.first { FileManager.default.fileExists(atPath: $0 + "/test_abs/model.onnx") }
    }

    static func expectations() throws -> [(name: String, status: String, reason: String)] {
        let text = try String(contentsOf: expectationsURL, encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            if line.hasPrefix("#") { return nil }
            let p = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
            return p.count >= 2 ? (p[0], p[1], p.count > 2 ? p[2] : "") : nil
        }
    }

    func testExpectationsFileIsComplete() throws {
        let e = try Self.expectations()
        XCTAssertEqual(e.count, 1765, "one line per test of onnx 1.22.0's node suite")
        for x in e where x.status != "pass" { XCTAssertFalse(x.reason.isEmpty, "\(x.name): a non-pass needs its reason") }
        let passed = e.filter { $0.status == "pass" }.count
        print("onnx conformance expectations: \(passed)/\(e.count) passed")
    }

    func testTestsThatPassedStillPass() throws {
        guard let dir = Self.suiteDirectory() else {
            throw XCTSkip("the ONNX conformance suite is not on this machine: run scripts/fetch-onnx-conformance "
                          + "(pip download onnx==1.22.0) or set ONNX_CONFORMANCE_DIR to its node folder")
        }
        let passing = try Self.expectations().filter { $0.status == "pass" }.map(\.name)
        XCTAssertFalse(passing.isEmpty)
        let start = Date()
        var regressions: [String] = []
        for name in passing {
            let r = onnx.conformance.runTest("\(dir)/\(name)")
            if r.status != .pass { regressions.append("\(name): \(r.status.rawValue) \(r.detail)") }
        }
        print("onnx conformance: \(passing.count - regressions.count)/\(passing.count) expected passes pass, "
              + "\(String(format: "%.1f", Date().timeIntervalSince(start))) s")
        XCTAssertTrue(regressions.isEmpty, "tests that passed no longer pass:\n" + regressions.joined(separator: "\n"))
    }
}
