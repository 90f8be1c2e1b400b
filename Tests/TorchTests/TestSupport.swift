import XCTest
@testable import Torch

/// Asserts two tensors have the same shape and values within tolerance.
func assertClose(_ a: Tensor, _ b: Tensor, atol: Double = 1e-5, rtol: Double = 1e-5,
                 _ message: String = "", file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(a.shape, b.shape, "shape mismatch \(message)", file: file, line: line)
    guard a.shape == b.shape else { return }
    let x = a.toArray(as: Double.self), y = b.toArray(as: Double.self)
    for i in 0..<x.count {
        let ok = (x[i].isNaN && y[i].isNaN) || x[i] == y[i] || Swift.abs(x[i] - y[i]) <= atol + rtol * Swift.abs(y[i])
        if !ok {
            XCTFail("element \(i): \(x[i]) vs \(y[i]) \(message)", file: file, line: line)
            return
        }
    }
}

func assertClose(_ a: Tensor, _ values: [Double], atol: Double = 1e-5, rtol: Double = 1e-5,
                 file: StaticString = #filePath, line: UInt = #line) {
    let x = a.toArray(as: Double.self)
    XCTAssertEqual(x.count, values.count, file: file, line: line)
    for i in 0..<Swift.min(x.count, values.count) {
        XCTAssertEqual(x[i], values[i], accuracy: atol + rtol * Swift.abs(values[i]), "element \(i)", file: file, line: line)
    }
}

/// Numerical gradient check in float64: compares autograd's gradient of `sum(f(inputs) * w)`
/// (w a fixed random weight) with central differences.
func gradcheck(_ inputs: [Tensor], eps: Double = 1e-6, atol: Double = 1e-5, rtol: Double = 1e-4,
               file: StaticString = #filePath, line: UInt = #line, _ f: ([Tensor]) -> Tensor) {
    let xs = inputs.map { $0.double().detach().contiguousCopy().requiresGrad_() }
    let out0 = f(xs)
    let w = torch.randn(out0.shape, dtype: .float64, generator: Generator().manualSeed(7))
    let loss = (out0 * w).sum()
    let grads = torch.autograd.grad([loss], xs, allowUnused: true)
    for (k, x) in xs.enumerated() {
        let n = x.numel
        let p = x.storage.data.assumingMemoryBound(to: Double.self)
        var numeric = [Double](repeating: 0, count: n)
        for i in 0..<n {
            let orig = p[i]
            p[i] = orig + eps
            let plus = torch.noGrad { (f(xs) * w).sum().item() }
            p[i] = orig - eps
            let minus = torch.noGrad { (f(xs) * w).sum().item() }
            p[i] = orig
            numeric[i] = (plus - minus) / (2 * eps)
        }
        let analytic = grads[k]?.toArray(as: Double.self) ?? [Double](repeating: 0, count: n)
        for i in 0..<n where !(Swift.abs(analytic[i] - numeric[i]) <= atol + rtol * Swift.abs(numeric[i])) {
            XCTFail("gradcheck input \(k) element \(i): analytic \(analytic[i]) vs numeric \(numeric[i])", file: file, line: line)
            return
        }
    }
}

/// The folder of committed fixtures (Tests/Fixtures).
let fixturesURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures")

// MARK: - Fixtures written by scripts/fixtures.py

/// Loads Tests/Fixtures/<name>.json's "cases" array.
func loadFixtureCases(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws -> [[String: Any]] {
    let url = fixturesURL.appendingPathComponent("\(name).json")
    let data = try Data(contentsOf: url)
    let obj = try JSONSerialization.jsonObject(with: data) as! [String: Any]
    return obj["cases"] as! [[String: Any]]
}

private func fixtureNumber(_ v: Any) -> Double {
    if let s = v as? String {
        switch s {
        case "nan": return .nan
        case "inf": return .infinity
        case "-inf": return -.infinity
        default: return Double(s)!
        }
    }
    if let b = v as? Bool { return b ? 1 : 0 }
    // Foundation on Linux reads long decimals as NSDecimalNumber, whose doubleValue can be off by
    // a few ulps; its decimal string converts exactly.
    if let d = v as? NSDecimalNumber, let x = Double(d.stringValue) { return x }
    return (v as! NSNumber).doubleValue
}

/// Decodes {"shape", "dtype", "data"}; `layout` rebuilds the same values as a non-contiguous view:
/// "transposed" (values stored transposed, viewed back with .mT), "sliced" (every other element of a
/// bigger buffer along the last dim), "contiguous".
func fixtureTensor(_ any: Any, layout: String = "contiguous") -> Tensor {
    let d = any as! [String: Any]
    let shape = d["shape"] as! [Int]
    let dtype = DType.allCases.first { $0.name == (d["dtype"] as! String) }!
    let raw = d["data"] as! [Any]
    let t: Tensor
    if dtype == .int64 || dtype == .int32 || dtype == .uint8 {
        t = Tensor(raw.map { ($0 as! NSNumber).int64Value }, shape: shape).to(dtype)
    } else if dtype == .bool {
        t = Tensor(raw.map { ($0 as! NSNumber).boolValue }, shape: shape)
    } else {
        t = Tensor(raw.map(fixtureNumber), shape: shape).to(dtype)
    }
    switch layout {
    case "transposed" where shape.count >= 2:
        let stored = t.mT.contiguous()
        return stored.mT
    case "sliced" where shape.count >= 1:
        var big = shape
        big[big.count - 1] *= 2
        let buffer = torch.zeros(big, dtype: dtype)
        let view = buffer.slice(shape.count - 1, start: 0, end: big[big.count - 1], step: 2)
        view.copy_(t)
        return view
    default:
        return t
    }
}

/// y, x.grad, w.grad and b.grad of `body(x, w, b)` weighted by a fixed random tensor (seed 11): what the
/// convolution-kernel tests compare between a fast path and the path it replaces.
func convolutionResults(_ x: Tensor, _ w: Tensor, _ b: Tensor, _ body: (Tensor, Tensor, Tensor) -> Tensor) -> [Tensor] {
    let xs = x.detach().requiresGrad_(), ws = w.detach().requiresGrad_(), bs = b.detach().requiresGrad_()
    let y = body(xs, ws, bs)
    torch.manualSeed(11)
    (y * torch.randn(y.shape, dtype: y.dtype)).sum().backward()
    return [y.detach(), xs.grad!, ws.grad!, bs.grad!]
}

/// Runs `body` with a kernel path switched on, then off (`setEnabled`), and asserts that the two
/// `convolutionResults` agree within `tolerance`; leaves the path on.
func assertKernelPathMatches(_ setEnabled: (Bool) -> Void, _ x: Tensor, _ w: Tensor, _ b: Tensor, tolerance: Double,
                             file: StaticString = #filePath, line: UInt = #line, _ body: (Tensor, Tensor, Tensor) -> Tensor) {
    setEnabled(true)
    let fast = convolutionResults(x, w, b, body)
    setEnabled(false)
    let reference = convolutionResults(x, w, b, body)
    setEnabled(true)
    assertConvolutionResults(fast, match: reference, tolerance: tolerance, file: file, line: line)
}

/// Asserts that each of `fast` (from `convolutionResults`) equals the same tensor of `reference` within
/// `tolerance` × max(|reference|, 1).
func assertConvolutionResults(_ fast: [Tensor], match reference: [Tensor], tolerance: Double,
                              file: StaticString = #filePath, line: UInt = #line) {
    for (name, (f, r)) in zip(["output", "input grad", "weight grad", "bias grad"], zip(fast, reference)) {
        XCTAssertEqual(f.shape, r.shape, name, file: file, line: line)
        let scale = Swift.max(r.abs().max().item(), 1), err = (f - r).abs().max().item()
        XCTAssertLessThanOrEqual(err, tolerance * scale, "\(name): max error \(err) at scale \(scale)", file: file, line: line)
    }
}
