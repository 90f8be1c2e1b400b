// cuda-check: every CUDA op family against the CPU on a real GPU (or, with --emulator, on the host emulator),
// then the training checks and the speed cases of issue 25. One `PASS`/`FAIL` line per check; exit 0 only when
// all pass. Runs where no Swift is installed: `scripts/pack-static cuda-check` packs a static build.
//
//   cuda-check [--emulator] [--skip-bench | --bench-only] [--quick] [--cifar DIR] [--fashion-mnist DIR]
//
// --cifar DIR trains tutorial 001's LeNet-5 on the CIFAR-10 files in DIR (e.g. Tests/Fixtures/cifar/py) on both
// devices; --fashion-mnist DIR trains the Fashion-MNIST CNN for 3 epochs on the GPU (RealDataChecks.swift).
import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import Torch

// Line-buffered, so a check that stops the process still leaves every line before it in a redirected log.
setvbuf(stdout, nil, _IOLBF, 0)

var useEmulator = false, runBench = true, runChecks = true, quick = false
var cifarRoot: String? = nil, fashionMNISTRoot: String? = nil
var arguments = CommandLine.arguments.dropFirst()
while let a = arguments.popFirst() {
    switch a {
    case "--cifar", "--fashion-mnist":
        guard let dir = arguments.popFirst() else {
            fputs("cuda-check: \(a) needs a folder\n", stderr)
            exit(2)
        }
        if a == "--cifar" { cifarRoot = dir } else { fashionMNISTRoot = dir }
    case "--emulator": useEmulator = true
    case "--skip-bench": runBench = false
    case "--bench-only": runChecks = false
    case "--quick": quick = true
    case "--expect-mixed-device-error":
        // Run by the parent as a child process: mixing devices must stop with PyTorch's message.
        _ = torch.ones(2).cuda() + torch.ones(2)
        exit(0)
    default:
        fputs("usage: cuda-check [--emulator] [--skip-bench | --bench-only] [--quick] [--cifar DIR] [--fashion-mnist DIR]\n", stderr)
        exit(2)
    }
}
if useEmulator { setenv("SWIFTTORCH_CUDA_EMULATOR", "1", 1) }
guard torch.cuda.isAvailable() else {
    print("FAIL cuda.isAvailable: \(torch.cuda.unavailableReason ?? "?")")
    exit(1)
}
let info = CUDAInfo.current
print("# \(info.devices.joined(separator: ", ")), driver \(info.driver)\(info.emulated ? " (emulator)" : "")")
for (name, path) in info.libraries { print("# \(name): \(path ?? "not found")") }

let cuda = Device.cuda(0)
var failures = 0, passes = 0

func report(_ name: String, _ ok: Bool, _ detail: String = "") {
    if ok { passes += 1 } else { failures += 1 }
    print("\(ok ? "PASS" : "FAIL") \(name)\(detail.isEmpty ? "" : ": " + detail)")
}

/// Largest relative difference of two tensors (NaNs must match).
func maxError(_ a: Tensor, _ b: Tensor) -> Double? {
    guard a.shape == b.shape, a.dtype == b.dtype else { return nil }
    let x = a.cpu().toArray(as: Double.self), y = b.cpu().toArray(as: Double.self)
    var worst = 0.0
    for (p, q) in zip(x, y) {
        if p.isNaN || q.isNaN { if p.isNaN != q.isNaN { return .infinity }; continue }
        if p == q { continue }
        worst = max(worst, abs(p - q) / max(1, abs(q)))
    }
    return worst
}

func check(_ name: String, tol: Double, _ gpu: () -> Tensor, _ cpu: () -> Tensor) {
    let g = gpu(), c = cpu()
    guard g.device == cuda else { return report(name, false, "result on \(g.device)") }
    guard let e = maxError(g, c) else { return report(name, false, "shape/dtype \(g.shape) \(g.dtype) vs \(c.shape) \(c.dtype)") }
    report(name, e <= tol, "max rel. error \(e) (tol \(tol))")
}

/// Tutorial 001's LeNet-5 for 3×32×32 images; with `batchNorm`, BatchNorm2d after each convolution.
func cnn(batchNorm: Bool) -> nn.Sequential {
    func block(_ cin: Int, _ cout: Int) -> [nn.Module] {
        [nn.Conv2d(cin, cout, kernelSize: 5)] + (batchNorm ? [nn.BatchNorm2d(cout)] : []) + [nn.ReLU(), nn.MaxPool2d(kernelSize: 2)]
    }
    return nn.Sequential(block(3, 6) + block(6, 16) + [nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                                                       nn.Linear(84, 10)])
}

convolutionPathChecks(values: runChecks, bench: runBench && !info.emulated)   // ConvolutionPathChecks.swift (issue 26)

if runChecks {
    // MARK: values, every family and dtype

    torch.manualSeed(0)
    let floatTypes: [(DType, Double)] = [(.float32, 1e-5), (.float64, 1e-12), (.float16, 2e-3), (.bfloat16, 1e-2)]
    let a = torch.rand(6, 1, 33) * 1.6 - 0.8, b = torch.rand(5, 33) * 1.6 - 0.8
    for (dt, tol) in floatTypes {
        let x = a.to(dt), y = (b + 1.5).to(dt), xd = x.cuda(), yd = y.cuda()
        let binaries: [(String, (Tensor, Tensor) -> Tensor)] = [
            ("add", { $0 + $1 }), ("sub", { $0 - $1 }), ("mul", { $0 * $1 }), ("div", { $0 / $1 }), ("maximum", { $0.maximum($1) }),
            ("pow", { $0.abs().pow($1) }), ("atan2", { $0.atan2($1) }), ("remainder", { $0.remainder($1) }), ("scalar", { $0 * 3 - $1 / 2 })]
        for (name, f) in binaries {
            check("binary \(name) \(dt.name) broadcast", tol: tol, { f(xd, yd) }, { f(x, y) })
        }
        let unaries: [(String, (Tensor) -> Tensor)] = [
            ("exp", { $0.exp() }), ("log", { $0.abs().log() }), ("tanh", { $0.tanh() }), ("sigmoid", { $0.sigmoid() }),
            ("sqrt", { $0.abs().sqrt() }), ("erf", { $0.erf() }), ("relu", { $0.relu() }), ("sin", { $0.sin() }), ("round", { $0.round() })]
        for (name, f) in unaries {
            check("unary \(name) \(dt.name)", tol: tol, { f(xd) }, { f(x) })
        }
        check("strided transpose \(dt.name)", tol: tol, { (xd.squeeze(1).t() * 2).contiguous() }, { (x.squeeze(1).t() * 2).contiguous() })
        check("sum dim \(dt.name)", tol: tol * 10, { xd.sum(dim: 2) }, { x.sum(dim: 2) })
        check("sum all \(dt.name)", tol: tol * 10, { xd.sum() }, { x.sum() })
        check("amax \(dt.name)", tol: 0, { xd.amax(dim: [0, 2]) }, { x.amax(dim: [0, 2]) })
        check("argmax \(dt.name)", tol: 0, { xd.argmax(dim: 2) }, { x.argmax(dim: 2) })
        check("softmax \(dt.name)", tol: tol * 10, { xd.softmax(dim: 2) }, { x.softmax(dim: 2) })
        check("compare \(dt.name)", tol: 0, { xd .> yd }, { x .> y })
    }
    let ints = torch.randint(-50, 50, [7, 9]), small = torch.randint(1, 6, [9])
    let integerCases: [(String, (Tensor, Tensor) -> Tensor)] = [
        ("add", { $0 + $1 }), ("mul", { $0 * $1 }), ("floorDivide", { $0.floorDivide($1) }), ("remainder", { $0.remainder($1) }),
        ("sum", { ($0 * $1).sum(dim: 0) }), ("cast", { $0.to(.float32) / $1.to(.float64) })]
    for (name, f) in integerCases {
        check("int64 \(name)", tol: 1e-12, { f(ints.cuda(), small.cuda()) }, { f(ints, small) })
    }
    for from in DType.allCases {
        for to in DType.allCases {
            let src = (torch.arange(-6, 6).reshape(3, 4)).to(from)
            check("cast \(from.name)->\(to.name)", tol: 0, { src.cuda().to(to) }, { src.to(to) })
        }
    }
    for dt in [DType.float32, .float64] {
        let m = torch.randn(65, 33).to(dt), n = torch.randn(33, 17).to(dt)
        let tol = dt == .float32 ? 1e-4 : 1e-10
        check("mm \(dt.name)", tol: tol, { m.cuda().mm(n.cuda()) }, { m.mm(n) })
        check("mm transposed \(dt.name)", tol: tol, { n.cuda().t().mm(m.cuda().t()) }, { n.t().mm(m.t()) })
        check("addmm \(dt.name)", tol: tol, { torch.addmm(torch.ones(17, dtype: dt).cuda(), m.cuda(), n.cuda(), beta: 0.5, alpha: 2) },
              { torch.addmm(torch.ones(17, dtype: dt), m, n, beta: 0.5, alpha: 2) })
        check("bmm \(dt.name)", tol: tol, { m.reshape(5, 13, 33).cuda().bmm(n.cuda().expand(5, 33, 17)) }, { m.reshape(5, 13, 33).bmm(n.expand(5, 33, 17)) })
    }

    // MARK: index ops, joins, scans, norms, layers and optimizers (one program per check, run on both devices)

    func checkOnBoth(_ name: String, tol: Double, scaled: Bool = false, _ program: (Device) -> [Tensor]) {
        let g = program(cuda), c = program(.cpu)
        if scaled { return checkScaled(name, tol: tol, g, c) }
        for (k, (gt, ct)) in zip(g, c).enumerated() { check(g.count == 1 ? name : "\(name) #\(k)", tol: tol, { gt }, { ct }) }
    }
    func seeded(_ shape: [Int], _ seed: UInt64, _ device: Device) -> Tensor {
        torch.manualSeed(seed)
        return torch.randn(shape).to(device)
    }
    checkOnBoth("advanced indexing read/write and gradient", tol: 1e-5) { dev in
        let x = seeded([300, 70], 20, dev).requiresGrad_()
        let idx = torch.randint(-300, 300, [1000]).to(dev)
        let y = x[idx] + x[TensorIndex.all, torch.tensor([69, 0, 3])].sum()
        y.pow(2).sum().backward()
        let w = seeded([300, 70], 21, dev)
        w.indexPut_([idx], torch.ones(1000, 70).to(dev), accumulate: true)
        w[w .> 1.5] = torch.tensor(0.0)
        return [y, x.grad!, w, w.maskedSelect(w .< -1), (w .< -2).nonzero()]
    }
    checkOnBoth("gather / scatterAdd / indexSelect / indexAdd_ / maskedFill", tol: 1e-5) { dev in
        let x = seeded([64, 500], 22, dev)
        let idx = torch.randint(0, 500, [64, 800]).to(dev)
        return [x.gather(1, idx), torch.zeros(64, 500).to(dev).scatterAdd(1, idx, x.gather(1, idx)),
                x.indexSelect(0, torch.randint(0, 64, [100]).to(dev)),
                torch.zeros(10, 500).to(dev).indexAdd_(0, torch.randint(0, 10, [64]).to(dev), x), x.maskedFill(x .> 0, 2)]
    }
    checkOnBoth("cat / stack / cumsum / cumprod / var / std / norm", tol: 1e-4) { dev in
        let x = seeded([40, 3000], 23, dev)
        return [torch.cat([x, x * 2], dim: 1), torch.stack([x, x], dim: 2), torch.einsum("ij,kj->ik", x, x),
                x.cumsum(dim: 1), (x * 0.01 + 1).cumprod(dim: 0),
                x.var(dim: 1), x.std(), x.norm(), x.norm(p: 3, dim: 0)]
    }
    checkOnBoth("sort / argsort / topk / kthvalue (rows of 37 and 5000, ties and NaN) with gradients", tol: 1e-6) { dev in
        torch.manualSeed(30)
        let x = (torch.randint(-20, 20, [4, 5000]).float() / 4)
        x[torch.rand(4, 5000) .< 0.02] = torch.tensor(Float.nan)
        let xd = x.to(dev), s = seeded([37, 300], 31, dev).requiresGrad_()
        let (top, topIdx) = s.topk(5, dim: 0)
        let (kth, kthIdx) = s.kthvalue(3)
        (top.pow(2).sum() + kth.sum()).backward()
        return [xd.sort().values, xd.sort().indices, xd.sort(dim: 0, descending: true).indices, xd.half().argsort(descending: true),
                top, topIdx, kth, kthIdx, s.grad!]
    }
    checkOnBoth("conv1d/2d/3d (stride, padding, dilation, groups, depthwise), convTranspose2d, pooling, with gradients", tol: 1e-4, scaled: true) { dev in
        let x = seeded([4, 6, 17, 15], 40, dev).requiresGrad_(), w = seeded([8, 3, 3, 3], 41, dev).requiresGrad_()
        let b = seeded([8], 42, dev).requiresGrad_(), dw = seeded([6, 1, 5, 5], 43, dev).requiresGrad_()
        let y = F.conv2d(x, w, b, stride: 2, padding: 1, dilation: 2, groups: 2)
        let z = F.conv2d(x, dw, padding: 2, groups: 6)
        let t = F.convTranspose2d(y, seeded([8, 5, 4, 4], 44, dev), stride: 2, padding: 1, outputPadding: 1)
        let x1 = seeded([3, 4, 40], 45, dev), x3 = seeded([2, 2, 6, 7, 5], 46, dev)
        let c1 = F.conv1d(x1, seeded([5, 4, 3], 47, dev), stride: 2), c3 = F.conv3d(x3, seeded([3, 2, 3, 3, 3], 48, dev), padding: 1)
        let (m, mi) = F.maxPoolWithIndices(z, dims: 2, kernelSize: 3, stride: 2, padding: 1, ceilMode: true)
        let a = F.avgPool2d(t, 2) + 0, aa = F.adaptiveAvgPool2d(y, [1, 1])
        (y.pow(2).sum() + m.sum() + a.pow(2).sum() + aa.sum()).backward()
        return [y, z, t, c1, c3, m, mi, a, aa, x.grad!, w.grad!, b.grad!, dw.grad!]
    }
    // Interpolation, padding, shuffles, fold/unfold, grid sampling, unpooling, adaptive/LP/3-D pooling, norms.
    cnnOpChecks { name, tol, program in checkOnBoth(name, tol: tol, program) }
    fusedKernelChecks { name, tol, program in checkOnBoth(name, tol: tol, program) }   // FusedKernelChecks.swift
    checkOnBoth("Embedding, LayerNorm, GroupNorm forward and backward", tol: 1e-4) { dev in
        torch.manualSeed(24)
        let emb = nn.Embedding(1000, 64, paddingIdx: 0), ln = nn.LayerNorm(64), gn = nn.GroupNorm(4, 32)
        emb.to(dev); ln.to(dev); gn.to(dev)
        let tokens = torch.randint(0, 1000, [32, 20]).to(dev)
        let h = ln(emb(tokens))
        let z = gn(h.reshape(32, 20, 32, 2).permute(0, 2, 1, 3))
        (h.pow(2).sum() + z.sum()).backward()
        return [h, z, emb.weight.grad!, ln.weight!.grad!]
    }
    for name in ["RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam"] {
        checkOnBoth("\(name), 5 steps", tol: 1e-4) { dev in
            torch.manualSeed(25)
            let model = nn.Linear(100, 10)
            model.to(dev)
            let ps = model.parameters()
            let opt: optim.Optimizer = name == "RMSprop" ? optim.RMSprop(ps, lr: 0.01, momentum: 0.9, centered: true)
                : name == "Adagrad" ? optim.Adagrad(ps, lr: 0.1) : name == "Adadelta" ? optim.Adadelta(ps)
                : name == "NAdam" ? optim.NAdam(ps) : name == "RAdam" ? optim.RAdam(ps) : optim.Adamax(ps)
            let x = seeded([64, 100], 26, dev)
            for _ in 0..<5 {
                opt.zeroGrad()
                model(x).pow(2).mean().backward()
                _ = nn.utils.clipGradNorm_(ps, maxNorm: 1)
                opt.step()
            }
            return ps.map { $0.detach() }
        }
    }
    checkOnBoth("LSTM and GRU (2 layers, bidirectional, batch_first) with gradients", tol: 1e-4) { dev in
        torch.manualSeed(28)
        let lstm = nn.LSTM(32, 64, numLayers: 2, batchFirst: true, bidirectional: true), gru = nn.GRU(128, 16, batchFirst: true)
        lstm.to(dev); gru.to(dev)
        let x = seeded([8, 25, 32], 29, dev).requiresGrad_()
        let (y, (h, c)) = lstm(x)
        let (z, hg) = gru(y)
        (z.pow(2).sum() + h.sum() + c.mean() + hg.sum()).backward()
        return [y, h, c, z, x.grad!, lstm.parameters()[0].grad!, gru.parameters()[1].grad!]
    }
    do {
        torch.manualSeed(27)
        let u = torch.rand(1 << 20, device: cuda), z = torch.randn(1 << 20, device: cuda)
        let y = F.dropout(torch.ones(1 << 20, device: cuda), p: 0.25)
        let stats = [u.mean().item(), z.mean().item(), z.std().item(), (y .!= 0).float().mean().item(), y.max().item()]
        report("device RNG: rand, randn and dropout statistics", abs(stats[0] - 0.5) < 2e-3 && abs(stats[1]) < 5e-3
               && abs(stats[2] - 1) < 5e-3 && abs(stats[3] - 0.75) < 2e-3 && abs(stats[4] - 4.0 / 3) < 1e-5, "\(stats)")
    }

    // MARK: gradients

    do {
        torch.manualSeed(1)
        let w = torch.randn(8, 5), x = torch.randn(4, 8), labels = torch.randint(0, 5, [4])
        func grads(_ device: Device) -> [Tensor] {
            let wd = w.to(device).requiresGrad_(), xd = x.to(device).requiresGrad_()
            let loss = F.crossEntropy(xd.mm(wd).tanh() * 2, labels.to(device)) + (xd.sigmoid() * xd.relu()).mean()
            loss.backward()
            return [loss.detach(), wd.grad!, xd.grad!]
        }
        let g = grads(cuda), c = grads(.cpu)
        for (i, name) in ["loss", "grad w", "grad x"].enumerated() { check("autograd \(name)", tol: 1e-5, { g[i] }, { c[i] }) }
    }

    // MARK: training: tutorial 000's MLP (784-512-256-10 with BatchNorm) and tutorial 003's two-layer net

    func trainLosses(_ device: Device, adam: Bool, steps: Int) -> [Double] {
        torch.manualSeed(2)
        let model = nn.Sequential(nn.Linear(784, 512, bias: false), nn.BatchNorm1d(512), nn.ReLU(), nn.Linear(512, 256, bias: false),
                                  nn.BatchNorm1d(256), nn.ReLU(), nn.Linear(256, 10))
        model.to(device)
        let opt: optim.Optimizer = adam ? optim.Adam(model.parameters(), lr: 1e-3) : optim.SGD(model.parameters(), lr: 0.05, momentum: 0.9)
        let x = torch.rand(64, 784).to(device), y = torch.randint(0, 10, [64]).to(device)
        return trainingLosses(model, opt, x, y, steps: steps)
    }
    for adam in [false, true] {
        let g = trainLosses(cuda, adam: adam, steps: 10), c = trainLosses(.cpu, adam: adam, steps: 10)
        let worst = zip(g, c).map { abs($0 - $1) }.max() ?? .infinity
        report("tutorial 000 MLP, 10 steps, \(adam ? "Adam" : "SGD")", worst < 1e-3, "max |loss diff| \(worst), last \(g.last!) vs \(c.last!)")
    }
    do {
        // Tutorial 003: a two-layer net on random data (64×1000 → 100 → 10), plain SGD on the sum of squares.
        func run(_ device: Device) -> Double {
            torch.manualSeed(3)
            let x = torch.randn(64, 1000).to(device), y = torch.randn(64, 10).to(device)
            let model = nn.Sequential(nn.Linear(1000, 100), nn.ReLU(), nn.Linear(100, 10)).to(device)
            let opt = optim.SGD(model.parameters(), lr: 1e-4)
            var last = 0.0
            for _ in 0..<50 {
                opt.zeroGrad()
                let loss = F.mseLoss(model(x), y, reduction: .sum)
                loss.backward()
                opt.step()
                last = loss.item()
            }
            return last
        }
        let g = run(cuda), c = run(.cpu)
        report("tutorial 003 two-layer net, 50 steps", abs(g - c) <= 1e-3 * max(1, abs(c)), "loss \(g) vs \(c)")
    }

    do {
        // An LSTM language-model step (embedding, 2-layer LSTM, linear head, Adam) trained on both devices.
        func run(_ device: Device) -> [Double] {
            torch.manualSeed(5)
            let emb = nn.Embedding(50, 16), lstm = nn.LSTM(16, 32, numLayers: 2, batchFirst: true), head = nn.Linear(32, 50)
            for m in [emb, lstm, head] as [nn.Module] { m.to(device) }
            let params = emb.parameters() + lstm.parameters() + head.parameters()
            let opt = optim.Adam(params, lr: 1e-2)
            let tokens = torch.randint(0, 50, [8, 21]).to(device)
            var losses: [Double] = []
            for _ in 0..<15 {
                opt.zeroGrad()
                let (h, _) = lstm(emb(tokens[TensorIndex.all, 0..<20]))
                let loss = F.crossEntropy(head(h).reshape(-1, 50), tokens[TensorIndex.all, 1..<21].reshape(-1))
                loss.backward()
                _ = nn.utils.clipGradNorm_(params, maxNorm: 1)
                opt.step()
                losses.append(loss.item())
            }
            return losses
        }
        let g = run(cuda), c = run(.cpu)
        let worst = zip(g, c).map { abs($0 - $1) }.max() ?? .infinity
        report("LSTM language model, 15 Adam steps", worst < 1e-3, "max |loss diff| \(worst), last \(g.last!) vs \(c.last!)")
    }

    do {
        // Tutorial 001's LeNet-5 and the Fashion-MNIST CNN (conv + BatchNorm2d + ReLU + max pooling), SGD momentum.
        func run(_ device: Device, batchNorm: Bool) -> [Double] { convolutionTrainingLosses(device, batchNorm: batchNorm) }
        for batchNorm in [false, true] {
            let g = run(cuda, batchNorm: batchNorm), c = run(.cpu, batchNorm: batchNorm)
            let worst = zip(g, c).map { abs($0 - $1) }.max() ?? .infinity
            report("\(batchNorm ? "CNN with BatchNorm2d" : "LeNet-5"), 10 SGD steps", worst < 1e-3,
                   "max |loss diff| \(worst), last \(g.last!) vs \(c.last!)")
        }
    }

    // MARK: save/load and errors

    do {
        let path = PathString.temporaryDirectory() + "cuda-check-\(getpid()).pt"
        defer { unlink(path) }
        let t = torch.arange(0, 6).float().reshape(2, 3).cuda()
        try torch.save(t, path)
        let back = try torch.load(path, mapLocation: "cuda")
        if case .tensor(let u) = back { check("save/load cuda tensor", tol: 0, { u }, { t.cpu() }) } else { report("save/load cuda tensor", false) }
    } catch { report("save/load cuda tensor", false, "\(error)") }
    do {
        let p = ChildProcess(executable: CommandLine.arguments[0], arguments: ["--expect-mixed-device-error"],
                             standardOutput: .discard, standardError: .pipe)
        try p.run()
        let text = String(decoding: p.readToEnd(), as: UTF8.self)
        report("mixed devices stop with PyTorch's message", p.wait() != .exited(0)
               && text.contains("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"))
    } catch { report("mixed devices", false, "\(error)") }
    runMixedPrecisionChecks()
    runGraphChecks()   // GraphChecks.swift
    runONNXChecks()    // ONNXChecks.swift (issue 35)
    runModelZooChecks(quick: info.emulated || quick)
    if let cifarRoot { runCIFARLeNet(root: cifarRoot) }
    if let fashionMNISTRoot { runFashionMNIST(root: fashionMNISTRoot) }
}

// MARK: speed (issue 25's cases; PyTorch's twin: scripts/bench_cuda_pytorch.py)

func timeIt(_ reps: Int, _ body: () -> Void) -> Double {
    body(); torch.cuda.synchronize()
    var best = Double.infinity
    for _ in 0..<(quick ? 3 : 7) {
        let t0 = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<reps { body() }
        torch.cuda.synchronize()
        best = min(best, Double(DispatchTime.now().uptimeNanoseconds - t0) / Double(reps) / 1000)
    }
    return best
}
if runBench && !info.emulated {
    let p = torch.rand(10).cuda(), q = torch.rand(10).cuda()
    print(String(cFormat: "BENCH a+b 10 floats: %.2f us/op", timeIt(2000) { _ = p + q }))
    // The same launch without a result to allocate, and a bare synchronisation: where a small op's time goes.
    print(String(cFormat: "BENCH a.add_(b) 10 floats: %.2f us/op", timeIt(2000) { _ = p.add_(q) }))
    print(String(cFormat: "BENCH torch.cuda.synchronize(): %.2f us", timeIt(2000) { torch.cuda.synchronize() }))
    let w = torch.rand(10).cuda().requiresGrad_(), x = torch.rand(10).cuda()
    print(String(cFormat: "BENCH (w*x).sum().backward() 10 floats: %.1f us", timeIt(500) { (w * x).sum().backward() }))
    for adam in [false, true] {
        torch.manualSeed(4)
        let model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10)).to(cuda)
        let opt: optim.Optimizer = adam ? optim.Adam(model.parameters(), lr: 1e-3) : optim.SGD(model.parameters(), lr: 0.01)
        let xb = torch.rand(64, 784).cuda(), yb = torch.randint(0, 10, [64]).cuda()
        let us = timeIt(200) { opt.zeroGrad(); F.crossEntropy(model(xb), yb).backward(); opt.step() }
        print("BENCH MLP 784-512-256-10 train step batch 64 \(adam ? "Adam" : "SGD"): " + String(cFormat: "%.0f us", us))
    }
    runGraphBenchmarks()   // GraphChecks.swift
    for n in [4096, 8192] {
        let m1 = torch.rand(n, n).cuda(), m2 = torch.rand(n, n).cuda()
        let us = timeIt(n == 4096 ? 20 : 5) { _ = m1.mm(m2) }
        print(String(cFormat: "BENCH sgemm %d: %.0f GFLOP/s", n, 2 * pow(Double(n), 3) / us / 1000))
    }
    do {
        torch.manualSeed(7)
        let model = cnn(batchNorm: false).to(cuda)
        let opt = optim.SGD(model.parameters(), lr: 0.01, momentum: 0.9)
        let xb = torch.rand(64, 3, 32, 32).cuda(), yb = torch.randint(0, 10, [64]).cuda()
        let us = timeIt(100) { opt.zeroGrad(); F.crossEntropy(model(xb), yb).backward(); opt.step() }
        print(String(cFormat: "BENCH LeNet-5 train step batch 64 SGD momentum: %.0f us", us))
        for batch in [32, 256] {
            let xc = torch.rand(batch, 64, 32, 32).cuda(), wc = torch.rand(64, 64, 3, 3).cuda()
            let t = timeIt(20) { _ = F.conv2d(xc, wc, padding: 1) }
            print(String(cFormat: "BENCH conv2d 64->64 3x3 32x32 batch %d forward: %.0f GFLOP/s", batch,
                         2 * Double(batch * 64 * 64 * 9 * 32 * 32) / t / 1000))
        }
    }
    runCNNBenchmarks()
    let big = torch.rand(64 << 20).cuda()
    let us = timeIt(20) { _ = big + big }
    print(String(cFormat: "BENCH a+a 64 Mi floats: %.0f GB/s", 2 * Double(64 << 20) * 4 / us / 1000))
}

print("\(passes) passed, \(failures) failed")
exit(failures == 0 ? 0 : 1)
