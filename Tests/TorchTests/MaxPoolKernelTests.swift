import XCTest
@testable import Torch

/// The 2×2 stride-2 max-pool rows (four windows at a time on SSE2 masks) against a direct scalar reading of
/// PyTorch's rule, on data full of ties and NaNs: the first maximum in scan order wins, a NaN wins over
/// numbers and a later NaN over an earlier one.
final class MaxPoolKernelTests: XCTestCase {
    /// Widths 2 to 31 give output rows of 1 to 15 windows: fewer than four (scalar), whole fours, and rows whose
    /// last four windows overlap the ones before.
    func testTwoByTwoRowsKeepPyTorchsTieAndNaNRules() {
        for w in 2...31 { checkTwoByTwoRows(width: w) }
    }

    private func checkTwoByTwoRows(width w: Int) {
        let (n, c, h) = (2, 3, 6)
        var values = (0..<(n * c * h * w)).map { Float(($0 * 7919) % 5) }
        for i in stride(from: 3, to: values.count, by: 37) { values[i] = .nan }
        let x = torch.tensor(values).view(n, c, h, w)
        let (y, indices) = F.maxPoolWithIndices(x, dims: 2, kernelSize: 2, stride: 2)
        XCTAssertEqual(y.shape, [n, c, h / 2, w / 2])
        let got = y.toArray(as: Float.self), gotIndices = indices.toArray(as: Int64.self)
        var o = 0
        for plane in 0..<(n * c) {
            for oh in 0..<(h / 2) {
                for ow in 0..<(w / 2) {
                    var best = Float.nan, bestIndex = -1
                    for (dy, dx) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                        let i = (2 * oh + dy) * w + 2 * ow + dx, v = values[plane * h * w + i]
                        if bestIndex < 0 || v > best || v.isNaN { (best, bestIndex) = (v, i) }
                    }
                    XCTAssertEqual(gotIndices[o], Int64(bestIndex), "width \(w), plane \(plane), output (\(oh), \(ow))")
                    XCTAssertTrue(got[o] == best || (got[o].isNaN && best.isNaN), "width \(w), plane \(plane), output (\(oh), \(ow))")
                    o += 1
                }
            }
        }
    }

    /// Inference skips the indices (column maxima, then window maxima); the values must be those of the
    /// indexed kernel for every window shape, padding (-inf columns), ceil mode, dilation, NaN and dtype.
    func testValuesOnlyPathMatchesTheIndexedKernel() {
        let g = Generator().manualSeed(7)
        for dtype in [DType.float32, .float64] {
            var x = torch.randn([2, 3, 9, 13], generator: g).to(dtype)
            x = torch.where(torch.rand([2, 3, 9, 13], generator: g) .< 0.03, torch.full([], Double.nan, dtype: dtype), x)
            for (k, s, p, d, ceil) in [(2, 2, 0, 1, false), (3, 2, 1, 1, false), (3, 2, 1, 1, true), (3, 1, 1, 1, false),
                                       (2, 3, 1, 1, true), (3, 3, 0, 2, false), (4, 2, 2, 1, true), (1, 1, 0, 1, false),
                                       (3, 5, 1, 2, true)] {
                let values = F.maxPool2d(x, k, stride: s, padding: p, dilation: d, ceilMode: ceil)
                let (indexed, _) = F.maxPoolWithIndices(x, dims: 2, kernelSize: k, stride: s, padding: p, dilation: d, ceilMode: ceil)
                XCTAssertEqual(values.shape, indexed.shape)
                let a = values.toArray(as: Double.self), b = indexed.toArray(as: Double.self)
                XCTAssertTrue(zip(a, b).allSatisfy { $0 == $1 || ($0.isNaN && $1.isNaN) }, "\(dtype) k\(k) s\(s) p\(p) d\(d) ceil \(ceil)")
            }
            // 1-D, 3-D and the layer (whose forward takes the values-only path).
            let x1 = x.view(6, 9, 13), x3 = x.view(1, 6, 9, 13, 1)
            XCTAssertEqual(F.maxPool1d(x1, 3, stride: 2, padding: 1).toArray(as: Double.self).map(\.isNaN),
                           F.maxPoolWithIndices(x1, dims: 1, kernelSize: 3, stride: 2, padding: 1).0.toArray(as: Double.self).map(\.isNaN))
            let v3 = F.maxPool3d(x3, [2, 3, 1], stride: [2, 2, 1]).toArray(as: Double.self)
            let i3 = F.maxPoolWithIndices(x3, dims: 3, kernelSize: [2, 3, 1], stride: [2, 2, 1]).0.toArray(as: Double.self)
            XCTAssertTrue(zip(v3, i3).allSatisfy { $0 == $1 || ($0.isNaN && $1.isNaN) })
            let layer = nn.MaxPool2d(kernelSize: 3, stride: 2, padding: 1)
            let l = layer(x).toArray(as: Double.self), f = F.maxPoolWithIndices(x, dims: 2, kernelSize: 3, stride: 2, padding: 1).0.toArray(as: Double.self)
            XCTAssertTrue(zip(l, f).allSatisfy { $0 == $1 || ($0.isNaN && $1.isNaN) })
        }
        // With autograd the indices are kept: the gradient flows to the maxima.
        let x = torch.randn([1, 1, 4, 4], generator: g).requiresGrad_()
        F.maxPool2d(x, 2).sum().backward()
        XCTAssertEqual(x.grad!.sum().item(), 4)
    }
}
