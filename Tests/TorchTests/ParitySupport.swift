import Foundation
import XCTest
@testable import Torch

/// Helpers shared by the PyTorch-parity tests (Elementwise/Reduction/ViewsAndMatmul/... ParityTests).

/// Absolute and relative tolerance for comparing with PyTorch's values.
struct Tolerance {
    var atol: Double
    var rtol: Double

    /// Default tolerances by dtype: float32 allows a few ulps of libm/vectorisation differences;
    /// float64 almost none; integers and bools must be exact.
    static func forDType(_ d: DType) -> Tolerance {
        switch d {
        case .float32: return Tolerance(atol: 1e-5, rtol: 1e-5)
        case .float64: return Tolerance(atol: 1e-12, rtol: 1e-12)
        case .float16: return Tolerance(atol: 1e-3, rtol: 1e-3)
        case .bfloat16: return Tolerance(atol: 1e-2, rtol: 1e-2)
        default: return Tolerance(atol: 0, rtol: 0)
        }
    }
}

/// The layouts a fixture input is rebuilt in (see `fixtureTensor`): contiguous always, transposed
/// for ≥ 2-D and sliced for ≥ 1-D.
func fixtureLayouts(_ any: Any) -> [String] {
    let rank = ((any as! [String: Any])["shape"] as! [Int]).count
    var r = ["contiguous"]
    if rank >= 2 { r.append("transposed") }
    if rank >= 1 { r.append("sliced") }
    return r
}

/// The fixture tensor's dtype and shape without building it.
func fixtureDType(_ any: Any) -> DType {
    let name = (any as! [String: Any])["dtype"] as! String
    return DType.allCases.first { $0.name == name }!
}

func fixtureShape(_ any: Any) -> [Int] { (any as! [String: Any])["shape"] as! [Int] }

/// Asserts `actual` equals the fixture tensor `expected`: same shape and dtype, integers and bools
/// exactly, floats within `tol` (NaN matches NaN, infinities must match exactly); with
/// `signedZeros`, a zero must also have the expected sign.
func assertMatches(_ actual: Tensor, _ expected: Any, tol: Tolerance? = nil, signedZeros: Bool = false,
                   checkDType: Bool = true, _ message: @autoclosure () -> String = "",
                   file: StaticString = #filePath, line: UInt = #line) {
    let e = fixtureTensor(expected)
    if checkDType {
        XCTAssertEqual(actual.dtype, e.dtype, "dtype \(message())", file: file, line: line)
    }
    XCTAssertEqual(actual.shape, e.shape, "shape \(message())", file: file, line: line)
    guard actual.shape == e.shape else { return }
    if !e.dtype.isFloatingPoint && !actual.dtype.isFloatingPoint {
        let x = actual.toArray(as: Int64.self), y = e.toArray(as: Int64.self)
        if let i = (0..<x.count).first(where: { x[$0] != y[$0] }) {
            XCTFail("element \(i): \(x[i]) vs expected \(y[i]) (actual \(x), expected \(y)) \(message())", file: file, line: line)
        }
        return
    }
    let t = tol ?? Tolerance.forDType(e.dtype)
    let x = actual.toArray(as: Double.self), y = e.toArray(as: Double.self)
    for i in 0..<x.count {
        let a = x[i], b = y[i]
        var ok = (a.isNaN && b.isNaN) || a == b || (a.isFinite && b.isFinite && Swift.abs(a - b) <= t.atol + t.rtol * Swift.abs(b))
        if ok && signedZeros && a == 0 && b == 0 && a.sign != b.sign { ok = false }
        if !ok {
            XCTFail("element \(i): \(a) vs expected \(b) (atol \(t.atol), rtol \(t.rtol)) \(message())", file: file, line: line)
            return
        }
    }
}

/// A fixture tensor in `layout` as a leaf that requires grad when floating.
func fixtureLeaf(_ any: Any, layout: String, grad: Bool = true) -> Tensor {
    let t = fixtureTensor(any, layout: layout)
    if grad && t.dtype.isFloatingPoint { t.requiresGrad = true }
    return t
}

/// A short description of a fixture case for failure messages.
func caseLabel(_ c: [String: Any], _ extra: String = "") -> String {
    var parts: [String] = []
    for key in ["kind", "op", "name", "side", "scalarType", "scalar", "dim", "keepdim"] {
        if let v = c[key], !(v is NSNull) { parts.append("\(key)=\(v)") }
    }
    for key in ["a", "input", "x"] {
        if let t = c[key] as? [String: Any] { parts.append("\(key)=\(t["dtype"]!)\(t["shape"]!)") }
    }
    return "[" + parts.joined(separator: " ") + (extra.isEmpty ? "" : " " + extra) + "]"
}
