import XCTest
@testable import Torch

/// `sort`, `argsort`, `msort`, `topk` and `kthvalue` on the CUDA host emulator against the CPU: values and
/// indices must match exactly (both sorts are stable, NaN last ascending and first descending), for short
/// rows (one shared-memory chunk) and long ones (the global merge steps), along any dim, with gradients.
final class CUDAEmulatorSortTests: CUDAEmulatorTestCase {

    /// Values with many ties, a few NaNs and both zeros, made on the CPU.
    private func tiesAndNaNs(_ shape: [Int], seed: UInt64, on device: Device) -> Tensor {
        torch.manualSeed(seed)
        let x = (torch.randint(-20, 20, shape).float() / 4)
        x[torch.rand(shape) .< 0.05] = torch.tensor(Float.nan)
        x[torch.rand(shape) .< 0.05] = torch.tensor(Float(-0.0))
        return x.to(device)
    }

    func testShortRowsEveryDirectionAndDim() {
        assertSameOnBothDevices("sort/argsort along dims 1 and 0, both directions", tol: 0) { dev in
            let x = tiesAndNaNs([5, 37], seed: 1, on: dev)
            let (a, ai) = x.sort()
            let (b, bi) = x.sort(dim: 0, descending: true)
            return [a, ai, b, bi, x.argsort(descending: true), x.msort()]
        }
    }

    func testLongRowsUseTheGlobalMergeSteps() {
        // 5000 > the 2048-element chunk: stages 4096 and 8192 run as global steps plus shared-memory finishes.
        assertSameOnBothDevices("sort of rows of 5000", tol: 0) { dev in
            let x = tiesAndNaNs([2, 5000], seed: 2, on: dev)
            let (a, ai) = x.sort(stable: true, dim: 1)
            let (b, bi) = x.sort(descending: true)
            return [a, ai, b, bi]
        }
    }

    func testOtherDTypes() {
        assertSameOnBothDevices("float64, float16, int64 and bool sorts", tol: 0) { dev in
            let x = tiesAndNaNs([3, 41], seed: 3, on: dev)
            let ints = torch.randint(-5, 5, [3, 41]).to(dev)
            return [x.double().sort().values, x.half().sort(descending: true).indices,
                    ints.sort().values, ints.sort(dim: 0).indices, (ints .> 0).sort().indices]
        }
    }

    func testTopkKthvalueAndGradients() {
        assertSameOnBothDevices("topk largest/smallest, kthvalue and their gradients", tol: 1e-6) { dev in
            let x = data([6, 300], seed: 4, on: dev, requiresGrad: true)
            let (top, topIdx) = x.topk(7)
            let (low, lowIdx) = x.topk(3, dim: 0, largest: false)
            let (kth, kthIdx) = x.kthvalue(2, dim: 1, keepdim: true)
            (top.pow(2).sum() + low.sum() * 3 + kth.sum()).backward()
            return [top, topIdx, low, lowIdx, kth, kthIdx, x.grad!]
        }
    }
}
