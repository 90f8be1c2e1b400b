// Convolution cases (issue 9, "Speed"): a 64→64 3×3 convolution forward and forward+backward, 2×2 max pooling
// forward+backward, tutorial 001's LeNet-5 train step, one Fashion-MNIST epoch of the CNN, and ResNet-18
// inference and training steps (batch 32, and batch 256 for issue 27's many-core table).
// Twins in scripts/bench_pytorch.py.
import Torch
import TorchVision
import TutorialModels

/// FLOPs of one forward pass of Conv2d(64, 64, 3, padding 1) on 32 images of 32×32 (2·N·Cout·Cin·9·H·W).
let convFLOPs = 2.0 * 32 * 64 * 64 * 9 * 32 * 32

/// `F.conv2d` 64→64, 3×3, padding 1, batch 32 of 32×32, with bias; forward only (GFLOP/s).
func convForwardCase(_ s: BenchSettings) -> BenchResult {
    let x = torch.randn(32, 64, 32, 32), w = torch.randn(64, 64, 3, 3), b = torch.randn(64)
    let t = measure(s) { iters in
        for _ in 0..<iters { discard(F.conv2d(x, w, b, padding: 1)) }
    }
    return .throughput(t, flops: convFLOPs)
}

/// The same convolution forward + backward (input, weight and bias gradients): 3× the forward FLOPs (GFLOP/s).
func convForwardBackwardCase(_ s: BenchSettings) -> BenchResult {
    let x = torch.randn(32, 64, 32, 32, requiresGrad: true), w = torch.randn(64, 64, 3, 3, requiresGrad: true)
    let b = torch.randn(64, requiresGrad: true)
    let t = measure(s) { iters in
        for _ in 0..<iters {
            x.grad = nil; w.grad = nil; b.grad = nil
            F.conv2d(x, w, b, padding: 1).sum().backward()
        }
    }
    return .throughput(t, flops: 3 * convFLOPs)
}

/// `F.maxPool2d(x, 2, 2)` forward + backward on 64×6×28×28 (LeNet's first pooling), ms.
func maxPoolCase(_ s: BenchSettings) -> BenchResult {
    let x = torch.randn(64, 6, 28, 28, requiresGrad: true)
    let t = measure(s) { iters in
        for _ in 0..<iters {
            x.grad = nil
            F.maxPool2d(x, 2, 2).sum().backward()
        }
    }
    return .millis(t)
}

/// One train step of tutorial 001's LeNet-5 on a fixed batch of 64 3×32×32 images: forward, CrossEntropyLoss,
/// zero_grad, backward, SGD momentum 0.9 step (ms).
func lenetStepCase(_ s: BenchSettings) -> BenchResult {
    let model = TutorialLeNet5()
    let x = torch.randn(64, 3, 32, 32), y = torch.randint(0, 10, [64])
    let criterion = nn.CrossEntropyLoss()
    let optimizer = optim.SGD(model.parameters(), lr: 0.001, momentum: 0.9)
    let t = measure(s) { iters in
        for _ in 0..<iters {
            optimizer.zeroGrad()
            let loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
        }
    }
    return .millis(t)
}

/// One Fashion-MNIST epoch of the CNN (ToTensor + Normalize(0.5, 0.5), DataLoader batch 64 shuffle,
/// Adam 1e-3), seconds. Skipped when the dataset is not installed.
func cnnEpochCase(_ s: BenchSettings) -> BenchResult {
    let transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize(mean: [0.5], std: [0.5])])
    guard let train = try? datasets.FashionMNIST(root: fashionMNISTRoot, train: true, transform: transform) else {
        return .skip("\(fashionMNISTRoot) has no Fashion-MNIST (apt-get install dataset-fashion-mnist)")
    }
    let loader = DataLoader(train, batchSize: 64, shuffle: true)
    let model = FashionCNN()
    let criterion = nn.CrossEntropyLoss()
    let optimizer = optim.Adam(model.parameters(), lr: 1e-3)
    model.train()
    var total = 0.0
    let t = measure(s) { iters in
        for _ in 0..<iters {
            for (img, label) in loader {
                optimizer.zeroGrad()
                let loss = criterion(model(img), label)
                loss.backward()
                optimizer.step()
                total += loss.item()
            }
        }
    }
    sink = torch.tensor([total])
    return .seconds(t)
}

func registerConvCases() {
    register("conv2d_64x64_fwd", "F.conv2d 64->64 3x3 pad 1, batch 32 of 32x32, forward (GFLOP/s)", convForwardCase)
    register("conv2d_64x64_fwdbwd", "the same conv forward + backward (GFLOP/s, 3x the forward FLOPs)", convForwardBackwardCase)
    register("maxpool2d_fwdbwd", "F.max_pool2d(x, 2, 2) forward + backward, x 64x6x28x28 (ms)", maxPoolCase)
    register("lenet5_step", threads: [1, 2], "tutorial 001 LeNet-5 train step, batch 64 3x32x32, SGD momentum 0.9 (ms)", lenetStepCase)
    register("cnn_epoch", "2 conv+BN+pool, 2 linear CNN, one Fashion-MNIST epoch, batch 64, Adam (s)", cnnEpochCase)
    register("resnet18_fwd", "torchvision resnet18 eval forward, batch 1 of 3x224x224, no grad (ms)", resnet18ForwardCase)
    register("deep_conv_b1_packed",
             "resnet18 layer3 + layer4 3x3 convs at batch 1 under noGrad: Winograd on filters packed once (ms)",
             deepConvBatch1Case(packed: true))
    register("deep_conv_b1_recorded",
             "the same two convs recording autograd through the weights: im2col GEMMs packed per call (ms)",
             deepConvBatch1Case(packed: false))
    register("depthwise_conv_fwdbwd", "F.conv2d depthwise 3x3 pad 1, 96 channels, batch 8 of 56x56, forward + backward (ms)",
             depthwiseConvCase)
    register("mobilenet_v2_fwd", "torchvision mobilenet_v2 eval forward, batch 1 of 3x224x224, no grad (ms)", mobileNetV2ForwardCase)
    register("resnet18_step", threads: [1, 2], "resnet18 (fc -> 10 classes) train step, batch 32 of 3x32x32, SGD momentum 0.9 (ms)",
             resnet18StepCase(batch: 32))
    register("resnet18_b256_step", "resnet18 (fc -> 10 classes) train step, batch 256 of 3x32x32, SGD momentum 0.9 (ms)",
             resnet18StepCase(batch: 256))
    register("resnet18_scaling", threads: [2],
             "resnet18_step at n threads against 1 thread in the same process, pairs of steps alternating (x)",
             resnet18ScalingCase)
}

/// torchvision's ResNet-18 in eval mode, one 3×224×224 image under noGrad (ms).
func resnet18ForwardCase(_ s: BenchSettings) -> BenchResult { evalForwardCase(models.resnet18(), s) }

/// `model` in eval mode on one 3×224×224 image under noGrad (ms).
func evalForwardCase(_ model: nn.Module, _ s: BenchSettings) -> BenchResult {
    model.eval()
    let x = torch.randn(1, 3, 224, 224)
    let t = measure(s) { iters in
        torch.noGrad { for _ in 0..<iters { discard(model(x)) } }
    }
    return .millis(t)
}

/// A depthwise 3×3 convolution (MobileNetV2's 96-channel stage at 56×56) forward + backward on a batch of 8 (ms).
func depthwiseConvCase(_ s: BenchSettings) -> BenchResult {
    let x = torch.randn(8, 96, 56, 56, requiresGrad: true), w = torch.randn(96, 1, 3, 3, requiresGrad: true)
    let t = measure(s) { iters in
        for _ in 0..<iters {
            x.grad = nil; w.grad = nil
            F.conv2d(x, w, padding: 1, groups: 96).sum().backward()
        }
    }
    return .millis(t)
}

/// torchvision's MobileNetV2 in eval mode (depthwise convolutions), one 3×224×224 image under noGrad (ms).
func mobileNetV2ForwardCase(_ s: BenchSettings) -> BenchResult { evalForwardCase(models.mobilenetV2(), s) }

/// Tutorial 001's ResNet-18 (`fc` replaced by Linear(512, 10)) train step on a batch of `batch` 3×32×32 images:
/// forward, CrossEntropyLoss, zero_grad, backward, SGD momentum 0.9 step (ms). `resnet18_step` is batch 32,
/// `resnet18_b256_step` batch 256 (issue 27's many-core table; scripts/scaling runs both).
func resnet18StepCase(batch: Int) -> (BenchSettings) -> BenchResult {
    return { s in
        let step = resnet18TrainStep(batch: batch)
        let t = measure(s) { iters in
            for _ in 0..<iters { step() }
        }
        return .millis(t)
    }
}

/// One train step of tutorial 001's ResNet-18 (the `resnet18_step` workload at batch 32), with its model, batch
/// and optimizer.
func resnet18TrainStep(batch: Int = 32) -> () -> Void {
    let model = models.resnet18()
    model.fc = nn.Linear(512, 10)
    model.train()
    let x = torch.randn(batch, 3, 32, 32), y = torch.randint(0, 10, [batch])
    let criterion = nn.CrossEntropyLoss()
    let optimizer = optim.SGD(model.parameters(), lr: 0.001, momentum: 0.9)
    return {
        optimizer.zeroGrad()
        criterion(model(x), y).backward()
        optimizer.step()
    }
}

/// How many times faster the `resnet18_step` workload runs at the case's thread count than at 1 thread, in one
/// process and on the wall clock (`--cpu-time` does not apply: CPU time cannot show a speed-up).
///
/// A paired design, because on a shared host the 1-thread step swings 1.5× between neighbouring runs (the
/// neighbours' load on the shared L3 and memory changes over seconds), so two separate processes compare two
/// different machines. Each pair times two steps at 1 thread and two at n threads back to back, alternating which
/// goes first; the figure is the median over pairs of t(1) / t(n), with the per-thread-count medians beside it.
func resnet18ScalingCase(_ s: BenchSettings) -> BenchResult {
    let threads = torch.getNumThreads()
    defer { torch.setNumThreads(threads) }
    let step = resnet18TrainStep()
    /// Wall and process CPU seconds per step.
    func secondsPerStep(_ n: Int) -> (wall: Double, cpu: Double) {
        torch.setNumThreads(n)
        let t0 = wallClock(), c0 = cpuClock()
        step(); step()
        return ((wallClock() - t0) / 2, (cpuClock() - c0) / 2)
    }
    _ = secondsPerStep(1); _ = secondsPerStep(threads)   // first-touch page faults, momentum buffers
    var one: [Double] = [], many: [Double] = [], ratios: [Double] = [], cpuOne: [Double] = [], cpuMany: [Double] = []
    for pair in 0..<(s.quick ? 5 : 15) {
        let a, b: (wall: Double, cpu: Double)
        if pair % 2 == 0 { a = secondsPerStep(1); b = secondsPerStep(threads) }
        else { b = secondsPerStep(threads); a = secondsPerStep(1) }
        one.append(a.wall); many.append(b.wall); ratios.append(a.wall / b.wall)
        cpuOne.append(a.cpu); cpuMany.append(b.cpu)
    }
    let timing = Timing(median: median(many), min: many.min()!, iters: 2, reps: ratios.count)
    // The CPU time of all threads per step shows how much work the split adds (pool spinning included).
    return BenchResult(metric: "x", value: median(ratios), timing: timing,
                       extra: [("min", .number(ratios.min()!)), ("max", .number(ratios.max()!)),
                               ("ms_1_thread", .number(median(one) * 1e3)),
                               ("ms_n_threads", .number(median(many) * 1e3)),
                               ("cpu_ms_1_thread", .number(median(cpuOne) * 1e3)),
                               ("cpu_ms_n_threads", .number(median(cpuMany) * 1e3))])
}

/// ResNet-18's deep-stage 3×3 convolutions at batch 1, one after the other: layer3's (256 channels, 14×14) and
/// layer4's (512 channels, 7×7), with bias (ms per pair). `packed`: under noGrad, where the weights are packed once
/// and both run Winograd on the packed filters; otherwise with autograd recording through the weights, where they
/// are packed per call and both run as im2col GEMMs (too few tiles to transform the filters per call). The two
/// cases are the same arithmetic by the two paths, timed in one build.
func deepConvBatch1Case(packed: Bool) -> (BenchSettings) -> BenchResult {
    { s in
        let layer3 = nn.Conv2d(256, 256, 3, padding: 1), layer4 = nn.Conv2d(512, 512, 3, padding: 1)
        let x3 = torch.randn(1, 256, 14, 14), x4 = torch.randn(1, 512, 7, 7)
        let t = measure(s) { iters in
            if packed {
                torch.noGrad { for _ in 0..<iters { discard(layer3(x3)); discard(layer4(x4)) } }
            } else {
                for _ in 0..<iters { discard(layer3(x3)); discard(layer4(x4)) }
            }
        }
        return .millis(t)
    }
}
