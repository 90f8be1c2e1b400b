import Torch

/// The fused row-wise kernels and the ops built on the sort family, each program run on the GPU and on the CPU
/// by `checkOnBoth` (values and gradients, the four floating dtypes where the op takes them, odd shapes,
/// strided inputs): softmax/logSoftmax along every dim, cross-entropy on class indices (weights, ignoreIndex,
/// reductions, spatial targets), LayerNorm, BatchNorm training and eval with running statistics, median,
/// nanmedian, mode, unique and Embedding's maxNorm. CUDAEmulatorFusedTests runs the same programs without a GPU.
func fusedKernelChecks(_ checkOnBoth: (_ name: String, _ tol: Double, _ program: (Device) -> [Tensor]) -> Void) {
    func leaf(_ shape: [Int], _ seed: UInt64, _ dt: DType, _ device: Device) -> Tensor {
        torch.manualSeed(seed)
        return torch.randn(shape).to(dt).to(device).requiresGrad_()
    }
    func weighted(_ y: Tensor, _ seed: UInt64) -> Tensor {
        torch.manualSeed(seed)
        return (y * torch.rand(y.shape).to(y.dtype).to(y.device)).sum()
    }
    func total(_ ys: [Tensor], _ seed: UInt64) -> Tensor {
        var t = weighted(ys[0], seed)
        for (k, y) in ys.enumerated().dropFirst() { t = t + weighted(y, seed + UInt64(k)) }
        return t
    }
    for (dt, tol) in [(DType.float32, 1e-4), (.float64, 1e-10), (.float16, 5e-3), (.bfloat16, 4e-2)] {
        checkOnBoth("fused softmax/logSoftmax along dims 0/1/2, strided, 1000-wide rows, \(dt.name)", tol) { dev in
            let x = leaf([5, 37, 3], 201, dt, dev), wide = leaf([3, 1000], 202, dt, dev)
            let ys = [x.softmax(dim: 1), x.logSoftmax(dim: 0), x.softmax(dim: -1), x.transpose(0, 2).logSoftmax(dim: 1),
                      wide.softmax(dim: 1), wide.logSoftmax(dim: 1)]
            total(ys, 203).backward()
            return ys + [x.grad!, wide.grad!]
        }
        checkOnBoth("fused crossEntropy: weights, ignoreIndex, mean/sum/none, [N, C, H, W], \(dt.name)", tol) { dev in
            let x = leaf([67, 13], 211, dt, dev), s = leaf([3, 5, 4, 6], 212, dt, dev)
            torch.manualSeed(213)
            let t = torch.randint(0, 13, [67]); t[5] = torch.tensor(Int64(-100))
            let target = t.to(dev), w = (torch.rand(13) + 0.5).to(dt).to(dev), st = torch.randint(0, 5, [3, 4, 6]).to(dev)
            let ys = [F.crossEntropy(x, target), F.crossEntropy(x, target, weight: w, reduction: .sum),
                      F.crossEntropy(x, target.clamp(min: 0), weight: w, ignoreIndex: 3, reduction: .none), F.crossEntropy(s, st),
                      F.crossEntropy(s, st, reduction: .none)]
            total(ys, 214).backward()
            return ys + [x.grad!, s.grad!]
        }
        checkOnBoth("fused LayerNorm over 1 and 2 dims, affine, strided, \(dt.name)", tol * 5) { dev in
            let x = leaf([4, 7, 45], 221, dt, dev), w = leaf([7, 45], 222, dt, dev), b = leaf([7, 45], 223, dt, dev)
            let ys = [F.layerNorm(x, [7, 45], weight: w, bias: b), F.layerNorm(x.transpose(0, 1), [45])]
            total(ys, 224).backward()
            return ys + [x.grad!, w.grad!, b.grad!]
        }
    }
    for (dt, tol) in [(DType.float32, 1e-4), (.float64, 1e-10)] {
        checkOnBoth("fused BatchNorm2d/1d training and eval, running stats, gradients, \(dt.name)", tol) { dev in
            torch.manualSeed(231)
            let bn2 = nn.BatchNorm2d(6), bn1 = nn.BatchNorm1d(5)
            _ = bn2.to(dev, dtype: dt); _ = bn1.to(dev, dtype: dt)
            let x = leaf([3, 6, 7, 9], 232, dt, dev), z = leaf([13, 5], 233, dt, dev)
            let ys = [bn2(x), bn2(x.transpose(2, 3)), bn1(z)]
            total(ys, 234).backward()
            bn2.eval()
            let e = bn2(x)
            return ys + [e, x.grad!, z.grad!, bn2.weight!.grad!, bn2.bias!.grad!, bn2.runningMean!, bn2.runningVar!,
                         bn1.runningMean!, bn1.runningVar!]
        }
    }
    checkOnBoth("median, nanmedian, mode (dims, NaNs, ties), unique with inverse/counts/dim, Embedding(maxNorm:)", 1e-5) { dev in
        torch.manualSeed(241)
        let base = torch.randint(-4, 5, [6, 13]).float()
        base[torch.rand([6, 13]) .< 0.1] = torch.tensor(Float.nan)
        let x = base.to(dev)
        let (m, mi) = x.median(dim: 1), (n, ni) = x.nanmedian(dim: 0), (o, oi) = x.mode(dim: 1)
        let ints = torch.randint(0, 6, [4, 7]).to(dev), rows = torch.tensor([[1, 2], [0, 5], [1, 2], [0, 4]]).to(dev)
        let u = ints.unique(returnInverse: true, returnCounts: true), r = torch.unique(rows, returnInverse: true, returnCounts: true, dim: 0)
        let emb = nn.Embedding(10, 4, maxNorm: 1.5)
        _ = emb.to(dev)
        let e = emb(torch.tensor([[1, 2, 4], [4, 3, 9]]).to(dev))
        return [m, mi, n, ni, o, oi, ints.median(), u.output, u.inverse!, u.counts!, r.output, r.inverse!, r.counts!, e,
                emb.weight.detach().clone()]
    }
}
