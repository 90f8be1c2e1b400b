import XCTest
@testable import Torch

/// BatchNorm1d/2d, LayerNorm and GroupNorm against PyTorch (Tests/Fixtures/norm_layers.json),
/// gradchecks (first and second order), module state and error messages.
final class NormalizationTests: XCTestCase {
    private func cases(_ kind: String) throws -> [[String: Any]] {
        try loadFixtureCases("norm_layers").filter { $0["kind"] as? String == kind }
    }

    private func dtype(_ c: [String: Any]) -> DType { c["dtype"] as! String == "float64" ? .float64 : .float32 }
    private func tol(_ c: [String: Any]) -> Double { dtype(c) == .float64 ? 1e-10 : 2e-5 }

    /// The batch-norm module a fixture case describes, with its initial weight and bias.
    private func batchNorm(_ c: [String: Any]) -> nn.BatchNormBase {
        let nf = c["num_features"] as! Int, eps = c["eps"] as! Double, momentum = c["momentum"] as? Double
        let affine = c["affine"] as! Bool, track = c["track"] as! Bool, bias = c["bias"] as! Bool
        let m: nn.BatchNormBase = c["module"] as! String == "BatchNorm1d"
            ? nn.BatchNorm1d(nf, eps: eps, momentum: momentum, affine: affine, trackRunningStats: track, bias: bias, dtype: dtype(c))
            : nn.BatchNorm2d(nf, eps: eps, momentum: momentum, affine: affine, trackRunningStats: track, bias: bias, dtype: dtype(c))
        torch.noGrad {
            if let w = c["weight_init"] { m.weight!.copy_(fixtureTensor(w)) }
            if let b = c["bias_init"] { m.bias!.copy_(fixtureTensor(b)) }
        }
        return m
    }

    func testBatchNormMatchesPyTorch() throws {
        let all = try cases("batchnorm")
        XCTAssertEqual(all.count, 15)
        for c in all {
            let label = "\(c["module"]!) \(c["steps"].map { (($0 as! [[String: Any]])[0]["input"] as! [String: Any])["shape"]! }!) momentum=\(c["momentum"]!) affine=\(c["affine"]!) track=\(c["track"]!) \(c["dtype"]!)"
            let t = tol(c)
            let m = batchNorm(c)
            XCTAssertEqual(m.description, c["repr"] as! String, label)
            for (s, step) in (c["steps"] as! [[String: Any]]).enumerated() {
                let x = fixtureTensor(step["input"]!).requiresGrad_()
                let y = m(x)
                assertClose(y, fixtureTensor(step["output"]!), atol: t, rtol: t, "\(label) step \(s)")
                XCTAssertEqual(y.gradFn?.name, "NativeBatchNormBackward0")
                if let rm = step["running_mean"] {
                    assertClose(m.runningMean!, fixtureTensor(rm), atol: t, rtol: t, "\(label) running_mean \(s)")
                    assertClose(m.runningVar!, fixtureTensor(step["running_var"]!), atol: t, rtol: t, "\(label) running_var \(s)")
                    XCTAssertEqual(m.numBatchesTracked!.item(as: Int64.self), Int64(step["num_batches_tracked"] as! Int), label)
                } else {
                    XCTAssertNil(m.runningMean)
                    XCTAssertNil(m.numBatchesTracked)
                }
                if let go = step["grad_output"] {
                    y.backward(fixtureTensor(go))
                    assertClose(x.grad!, fixtureTensor(step["grad_input"]!), atol: t, rtol: t, "\(label) grad_input")
                    if let gw = step["grad_weight"] { assertClose(m.weight!.grad!, fixtureTensor(gw), atol: t, rtol: t, "\(label) grad_weight") }
                    if let gb = step["grad_bias"] { assertClose(m.bias!.grad!, fixtureTensor(gb), atol: t, rtol: t, "\(label) grad_bias") }
                }
            }
            m.eval()
            m.zeroGrad()
            let ev = c["eval"] as! [String: Any]
            let x = fixtureTensor(ev["input"]!).requiresGrad_()
            let y = m(x)
            assertClose(y, fixtureTensor(ev["output"]!), atol: t, rtol: t, "\(label) eval")
            y.backward(fixtureTensor(ev["grad_output"]!))
            assertClose(x.grad!, fixtureTensor(ev["grad_input"]!), atol: t, rtol: t, "\(label) eval grad_input")
            if let gw = ev["grad_weight"] { assertClose(m.weight!.grad!, fixtureTensor(gw), atol: t, rtol: t, "\(label) eval grad_weight") }
            if let gb = ev["grad_bias"] { assertClose(m.bias!.grad!, fixtureTensor(gb), atol: t, rtol: t, "\(label) eval grad_bias") }
        }
    }

    func testBatchNormNonContiguousInputs() throws {
        // The same first training step from transposed and sliced views of the input.
        for c in try cases("batchnorm") where c["dtype"] as! String == "float32" {
            let step = (c["steps"] as! [[String: Any]])[2]
            for layout in ["transposed", "sliced"] {
                let ref = batchNorm(c)
                let x0 = fixtureTensor((c["steps"] as! [[String: Any]])[0]["input"]!)
                let x1 = fixtureTensor((c["steps"] as! [[String: Any]])[1]["input"]!)
                _ = ref(x0); _ = ref(x1)
                let x = fixtureTensor(step["input"]!, layout: layout).requiresGrad_()
                XCTAssertFalse(x.isContiguous)
                let y = ref(x)
                assertClose(y, fixtureTensor(step["output"]!), atol: 2e-5, rtol: 2e-5, layout)
                y.backward(fixtureTensor(step["grad_output"]!, layout: layout))
                assertClose(x.grad!, fixtureTensor(step["grad_input"]!), atol: 2e-5, rtol: 2e-5, "\(layout) grad")
                if let rm = step["running_mean"] { assertClose(ref.runningMean!, fixtureTensor(rm), atol: 2e-5, rtol: 2e-5) }
            }
        }
    }

    func testFunctionalBatchNormMatchesModule() throws {
        let c = try cases("batchnorm")[0]
        let step = (c["steps"] as! [[String: Any]])[0]
        let rm = torch.zeros(c["num_features"] as! Int), rv = torch.ones(c["num_features"] as! Int)
        let x = fixtureTensor(step["input"]!)
        let y = F.batchNorm(x, rm, rv, weight: fixtureTensor(c["weight_init"]!), bias: fixtureTensor(c["bias_init"]!),
                            training: true, momentum: 0.1, eps: 1e-5)
        assertClose(y, fixtureTensor(step["output"]!), atol: 2e-5, rtol: 2e-5)
        assertClose(rm, fixtureTensor(step["running_mean"]!), atol: 1e-6, rtol: 1e-6)
        assertClose(rv, fixtureTensor(step["running_var"]!), atol: 1e-6, rtol: 1e-6)
        XCTAssertEqual(rm.storage.version, 1)
        // Eval form: normalise with the given statistics.
        let e = F.batchNorm(x, torch.tensor([1.0, 2, 3, 4]).float(), torch.tensor([4.0, 1, 0.25, 9]).float())
        let expected = (x - torch.tensor([1.0, 2, 3, 4]).float()) / (torch.tensor([4.0, 1, 0.25, 9]).float() + 1e-5).sqrt()
        assertClose(e, expected, atol: 1e-5, rtol: 1e-5)
        // training with neither running statistic.
        let z = F.batchNorm(x, nil, nil, training: true)
        assertClose(z.mean(dim: 0), [0, 0, 0, 0], atol: 1e-5)
    }

    func testBatchNormGradcheck() {
        let shapes: [[Int]] = [[5, 3], [4, 2, 3], [3, 2, 2, 3]]
        for shape in shapes {
            let c = shape[1]
            let x = torch.randn(shape, dtype: .float64) * 2 + 1
            let w = torch.rand(c, dtype: .float64) + 0.5, b = torch.randn(c, dtype: .float64)
            gradcheck([x, w, b]) { F.batchNorm($0[0], nil, nil, weight: $0[1], bias: $0[2], training: true) }
            gradcheck([x]) { F.batchNorm($0[0], nil, nil, training: true) }
            let rm = torch.randn(c, dtype: .float64), rv = torch.rand(c, dtype: .float64) + 0.5
            gradcheck([x, w, b]) { F.batchNorm($0[0], rm, rv, weight: $0[1], bias: $0[2], training: false) }
            // Second order: the backward with createGraph is itself differentiable.
            gradcheck([x, w]) { xs in
                torch.enableGrad {
                    let y = F.batchNorm(xs[0], nil, nil, weight: xs[1], training: true)
                    let gs = torch.autograd.grad([(y * y * y).sum()], [xs[0], xs[1]], createGraph: true)
                    return gs[0]! + gs[1]!.sum()
                }
            }
        }
    }

    func testBatchNormModuleState() {
        let bn = nn.BatchNorm1d(3)
        XCTAssertEqual(bn.description, "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)")
        XCTAssertEqual(bn.stateDict().keys, ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"])
        XCTAssertEqual(bn.weight!.toArray(as: Float.self), [1, 1, 1])
        XCTAssertEqual(bn.bias!.toArray(as: Float.self), [0, 0, 0])
        XCTAssertEqual(bn.numBatchesTracked!.dtype, .int64)
        XCTAssertEqual(bn.numBatchesTracked!.shape, [])
        XCTAssertEqual(bn.parameters().count, 2)
        XCTAssertEqual(nn.BatchNorm1d(3, trackRunningStats: false).stateDict().keys, ["weight", "bias"])
        XCTAssertEqual(nn.BatchNorm1d(3, affine: false).stateDict().keys, ["running_mean", "running_var", "num_batches_tracked"])
        XCTAssertEqual(nn.BatchNorm1d(3, bias: false).stateDict().keys, ["weight", "running_mean", "running_var", "num_batches_tracked"])

        // Training updates the statistics, eval leaves them alone and uses them.
        let x = torch.randn(8, 3) * 3 + 2
        _ = bn(x)
        let rm = bn.runningMean!.clone(), rv = bn.runningVar!.clone()
        assertClose(rm, (x.mean(dim: 0) * 0.1), atol: 1e-5)
        assertClose(rv, (x.var(dim: 0) * 0.1 + 0.9), atol: 1e-5)
        bn.eval()
        let y = bn(x)
        assertClose(bn.runningMean!, rm, atol: 0, rtol: 0)
        XCTAssertEqual(bn.numBatchesTracked!.item(), 1)
        assertClose(y, (x - rm) / (rv + 1e-5).sqrt(), atol: 1e-5)
        // One sample is fine in eval mode.
        XCTAssertEqual(bn(x.narrow(0, 0, 1)).shape, [1, 3])

        // dtype conversion keeps the buffers the module refers to.
        let d = nn.BatchNorm2d(2).double()
        XCTAssertEqual(d.runningMean!.dtype, .float64)
        XCTAssertTrue(d.getBuffer("running_mean") === d.runningMean!)
        XCTAssertEqual(d.numBatchesTracked!.dtype, .int64)
        _ = d(torch.randn(2, 2, 3, 3, dtype: .float64))
        XCTAssertEqual(d.numBatchesTracked!.item(), 1)

        // loadStateDict writes into the same tensors.
        let other = nn.BatchNorm1d(3)
        try? other.loadStateDict(bn.stateDict())
        assertClose(other.runningMean!, rm, atol: 0, rtol: 0)
        XCTAssertEqual(other.numBatchesTracked!.item(), 1)

        bn.resetRunningStats()
        XCTAssertEqual(bn.runningMean!.toArray(as: Float.self), [0, 0, 0])
        XCTAssertEqual(bn.runningVar!.toArray(as: Float.self), [1, 1, 1])
        XCTAssertEqual(bn.numBatchesTracked!.item(), 0)
    }

    func testBatchNormWithoutRunningStatsUsesBatchStatsInEval() {
        let bn = nn.BatchNorm1d(2, trackRunningStats: false).eval()
        let x = torch.tensor([[1.0, 2], [3, 6]]).float()
        assertClose(bn(x), [-1, -1, 1, 1], atol: 1e-4)
    }

    func testBatchNormHalfAndChannelsOfManyElements() {
        // A big (N, C, L) input takes the per-channel path in parallel chunks.
        let x = torch.randn(16, 3, 4096) * 2 + 5
        let y = nn.BatchNorm1d(3)(x)
        assertClose(y.mean(dim: [0, 2]), [0, 0, 0], atol: 1e-4)
        assertClose(y.var(dim: [0, 2], correction: 0), [1, 1, 1], atol: 1e-3)
        let h = F.batchNorm(x.half(), nil, nil, training: true)
        XCTAssertEqual(h.dtype, .float16)
        assertClose(h.float(), y, atol: 1e-2, rtol: 1e-2)
    }

    /// The float32 channel sums walk memory in order in blocks of 32 channels (forward statistics in blocks that fit
    /// half the L2): 70 channels make three blocks, 15 values a row leave a scalar tail, and at two threads each
    /// chunk starts mid-tensor. Against the same normalisation computed in float64.
    func testBatchNormFloat32SumsOverChannelBlocks() {
        let threads = torch.getNumThreads()
        defer { torch.setNumThreads(threads) }
        torch.manualSeed(4)
        let x = torch.randn(3, 70, 5, 3) * 3 + 2, g = torch.randn(3, 70, 5, 3)
        let xd = x.double().requiresGrad_()
        let yd = F.batchNorm(xd, nil, nil, training: true)
        yd.backward(g.double())
        for t in [1, 2] {
            torch.setNumThreads(t)
            let xs = x.detach().requiresGrad_(), bn = nn.BatchNorm2d(70)
            let y = bn(xs)
            y.backward(g)
            assertClose(y.double(), yd.detach(), atol: 1e-5, rtol: 1e-5)
            assertClose(xs.grad!.double(), xd.grad!, atol: 1e-5, rtol: 1e-4)
            assertClose(bn.bias!.grad!, g.sum(dim: [0, 2, 3]), atol: 1e-4, rtol: 1e-5)
            assertClose(bn.runningMean!, x.mean(dim: [0, 2, 3]) * 0.1, atol: 1e-5, rtol: 1e-5)
        }
    }

    func testMLPHotPathShapes() {
        // The tutorial MLP's shapes: batch 64 × 300 and × 100 features, float32.
        for c in [300, 100] {
            let bn = nn.BatchNorm1d(c)
            let x = (torch.randn(64, c) * 2 + 1).requiresGrad_()
            let y = bn(x)
            let ref = (x.detach() - x.detach().mean(dim: 0)) / (x.detach().var(dim: 0, correction: 0) + 1e-5).sqrt()
            assertClose(y, ref, atol: 1e-5, rtol: 1e-4)
            let g = torch.randn(64, c)
            y.backward(g)
            // d/dx of normalisation: (g − mean(g) − x̂ mean(g x̂)) / σ.
            let sigma = (x.detach().var(dim: 0, correction: 0) + 1e-5).sqrt()
            let xhat = ref
            let gx = (g - g.mean(dim: 0) - xhat * (g * xhat).mean(dim: 0)) / sigma
            assertClose(x.grad!, gx, atol: 1e-5, rtol: 1e-4)
            assertClose(bn.bias!.grad!, g.sum(dim: 0), atol: 1e-4, rtol: 1e-5)
            assertClose(bn.weight!.grad!, (g * xhat).sum(dim: 0), atol: 1e-4, rtol: 1e-4)
        }
    }

    func testBatchNormMessages() {
        XCTAssertEqual(nn.BatchNorm1d(3).inputDimMessage(4), "expected 2D or 3D input (got 4D input)")
        XCTAssertNil(nn.BatchNorm1d(3).inputDimMessage(2))
        XCTAssertNil(nn.BatchNorm1d(3).inputDimMessage(3))
        XCTAssertEqual(nn.BatchNorm2d(3).inputDimMessage(3), "expected 4D input (got 3D input)")
        XCTAssertEqual(nn.BatchNorm3d(3).inputDimMessage(4), "expected 5D input (got 4D input)")
        XCTAssertEqual(batchNormBatchSizeMessage([1, 3]),
                       "Expected more than 1 value per channel when training, got input size torch.Size([1, 3])")
        XCTAssertNil(batchNormBatchSizeMessage([2, 3]))
        XCTAssertNil(batchNormBatchSizeMessage([1, 3, 2]))
        XCTAssertEqual(batchNormBatchSizeMessage([1, 3, 1, 1]),
                       "Expected more than 1 value per channel when training, got input size torch.Size([1, 3, 1, 1])")
        XCTAssertEqual(batchNormFeatureMismatchMessage("running_mean", expected: 5, actual: 3),
                       "running_mean should contain 5 elements not 3")
        XCTAssertEqual(layerNormShapeMessage([2, 4], [3]),
                       "Given normalized_shape=[3], expected input with shape [*, 3], but got input of size[2, 4]")
        XCTAssertNil(layerNormShapeMessage([2, 3, 4], [3, 4]))
    }

    // MARK: LayerNorm / GroupNorm

    func testLayerNormMatchesPyTorch() throws {
        let all = try cases("layernorm")
        XCTAssertEqual(all.count, 5)
        for c in all {
            let shape = c["normalized_shape"] as! [Int], t = tol(c)
            let m = nn.LayerNorm(shape, eps: c["eps"] as! Double, elementwiseAffine: c["affine"] as! Bool,
                                 bias: c["bias"] as! Bool, dtype: dtype(c))
            XCTAssertEqual(m.description, c["repr"] as! String)
            torch.noGrad {
                if let w = c["weight"] { m.weight!.copy_(fixtureTensor(w)) }
                if let b = c["bias_value"] { m.bias!.copy_(fixtureTensor(b)) }
            }
            for layout in ["contiguous", "transposed", "sliced"] {
                m.zeroGrad()
                let label = "\(shape) \(c["dtype"]!) \(layout)"
                let x = fixtureTensor(c["input"]!, layout: layout).requiresGrad_()
                let y = m(x)
                XCTAssertEqual(y.gradFn?.name, c["grad_fn"] as? String)
                assertClose(y, fixtureTensor(c["output"]!), atol: t, rtol: t, label)
                y.backward(fixtureTensor(c["grad_output"]!, layout: layout))
                assertClose(x.grad!, fixtureTensor(c["grad_input"]!), atol: t, rtol: t, "\(label) grad_input")
                if let gw = c["grad_weight"] { assertClose(m.weight!.grad!, fixtureTensor(gw), atol: t, rtol: t, "\(label) grad_weight") }
                if let gb = c["grad_bias"] { assertClose(m.bias!.grad!, fixtureTensor(gb), atol: t, rtol: t, "\(label) grad_bias") }
            }
        }
    }

    func testLayerNormGradcheck() {
        let x = torch.randn(3, 2, 4, dtype: .float64) * 2
        let w1 = torch.rand(4, dtype: .float64) + 0.5, b1 = torch.randn(4, dtype: .float64)
        gradcheck([x, w1, b1]) { F.layerNorm($0[0], [4], weight: $0[1], bias: $0[2]) }
        let w2 = torch.rand(2, 4, dtype: .float64) + 0.5
        gradcheck([x, w2]) { F.layerNorm($0[0], [2, 4], weight: $0[1]) }
        gradcheck([x]) { F.layerNorm($0[0], [4], eps: 1e-3) }
        gradcheck([x, w1]) { xs in
            torch.enableGrad {
                let y = F.layerNorm(xs[0], [4], weight: xs[1])
                let gs = torch.autograd.grad([(y * y * y).sum()], [xs[0], xs[1]], createGraph: true)
                return gs[0]! + gs[1]!.sum()
            }
        }
    }

    func testLayerNormConstructors() {
        XCTAssertEqual(nn.LayerNorm(10).description, "LayerNorm((10,), eps=1e-05, elementwise_affine=True, bias=True)")
        XCTAssertEqual(nn.LayerNorm(normalizedShape: [3, 4]).weight!.shape, [3, 4])
        XCTAssertEqual(nn.LayerNorm([3, 4], elementwiseAffine: false).parameters().count, 0)
        XCTAssertEqual(nn.LayerNorm(5, bias: false).stateDict().keys, ["weight"])
    }

    func testGroupNormMatchesPyTorch() throws {
        let all = try cases("groupnorm")
        XCTAssertEqual(all.count, 3)
        for c in all {
            let m = nn.GroupNorm(c["num_groups"] as! Int, c["num_channels"] as! Int, affine: c["affine"] as! Bool)
            XCTAssertEqual(m.description, c["repr"] as! String)
            torch.noGrad {
                if let w = c["weight"] { m.weight!.copy_(fixtureTensor(w)) }
                if let b = c["bias_value"] { m.bias!.copy_(fixtureTensor(b)) }
            }
            let x = fixtureTensor(c["input"]!).requiresGrad_()
            let y = m(x)
            assertClose(y, fixtureTensor(c["output"]!), atol: 2e-5, rtol: 2e-5)
            y.backward(fixtureTensor(c["grad_output"]!))
            assertClose(x.grad!, fixtureTensor(c["grad_input"]!), atol: 2e-5, rtol: 2e-5)
            if let gw = c["grad_weight"] { assertClose(m.weight!.grad!, fixtureTensor(gw), atol: 2e-5, rtol: 2e-5) }
            if let gb = c["grad_bias"] { assertClose(m.bias!.grad!, fixtureTensor(gb), atol: 2e-5, rtol: 2e-5) }
        }
        let x = torch.randn(2, 4, 3, dtype: .float64)
        gradcheck([x, torch.rand(4, dtype: .float64) + 0.5, torch.randn(4, dtype: .float64)]) {
            F.groupNorm($0[0], 2, weight: $0[1], bias: $0[2])
        }
    }
}
