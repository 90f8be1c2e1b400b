import Torch

/// Tutorial 000's MLP (784-512-256-10) with SGD and momentum, its data and its training step: what the CUDA
/// graph check and benchmark capture. `step` runs forward, cross-entropy backward and the update and returns
/// the loss; it leaves gradients in place (the caller zeroes them: each step eagerly, once before a capture).
private struct GraphedMLP {
    let model: nn.Sequential
    let opt: optim.SGD
    let x: Tensor, y: Tensor

    init(batch: Int, seed: UInt64) {
        torch.manualSeed(seed)
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10)).to(cuda)
        opt = optim.SGD(model.parameters(), lr: 0.01, momentum: 0.9)
        x = torch.rand(batch, 784).cuda()
        y = torch.randint(0, 10, [batch]).cuda()
    }

    func step() -> Tensor {
        let loss = F.crossEntropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    }

    func eagerStep() -> Tensor {
        opt.zeroGrad()
        return step()
    }

    /// A graph of `step()` after one eager warm-up step (kernels compiled, momentum buffers made), and its
    /// static loss.
    func capture() throws -> (torch.cuda.CUDAGraph, Tensor) {
        _ = eagerStep()
        opt.zeroGrad()
        let g = torch.cuda.CUDAGraph()
        let loss = try torch.cuda.graph(g) { step() }
        return (g, loss)
    }
}

/// CUDA graphs on the GPU: the MLP's graphed training step replayed on new batches (copied into the static
/// inputs) against the same steps run eagerly, and a host read inside a capture refused with an error naming it.
/// CUDAEmulatorGraphTests checks the same logic on the emulator; this is the driver's stream capture.
func runGraphChecks() {
    let batch = info.emulated ? 16 : 64, steps = 5
    let batches: [(Tensor, Tensor)] = (0..<steps).map { k in
        torch.manualSeed(300 + UInt64(k))
        return (torch.rand(batch, 784), torch.randint(0, 10, [batch]))
    }
    do {
        let eager = GraphedMLP(batch: batch, seed: 12), graphed = GraphedMLP(batch: batch, seed: 12)
        _ = eager.eagerStep()   // the graphed model's warm-up step, on the same batch
        var eagerLosses: [Double] = []
        for (x, y) in batches {
            eager.x.copy_(x)
            eager.y.copy_(y)
            eagerLosses.append(eager.eagerStep().item())
        }
        let (g, staticLoss) = try graphed.capture()
        var graphedLosses: [Double] = []
        for (x, y) in batches {
            graphed.x.copy_(x)
            graphed.y.copy_(y)
            g.replay()
            graphedLosses.append(staticLoss.item())
        }
        let lossDiff = zip(eagerLosses, graphedLosses).map { abs($0 - $1) }.max() ?? .infinity
        let paramDiff = zip(eager.model.parameters(), graphed.model.parameters()).compactMap { maxError($1, $0) }.max() ?? .infinity
        report("CUDA graph: MLP SGD-momentum step captured once, \(steps) replays vs eager steps (\(g.capturedOperations) ops)",
               lossDiff <= 1e-5 && paramDiff <= 1e-5, "max |loss diff| \(lossDiff), max param rel. error \(paramDiff)")
    } catch {
        report("CUDA graph: MLP SGD-momentum step", false, "\(error)")
    }
    let x = torch.rand(100).cuda()
    let g = torch.cuda.CUDAGraph()
    do {
        _ = try torch.cuda.graph(g) { (x * 2).sum().item() }
        report("CUDA graph: item() inside a capture is refused", false, "the capture succeeded")
    } catch {
        let text = "\(error)"
        report("CUDA graph: item() inside a capture is refused", text.contains("cuMemcpyDtoHAsync")
               && !torch.cuda.isCurrentStreamCapturing(), text)
    }
}

/// BENCH lines: the MLP's SGD step eagerly and as a graph replay, µs per step (PyTorch's twin in
/// scripts/bench_cuda_pytorch.py uses torch.cuda.graph the same way).
func runGraphBenchmarks() {
    let eager = GraphedMLP(batch: 64, seed: 4)
    print(String(format: "BENCH MLP 784-512-256-10 SGD momentum step batch 64 eager: %.0f us",
                 timeIt(200) { _ = eager.eagerStep() }))
    let graphed = GraphedMLP(batch: 64, seed: 4)
    do {
        let (g, _) = try graphed.capture()
        print(String(format: "BENCH MLP 784-512-256-10 SGD momentum step batch 64 CUDA graph replay: %.0f us",
                     timeIt(200) { g.replay() }))
    } catch {
        print("BENCH MLP 784-512-256-10 SGD momentum step batch 64 CUDA graph replay: failed: \(error)")
    }
}
