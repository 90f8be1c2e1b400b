import XCTest
@testable import Torch

/// Every loss × reduction × option against PyTorch (values, input/target gradients, node names),
/// the F twins, gradchecks (first and second order), module reprs/state dicts, tutorial 004's
/// loss computations and PyTorch's error messages.
final class LossTests: XCTestCase {
    private var allCases: [[String: Any]] = []

    override func setUpWithError() throws {
        allCases = try loadFixtureCases("losses")
    }

    private func cases(_ kind: String) -> [[String: Any]] {
        allCases.filter { $0["kind"] as? String == kind }
    }

    // MARK: - Building a call from a fixture

    private struct Call {
        let module: (([String: Tensor]) -> Tensor)
        let functional: (([String: Tensor]) -> Tensor)
    }

    private func reduction(_ o: [String: Any]) -> nn.Reduction { nn.Reduction(rawValue: o["reduction"] as! String)! }

    /// The module and F forms of a fixture case's loss with its options.
    private func call(_ loss: String, _ o: [String: Any]) -> Call {
        func d(_ k: String, _ dflt: Double) -> Double { (o[k] as? NSNumber)?.doubleValue ?? dflt }
        func i(_ k: String, _ dflt: Int) -> Int { (o[k] as? NSNumber)?.intValue ?? dflt }
        let r = reduction(o)
        switch loss {
        case "mse":
            return Call(module: { nn.MSELoss(reduction: r)($0["input"]!, $0["target"]!) },
                        functional: { F.mseLoss($0["input"]!, $0["target"]!, reduction: r) })
        case "l1":
            return Call(module: { nn.L1Loss(reduction: r)($0["input"]!, $0["target"]!) },
                        functional: { F.l1Loss($0["input"]!, $0["target"]!, reduction: r) })
        case "smooth_l1":
            let beta = d("beta", 1)
            return Call(module: { nn.SmoothL1Loss(reduction: r, beta: beta)($0["input"]!, $0["target"]!) },
                        functional: { F.smoothL1Loss($0["input"]!, $0["target"]!, reduction: r, beta: beta) })
        case "huber":
            let delta = d("delta", 1)
            return Call(module: { nn.HuberLoss(reduction: r, delta: delta)($0["input"]!, $0["target"]!) },
                        functional: { F.huberLoss($0["input"]!, $0["target"]!, reduction: r, delta: delta) })
        case "cross_entropy":
            let ignore = i("ignore_index", -100), ls = d("label_smoothing", 0)
            return Call(module: {
                nn.CrossEntropyLoss(weight: $0["weight"], ignoreIndex: ignore, reduction: r, labelSmoothing: ls)($0["input"]!, $0["target"]!)
            }, functional: {
                F.crossEntropy($0["input"]!, $0["target"]!, weight: $0["weight"], ignoreIndex: ignore, reduction: r, labelSmoothing: ls)
            })
        case "nll":
            let ignore = i("ignore_index", -100)
            return Call(module: { nn.NLLLoss(weight: $0["weight"], ignoreIndex: ignore, reduction: r)($0["input"]!, $0["target"]!) },
                        functional: { F.nllLoss($0["input"]!, $0["target"]!, weight: $0["weight"], ignoreIndex: ignore, reduction: r) })
        case "bce":
            return Call(module: { nn.BCELoss(weight: $0["weight"], reduction: r)($0["input"]!, $0["target"]!) },
                        functional: { F.binaryCrossEntropy($0["input"]!, $0["target"]!, weight: $0["weight"], reduction: r) })
        case "bce_with_logits":
            return Call(module: {
                nn.BCEWithLogitsLoss(weight: $0["weight"], reduction: r, posWeight: $0["pos_weight"])($0["input"]!, $0["target"]!)
            }, functional: {
                F.binaryCrossEntropyWithLogits($0["input"]!, $0["target"]!, weight: $0["weight"], reduction: r, posWeight: $0["pos_weight"])
            })
        case "kl_div":
            let lt = o["log_target"] as! Bool
            return Call(module: { nn.KLDivLoss(reduction: r, logTarget: lt)($0["input"]!, $0["target"]!) },
                        functional: { F.klDiv($0["input"]!, $0["target"]!, reduction: r, logTarget: lt) })
        case "cosine_embedding":
            let m = d("margin", 0)
            return Call(module: { nn.CosineEmbeddingLoss(margin: m, reduction: r)($0["input1"]!, $0["input2"]!, $0["target"]!) },
                        functional: { F.cosineEmbeddingLoss($0["input1"]!, $0["input2"]!, $0["target"]!, margin: m, reduction: r) })
        case "margin_ranking":
            let m = d("margin", 0)
            return Call(module: { nn.MarginRankingLoss(margin: m, reduction: r)($0["input1"]!, $0["input2"]!, $0["target"]!) },
                        functional: { F.marginRankingLoss($0["input1"]!, $0["input2"]!, $0["target"]!, margin: m, reduction: r) })
        default:
            fatalError("unknown loss \(loss)")
        }
    }

    /// The upstream gradient the fixture used: 1.7 for a scalar, else linspace(-1, 1.5, n).
    private func gout(like out: Tensor) -> Tensor {
        if out.dim == 0 { return torch.full([], 1.7, dtype: out.dtype) }
        return torch.linspace(-1, 1.5, steps: out.numel, dtype: .float64).to(out.dtype).reshape(out.shape)
    }

    // MARK: - Fixture parity

    func testEveryLossMatchesPyTorch() throws {
        let setups = Dictionary(uniqueKeysWithValues: cases("setup").map { ($0["name"] as! String, $0["inputs"] as! [String: Any]) })
        let all = cases("loss")
        XCTAssertGreaterThan(all.count, 350)
        var checkedNames = 0
        for c in all {
            let name = c["name"] as! String
            let dtype: DType = c["dtype"] as! String == "float64" ? .float64 : .float32
            let isDouble = dtype == .float64
            let grads = c["grads"] as? [String: Any] ?? [:]
            var inputs: [String: Tensor] = [:]
            for (k, v) in setups[c["setup"] as! String]! {
                var t = fixtureTensor(v)
                if t.dtype.isFloatingPoint { t = t.to(dtype) }
                if k == "input", let layout = c["layout"] as? String, layout == "transposed" {
                    t = t.mT.contiguous().mT
                    XCTAssertFalse(t.isContiguous)
                }
                if grads[k] != nil { t.requiresGrad_() }
                inputs[k] = t
            }
            let f = call(c["loss"] as! String, c["options"] as! [String: Any])
            let out = f.module(inputs)
            let expected = fixtureTensor(c["output"]!)
            let (atol, rtol) = isDouble ? (1e-9, 1e-9) : (2e-5, 2e-5)
            assertClose(out, expected, atol: atol, rtol: rtol, name)
            XCTAssertEqual(out.dtype, dtype, name)
            torch.noGrad { assertClose(f.functional(inputs), out, atol: 0, rtol: 0, "\(name) F twin") }
            if let fn = c["grad_fn"] as? String {
                XCTAssertEqual(out.gradFn?.name, fn, name)
                checkedNames += 1
            }
            if grads.isEmpty { continue }
            out.backward(gout(like: out))
            for (k, g) in grads {
                guard let actual = inputs[k]!.grad else { XCTFail("\(name): no gradient for \(k)"); continue }
                assertClose(actual, fixtureTensor(g), atol: atol, rtol: rtol, "\(name) d/d\(k)")
            }
        }
        XCTAssertGreaterThan(checkedNames, 340)
    }

    func testLossModulesPrintAndSaveLikePyTorch() {
        let w = torch.ones(3), w2 = torch.ones(2)
        let modules: [String: nn.Module] = [
            "mse": nn.MSELoss(), "mse_sum": nn.MSELoss(reduction: .sum), "l1": nn.L1Loss(),
            "smooth_l1": nn.SmoothL1Loss(beta: 0.5), "huber": nn.HuberLoss(delta: 2),
            "ce": nn.CrossEntropyLoss(), "ce_weight": nn.CrossEntropyLoss(weight: w, labelSmoothing: 0.1),
            "nll": nn.NLLLoss(weight: w), "bce": nn.BCELoss(), "bce_weight": nn.BCELoss(weight: w2),
            "bcel": nn.BCEWithLogitsLoss(), "bcel_pw": nn.BCEWithLogitsLoss(posWeight: w2),
            "bcel_both": nn.BCEWithLogitsLoss(weight: w2, posWeight: w2),
            "kl": nn.KLDivLoss(reduction: .batchmean, logTarget: true), "cos": nn.CosineEmbeddingLoss(margin: 0.5),
            "mr": nn.MarginRankingLoss(margin: 1),
        ]
        let fixtures = cases("module")
        XCTAssertEqual(fixtures.count, modules.count)
        for c in fixtures {
            let name = c["name"] as! String
            let m = modules[name]!
            XCTAssertEqual(m.description, c["repr"] as! String, name)
            XCTAssertEqual(m.stateDict().keys, c["state_keys"] as! [String], name)
        }
        // Buffers follow dtype conversion, and the weight keeps applying.
        let ce = nn.CrossEntropyLoss(weight: torch.tensor([1.0, 2.0, 3.0]))
        _ = ce.double()
        XCTAssertEqual(ce.weight?.dtype, .float64)
        let x = torch.randn(4, 3, dtype: .float64)
        let t = torch.tensor([0, 2, 1, 2])
        assertClose(ce(x, t), F.crossEntropy(x, t, weight: torch.tensor([1.0, 2.0, 3.0]).double()), atol: 1e-12)
        // Inside a Sequential they print like PyTorch's.
        let seq = nn.Sequential(nn.Linear(2, 2), nn.MSELoss())
        XCTAssertEqual(seq.description, "Sequential(\n  (0): Linear(in_features=2, out_features=2, bias=True)\n  (1): MSELoss()\n)")
    }

    // MARK: - Gradchecks

    func testGradcheckRegressionLosses() {
        let x = torch.randn(3, 4, dtype: .float64, generator: Generator().manualSeed(1)) * 2
        let t = torch.randn(3, 4, dtype: .float64, generator: Generator().manualSeed(2)) * 2
        for r in [nn.Reduction.mean, .sum, .none] {
            gradcheck([x, t]) { F.mseLoss($0[0], $0[1], reduction: r) }
            gradcheck([x, t]) { F.l1Loss($0[0], $0[1], reduction: r) }
            gradcheck([x, t]) { F.smoothL1Loss($0[0], $0[1], reduction: r, beta: 0.7) }
            gradcheck([x, t]) { F.huberLoss($0[0], $0[1], reduction: r, delta: 0.6) }
        }
        // Broadcast input and target.
        gradcheck([x.narrow(1, 0, 1), t.select(0, 0)]) { F.mseLoss($0[0], $0[1]) }
    }

    func testGradcheckClassLosses() {
        let g = Generator().manualSeed(3)
        let x = torch.randn(5, 4, dtype: .float64, generator: g) * 2
        let t = torch.tensor([0, 3, -100, 1, 2])
        let w = torch.tensor([0.5, 2.0, 1.0, 3.0]).double()
        let probs = F.softmax(torch.randn(5, 4, dtype: .float64, generator: g), dim: 1)
        let x4 = torch.randn(2, 3, 2, 2, dtype: .float64, generator: g)
        let t4 = torch.tensor([[[0, 1], [2, -100]], [[1, 1], [0, 2]]])
        let x3 = torch.randn(2, 3, 4, dtype: .float64, generator: g)
        let t3 = torch.tensor([[0, 2, 1, 1], [2, -100, 0, 1]])
        for r in [nn.Reduction.mean, .sum, .none] {
            gradcheck([x]) { F.crossEntropy($0[0], t, reduction: r) }
            gradcheck([x]) { F.crossEntropy($0[0], t, weight: w, reduction: r) }
            gradcheck([x]) { F.crossEntropy($0[0], t, weight: w, reduction: r, labelSmoothing: 0.2) }
            gradcheck([x, probs]) { F.crossEntropy($0[0], $0[1], weight: w, reduction: r, labelSmoothing: 0.1) }
            gradcheck([x.select(0, 0)]) { F.crossEntropy($0[0], torch.tensor(2), reduction: r) }
            gradcheck([x4]) { F.crossEntropy($0[0], t4, reduction: r) }
            gradcheck([x3]) { F.crossEntropy($0[0], t3, weight: w.narrow(0, 0, 3), reduction: r) }
            gradcheck([x]) { F.nllLoss($0[0], t, weight: w, reduction: r) }
            gradcheck([x4]) { F.nllLoss($0[0], t4, reduction: r) }
        }
    }

    func testGradcheckBinaryAndOtherLosses() {
        let g = Generator().manualSeed(4)
        let p = torch.rand(3, 4, dtype: .float64, generator: g) * 0.8 + 0.1
        let y = torch.rand(3, 4, dtype: .float64, generator: g) * 0.8 + 0.1
        let logits = torch.randn(3, 4, dtype: .float64, generator: g) * 2
        let w = torch.rand(4, dtype: .float64, generator: g) + 0.5
        let pw = torch.tensor([2.0, 0.5, 3.0, 1.0]).double()
        let logp = F.logSoftmax(torch.randn(3, 4, dtype: .float64, generator: g), dim: 1)
        let logq = F.logSoftmax(torch.randn(3, 4, dtype: .float64, generator: g), dim: 1)
        let a = torch.randn(4, 5, dtype: .float64, generator: g), b = torch.randn(4, 5, dtype: .float64, generator: g)
        let s = torch.tensor([1.0, -1.0, -1.0, 1.0]).double()
        for r in [nn.Reduction.mean, .sum, .none] {
            gradcheck([p, y]) { F.binaryCrossEntropy($0[0], $0[1], weight: w, reduction: r) }
            gradcheck([logits, y]) { F.binaryCrossEntropyWithLogits($0[0], $0[1], reduction: r) }
            gradcheck([logits, y]) { F.binaryCrossEntropyWithLogits($0[0], $0[1], weight: w, reduction: r, posWeight: pw) }
            gradcheck([logp, y]) { F.klDiv($0[0], $0[1], reduction: r) }
            gradcheck([logp, logq]) { F.klDiv($0[0], $0[1], reduction: r, logTarget: true) }
            gradcheck([a, b]) { F.cosineEmbeddingLoss($0[0], $0[1], s, margin: 0.2, reduction: r) }
            gradcheck([a.select(1, 0), b.select(1, 0), s]) { F.marginRankingLoss($0[0], $0[1], $0[2], margin: 0.3, reduction: r) }
        }
        gradcheck([logp, y]) { F.klDiv($0[0], $0[1], reduction: .batchmean) }
    }

    /// Second derivatives through the fused backward passes (create_graph).
    func testSecondOrderGradients() {
        let g = Generator().manualSeed(5)
        let x = torch.randn(4, 3, dtype: .float64, generator: g)
        let y = torch.randn(4, 3, dtype: .float64, generator: g)
        let t = torch.tensor([0, 2, -100, 1])
        let x4 = torch.randn(2, 3, 2, 2, dtype: .float64, generator: g)
        let t4 = torch.tensor([[[0, 1], [2, -100]], [[1, 1], [0, 2]]])
        func firstGrad(_ f: @escaping (Tensor) -> Tensor) -> ([Tensor]) -> Tensor {
            // enableGrad: gradcheck evaluates the numeric differences under noGrad.
            { xs in torch.enableGrad { torch.autograd.grad([f(xs[0])], [xs[0]], createGraph: true)[0]! } }
        }
        gradcheck([x]) { xs in firstGrad { F.crossEntropy($0, t, weight: torch.tensor([1.0, 2.0, 0.5]).double()) }(xs) }
        gradcheck([x4]) { xs in firstGrad { F.crossEntropy($0, t4, reduction: .sum) }(xs) }
        gradcheck([x]) { xs in firstGrad { F.mseLoss($0, y) }(xs) }
        gradcheck([x]) { xs in firstGrad { F.smoothL1Loss($0, y, beta: 0.5) }(xs) }
        gradcheck([x]) { xs in firstGrad { F.binaryCrossEntropyWithLogits($0, y.sigmoid(), posWeight: torch.tensor([2.0, 1.0, 0.5]).double()) }(xs) }
        gradcheck([x.sigmoid()]) { xs in firstGrad { F.binaryCrossEntropy($0, y.sigmoid()) }(xs) }
        // NLL: the create-graph gradient equals the fused one (−w[t]/Σw at the targets).
        let lp = F.logSoftmax(x, dim: 1).detach().requiresGrad_()
        let gx = torch.autograd.grad([F.nllLoss(lp, t)], [lp], createGraph: true)[0]!
        let gxFused = torch.autograd.grad([F.nllLoss(lp, t)], [lp])[0]!
        assertClose(gx, gxFused, atol: 0, rtol: 0)
        assertClose(gx.select(0, 0), [-1.0 / 3, 0, 0])
    }

    // MARK: - Semantics

    func testCrossEntropyFusedPathMatchesComposite() {
        let g = Generator().manualSeed(6)
        let x = torch.randn(64, 10, generator: g).requiresGrad_()
        let t = torch.randint(0, 10, [64], generator: g)
        let loss = F.crossEntropy(x, t)
        XCTAssertEqual(loss.gradFn?.name, "NllLossBackward0")
        loss.backward()
        let x2 = x.detach().requiresGrad_()
        let reference = F.nllLoss(F.logSoftmax(x2, dim: 1), t)
        reference.backward()
        assertClose(loss, reference, atol: 1e-6)
        assertClose(x.grad!, x2.grad!, atol: 1e-7)
        // Without grad the softmax is not kept but the value is the same.
        torch.noGrad { assertClose(F.crossEntropy(x, t), loss, atol: 0, rtol: 0) }
        // uint8 targets are accepted like int64.
        assertClose(F.crossEntropy(x.detach(), t.to(.uint8)), loss, atol: 0, rtol: 0)
        // All targets ignored: the weighted mean is 0/0 = nan; sum is 0.
        let ignored = torch.full([64], -100, dtype: .int64)
        XCTAssertTrue(F.crossEntropy(x.detach(), ignored).item().isNaN)
        XCTAssertEqual(F.crossEntropy(x.detach(), ignored, reduction: .sum).item(), 0)
        // retain_graph: the saved softmax serves a second backward.
        let x3 = x.detach().requiresGrad_()
        let l3 = F.crossEntropy(x3, t)
        l3.backward(retainGraph: true)
        let first = x3.grad!.clone()
        l3.backward()
        assertClose(x3.grad!, first * 2, atol: 1e-7)
    }

    func testCrossEntropyGradientIsSoftmaxMinusOneHot() {
        let x = torch.tensor([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]]).requiresGrad_()
        let t = torch.tensor([2, 0])
        F.crossEntropy(x, t, reduction: .sum).backward()
        let p = F.softmax(x.detach(), dim: 1)
        let oneHot = torch.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
        assertClose(x.grad!, p - oneHot, atol: 1e-6)
    }

    func testUnreducedSpatialShapesFollowPyTorch() {
        let x3 = torch.randn(2, 4, 5), t3 = torch.randint(0, 4, [2, 5])
        let l3 = F.crossEntropy(x3.requiresGrad_(), t3, reduction: .none)
        XCTAssertEqual(l3.shape, [2, 5])
        XCTAssertEqual(l3.gradFn?.name, "ViewBackward0")
        let x4 = torch.randn(2, 4, 5, 3), t4 = torch.randint(0, 4, [2, 5, 3])
        let l4 = F.crossEntropy(x4.requiresGrad_(), t4, reduction: .none)
        XCTAssertEqual(l4.shape, [2, 5, 3])
        XCTAssertEqual(l4.gradFn?.name, "NllLoss2DBackward0")
        let l1 = F.crossEntropy(torch.randn(4), torch.tensor([2]), reduction: .none)
        XCTAssertEqual(l1.shape, [])
        XCTAssertEqual(F.crossEntropy(torch.randn(0, 3), torch.zeros([0], dtype: .int64), reduction: .sum).item(), 0)
        XCTAssertTrue(F.crossEntropy(torch.randn(0, 3), torch.zeros([0], dtype: .int64)).item().isNaN)
    }

    func testStableForExtremeLogits() {
        let x = torch.tensor([[1000.0, -1000.0], [-1e4, 1e4]])
        XCTAssertTrue(F.crossEntropy(x, torch.tensor([0, 1])).item().isFinite)
        assertClose(F.crossEntropy(x, torch.tensor([1, 0]), reduction: .none), [2000, 2e4], rtol: 1e-6)
        let z = torch.tensor([100.0, -100.0, 0.0])
        assertClose(F.binaryCrossEntropyWithLogits(z, torch.tensor([0.0, 1.0, 1.0]), reduction: .none), [100, 100, log(2.0)], rtol: 1e-6)
        // BCE clamps the logs at -100.
        assertClose(F.binaryCrossEntropy(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.0]), reduction: .none), [100, 100])
    }

    func testHalfPrecisionInputsComputeInFloat32() {
        let x = torch.randn(3, 4).to(.float16)
        let y = torch.randn(3, 4).to(.float16)
        let l = F.mseLoss(x, y)
        XCTAssertEqual(l.dtype, .float16)
        assertClose(l.to(.float32), F.mseLoss(x.float(), y.float()), atol: 1e-3, rtol: 1e-3)
        let ce = F.crossEntropy(x, torch.tensor([0, 1, 3]))
        XCTAssertEqual(ce.dtype, .float16)
        assertClose(ce.float(), F.crossEntropy(x.float(), torch.tensor([0, 1, 3])), atol: 1e-3, rtol: 1e-3)
    }

    func testMixedDtypesPromoteLikePyTorch() {
        let x = torch.randn(3, 4), y = torch.randn(3, 4, dtype: .float64)
        XCTAssertEqual(F.mseLoss(x, y).dtype, .float64)
        XCTAssertEqual(F.l1Loss(x, y).dtype, .float64)
        XCTAssertEqual(F.binaryCrossEntropyWithLogits(x, y.sigmoid()).dtype, .float64)
        XCTAssertEqual(F.klDiv(x, y).dtype, .float64)
    }

    // MARK: - Tutorial 004

    /// Tutorial 004 (实现简单神经网络): `criterion = nn.L1Loss(); loss = criterion(out, target)` on the
    /// conv net's 1×2 output, then "the common losses" (L1, MSE, cross entropy, KL divergence) on
    /// the same numbers, from PyTorch.
    func testTutorial004Losses() {
        let c = cases("tutorial004")[0]
        let out = fixtureTensor(c["out"]!).requiresGrad_()
        let target = fixtureTensor(c["target"]!)
        XCTAssertEqual(target.shape, [1, 2])
        let criterion = nn.L1Loss()
        let loss = criterion(out, target)
        assertClose(loss, fixtureTensor(c["l1"]!), atol: 1e-7)
        XCTAssertEqual(loss.gradFn?.name, "MeanBackward0")
        loss.backward()
        assertClose(out.grad!, fixtureTensor(c["l1_grad"]!), atol: 1e-7)
        torch.noGrad {
            assertClose(nn.MSELoss()(out, target), fixtureTensor(c["mse"]!), atol: 1e-7)
            assertClose(nn.CrossEntropyLoss()(out, torch.tensor([1])), fixtureTensor(c["ce_class1"]!), atol: 1e-7)
            assertClose(nn.CrossEntropyLoss()(out, F.softmax(target, dim: 1)), fixtureTensor(c["ce_soft"]!), atol: 1e-7)
            assertClose(nn.KLDivLoss(reduction: .batchmean)(F.logSoftmax(out, dim: 1), F.softmax(target, dim: 1)),
                        fixtureTensor(c["kl"]!), atol: 1e-7)
        }
    }

    // MARK: - Messages

    /// Each PyTorch error message, built by the function the loss stops with.
    func testErrorMessagesMatchPyTorch() {
        func geometry(_ i: [Int], _ t: [Int], _ dt: DType = .int64, _ w: [Int]? = nil) -> String? {
            if case .failure(let e) = classLossGeometry(input: i, target: t, targetDType: dt, weightShape: w) { return e.message }
            return nil
        }
        let built: [String: String?] = [
            "batch": geometry([3, 4], [2]),
            "batch_0d": geometry([3, 4], []),
            "dims0": geometry([], []),
            "multi_target": geometry([2, 3], [2, 5]),
            "1d_target_size": geometry([3], [2]),
            "weight_2d": geometry([3, 4], [3], .int64, [3]),
            "weight_spatial": geometry([2, 3, 4, 5], [2, 4, 5], .int64, [2]),
            "weight_3d": geometry([2, 3, 4], [2, 4], .int64, [2]),
            "spatial_target_dim": geometry([2, 3, 4, 5], [2, 4]),
            "spatial_size": geometry([2, 3, 4, 5], [2, 5, 4]),
            "target_size_3d": geometry([2, 3, 4], [2, 5]),
            "target_dtype": geometry([3, 4], [3], .int32),
            "out_of_bounds": targetOutOfBoundsMessage(4),
            "out_of_bounds_neg": targetOutOfBoundsMessage(-1),
            "weight_dtype": weightDTypeMessage(input: .float32, weight: .float64),
            "prob_ignore": probabilityTargetIgnoreMessage,
            "prob_int": probabilityTargetDTypeMessage(.int64),
            "prob_weight": probabilityWeightMessage(nClasses: 4, weight: [3]),
            "label_smoothing": labelSmoothingMessage(1.5),
            "ce_int_input": lossDTypeMessage(op: "log_softmax_lastdim_kernel_impl", .int64),
            "bce_size": bceTargetSizeMessage(input: [3, 1], target: [3]),
            "bce_range": bceRangeMessage(target: false),
            "bce_target_range": bceRangeMessage(target: true),
            "bce_dtype": bceDTypeMessage(input: .float32, target: .float64),
            "bcel_size": bceWithLogitsTargetSizeMessage(input: [3, 1], target: [3]),
            "mse_int": lossDTypeMessage(op: PointwiseLossKind.mse.opName, .int64),
            "smooth_l1_beta": smoothL1BetaMessage,
            "huber_delta": huberDeltaMessage,
            "kl_int": klDivIntegralMessage,
            "cos_target_dim": cosineEmbeddingShapeMessage([3, 4], [3, 4], [3, 1]),
            "cos_3d": cosineEmbeddingShapeMessage([3, 4, 2], [3, 4, 2], [3]),
            "cos_0d": cosineEmbeddingShapeMessage([3, 4], [3, 4], []),
            "mr_dims": marginRankingDimMessage([], [3], [3]),
            "reduction": invalidReductionMessage(.batchmean),
            "clip_nonfinite": clipGradNonfiniteMessage(normType: 2),
            "clip_nonfinite_inf": clipGradNonfiniteMessage(normType: .infinity),
        ]
        let fixtures = cases("error")
        XCTAssertEqual(fixtures.count, built.count)
        for c in fixtures {
            let name = c["name"] as! String
            guard let message = built[name] else { XCTFail("no builder for \(name)"); continue }
            XCTAssertEqual(message, c["message"] as? String, name)
        }
        // Valid calls pass the checks with PyTorch's geometry.
        XCTAssertEqual(try classLossGeometry(input: [2, 3, 4, 5], target: [2, 4, 5], targetDType: .int64, weightShape: [3]).get(),
                       ClassLossGeometry(n: 2, c: 3, s: 20, nodeName: "NllLoss2DBackward0", nodeOutShape: [2, 4, 5], viewShape: nil))
        XCTAssertEqual(try classLossGeometry(input: [4], target: [], targetDType: .uint8, weightShape: nil).get(),
                       ClassLossGeometry(n: 1, c: 4, s: 1, nodeName: "NllLossBackward0", nodeOutShape: [], viewShape: nil))
        XCTAssertNil(cosineEmbeddingShapeMessage([3, 4], [3, 4], [3]))
    }
}
