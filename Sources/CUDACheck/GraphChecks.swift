import Torch
import TorchVision

/// A classifier's training step (SGD with momentum) with its static batch on the GPU: what the CUDA graph checks
/// and benchmarks capture. `step` runs forward, cross-entropy backward and the update and returns the loss; it
/// leaves gradients in place (the caller zeroes them: each step eagerly, once before a capture).
private struct GraphedStep {
    let model: nn.Module
    let opt: optim.SGD
    let x: Tensor, y: Tensor

    /// `make()` builds the model (on the CPU, after seeding, so two steps built with one seed start equal).
    init(_ make: () -> nn.Module, input: [Int], seed: UInt64) {
        torch.manualSeed(seed)
        model = make().to(cuda)
        model.train()
        opt = optim.SGD(model.parameters(), lr: 0.01, momentum: 0.9)
        x = torch.rand(input).cuda()
        y = torch.randint(0, 10, [input[0]]).cuda()
    }

    /// Tutorial 000's MLP (784-512-256-10).
    static func mlp(batch: Int, seed: UInt64) -> GraphedStep {
        GraphedStep({ nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10)) },
                    input: [batch, 784], seed: seed)
    }

    /// Tutorial 001's ResNet-18 on CIFAR-sized images (issue 26's small-batch case).
    static func resnet18(batch: Int, seed: UInt64) -> GraphedStep {
        GraphedStep({ models.resnet18(numClasses: 10) }, input: [batch, 3, 32, 32], seed: seed)
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

    /// A graph of `step()` after one eager warm-up step (kernels compiled, cuDNN's algorithms chosen, momentum
    /// buffers made), and its static loss.
    func capture() throws -> (torch.cuda.CUDAGraph, Tensor) {
        _ = eagerStep()
        opt.zeroGrad()
        let g = torch.cuda.CUDAGraph()
        let loss = try torch.cuda.graph(g) { step() }
        return (g, loss)
    }
}

/// CUDA graphs on the GPU: graphed training steps replayed on new batches (copied into the static inputs) against
/// the same steps run eagerly (tutorial 000's MLP; ResNet-18 with batch norm and, on a GPU, cuDNN's convolutions
/// inside the capture), and a host read inside a capture refused with an error naming it.
/// CUDAEmulatorGraphTests checks the same logic on the emulator; this is the driver's stream capture.
func runGraphChecks() {
    compareGraphedSteps("MLP", steps: 5, tol: 1e-5) { GraphedStep.mlp(batch: info.emulated ? 16 : 64, seed: 12) }
    // Batch norm sums over the batch in a different order than the CPU but the same on both GPU runs; the
    // tolerance allows cuDNN's algorithms to differ between the eager warm-up and the capture.
    compareGraphedSteps("ResNet-18 (batch norm, convolutions)", steps: info.emulated ? 2 : 5, tol: 1e-4) {
        GraphedStep.resnet18(batch: info.emulated ? 2 : 32, seed: 13)
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

/// `steps` graph replays of `make()`'s step against the same steps run eagerly on a second copy: losses and
/// parameters within `tol` (relative).
private func compareGraphedSteps(_ name: String, steps: Int, tol: Double, _ make: () -> GraphedStep) {
    let eager = make(), graphed = make()
    let batches: [(Tensor, Tensor)] = (0..<steps).map { k in
        torch.manualSeed(300 + UInt64(k))
        return (torch.rand(eager.x.shape), torch.randint(0, 10, eager.y.shape))
    }
    do {
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
        let lossDiff = zip(eagerLosses, graphedLosses).map { abs($0 - $1) / Swift.max(abs($0), 1) }.max() ?? .infinity
        let paramDiff = zip(eager.model.parameters(), graphed.model.parameters()).compactMap { maxError($1, $0) }.max() ?? .infinity
        report("CUDA graph: \(name) SGD-momentum step captured once, \(steps) replays vs eager steps (\(g.capturedOperations) ops)",
               lossDiff <= tol && paramDiff <= tol, "max loss rel. diff \(lossDiff), max param rel. error \(paramDiff) (tol \(tol))")
    } catch {
        report("CUDA graph: \(name) SGD-momentum step", false, "\(error)")
    }
}

/// BENCH lines: training steps eagerly and as graph replays (tutorial 000's MLP, µs; ResNet-18 on 3×32×32 at batch
/// 32, issue 26's host-bound case, ms). PyTorch's twin in scripts/bench_cuda_pytorch.py uses torch.cuda.graph the
/// same way.
func runGraphBenchmarks() {
    let cases: [(name: String, reps: Int, millis: Bool, make: () -> GraphedStep)] = [
        ("MLP 784-512-256-10 SGD momentum step batch 64", 200, false, { GraphedStep.mlp(batch: 64, seed: 4) }),
        ("ResNet-18 train step 3x32x32 batch 32 SGD momentum", 20, true, { GraphedStep.resnet18(batch: 32, seed: 8) }),
    ]
    for c in cases {
        func line(_ how: String, _ us: Double) -> String {
            c.millis ? "BENCH \(c.name) \(how): " + String(cFormat: "%.2f ms", us / 1000)
                     : "BENCH \(c.name) \(how): " + String(cFormat: "%.0f us", us)
        }
        let eager = c.make()
        print(line("eager", timeIt(c.reps) { _ = eager.eagerStep() }))
        do {
            let (g, _) = try c.make().capture()
            print(line("CUDA graph replay", timeIt(c.reps) { g.replay() }))
        } catch {
            print("BENCH \(c.name) CUDA graph replay: failed: \(error)")
        }
    }
}
