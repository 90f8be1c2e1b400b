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
        for i in 0..<n where Swift.abs(analytic[i] - numeric[i]) > atol + rtol * Swift.abs(numeric[i]) {
            XCTFail("gradcheck input \(k) element \(i): analytic \(analytic[i]) vs numeric \(numeric[i])", file: file, line: line)
            return
        }
    }
}

/// The folder of committed fixtures (Tests/Fixtures).
let fixturesURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures")
