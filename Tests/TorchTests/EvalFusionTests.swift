import XCTest
@testable import Torch

/// Conv → BatchNorm (→ ReLU) (→ MaxPool) folded into one convolution and one pooling in eval mode (EvalFusion.swift):
/// the same values as the modules one by one, and the unfused path wherever the fold could be observed.
final class EvalFusionTests: XCTestCase {
    /// Running statistics, affine parameters and conv bias away from their initial values.
    private func randomise(_ bn: nn.BatchNormBase, _ conv: nn.ConvNd, seed: UInt64) {
        let g = Generator().manualSeed(seed)
        torch.noGrad {
            _ = bn.runningMean!.copy_(torch.randn(bn.runningMean!.shape, generator: g))
            _ = bn.runningVar!.copy_(torch.rand(bn.runningVar!.shape, generator: g) + 0.5)
            if let w = bn.weight { _ = w.copy_(torch.randn(w.shape, generator: g)) }
            if let b = bn.bias { _ = b.copy_(torch.randn(b.shape, generator: g)) }
            if let b = conv.bias { _ = b.copy_(torch.randn(b.shape, generator: g)) }
        }
    }

    /// bn(conv(x)) (then ReLU) with the functional ops, nothing folded.
    private func reference(_ conv: nn.ConvNd, _ bn: nn.BatchNormBase, relu: Bool, _ x: Tensor) -> Tensor {
        torch.noGrad {
            let c = nn.functional.convNd(x, conv.weight, conv.bias, stride: conv.stride, padding: conv.padding,
                                         dilation: conv.dilation, groups: conv.groups, dims: conv.spatialDims)
            let y = F.batchNorm(c, bn.runningMean, bn.runningVar, weight: bn.weight, bias: bn.bias, training: false,
                                eps: bn.eps)
            return relu ? y.relu() : y
        }
    }

    func testSequentialFoldsConvBatchNormReLUInEvalMode() {
        torch.manualSeed(0)
        let conv = nn.Conv2d(3, 8, 3, padding: 1), bn = nn.BatchNorm2d(8)
        let model = nn.Sequential(conv, bn, nn.ReLU(), nn.MaxPool2d(2))
        randomise(bn, conv, seed: 1)
        model.eval()
        let x = torch.randn(2, 3, 9, 7)
        let y = torch.noGrad { model(x) }
        XCTAssertNotNil(conv.batchNormFold, "eval + noGrad folds the batch norm")
        assertClose(y, F.maxPool2d(reference(conv, bn, relu: true, x), 2), atol: 1e-5, rtol: 1e-5)
        // An in-place change to a running statistic rebuilds the fold.
        let before = conv.batchNormFold!
        torch.noGrad { _ = bn.runningMean!.add_(torch.tensor(0.25)) }
        let y2 = torch.noGrad { model(x) }
        XCTAssertFalse(conv.batchNormFold! === before)
        assertClose(y2, F.maxPool2d(reference(conv, bn, relu: true, x), 2), atol: 1e-5, rtol: 1e-5)
        // A second call with nothing changed reuses it.
        let cached = conv.batchNormFold!
        _ = torch.noGrad { model(x) }
        XCTAssertTrue(conv.batchNormFold! === cached)
    }

    /// MobileNet's depthwise Conv → BatchNorm → ReLU6, and a Hardtanh: the clamp runs in place on the fused output.
    func testReLU6AndHardtanhFollowTheFold() {
        torch.manualSeed(2)
        let conv = nn.Conv2d(6, 6, 3, padding: 1, groups: 6), bn = nn.BatchNorm2d(6)
        randomise(bn, conv, seed: 3)
        let x = torch.randn(2, 6, 7, 5) * 4
        for (activation, clamp) in [(nn.ReLU6() as nn.Module, (0.0, 6.0)), (nn.Hardtanh(minVal: -0.5, maxVal: 0.5), (-0.5, 0.5))] {
            conv.batchNormFold = nil
            let model = nn.Sequential(conv, bn, activation)
            model.eval()
            let y = torch.noGrad { model(x) }
            XCTAssertNotNil(conv.batchNormFold, "\(activation): the run is folded")
            assertClose(y, reference(conv, bn, relu: false, x).clamp(min: clamp.0, max: clamp.1), atol: 1e-5, rtol: 1e-5)
        }
    }

    func testEveryRankWithAndWithoutAffineAndConvBias() {
        torch.manualSeed(3)
        let cases: [(nn.ConvNd, nn.BatchNormBase, [Int])] = [
            (nn.Conv1d(4, 6, 3, stride: 2, bias: true), nn.BatchNorm1d(6), [3, 4, 11]),
            (nn.Conv2d(4, 6, 3, padding: 2, dilation: 2, groups: 2, bias: false), nn.BatchNorm2d(6, affine: false), [2, 4, 8, 9]),
            (nn.Conv3d(2, 5, 2, bias: true), nn.BatchNorm3d(5), [2, 2, 4, 5, 3]),
        ]
        for (i, (conv, bn, shape)) in cases.enumerated() {
            randomise(bn, conv, seed: UInt64(10 + i))
            bn.eval()
            let x = torch.randn(shape)
            let y = torch.noGrad { nn.convBatchNorm(conv, bn, x) }
            XCTAssertNotNil(conv.batchNormFold, "case \(i)")
            assertClose(y, reference(conv, bn, relu: false, x), atol: 1e-5, rtol: 1e-5)
        }
        // float64 folds in float64.
        let conv = nn.Conv2d(2, 3, 3, dtype: .float64), bn = nn.BatchNorm2d(3, dtype: .float64)
        randomise(bn, conv, seed: 20)
        bn.eval()
        let x = torch.randn([2, 2, 5, 5], dtype: .float64)
        assertClose(torch.noGrad { nn.convBatchNorm(conv, bn, then: nn.ReLU(), x) }, reference(conv, bn, relu: true, x),
                    atol: 1e-12, rtol: 1e-12)
    }

    func testNothingIsFoldedWhereItCouldBeSeen() {
        torch.manualSeed(5)
        let x = torch.randn(2, 3, 6, 6)
        // Training mode: batch statistics.
        let conv = nn.Conv2d(3, 4, 3), bn = nn.BatchNorm2d(4)
        _ = torch.noGrad { nn.convBatchNorm(conv, bn, x) }
        XCTAssertNil(conv.batchNormFold)
        // Eval mode with autograd recording: the graph has the two nodes and gradients flow to bn's parameters.
        bn.eval()
        let y = nn.convBatchNorm(conv, bn, x)
        XCTAssertNil(conv.batchNormFold)
        XCTAssertEqual(y.gradFn?.name, "NativeBatchNormBackward0")
        y.sum().backward()
        XCTAssertNotNil(bn.weight!.grad)
        // A forward hook on the batch norm sees its input and output.
        var calls = 0
        let handle = bn.registerForwardHook { _, _, _ in calls += 1; return nil }
        _ = torch.noGrad { nn.Sequential(conv, bn)(x) }
        XCTAssertEqual(calls, 1)
        XCTAssertNil(conv.batchNormFold)
        handle.remove()
        // A batch norm of another rank than the convolution stops as it would unfused; a non-zero padding mode,
        // a SyncBatchNorm and an unbatched input are not folded.
        let reflect = nn.Conv2d(3, 4, 3, padding: 1, paddingMode: .reflect)
        _ = torch.noGrad { nn.convBatchNorm(reflect, bn, x) }
        XCTAssertNil(reflect.batchNormFold)
        let sync = nn.SyncBatchNorm(4)
        sync.eval()
        _ = torch.noGrad { nn.convBatchNorm(conv, sync, x) }
        XCTAssertNil(conv.batchNormFold)
        let plain = nn.Conv2d(3, 4, 3)
        let bn2 = nn.BatchNorm2d(4)
        bn2.eval()
        XCTAssertNil(nn.foldIfExact(plain, bn2, torch.randn(3, 6, 6)))
        let bn1d = nn.BatchNorm1d(4)
        bn1d.eval()
        XCTAssertNil(nn.foldIfExact(plain, bn1d, x))
    }

    /// The clamp moved behind the max pooling (applied to the pooled rows) gives exactly what clamping every input
    /// does, NaN and infinities included, for 1-D, 2-D and 3-D pooling with padding, ceil mode, dilation and
    /// overlapping windows, in float32 and float64.
    func testMaxPoolingTakesTheClamp() {
        torch.manualSeed(7)
        let clamps: [nn.Module] = [nn.ReLU(), nn.ReLU6(), nn.Hardtanh(minVal: -0.5, maxVal: 0.5)]
        let cases: [(nn.ConvNd, nn.BatchNormBase, nn.MaxPoolNd, [Int], DType)] = [
            (nn.Conv2d(3, 5, 3, padding: 1), nn.BatchNorm2d(5), nn.MaxPool2d(2), [2, 3, 9, 7], .float32),
            (nn.Conv2d(3, 5, 3), nn.BatchNorm2d(5), nn.MaxPool2d(3, stride: 2, padding: 1), [1, 3, 12, 11], .float32),
            (nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4), nn.MaxPool2d(3, stride: 2, ceilMode: true), [2, 3, 8, 10], .float32),
            (nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.MaxPool2d(2, stride: 1, dilation: 2), [2, 3, 9, 9], .float32),
            (nn.Conv1d(3, 4, 3), nn.BatchNorm1d(4), nn.MaxPool1d(3, stride: 2, padding: 1), [2, 3, 13], .float32),
            (nn.Conv3d(2, 3, 2), nn.BatchNorm3d(3), nn.MaxPool3d(2), [2, 2, 5, 6, 5], .float32),
            (nn.Conv2d(3, 4, 3, dtype: .float64), nn.BatchNorm2d(4, dtype: .float64), nn.MaxPool2d(2), [2, 3, 8, 8], .float64),
        ]
        for (i, (conv, bn, pool, shape, dtype)) in cases.enumerated() {
            randomise(bn, conv, seed: UInt64(30 + i))
            bn.eval()
            let x = torch.randn(shape, dtype: dtype) * 4
            torch.noGrad {
                _ = x.view(-1)[3].fill_(.nan)
                _ = x.view(-1)[x.numel - 5].fill_(.infinity)
            }
            for clamp in clamps {
                let fused = torch.noGrad { nn.fusedConvBlock(conv, bn, then: clamp, pool: pool, x) }
                XCTAssertNotNil(fused, "case \(i), \(clamp): fused")
                guard let fused else { continue }
                // The same fold, with the clamp on every element before the pooling.
                let clampedFirst = torch.noGrad { pool(nn.convBatchNorm(conv, bn, then: clamp, x)) }
                XCTAssertTrue(fused.isnan().any().item(as: Bool.self), "case \(i): the NaN reaches the output")
                assertClose(fused, clampedFirst, atol: 0, rtol: 0, "case \(i), \(clamp)")
                let tolerance = dtype == .float64 ? 1e-12 : 1e-5
                let bounds = nn.clampBounds(clamp)!
                let unfused = torch.noGrad { pool(reference(conv, bn, relu: false, x).clamp(min: bounds.lo, max: bounds.hi)) }
                assertClose(fused, unfused, atol: tolerance, rtol: tolerance, "case \(i), \(clamp)")
            }
        }
    }

    /// `nn.Sequential` fuses Conv → BatchNorm → clamp → MaxPool, and in inference Conv → clamp → MaxPool without a
    /// batch norm (VGG, AlexNet, LeNet-5): the values of the modules one by one.
    func testSequentialFusesThePooling() {
        torch.manualSeed(8)
        let x = torch.randn(2, 3, 10, 10) * 3
        let conv = nn.Conv2d(3, 6, 3, padding: 1), bn = nn.BatchNorm2d(6), relu = nn.ReLU(inplace: true), pool = nn.MaxPool2d(2)
        randomise(bn, conv, seed: 9)
        let model = nn.Sequential(conv, bn, relu, pool, nn.Flatten(), nn.Linear(150, 4))
        model.eval()
        let expected = torch.noGrad { model[5](model[4](F.maxPool2d(reference(conv, bn, relu: true, x), 2))) }
        assertClose(torch.noGrad { model(x) }, expected, atol: 1e-5, rtol: 1e-5)
        XCTAssertNotNil(conv.batchNormFold)

        let plain = nn.Conv2d(3, 4, 5), plainPool = nn.MaxPool2d(2, 2)
        let lenetStage = nn.Sequential(plain, nn.ReLU(inplace: true), plainPool)
        let byModule = torch.noGrad { plainPool(plain(x).relu()) }
        XCTAssertNotNil(torch.noGrad { nn.fusedConvBlock(plain, nil, then: nn.ReLU(), pool: plainPool, x) })
        assertClose(torch.noGrad { lenetStage(x) }, byModule, atol: 0, rtol: 0)
        // With autograd recording (the weights require grad) nothing is fused and gradients flow.
        XCTAssertNil(nn.fusedConvBlock(plain, nil, then: nn.ReLU(), pool: plainPool, x))
        let y = lenetStage(x)
        XCTAssertEqual(y.gradFn?.name, "MaxPool2DWithIndicesBackward0")
        y.sum().backward()
        XCTAssertNotNil(plain.weight.grad)
    }

    /// Where the pooling could be observed or is not a max pooling of the convolution's rank it runs as its module;
    /// the Conv → BatchNorm fold still applies.
    func testPoolingIsNotFusedWhereItCouldBeSeen() {
        torch.manualSeed(10)
        let x = torch.randn(2, 3, 8, 8)
        let conv = nn.Conv2d(3, 4, 3), bn = nn.BatchNorm2d(4), pool = nn.MaxPool2d(2)
        randomise(bn, conv, seed: 11)
        bn.eval()
        let expected = torch.noGrad { F.maxPool2d(reference(conv, bn, relu: true, x), 2) }
        // A forward hook on the pooling sees the clamped input.
        var seenMin = -1.0
        let handle = pool.registerForwardHook { _, input, _ in seenMin = input.min().item(); return nil }
        XCTAssertNil(torch.noGrad { nn.fusedConvBlock(conv, bn, then: nn.ReLU(), pool: pool, x) })
        assertClose(torch.noGrad { nn.Sequential(conv, bn, nn.ReLU(), pool)(x) }, expected, atol: 1e-5, rtol: 1e-5)
        XCTAssertEqual(seenMin, 0)
        handle.remove()
        // Average pooling, a pooling of another rank, and a non-clamp activation without a batch norm.
        XCTAssertNil(torch.noGrad { nn.fusedConvBlock(conv, bn, then: nn.ReLU(), pool: nn.AvgPool2d(2), x) })
        XCTAssertNil(torch.noGrad { nn.fusedConvBlock(conv, bn, then: nn.ReLU(), pool: nn.MaxPool1d(2), x) })
        XCTAssertNil(torch.noGrad { nn.fusedConvBlock(conv, nil, then: nn.Sigmoid(), pool: pool, x) })
        // With a batch norm, a non-clamp activation runs as its module between the fold and the pooling.
        let sigmoid = torch.noGrad { nn.convBatchNorm(conv, bn, then: nn.Sigmoid(), pool: pool, x) }
        assertClose(sigmoid, torch.noGrad { F.maxPool2d(reference(conv, bn, relu: false, x).sigmoid(), 2) }, atol: 1e-5, rtol: 1e-5)
        // Training mode: module by module, batch statistics.
        bn.train()
        let trained = torch.noGrad { nn.convBatchNorm(conv, bn, then: nn.ReLU(), pool: pool, x) }
        XCTAssertEqual(trained.shape, [2, 4, 3, 3])
    }
}
