import XCTest
@testable import Torch

/// The fused row-wise CUDA kernels (`CUDAFused`: softmax family, cross-entropy, LayerNorm, BatchNorm, the
/// median/mode picks) and the ops added on top of the sort family (median, mode, unique, Embedding's maxNorm)
/// on the host emulator against the CPU (values and gradients, odd shapes, strided inputs, dtypes), and the
/// launch counts of an MLP and a LeNet-5 training step, pinned so that a change adding launches shows.
final class CUDAEmulatorFusedTests: CUDAEmulatorTestCase {

    /// A fixed random `dt` leaf on `device` (made on the CPU) that requires grad.
    private func leaf(_ shape: [Int], _ seed: UInt64, _ dt: DType, _ device: Device) -> Tensor {
        torch.manualSeed(seed)
        return torch.randn(shape).to(dt).to(device).requiresGrad_()
    }

    /// A scalar weighing every element of `y` differently (so each gradient element differs).
    private func weighted(_ y: Tensor, _ seed: UInt64) -> Tensor {
        torch.manualSeed(seed)
        return (y * torch.rand(y.shape).to(y.dtype).to(y.device)).sum()
    }

    /// The floating dtypes with the tolerance each is compared at (half types: one storage rounding apart).
    private let floatTypes: [(DType, Double)] = [(.float32, 2e-5), (.float64, 1e-11), (.float16, 4e-3), (.bfloat16, 3e-2)]

    func testSoftmaxFamilyAlongAnyDimAndItsGradients() {
        for (dt, tol) in floatTypes {
            assertSameOnBothDevices("softmax/logSoftmax/softmin along dims 0, 1, 2 and strided, \(dt.name)", tol: tol) { dev in
                let x = leaf([5, 37, 3], 1, dt, dev), wide = leaf([3, 700], 2, dt, dev), s = leaf([9], 3, dt, dev)
                let ys = [x.softmax(dim: 1), x.logSoftmax(dim: 0), x.softmax(dim: -1), x.transpose(0, 2).logSoftmax(dim: 1),
                          wide.softmax(dim: 1), wide.logSoftmax(dim: -1), s.softmin(dim: 0), s.logSoftmax(dim: 0)]
                var total = weighted(ys[0], 10)
                for (k, y) in ys.enumerated().dropFirst() { total = total + weighted(y, 10 + UInt64(k)) }
                total.backward()
                return ys + [x.grad!, wide.grad!, s.grad!]
            }
        }
        assertSameOnBothDevices("softmax of rows with -inf and of a 0-d tensor", tol: 1e-6) { dev in
            let x = torch.tensor([[1.0, -Double.infinity, 2.0], [-Double.infinity, -Double.infinity, 0.5]]).float().to(dev)
            return [x.softmax(dim: 1), x.logSoftmax(dim: 1), torch.tensor(2.5).to(dev).softmax(dim: 0)]
        }
    }

    func testCrossEntropyClassIndicesEveryReductionWeightAndIgnoreIndex() {
        for (dt, tol) in floatTypes {
            assertSameOnBothDevices("crossEntropy [N, C], weights, ignoreIndex, reductions, \(dt.name)", tol: tol) { dev in
                let x = leaf([37, 11], 20, dt, dev)
                torch.manualSeed(21)
                let t = torch.randint(0, 11, [37]); t[3] = torch.tensor(Int64(-100)); t[8] = torch.tensor(Int64(4))
                let target = t.to(dev), w = (torch.rand(11) + 0.5).to(dt).to(dev)
                let ys = [F.crossEntropy(x, target), F.crossEntropy(x, target, weight: w, reduction: .sum),
                          F.crossEntropy(x, target.clamp(min: 0), weight: w, ignoreIndex: 4, reduction: .none),
                          F.crossEntropy(x.t().contiguous().t(), target, weight: w),
                          F.crossEntropy(x[0], target[0]), F.crossEntropy(x, target, labelSmoothing: 0.1)]
                var total = weighted(ys[0], 22)
                for (k, y) in ys.enumerated().dropFirst() { total = total + weighted(y, 22 + UInt64(k)) }
                total.backward()
                return ys + [x.grad!]
            }
        }
        assertSameOnBothDevices("crossEntropy on [N, C, H, W] and [N, C, L] (spatial targets), uint8 targets", tol: 2e-5) { dev in
            let x = leaf([3, 5, 4, 6], 30, .float32, dev), z = leaf([2, 7, 9], 31, .float32, dev)
            torch.manualSeed(32)
            let t = torch.randint(0, 5, [3, 4, 6]).to(dev), u = torch.randint(0, 7, [2, 9]).to(dev)
            let ys = [F.crossEntropy(x, t), F.crossEntropy(x, t, reduction: .none), F.crossEntropy(z, u, ignoreIndex: 2),
                      F.crossEntropy(z, u.to(.uint8), reduction: .sum), nn.CrossEntropyLoss()(z, u)]
            (weighted(ys[0], 33) + weighted(ys[1], 34) + ys[2] + ys[3] * 0.5 + ys[4]).backward()
            return ys + [x.grad!, z.grad!]
        }
    }

    func testCrossEntropyDoubleBackwardUnderCreateGraph() {
        assertSameOnBothDevices("crossEntropy gradient of the gradient", tol: 1e-5) { dev in
            let x = leaf([6, 5], 40, .float32, dev)
            torch.manualSeed(41)
            let target = torch.randint(0, 5, [6]).to(dev), w = (torch.rand(5) + 0.5).to(dev)
            let loss = F.crossEntropy(x, target, weight: w)
            let g = torch.autograd.grad([loss], [x], createGraph: true)[0]!
            (g * g).sum().backward()
            return [loss, g, x.grad!]
        }
    }

    func testLayerNormForwardAndBackward() {
        for (dt, tol) in floatTypes {
            assertSameOnBothDevices("LayerNorm over 1 and 2 trailing dims, affine or not, strided, \(dt.name)", tol: tol * 5) { dev in
                let x = leaf([4, 7, 45], 50, dt, dev), w = leaf([7, 45], 51, dt, dev), b = leaf([7, 45], 52, dt, dev)
                let v = leaf([45], 53, dt, dev)
                let ys = [F.layerNorm(x, [7, 45], weight: w, bias: b), F.layerNorm(x, [45]), F.layerNorm(x.transpose(0, 1), [45], weight: v),
                          F.layerNorm(x, [45], eps: 1e-3)]
                var total = weighted(ys[0], 54)
                for (k, y) in ys.enumerated().dropFirst() { total = total + weighted(y, 54 + UInt64(k)) }
                total.backward()
                return ys + [x.grad!, w.grad!, b.grad!, v.grad!]
            }
        }
        assertSameOnBothDevices("nn.LayerNorm(300) on a long row", tol: 5e-5) { dev in
            torch.manualSeed(55)
            let ln = nn.LayerNorm(300)
            ln.to(dev)
            let x = leaf([3, 300], 56, .float32, dev)
            let y = ln(x)
            weighted(y, 57).backward()
            return [y, x.grad!, ln.weight!.grad!, ln.bias!.grad!]
        }
    }

    func testBatchNormTrainingEvalRunningStatsAndGradients() {
        for (dt, tol) in [(DType.float32, 5e-5), (.float64, 1e-10)] {
            assertSameOnBothDevices("BatchNorm2d/1d training then eval, running stats, \(dt.name)", tol: tol) { dev in
                torch.manualSeed(60)
                let bn2 = nn.BatchNorm2d(6), bn1 = nn.BatchNorm1d(5, affine: false), bn3 = nn.BatchNorm1d(4, momentum: nil)
                for m in [bn2, bn1, bn3] as [nn.Module] { m.to(dev, dtype: dt) }
                let x = leaf([3, 6, 7, 9], 61, dt, dev), z = leaf([13, 5], 62, dt, dev), u = leaf([2, 4, 11], 63, dt, dev)
                let ys = [bn2(x), bn2(x.transpose(2, 3)), bn1(z), bn3(u), bn3(u * 2)]
                var total = weighted(ys[0], 64)
                for (k, y) in ys.enumerated().dropFirst() { total = total + weighted(y, 64 + UInt64(k)) }
                total.backward()
                bn2.eval(); bn1.eval()
                let e = bn2(x), e1 = bn1(z)
                (weighted(e, 70) + weighted(e1, 71)).backward()
                return ys + [e, e1, x.grad!, z.grad!, u.grad!, bn2.weight!.grad!, bn2.bias!.grad!, bn2.runningMean!, bn2.runningVar!,
                             bn1.runningMean!, bn1.runningVar!, bn3.runningMean!, bn3.runningVar!]
            }
        }
    }

    func testMedianModeOnTheDevice() {
        assertSameOnBothDevices("median, nanmedian and mode along dims, with NaNs and ties, and gradients", tol: 0) { dev in
            torch.manualSeed(80)
            let base = torch.randint(-4, 5, [6, 13]).float()
            base[torch.rand([6, 13]) .< 0.1] = torch.tensor(Float.nan)
            base[5] = torch.full([13], Double.nan).float()
            let x = base.to(dev).requiresGrad_()
            let (m, mi) = x.median(dim: 1), (n, ni) = x.nanmedian(dim: 1, keepdim: true), (o, oi) = x.mode(dim: 0)
            let clean = torch.randint(-3, 3, [5, 8]).float().to(dev).requiresGrad_()
            let (c, ci) = clean.mode(), whole = clean.median(), nanWhole = x.nanmedian()
            func finite(_ t: Tensor) -> Tensor { torch.where(t.isnan(), 0.0, t) }
            (finite(m).sum() + finite(n).sum() + finite(o).sum() + c.sum() + whole * 2).backward()
            return [m, mi, n, ni, o, oi, c, ci, whole, nanWhole, x.median(), clean.grad!]
        }
        assertSameOnBothDevices("median and mode of int64, float16 and transposed inputs", tol: 0) { dev in
            torch.manualSeed(81)
            let ints = torch.randint(-5, 5, [4, 9]).to(dev), h = torch.randint(-3, 3, [7, 4]).half().to(dev)
            return [ints.median(dim: 1).values, ints.mode(dim: 1).indices, ints.t().mode(dim: 1).values, h.median(dim: 0).indices,
                    h.mode(dim: 0).values, ints.median()]
        }
    }

    func testUniqueOnTheDevice() {
        assertSameOnBothDevices("unique / uniqueConsecutive with inverse and counts, flat and along dims", tol: 0) { dev in
            torch.manualSeed(90)
            let x = torch.randint(0, 6, [4, 7]).to(dev), f = torch.tensor([2.0, Double.nan, 1.0, 2.0, Double.nan, -0.0, 0.0]).to(dev)
            let rows = torch.tensor([[1, 2], [0, 5], [1, 2], [0, 4], [1, 2]]).to(dev)
            let a = x.unique(returnInverse: true, returnCounts: true)
            let b = torch.unique(rows, returnInverse: true, returnCounts: true, dim: 0)
            let c = torch.unique(rows, returnCounts: true, dim: 1)
            let d = x.uniqueConsecutive(returnInverse: true, returnCounts: true)
            let e = rows.uniqueConsecutive(returnInverse: true, returnCounts: true, dim: 0)
            return [a.output, a.inverse!, a.counts!, f.unique(), b.output, b.inverse!, b.counts!, c.output, c.counts!,
                    d.output, d.inverse!, d.counts!, e.output, e.inverse!, e.counts!, torch.zeros([0]).to(dev).unique()]
        }
    }

    func testEmbeddingMaxNormRenormalisesReferencedRowsInPlace() {
        for p in [2.0, 1.0, .infinity, 3.0] {
            assertSameOnBothDevices("Embedding(maxNorm: 1.5, normType: \(p))", tol: 1e-5) { dev in
                torch.manualSeed(100)
                let emb = nn.Embedding(10, 4, maxNorm: 1.5, normType: p)
                emb.to(dev)
                let idx = torch.tensor([[1, 2, 4], [4, 3, 9]]).to(dev)
                let y = emb(idx)
                weighted(y, 101).backward()
                return [y, emb.weight.detach().clone(), emb.weight.grad!]
            }
        }
    }

    // MARK: launches per training step

    /// Device operations (kernels, GEMMs, copies) of one training step of `model` after a warm-up step.
    private func launchesPerStep(_ model: nn.Module, input: [Int], classes: Int, momentum: Double = 0.9) -> Int {
        torch.manualSeed(7)
        let cuda = Device.cuda(0)
        model.to(cuda)
        let opt = optim.SGD(model.parameters(), lr: 0.01, momentum: momentum)
        let x = torch.randn(input).to(cuda), y = torch.randint(0, classes, [input[0]]).to(cuda)
        let lossFunction = nn.CrossEntropyLoss()
        func step() {
            opt.zeroGrad()
            let loss = lossFunction(model(x), y)
            loss.backward()
            opt.step()
        }
        step()
        let before = CUDALaunchCounter.total
        CUDALaunchCounter.kernelSlots = [Int](repeating: 0, count: KernelID.slotCount)
        CUDALaunchCounter.byKernel = true
        step()
        CUDALaunchCounter.byKernel = false
        let families = KernelFamily.allCases, dtypes = DType.allCases
        let kernels = CUDALaunchCounter.kernelHistogram().map { entry -> String in
            let function = entry.slot % KernelID.functionsPerModule, module = entry.slot / KernelID.functionsPerModule
            return "\(families[module / dtypes.count].name)[\(function)]×\(entry.count)"
        }
        print("kernels of one step: \(kernels.joined(separator: " "))")
        return CUDALaunchCounter.total - before
    }

    /// Pinned counts (batch 8 MLP, batch 4 LeNet-5, SGD with momentum). Before the fused kernels (composed softmax,
    /// cross-entropy as log-softmax + a one-hot NLL) these steps took 50 and 88; with one SGD kernel per parameter
    /// 28 and 66. The multi-tensor SGD kernel updates all 6 (MLP) or 10 (LeNet-5) parameters in one launch, so 5
    /// and 9 launches fewer.
    func testLaunchesPerTrainingStepArePinned() {
        let mlp = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
        let lenet = nn.Sequential(nn.Conv2d(3, 6, 5), nn.ReLU(), nn.MaxPool2d(kernelSize: 2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                                  nn.MaxPool2d(kernelSize: 2), nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84),
                                  nn.ReLU(), nn.Linear(84, 10))
        let m = launchesPerStep(mlp, input: [8, 1, 28, 28], classes: 10)
        let l = launchesPerStep(lenet, input: [4, 3, 32, 32], classes: 10)
        print("launches per step: MLP \(m), LeNet-5 \(l)")
        XCTAssertEqual(m, Self.mlpLaunches, "MLP step launches (kernels + GEMMs + copies)")
        XCTAssertEqual(l, Self.lenetLaunches, "LeNet-5 step launches (kernels + GEMMs + copies)")
    }
    static let mlpLaunches = 23
    static let lenetLaunches = 57
}
