import XCTest
@testable import Torch

/// Max/avg/adaptive/LP pooling, max unpooling and F.pad against PyTorch (Tests/Fixtures/conv_layers.json):
/// values, indices, gradients, reprs; gradient checks of first and second order.
final class PoolingTests: XCTestCase {
    private func cases(_ kind: String) throws -> [[String: Any]] {
        try loadFixtureCases("conv_layers").filter { $0["kind"] as? String == kind }
    }

    private func intOrTuple(_ v: Any?) -> [Int]? {
        if let i = v as? Int { return [i] }
        return v as? [Int]
    }

    /// Runs the pooling a fixture case describes; returns the output and the indices (max pooling).
    private func pool(_ c: [String: Any], _ x: Tensor) -> (Tensor, Tensor?) {
        let dims = c["dims"] as! Int
        let k = intOrTuple(c["kernel_size"]), s = intOrTuple(c["stride"])
        let p = intOrTuple(c["padding"]) ?? [0], d = intOrTuple(c["dilation"]) ?? [1]
        let ceil = c["ceil_mode"] as? Bool ?? false
        switch c["pool"] as! String {
        case "max":
            let (y, i) = F.maxPoolWithIndices(x, dims: dims, kernelSize: k!, stride: s, padding: p, dilation: d, ceilMode: ceil)
            return (y, i)
        case "avg":
            return (F.avgPool(x, dims: dims, kernelSize: k!, stride: s, padding: p, ceilMode: ceil,
                              countIncludePad: c["count_include_pad"] as? Bool ?? true,
                              divisorOverride: c["divisor_override"] as? Int), nil)
        case "adaptive_avg":
            return (F.adaptiveAvgPool(x, dims: dims, outputSize: intOrTuple(c["output_size"])!), nil)
        case "adaptive_max":
            let (y, i) = F.adaptiveMaxPoolWithIndices(x, dims: dims, outputSize: intOrTuple(c["output_size"])!)
            return (y, i)
        case "lp":
            return (F.lpPool2d(x, c["norm_type"] as! Double, k!, stride: s), nil)
        default:
            fatalError("unknown pool \(c["pool"]!)")
        }
    }

    func testPoolingMatchesPyTorch() throws {
        let all = try cases("pool")
        XCTAssertEqual(all.count, 22)
        for c in all {
            let label = "\(c["pool"]!) \(c["dims"]!)d \((c["input"] as! [String: Any])["shape"]!)"
            for layout in ["contiguous", "sliced"] {
                let x = fixtureTensor(c["input"]!, layout: layout).requiresGrad_()
                let (y, indices) = pool(c, x)
                assertClose(y, fixtureTensor(c["output"]!), atol: 1e-5, rtol: 1e-5, "\(label) \(layout) output")
                if let ref = c["indices"] {
                    XCTAssertEqual(indices!.toArray(as: Int64.self), fixtureTensor(ref).toArray(as: Int64.self), "\(label) indices")
                }
                if c["pool"] as! String != "lp" { XCTAssertEqual(y.gradFn?.name, c["grad_fn"] as? String, label) }
                y.backward(fixtureTensor(c["grad_output"]!))
                assertClose(x.grad!, fixtureTensor(c["grad_input"]!), atol: 1e-5, rtol: 1e-5, "\(label) \(layout) grad_input")
            }
        }
    }

    func testModuleReprsAndSpellings() throws {
        let mine: [nn.Module] = [
            nn.MaxPool2d(2), nn.MaxPool2d(2, 2, ceilMode: true), nn.MaxPool2d(kernelSize: 3, stride: 2, padding: 1),
            nn.MaxPool1d(3), nn.MaxPool3d([1, 2, 2]), nn.AvgPool2d(2), nn.AvgPool2d(3, stride: 2, padding: 1),
            nn.AvgPool1d(3, 2), nn.AvgPool3d(2), nn.AdaptiveAvgPool2d([1, 1]), nn.AdaptiveAvgPool2d(7),
            nn.AdaptiveAvgPool1d(4), nn.AdaptiveMaxPool2d(2), nn.MaxUnpool2d(2), nn.LPPool2d(2, 3, stride: 2),
        ]
        let reprs = try cases("pool_repr").map { $0["repr"] as! String }
        XCTAssertEqual(mine.map(\.description), reprs)
        XCTAssertEqual(nn.MaxPool2d(kernelSize: 2, stride: 2)(torch.randn(1, 1, 4, 4)).shape, [1, 1, 2, 2])
    }

    func testMaxUnpoolMatchesPyTorch() throws {
        let c = try cases("unpool")[0]
        let x = fixtureTensor(c["input"]!).requiresGrad_()
        let y = nn.MaxUnpool2d(2)(x, fixtureTensor(c["indices"]!), outputSize: [6, 7])
        assertClose(y, fixtureTensor(c["output"]!), atol: 0, rtol: 0)
        y.backward(fixtureTensor(c["grad_output"]!))
        assertClose(x.grad!, fixtureTensor(c["grad_input"]!), atol: 0, rtol: 0)
    }

    func testPadMatchesPyTorch() throws {
        for c in try cases("pad") {
            let mode = F.PadMode(rawValue: c["mode"] as! String)!
            let pad = c["pad"] as! [Int]
            let x = fixtureTensor(c["input"]!).requiresGrad_()
            let y = F.pad(x, pad, mode: mode, value: c["value"] as! Double)
            assertClose(y, fixtureTensor(c["output"]!), atol: 0, rtol: 0, "\(mode) \(pad)")
            y.backward(fixtureTensor(c["grad_output"]!))
            assertClose(x.grad!, fixtureTensor(c["grad_input"]!), atol: 1e-6, rtol: 1e-6, "\(mode) \(pad) grad")
        }
    }

    func testGradcheckFirstAndSecondOrder() {
        torch.manualSeed(5)
        let x = torch.randn(2, 2, 5, 6, dtype: .float64)
        gradcheck([x]) { F.maxPool2d($0[0], 3, stride: 2, padding: 1, ceilMode: true) }
        gradcheck([x]) { F.avgPool2d($0[0], 3, stride: 2, padding: 1, countIncludePad: false) }
        gradcheck([x]) { F.adaptiveAvgPool2d($0[0], [2, 4]) }
        gradcheck([x]) { F.adaptiveMaxPool2d($0[0], [3, 2]) }
        gradcheck([x]) { F.pad($0[0], [2, 1, 1, 3], mode: .reflect) }
        gradcheck([x]) { F.pad($0[0], [1, -1, 2, 0], value: 1) }
        // Second order: d/dx of (∂ sum(pool(x)²) / ∂x) · 1.
        for f in [{ (t: Tensor) in F.maxPool2d(t, 2) }, { (t: Tensor) in F.avgPool2d(t, 2, stride: 1, padding: 1) }] {
            gradcheck([x]) { v in
                torch.enableGrad {   // gradcheck evaluates f under noGrad for its finite differences
                    let y = f(v[0])
                    let g = torch.autograd.grad([(y * y).sum()], [v[0]], createGraph: true)[0]!
                    return (g * g).sum()
                }
            }
        }
    }

    func testOutputSizeRules() {
        // PyTorch's pooling_output_shape, including the ceil-mode rule that the last window starts inside.
        XCTAssertEqual(poolingOutputSize(input: 6, kernel: 2, stride: 2, padding: 0, dilation: 1, ceilMode: false), 3)
        XCTAssertEqual(poolingOutputSize(input: 7, kernel: 2, stride: 2, padding: 0, dilation: 1, ceilMode: true), 4)
        XCTAssertEqual(poolingOutputSize(input: 5, kernel: 2, stride: 2, padding: 1, dilation: 1, ceilMode: true), 3)
        XCTAssertEqual(poolingOutputSize(input: 4, kernel: 3, stride: 3, padding: 1, dilation: 1, ceilMode: true), 2)
    }
}
