import XCTest
@testable import Torch

/// `torch.autocast` on the CPU and `torch.amp.GradScaler` against PyTorch (Tests/Fixtures/amp.json, written
/// by scripts/fixtures/amp.py): per-op output dtypes, an MLP and a conv + BatchNorm net stepped under
/// bfloat16 and float16 autocast, and the scaler's scale and skipped steps around planted infs.
final class AutocastTests: XCTestCase {
    private func cases(_ kind: String) throws -> [[String: Any]] {
        try loadFixtureCases("amp").filter { $0["kind"] as? String == kind }
    }

    private func dtype(_ name: String) -> DType { DType.allCases.first { $0.name == name }! }

    private func rand(_ shape: [Int], seed: UInt64) -> Tensor {
        torch.manualSeed(seed)
        return torch.randn(shape)
    }

    /// Each op of the fixture, given a function that turns a float32 input into the case's input dtype.
    private func ops() -> [String: ((Tensor) -> Tensor) -> Tensor] {
        let a = rand([3, 4], seed: 1), b = rand([4, 5], seed: 2)
        let x3 = rand([2, 3, 4], seed: 3), y3 = rand([2, 4, 2], seed: 4)
        let img = rand([2, 3, 6, 6], seed: 5), w = rand([4, 3, 3, 3], seed: 6)
        let seq = rand([2, 3, 8], seed: 7), w1 = rand([4, 3, 3], seed: 8)
        let logits = rand([4, 5], seed: 9), target = torch.tensor([0, 3, 1, 4])
        let probs = rand([4, 5], seed: 10).sigmoid()
        return [
            "mm": { t in t(a).mm(t(b)) },
            "bmm": { t in t(x3).bmm(t(y3)) },
            "matmul": { t in t(x3).matmul(t(b)) },
            "addmm": { t in torch.addmm(t(self.rand([5], seed: 11)), t(a), t(b)) },
            "linear": { t in F.linear(t(a), t(self.rand([6, 4], seed: 12)), t(self.rand([6], seed: 13))) },
            "conv2d": { t in F.conv2d(t(img), t(w), t(self.rand([4], seed: 14)), padding: 1) },
            "conv1d": { t in F.conv1d(t(seq), t(w1)) },
            "conv_transpose2d": { t in F.convTranspose2d(t(img), t(self.rand([3, 2, 3, 3], seed: 15))) },
            "prelu": { t in F.prelu(t(a), t(torch.tensor([0.25]))) },
            "softmax": { t in F.softmax(t(logits), dim: 1) },
            "log_softmax": { t in F.logSoftmax(t(logits), dim: 1) },
            "exp": { t in t(a).exp() },
            "sum": { t in t(a).sum() },
            "prod": { t in t(a).prod() },
            "relu": { t in F.relu(t(a)) },
            "add": { t in t(a) + t(a) },
            "mse_loss": { t in F.mseLoss(t(a), t(a) * 0.5) },
            "l1_loss": { t in F.l1Loss(t(a), t(a) * 0.5) },
            "cross_entropy": { t in F.crossEntropy(t(logits), target) },
            "nll_loss": { t in F.nllLoss(t(logits), target) },
            "binary_cross_entropy": { t in F.binaryCrossEntropy(t(probs), t(probs.round())) },
            "binary_cross_entropy_with_logits": { t in F.binaryCrossEntropyWithLogits(t(logits), t(probs.round())) },
            "layer_norm": { t in F.layerNorm(t(a), [4]) },
            "group_norm": { t in F.groupNorm(t(img), 1) },
        ]
    }

    func testOutputDtypesMatchPyTorchsCPULists() throws {
        let table = ops()
        let all = try cases("dtype")
        XCTAssertEqual(all.count, 2 * 2 * table.count)
        for c in all {
            let op = c["op"] as! String, low = dtype(c["autocast"] as! String), source = dtype(c["input"] as! String)
            let body = try XCTUnwrap(table[op], op)
            let y = torch.autocast(deviceType: "cpu", dtype: low) { body { $0.to(source) } }
            XCTAssertEqual(y.dtype.name, c["output"] as! String, "\(op) on \(source) inputs under \(low) autocast")
        }
    }

    /// Copies the fixture's parameter values into `params`.
    private func load(_ params: [Tensor], _ encoded: [Any]) {
        XCTAssertEqual(params.count, encoded.count)
        torch.noGrad { for (p, e) in zip(params, encoded) { p.copy_(fixtureTensor(e)) } }
    }

    /// Compares a low-precision or float32 result with PyTorch's: one rounding of the lower type (2⁻⁸ for
    /// bfloat16, 2⁻¹¹ for float16) can differ where the two libraries sum in another order.
    private func assertNear(_ ours: Tensor, _ expected: Any, _ low: DType, _ what: String, scale: Double = 4) {
        let e = fixtureTensor(expected)
        XCTAssertEqual(ours.shape, e.shape, what)
        let eps = low == .bfloat16 ? 1.0 / 256 : 1.0 / 2048
        let magnitude = max(e.abs().max().item(), 1e-3)
        let diff = (ours.detach().to(.float64) - e.to(.float64)).abs().max().item()
        XCTAssertLessThanOrEqual(diff, scale * eps * magnitude, "\(what): max |ours − PyTorch| \(diff)")
    }

    func testMLPStepUnderAutocastMatchesPyTorch() throws {
        for c in try cases("mlp") {
            let low = dtype(c["autocast"] as! String)
            let net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
            load(net.parameters(), c["params"] as! [Any])
            let x = fixtureTensor(c["input"]!), y = fixtureTensor(c["target"]!)
            let (logits, loss) = torch.autocast(deviceType: "cpu", dtype: low) {
                let logits = net(x)
                return (logits, F.crossEntropy(logits, y))
            }
            XCTAssertEqual(logits.dtype, low)
            XCTAssertEqual(loss.dtype, .float32)
            loss.backward()
            assertNear(logits, c["logits"]!, low, "\(low) logits")
            assertNear(loss, c["loss"]!, low, "\(low) loss")
            for (k, (p, g)) in zip(net.parameters(), c["grads"] as! [Any]).enumerated() {
                XCTAssertEqual(p.grad?.dtype, .float32, "gradients of float32 parameters are float32")
                assertNear(p.grad!, g, low, "\(low) grad #\(k)", scale: 8)
            }
        }
    }

    func testConvBatchNormStepUnderAutocastMatchesPyTorch() throws {
        for c in try cases("cnn") {
            let low = dtype(c["autocast"] as! String)
            let conv = nn.Conv2d(2, 4, 3, padding: 1), bn = nn.BatchNorm2d(4), fc = nn.Linear(36, 3)
            load(conv.parameters() + bn.parameters() + fc.parameters(), c["params"] as! [Any])
            let x = fixtureTensor(c["input"]!), y = fixtureTensor(c["target"]!)
            let (convOut, bnOut, logits, loss) = torch.autocast(deviceType: "cpu", dtype: low) {
                let a = conv(x), b = bn(a)
                let logits = fc(F.maxPool2d(F.relu(b), 2).flatten(1))
                return (a, b, logits, F.crossEntropy(logits, y))
            }
            XCTAssertEqual(convOut.dtype.name, c["conv_dtype"] as! String)
            XCTAssertEqual(bnOut.dtype.name, c["bn_dtype"] as! String)
            XCTAssertEqual(logits.dtype, low)
            loss.backward()
            assertNear(logits, c["logits"]!, low, "\(low) logits", scale: 8)
            assertNear(loss, c["loss"]!, low, "\(low) loss", scale: 8)
            assertNear(bn.runningMean!, c["running_mean"]!, low, "\(low) running mean", scale: 8)
            assertNear(bn.runningVar!, c["running_var"]!, low, "\(low) running var", scale: 8)
            let params = conv.parameters() + bn.parameters() + fc.parameters()
            for (k, (p, g)) in zip(params, c["grads"] as! [Any]).enumerated() {
                XCTAssertEqual(p.grad?.dtype, .float32)
                assertNear(p.grad!, g, low, "\(low) grad #\(k)", scale: 16)
            }
        }
    }

    func testRegionsNestAndRestore() {
        XCTAssertFalse(torch.isAutocastEnabled("cpu"))
        XCTAssertEqual(torch.getAutocastDtype("cpu"), .bfloat16)
        XCTAssertEqual(torch.getAutocastDtype("cuda"), .float16)
        let a = rand([2, 3], seed: 1), b = rand([3, 2], seed: 2)
        torch.autocast(deviceType: "cpu", dtype: .float16) {
            XCTAssertTrue(torch.isAutocastEnabled("cpu"))
            XCTAssertFalse(torch.isAutocastEnabled("cuda"))
            XCTAssertEqual(torch.getAutocastDtype("cpu"), .float16)
            XCTAssertEqual(a.mm(b).dtype, .float16)
            torch.autocast(deviceType: "cpu", enabled: false) {
                XCTAssertFalse(torch.isAutocastEnabled("cpu"))
                XCTAssertEqual(a.mm(b).dtype, .float32)
            }
            torch.autocast(deviceType: "cpu", dtype: .bfloat16) { XCTAssertEqual(a.mm(b).dtype, .bfloat16) }
            XCTAssertEqual(a.mm(b).dtype, .float16, "the outer region's dtype is back")
        }
        XCTAssertFalse(torch.isAutocastEnabled("cpu"))
        XCTAssertEqual(a.mm(b).dtype, .float32)
        // float64 is never cast, and integer ops are left alone.
        torch.autocast(deviceType: "cpu") {
            XCTAssertEqual(a.to(.float64).mm(b.to(.float64)).dtype, .float64)
            XCTAssertEqual(torch.tensor([1, 2]).sum().dtype, .int64)
        }
        // A CUDA region does not touch CPU tensors.
        torch.amp.autocast(deviceType: "cuda", dtype: .bfloat16) { XCTAssertEqual(a.mm(b).dtype, .float32) }
    }

    func testAnUnsupportedDtypeDisablesTheRegion() {
        let a = rand([2, 3], seed: 1), b = rand([3, 2], seed: 2)
        torch.autocast(deviceType: "cpu", dtype: .float64) {
            XCTAssertFalse(torch.isAutocastEnabled("cpu"))
            XCTAssertEqual(a.mm(b).dtype, .float32)
        }
    }

    func testAParameterIsCastOncePerRegionAndGradientsReachIt() {
        let lin = nn.Linear(4, 4)
        let x = rand([2, 4], seed: 3)
        var casts: [Tensor] = []
        let y = torch.autocast(deviceType: "cpu") { () -> Tensor in
            let h = lin(lin(x))
            casts = [Autocast.state!.cache[ObjectIdentifier(lin.weight)]!.cast]
            XCTAssertEqual(Autocast.state!.cache.count, 2, "weight and bias, each cast once for both calls")
            return h
        }
        XCTAssertEqual(casts[0].dtype, .bfloat16)
        XCTAssertNil(Autocast.state, "the region's cache ends with it")
        y.float().sum().backward()
        XCTAssertEqual(lin.weight.grad?.dtype, .float32)
        XCTAssertEqual(lin.weight.grad?.shape, [4, 4])
        // Backward called inside a region runs as outside it (no cast of the backward ops).
        lin.zeroGrad()
        torch.autocast(deviceType: "cpu") {
            let z = lin(x).sum()
            z.backward()
            XCTAssertTrue(torch.isAutocastEnabled("cpu"))
        }
        XCTAssertEqual(lin.weight.grad?.dtype, .float32)
    }

    func testGradScalerMatchesPyTorchAroundPlantedInfs() throws {
        let c = try XCTUnwrap(try cases("scaler").first)
        let p = nn.Parameter(torch.tensor(c["initial"] as! [Double], dtype: .float32))
        let opt = optim.SGD([p], lr: c["lr"] as! Double)
        let scaler = torch.amp.GradScaler(device: "cpu", initScale: c["init_scale"] as! Double,
                                          growthFactor: c["growth_factor"] as! Double,
                                          backoffFactor: c["backoff_factor"] as! Double,
                                          growthInterval: c["growth_interval"] as! Int)
        for (i, step) in (c["steps"] as! [[String: Any]]).enumerated() {
            opt.zeroGrad()
            var loss = (p * p * Double(i + 1)).sum()
            let planted = step["planted_inf"] as! Bool
            if planted { loss = loss * Double.infinity }
            scaler.scale(loss).backward()
            XCTAssertEqual(scaler.step(opt), !planted, "step \(i)")
            scaler.update()
            XCTAssertEqual(scaler.getScale(), step["scale"] as! Double, "scale after step \(i)")
            assertClose(p.detach(), fixtureTensor(step["param"]!), atol: 1e-12, rtol: 1e-6)
        }
        let sd = scaler.stateDict(), expected = c["state_dict"] as! [String: Any]
        XCTAssertEqual(sd["scale"]?.doubleValue, expected["scale"] as? Double)
        XCTAssertEqual(sd["_growth_tracker"]?.intValue, expected["_growth_tracker"] as? Int)
        XCTAssertEqual(sd["growth_interval"]?.intValue, expected["growth_interval"] as? Int)

        let restored = torch.amp.GradScaler(device: "cpu")
        try restored.loadStateDict(sd)
        XCTAssertEqual(restored.getScale(), scaler.getScale())
        XCTAssertEqual(restored.getBackoffFactor(), 0.25)
        XCTAssertEqual(restored.stateDict()["_growth_tracker"]?.intValue, 1)
    }

    func testGradScalerUnscalesBeforeClippingAndLoadsOnlyWhatItCan() throws {
        let p = nn.Parameter(torch.tensor([3.0, 4.0]))
        let opt = optim.SGD([p], lr: 1)
        let scaler = torch.amp.GradScaler(device: "cpu", initScale: 1024)
        scaler.scale((p * p).sum() * 0.5).backward()
        XCTAssertEqual(p.grad!.toArray(as: Float.self), [3072, 4096])
        scaler.unscale_(opt)
        XCTAssertEqual(p.grad!.toArray(as: Float.self), [3, 4])
        nn.utils.clipGradNorm_([p], maxNorm: 1)
        XCTAssertTrue(scaler.step(opt), "step after unscale_ does not unscale twice")
        assertClose(p.detach(), [3 - 0.6, 4 - 0.8], atol: 1e-5)
        scaler.update()
        XCTAssertEqual(scaler.getScale(), 1024)

        let disabled = torch.amp.GradScaler(device: "cpu", enabled: false)
        XCTAssertFalse(disabled.isEnabled())
        XCTAssertEqual(disabled.getScale(), 1)
        let loss = (p * 2).sum()
        XCTAssertTrue(disabled.scale(loss) === loss)
        XCTAssertThrowsError(try disabled.loadStateDict(scaler.stateDict())) {
            XCTAssertEqual($0 as? torch.amp.GradScalerError, .disabled)
        }
        XCTAssertThrowsError(try scaler.loadStateDict(disabled.stateDict())) {
            XCTAssertEqual($0 as? torch.amp.GradScalerError, .emptyStateDict)
            XCTAssertTrue("\($0)".contains("disabled instance of GradScaler"))
        }
        XCTAssertThrowsError(try scaler.loadStateDict(.dict([(.string("scale"), .string("big"))]))) {
            guard case .invalidStateDict? = $0 as? torch.amp.GradScalerError else { return XCTFail("\($0)") }
        }
    }
}
