import XCTest
@testable import Torch

/// `nn.SyncBatchNorm` in one process (no process group: it must be exactly a BatchNorm) and
/// `nn.SyncBatchNorm.convertSyncBatchnorm`. The synchronised path runs under mpirun in
/// DistributedTests (`ddp-worker syncbn`).
final class SyncBatchNormTests: XCTestCase {
    /// The same random weight and bias in both layers.
    private func copyAffine(from a: nn.NormBase, to b: nn.NormBase, seed: UInt64) {
        let g = Generator().manualSeed(seed)
        torch.noGrad {
            if let w = a.weight { _ = w.copy_(torch.rand(w.shape, generator: g).to(w.dtype) + 0.5); _ = b.weight!.copy_(w) }
            if let bias = a.bias { _ = bias.copy_(torch.randn(bias.shape, generator: g).to(bias.dtype)); _ = b.bias!.copy_(bias) }
        }
    }

    private func assertSame(_ a: Tensor?, _ b: Tensor?, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(a == nil, b == nil, what, file: file, line: line)
        guard let a, let b else { return }
        assertClose(a, b, atol: 0, rtol: 0, what, file: file, line: line)
    }

    func testWithoutAProcessGroupItIsBatchNorm2d() {
        XCTAssertFalse(dist.isInitialized())
        for (momentum, dtype) in [(0.1 as Double?, DType.float64), (nil, .float64), (0.3, .float32)] {
            let bn = nn.BatchNorm2d(3, momentum: momentum, dtype: dtype)
            let sbn = nn.SyncBatchNorm(3, momentum: momentum, dtype: dtype)
            copyAffine(from: bn, to: sbn, seed: 1)
            let g = Generator().manualSeed(2)
            for step in 0..<3 {
                let x = (torch.randn([4, 3, 5, 2], generator: g) * 2 + 1).to(dtype)
                let r = torch.randn(x.shape, generator: g).to(dtype)
                let xa = x.clone().requiresGrad_(), xb = x.clone().requiresGrad_()
                let ya = bn(xa), yb = sbn(xb)
                XCTAssertEqual(yb.gradFn?.name, "NativeBatchNormBackward0", "no group: BatchNorm's own op")
                (ya * r).sum().backward()
                (yb * r).sum().backward()
                let label = "momentum \(String(describing: momentum)) \(dtype) step \(step)"
                assertSame(yb, ya, "output \(label)")
                assertSame(xb.grad, xa.grad, "input grad \(label)")
                assertSame(sbn.weight!.grad, bn.weight!.grad, "weight grad \(label)")
                assertSame(sbn.bias!.grad, bn.bias!.grad, "bias grad \(label)")
                assertSame(sbn.runningMean, bn.runningMean, "running_mean \(label)")
                assertSame(sbn.runningVar, bn.runningVar, "running_var \(label)")
                XCTAssertEqual(sbn.numBatchesTracked!.item(as: Int64.self), Int64(step + 1))
            }
            bn.eval(); sbn.eval()
            let x = torch.randn([2, 3, 4, 4], generator: g).to(dtype)
            assertSame(sbn(x), bn(x), "eval output \(dtype)")
            XCTAssertEqual(sbn.numBatchesTracked!.item(as: Int64.self), 3, "eval does not count batches")
        }
    }

    func testWithoutRunningStatisticsAndWithoutAffine() {
        let bn = nn.BatchNorm1d(4, affine: false, trackRunningStats: false, dtype: .float64)
        let sbn = nn.SyncBatchNorm(4, affine: false, trackRunningStats: false, dtype: .float64)
        XCTAssertNil(sbn.weight); XCTAssertNil(sbn.runningMean); XCTAssertNil(sbn.numBatchesTracked)
        XCTAssertTrue(sbn.stateDict().keys.isEmpty)
        let x = torch.randn([6, 4, 3], dtype: .float64, generator: Generator().manualSeed(3))
        assertSame(sbn(x), bn(x), "training")
        bn.eval(); sbn.eval()
        assertSame(sbn(x), bn(x), "eval uses batch statistics without running ones")
    }

    /// Inputs of any rank ≥ 2 (BatchNorm1d/2d/3d's shapes and more), as PyTorch's SyncBatchNorm.
    func testAcceptsEveryInputRankFromTwo() {
        let sbn = nn.SyncBatchNorm(3, dtype: .float64)
        let g = Generator().manualSeed(4)
        for shape in [[5, 3], [4, 3, 7], [2, 3, 2, 3], [2, 3, 2, 2, 2], [2, 3, 1, 2, 2, 2]] {
            let x = torch.randn(shape, dtype: .float64, generator: g)
            let y = sbn(x)
            XCTAssertEqual(y.shape, shape)
            let dims = [0] + Array(2..<shape.count)
            assertClose(y.mean(dim: dims), [0, 0, 0], atol: 1e-12, rtol: 0)
        }
        XCTAssertEqual(sbn.numBatchesTracked!.item(as: Int64.self), 5)
    }

    /// Gradients through the op (the single-process path), first order, in float64.
    func testGradcheck() {
        let sbn = nn.SyncBatchNorm(3, dtype: .float64)
        copyAffine(from: sbn, to: nn.SyncBatchNorm(3, dtype: .float64), seed: 5)
        let x = torch.randn([4, 3, 2], dtype: .float64, generator: Generator().manualSeed(6))
        gradcheck([x]) { t in sbn(t[0]) }
    }

    func testReprStateDictAndSettings() {
        let sbn = nn.SyncBatchNorm(64)
        XCTAssertEqual(sbn.description, "SyncBatchNorm(64, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)")
        XCTAssertEqual(nn.SyncBatchNorm(8, eps: 1e-3, momentum: nil, affine: false, trackRunningStats: false).description,
                       "SyncBatchNorm(8, eps=0.001, momentum=None, affine=False, bias=False, track_running_stats=False)")
        XCTAssertEqual(sbn.stateDict().keys, ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"])
        XCTAssertEqual(sbn.weight!.toArray(as: Float.self), [Float](repeating: 1, count: 64))
        XCTAssertEqual(sbn.runningVar!.toArray(as: Float.self), [Float](repeating: 1, count: 64))
        XCTAssertNil(sbn.processGroup)
        XCTAssertEqual(nn.SyncBatchNorm(2, dtype: .float64).runningMean!.dtype, .float64)
    }

    // MARK: convertSyncBatchnorm

    /// A ResNet-like block holding its layers every way a module can: `var` properties typed
    /// `nn.Module` and `nn.Module?`, an array of modules, a Sequential, a ModuleDict and `addModule`.
    final class Block: nn.Module {
        var conv1: nn.Module = nn.Conv2d(3, 5, 3, padding: 1, bias: false)
        var bn1: nn.Module = nn.BatchNorm2d(5)
        var extra: nn.Module? = nn.BatchNorm2d(5, momentum: nil)
        var missing: nn.Module? = nil
        var stages: [nn.Module] = [nn.Conv2d(5, 5, 1), nn.BatchNorm2d(5, affine: false), nn.ReLU()]
        let downsample = nn.Sequential(nn.Conv2d(3, 5, 1, bias: false), nn.BatchNorm2d(5, eps: 1e-3))
        let heads = nn.ModuleDict(["norm": nn.BatchNorm1d(5), "fc": nn.Linear(5, 2)])
        override init() {
            super.init()
            addModule("bn3d", nn.BatchNorm3d(5, trackRunningStats: false))
        }
        override func forward(_ x: Tensor) -> Tensor {
            var y = extra!(bn1(conv1(x)))
            for s in stages { y = s(y) }
            y = (y + downsample(x)).relu()
            return heads["fc"]!(heads["norm"]!(y.mean(dim: [2, 3])))
        }
    }

    func testConvertReplacesEveryBatchNormKeepingNamesTensorsAndMode() {
        torch.manualSeed(0)
        let block = Block()
        block.downsample[1].eval()                                   // a layer in eval mode stays so
        (block.bn1 as! nn.BatchNorm2d).weight!.requiresGrad = false  // and a frozen weight stays frozen
        let x = torch.randn([2, 3, 4, 4], generator: Generator().manualSeed(1))
        _ = block(x)                                                 // running statistics away from their init
        let before = block.stateDict()
        let reprBefore = block.description
        let paramsBefore = block.parameters()
        let bnCount = block.modules().filter { $0 is nn.BatchNormBase }.count
        XCTAssertEqual(bnCount, 6)

        let converted = nn.SyncBatchNorm.convertSyncBatchnorm(block)
        XCTAssertTrue(converted === block, "a model is converted in place")
        let syncs = block.modules().compactMap { $0 as? nn.SyncBatchNorm }
        XCTAssertEqual(syncs.count, bnCount)
        XCTAssertFalse(block.modules().contains { $0 is nn.BatchNorm1d || $0 is nn.BatchNorm2d || $0 is nn.BatchNorm3d })
        XCTAssertTrue(block.bn1 is nn.SyncBatchNorm && block.extra is nn.SyncBatchNorm && block.stages[1] is nn.SyncBatchNorm)
        XCTAssertTrue(block.downsample[1] is nn.SyncBatchNorm && block.heads["norm"] is nn.SyncBatchNorm)
        XCTAssertTrue(block.getSubmodule("bn3d") is nn.SyncBatchNorm)
        XCTAssertNil(block.missing)

        // The same keys and the very same tensors (parameters and buffers are shared, not copied).
        let after = block.stateDict()
        XCTAssertEqual(after.keys, before.keys)
        for key in before.keys {
            XCTAssertTrue(after[key]!.storage === before[key]!.storage, key)
        }
        XCTAssertEqual(block.parameters().map(ObjectIdentifier.init), paramsBefore.map(ObjectIdentifier.init))
        XCTAssertFalse((block.bn1 as! nn.SyncBatchNorm).weight!.requiresGrad)
        XCTAssertFalse(block.downsample[1].training)
        XCTAssertTrue(block.bn1.training)

        // Settings carried over; the printed tree only renames the layers.
        let extra = block.extra as! nn.SyncBatchNorm
        XCTAssertNil(extra.momentum)
        XCTAssertEqual((block.downsample[1] as! nn.SyncBatchNorm).eps, 1e-3)
        XCTAssertFalse((block.stages[1] as! nn.SyncBatchNorm).affine)
        XCTAssertFalse((block.getSubmodule("bn3d") as! nn.SyncBatchNorm).trackRunningStats)
        let expected = reprBefore.replacingOccurrences(of: "BatchNorm1d(", with: "SyncBatchNorm(")
            .replacingOccurrences(of: "BatchNorm2d(", with: "SyncBatchNorm(")
            .replacingOccurrences(of: "BatchNorm3d(", with: "SyncBatchNorm(")
        XCTAssertEqual(block.description, expected)
        XCTAssertTrue(block.description.contains("(bn1): SyncBatchNorm(5, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"))

        // Without a process group the converted model computes what the original did.
        torch.manualSeed(0)
        let reference = Block()
        reference.downsample[1].eval()
        _ = reference(x)
        assertClose(block(x), reference(x), atol: 0, rtol: 0, "converted forward")
    }

    /// Only a `var` is rewritten in place (the compiler may assume a `let` never changes), so the
    /// conversion reads each stored property's mutability from the class's field descriptor.
    func testStoredPropertyMutabilityIsKnown() {
        let fields = ModuleReflection.layout(for: Block.self).fields
        func isVar(_ name: String) -> Bool? { fields.first { $0.name == name }?.isVar }
        XCTAssertEqual(isVar("bn1"), true)
        XCTAssertEqual(isVar("extra"), true)
        XCTAssertEqual(isVar("stages"), true)
        XCTAssertEqual(isVar("downsample"), false)
        XCTAssertEqual(isVar("heads"), false)
        let norm = ModuleReflection.layout(for: nn.BatchNorm2d.self).fields
        XCTAssertEqual(norm.map(\.name), ["weight", "bias", "runningMean", "runningVar", "numBatchesTracked"])
        XCTAssertEqual(norm.map(\.isVar), [true, true, false, false, false])
    }

    func testConvertingABareBatchNormReturnsTheNewLayer() {
        let bn = nn.BatchNorm1d(7, eps: 1e-4, momentum: 0.2, bias: false, dtype: .float64).eval()
        let converted = nn.SyncBatchNorm.convertSyncBatchnorm(bn)
        let sbn = try! XCTUnwrap(converted as? nn.SyncBatchNorm)
        XCTAssertTrue(sbn.weight === bn.weight && sbn.runningMean === bn.runningMean && sbn.numBatchesTracked === bn.numBatchesTracked)
        XCTAssertNil(sbn.bias)
        XCTAssertFalse(sbn.training)
        XCTAssertEqual(sbn.eps, 1e-4)
        XCTAssertEqual(sbn.momentum, 0.2)
        XCTAssertEqual(sbn.runningVar!.dtype, .float64)
        XCTAssertEqual(sbn.stateDict().keys, bn.stateDict().keys)
        XCTAssertEqual(sbn.description, "SyncBatchNorm(7, eps=0.0001, momentum=0.2, affine=True, bias=False, track_running_stats=True)")
    }

    func testConvertLeavesOtherLayersAndSharesOneLayerUsedTwice() {
        let shared = nn.BatchNorm1d(4)
        let norm = nn.LayerNorm(4), inorm = nn.InstanceNorm1d(4)
        let model = nn.Sequential(nn.Linear(4, 4), shared, norm, nn.Sequential(shared, inorm))
        let out = nn.SyncBatchNorm.convertSyncBatchnorm(model) as! nn.Sequential
        XCTAssertTrue(out[2] === norm && (out[3] as! nn.Sequential)[1] === inorm, "only batch norms are replaced")
        XCTAssertTrue(out[1] is nn.SyncBatchNorm)
        XCTAssertTrue(out[1] === (out[3] as! nn.Sequential)[0], "a shared layer becomes one SyncBatchNorm")
        XCTAssertEqual(out.modules().filter { $0 is nn.SyncBatchNorm }.count, 1)

        let plain = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
        let described = plain.description
        XCTAssertTrue(nn.SyncBatchNorm.convertSyncBatchnorm(plain) === plain)
        XCTAssertEqual(plain.description, described)

        // Converting twice gives a fresh SyncBatchNorm on the same tensors.
        let again = nn.SyncBatchNorm.convertSyncBatchnorm(out[1])
        XCTAssertTrue(again is nn.SyncBatchNorm && again !== out[1])
        XCTAssertTrue((again as! nn.SyncBatchNorm).runningMean === shared.runningMean)
    }
}
