// cuda-check's convolution paths (issue 26): every convolution case through cuDNN (heuristics, benchmark,
// deterministic) and through im2col + cuBLAS (`torch.backends.cudnn.enabled = false`) against the CPU, float16
// and bfloat16 through cuDNN, LeNet-5 and the BatchNorm CNN training on both paths, and the conv2d speed case on
// each path. main.swift calls `convolutionPathChecks` once, before its own checks.
#if canImport(Glibc)
import Glibc
#endif
import Torch

/// One way to run CUDA convolutions: the `torch.backends.cudnn` switches it sets.
struct ConvolutionPath {
    let name: String
    let enabled: Bool
    let benchmark: Bool
    let deterministic: Bool

    static let im2col = ConvolutionPath(name: "im2col", enabled: false, benchmark: false, deterministic: false)
    static let cudnn = ConvolutionPath(name: "cuDNN", enabled: true, benchmark: false, deterministic: false)
    static let cudnnBenchmark = ConvolutionPath(name: "cuDNN benchmark", enabled: true, benchmark: true, deterministic: false)
    static let cudnnDeterministic = ConvolutionPath(name: "cuDNN deterministic", enabled: true, benchmark: false, deterministic: true)
    static let cudnnBenchmarkDeterministic = ConvolutionPath(name: "cuDNN benchmark+deterministic", enabled: true,
                                                             benchmark: true, deterministic: true)
    /// Whether the cuDNN paths can run: cuDNN loads and the device is a GPU (the emulator has no cuDNN).
    static var cudnnRuns: Bool { torch.backends.cudnn.isAvailable() && !CUDAInfo.current.emulated }

    /// Every path, im2col first; the cuDNN ones only when they can run.
    static var all: [ConvolutionPath] {
        [im2col] + (cudnnRuns ? [cudnn, cudnnBenchmark, cudnnDeterministic, cudnnBenchmarkDeterministic] : [])
    }

    /// Runs `body` with this path's switches, then restores PyTorch's defaults (TF32 stays as it is).
    func run<R>(_ body: () -> R) -> R {
        torch.backends.cudnn.enabled = enabled
        torch.backends.cudnn.benchmark = benchmark
        torch.backends.cudnn.deterministic = deterministic
        defer {
            torch.backends.cudnn.enabled = true
            torch.backends.cudnn.benchmark = false
            torch.backends.cudnn.deterministic = false
        }
        return body()
    }
}

/// Compares `gpu` with `cpu` tensor by tensor, each within `tol` × max(1, max |cpu|): convolution gradients sum
/// hundreds of products in another order than the CPU's kernels, so their error grows with their magnitude (a
/// grouped dilated weight gradient of the H200 run was 1.4e-4 off relative to elements of 1, within 1e-4 of its
/// largest elements). Integer tensors (pooling indices) must match exactly as `tol` says, unscaled.
func checkScaled(_ name: String, tol: Double, _ gpu: [Tensor], _ cpu: [Tensor]) {
    for (k, (g, c)) in zip(gpu, cpu).enumerated() {
        let label = gpu.count == 1 ? name : "\(name) #\(k)"
        let magnitude = c.dtype.isFloatingPoint && c.numel > 0 ? max(1, c.abs().max().item()) : 1
        check(label, tol: tol * magnitude, { g.to(c.dtype) }, { c })
    }
}

/// The convolution cases of cuda-check (stride, padding, dilation, groups, depthwise, transposed with output
/// padding, 1-D and 3-D, 1×1, a 64-channel layer), each returning its output and every gradient. Inputs are made
/// on the CPU in float32, rounded through `roundedThrough` when given (the float32 CPU reference of a float16
/// run), and converted, so every dtype and device sees the same values; the loss weighs the output with a fixed
/// random tensor (so float16 sums stay in range).
func convolutionCases(_ device: Device, _ dtype: DType, roundedThrough rounding: DType? = nil) -> [(String, [Tensor])] {
    func leaf(_ shape: [Int], _ seed: UInt64, grad: Bool = true) -> Tensor {
        torch.manualSeed(seed)
        let t = torch.randn(shape).to(rounding ?? dtype).to(dtype).to(device)
        return grad ? t.requiresGrad_() : t
    }
    func backward(_ y: Tensor, _ seed: UInt64, _ leaves: [Tensor]) -> [Tensor] {
        (y * leaf(y.shape, seed, grad: false)).sum().backward()
        return [y.detach()] + leaves.map { $0.grad! }
    }
    var cases: [(String, [Tensor])] = []
    do {
        let x = leaf([4, 6, 17, 15], 40), w = leaf([8, 3, 3, 3], 41), b = leaf([8], 42)
        cases.append(("conv2d stride 2 padding 1 dilation 2 groups 2 with bias",
                      backward(F.conv2d(x, w, b, stride: 2, padding: 1, dilation: 2, groups: 2), 60, [x, w, b])))
    }
    do {
        let x = leaf([4, 6, 17, 15], 40), w = leaf([6, 1, 5, 5], 43)
        cases.append(("depthwise conv2d padding 2", backward(F.conv2d(x, w, padding: 2, groups: 6), 61, [x, w])))
    }
    do {
        let y = leaf([4, 8, 8, 7], 44), w = leaf([8, 5, 4, 4], 45), b = leaf([5], 46)
        cases.append(("convTranspose2d stride 2 padding 1 output padding 1 with bias",
                      backward(F.convTranspose2d(y, w, b, stride: 2, padding: 1, outputPadding: 1), 62, [y, w, b])))
    }
    do {
        let y = leaf([2, 4, 11], 47), w = leaf([4, 3, 3], 48)
        cases.append(("convTranspose1d stride 3 groups 2 dilation 2",
                      backward(F.convTranspose1d(y, w, stride: 3, groups: 2, dilation: 2), 63, [y, w])))
    }
    do {
        let x = leaf([3, 4, 40], 49), w = leaf([5, 4, 3], 50), b = leaf([5], 51)
        cases.append(("conv1d stride 2 with bias", backward(F.conv1d(x, w, b, stride: 2), 64, [x, w, b])))
    }
    do {
        let x = leaf([2, 2, 6, 7, 5], 52), w = leaf([3, 2, 3, 3, 3], 53)
        cases.append(("conv3d padding 1", backward(F.conv3d(x, w, padding: 1), 65, [x, w])))
    }
    do {
        let x = leaf([2, 4, 7, 6, 5], 54), w = leaf([4, 2, 2, 3, 2], 55)
        cases.append(("convTranspose3d stride 2 groups 2", backward(F.convTranspose3d(x, w, stride: 2, groups: 2), 66, [x, w])))
    }
    do {
        let x = leaf([3, 16, 9, 9], 56), w = leaf([24, 16, 1, 1], 57)
        cases.append(("conv2d 1x1", backward(F.conv2d(x, w), 67, [x, w])))
    }
    do {
        let x = leaf([8, 64, 16, 16], 58), w = leaf([64, 64, 3, 3], 59), b = leaf([64], 68)
        cases.append(("conv2d 64->64 3x3 padding 1 with bias", backward(F.conv2d(x, w, b, padding: 1), 69, [x, w, b])))
    }
    return cases
}

/// `steps` cross-entropy training steps of `model` on one batch: the losses.
func trainingLosses(_ model: nn.Module, _ opt: optim.Optimizer, _ x: Tensor, _ y: Tensor, steps: Int) -> [Double] {
    (0..<steps).map { _ in
        opt.zeroGrad()
        let loss = F.crossEntropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()
    }
}

/// Tutorial 001's LeNet-5 or the BatchNorm CNN (main.swift's `cnn`), 10 SGD momentum steps: the losses.
func convolutionTrainingLosses(_ device: Device, batchNorm: Bool) -> [Double] {
    torch.manualSeed(6)
    let model = cnn(batchNorm: batchNorm).to(device)
    let opt = optim.SGD(model.parameters(), lr: 0.02, momentum: 0.9)
    let x = torch.randn(16, 3, 32, 32).to(device), y = torch.randint(0, 10, [16]).to(device)
    return trainingLosses(model, opt, x, y, steps: 10)
}

/// Issue 26's checks and speed lines for both convolution paths. Turns cuDNN's TF32 off for the whole run first:
/// cuda-check compares float32 with the CPU, and issue 26 measures against PyTorch with TF32 off.
func convolutionPathChecks(values: Bool, bench: Bool) {
    torch.backends.cudnn.allowTF32 = false
    let version = torch.backends.cudnn.version().map { "version \($0)" } ?? "not available"
    print("# cuDNN: \(version)\(ConvolutionPath.cudnnRuns ? "" : ", convolutions run as im2col only")")
    if values {
        for (dtype, tol) in [(DType.float32, 1e-4), (.float64, 1e-10)] {
            let cpu = convolutionCases(.cpu, dtype)
            for path in ConvolutionPath.all {
                let gpu = path.run { convolutionCases(cuda, dtype) }
                for ((name, g), (_, c)) in zip(gpu, cpu) { checkScaled("\(name), \(dtype.name), \(path.name)", tol: tol, g, c) }
            }
        }
        if ConvolutionPath.cudnnRuns {
            // float16/bfloat16 run through cuDNN only; the CPU reference is float32 on the same (rounded) inputs.
            for (dtype, tol) in [(DType.float16, 5e-3), (.bfloat16, 3e-2)] {
                let cpu = convolutionCases(.cpu, .float32, roundedThrough: dtype)
                let gpu = ConvolutionPath.cudnn.run { convolutionCases(cuda, dtype) }
                for ((name, g), (_, c)) in zip(gpu, cpu) {
                    checkScaled("\(name), \(dtype.name), cuDNN", tol: tol, g.map { $0.float() }, c)
                }
            }
            // Deterministic algorithms give the same bits twice.
            let (first, second) = ConvolutionPath.cudnnDeterministic.run {
                (convolutionCases(cuda, .float32), convolutionCases(cuda, .float32))
            }
            for ((name, a), (_, b)) in zip(first, second) { checkScaled("\(name), cuDNN deterministic, run twice", tol: 0, a, b) }
        }
        for batchNorm in [false, true] {
            let c = convolutionTrainingLosses(.cpu, batchNorm: batchNorm)
            for path in [ConvolutionPath.im2col] + (ConvolutionPath.cudnnRuns ? [.cudnn, .cudnnBenchmark] : []) {
                let g = path.run { convolutionTrainingLosses(cuda, batchNorm: batchNorm) }
                let worst = zip(g, c).map { abs($0 - $1) }.max() ?? .infinity
                report("\(batchNorm ? "CNN with BatchNorm2d" : "LeNet-5"), 10 SGD steps, \(path.name)", worst < 1e-3,
                       "max |loss diff| \(worst), last \(g.last!) vs \(c.last!)")
            }
        }
    }
    if bench {
        let paths = [ConvolutionPath.im2col] + (ConvolutionPath.cudnnRuns ? [.cudnn, .cudnnBenchmark] : [])
        for batch in [32, 256] {
            let xc = torch.rand(batch, 64, 32, 32).cuda(), wc = torch.rand(64, 64, 3, 3).cuda()
            for path in paths {
                let t = path.run { timeIt(20) { _ = F.conv2d(xc, wc, padding: 1) } }
                print(String(cFormat: "BENCH conv2d 64->64 3x3 32x32 batch %d forward, ", batch) + path.name + String(cFormat: ": %.0f GFLOP/s",
                             2 * Double(batch * 64 * 64 * 9 * 32 * 32) / t / 1000))
            }
        }
    }
}
