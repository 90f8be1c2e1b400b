import XCTest
@testable import Torch

/// The 2×2 stride-2 max-pool rows (four windows at a time on SSE2 masks) against a direct scalar reading of
/// PyTorch's rule, on data full of ties and NaNs: the first maximum in scan order wins, a NaN wins over
/// numbers and a later NaN over an earlier one.
final class MaxPoolKernelTests: XCTestCase {
    func testTwoByTwoRowsKeepPyTorchsTieAndNaNRules() {
        let (n, c, h, w) = (2, 3, 6, 21)
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
                    XCTAssertEqual(gotIndices[o], Int64(bestIndex), "plane \(plane), output (\(oh), \(ow))")
                    XCTAssertTrue(got[o] == best || (got[o].isNaN && best.isNaN), "plane \(plane), output (\(oh), \(ow))")
                    o += 1
                }
            }
        }
    }
}
