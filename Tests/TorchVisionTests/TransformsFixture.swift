import Foundation
import XCTest
@testable import Torch

/// Reading Tests/Fixtures/transforms.json (written by scripts/fixtures/transforms.py with torchvision 0.29).
enum TransformsFixture {
    static let cases: [[String: Any]] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/transforms.json")
        let data = try! Data(contentsOf: url)
        return (try! JSONSerialization.jsonObject(with: data) as! [String: Any])["cases"] as! [[String: Any]]
    }()

    /// The 3×17×23 uint8 crop of astronaut.png.
    static let image: Tensor = tensor(cases.first { $0["kind"] as? String == "image" }!["image"]!)
    /// The crop as float32 in [0, 1].
    static var floatImage: Tensor { image.to(.float32).div(255) }

    static func of(_ kind: String) -> [[String: Any]] { cases.filter { $0["kind"] as? String == kind } }

    /// Decodes `{"shape", "dtype", "data"}`, or uint8 `{"shape", "dtype", "hex"}`.
    static func tensor(_ any: Any) -> Tensor {
        let d = any as! [String: Any]
        let shape = d["shape"] as! [Int]
        if let hex = d["hex"] as? String {
            let digits = Array(hex.utf8)
            let bytes = stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16)! }
            return Tensor(bytes, shape: shape)
        }
        let dtype = DType.allCases.first { $0.name == (d["dtype"] as! String) }!
        let values = (d["data"] as! [NSNumber]).map { $0.doubleValue }
        return Tensor(values, shape: shape).to(dtype)
    }
}

/// Equal shapes and dtypes, values within `atol` (grey levels for integer images).
func assertImagesClose(_ a: Tensor, _ b: Tensor, atol: Double, _ message: String = "",
                       file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(a.shape, b.shape, message, file: file, line: line)
    XCTAssertEqual(a.dtype, b.dtype, message, file: file, line: line)
    guard a.shape == b.shape else { return }
    let x = a.toArray(as: Double.self), y = b.toArray(as: Double.self)
    var worst = 0.0, at = 0
    for i in x.indices where abs(x[i] - y[i]) > worst { worst = abs(x[i] - y[i]); at = i }
    XCTAssertLessThanOrEqual(worst, atol, "\(message): max difference \(worst) at flat index \(at) (\(x[at]) vs \(y[at]))",
                             file: file, line: line)
}
