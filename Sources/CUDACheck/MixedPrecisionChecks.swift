// cuda-check's mixed-precision checks (issue 26): autocast's CUDA op lists, CNN training steps and ResNet-18
// under float16/bfloat16 autocast against the CPU's autocast, GradScaler on a planted inf; and the CNN speed
// cases (ResNet-18 steps and eval, float32 and bfloat16 autocast) whose PyTorch twins are in
// scripts/bench_cuda_pytorch.py.
#if canImport(Glibc)
import Glibc
#endif
import Torch
import TorchVision

/// Runs the mixed-precision checks, one `PASS`/`FAIL` line each.
func runMixedPrecisionChecks() {
    func seeded(_ shape: [Int], _ seed: UInt64, _ device: Device) -> Tensor {
        torch.manualSeed(seed)
        return torch.randn(shape).to(device)
    }
    let a = seeded([3, 4], 1, cuda), b = seeded([4, 5], 2, cuda), h = a.half()
    torch.autocast(deviceType: "cuda") {
        let cases: [(String, Tensor, DType)] = [
            ("mm", a.mm(b), .float16), ("linear", F.linear(a, b.t()), .float16),
            ("conv2d", F.conv2d(seeded([2, 3, 8, 8], 3, cuda), seeded([4, 3, 3, 3], 4, cuda)), .float16),
            ("softmax", F.softmax(a, dim: 1), .float32), ("exp of float16", h.exp(), .float32),
            ("sum of float16", h.sum(), .float32), ("layer_norm of float16", F.layerNorm(h, [4]), .float32),
            ("relu of float16", F.relu(h), .float16),
        ]
        for (name, y, dtype) in cases {
            report("autocast cuda \(name) -> \(dtype.name)", y.dtype == dtype && y.device == cuda, "got \(y.dtype) on \(y.device)")
        }
    }

    // A conv + BatchNorm + pooling net, three SGD steps under autocast on each device.
    for low in [DType.float16, .bfloat16] {
        func losses(_ device: Device) -> [Tensor] {
            torch.manualSeed(41)
            let conv = nn.Conv2d(3, 8, 3, padding: 1), bn = nn.BatchNorm2d(8), fc = nn.Linear(8 * 4 * 4, 5)
            for m in [conv, bn, fc] as [nn.Module] { m.to(device) }
            let opt = optim.SGD(conv.parameters() + bn.parameters() + fc.parameters(), lr: 0.05, momentum: 0.9)
            let x = seeded([8, 3, 16, 16], 42, device), y = torch.tensor([1, 4, 3, 0, 2, 2, 1, 0]).to(device)
            var out: [Tensor] = []
            for _ in 0..<3 {
                opt.zeroGrad()
                let loss = torch.autocast(deviceType: device.type, dtype: low) {
                    F.crossEntropy(fc(F.adaptiveAvgPool2d(F.maxPool2d(F.relu(bn(conv(x))), 2), [4, 4]).flatten(1)), y)
                }
                loss.backward()
                opt.step()
                out.append(loss.detach())
            }
            return out + [conv.weight.detach()]
        }
        let g = losses(cuda), c = losses(.cpu)
        let tol = low == .float16 ? 4e-3 : 3e-2
        for (k, (gt, ct)) in zip(g, c).enumerated() {
            check("conv+BN net under \(low.name) autocast, \(k < 3 ? "loss \(k)" : "conv weight")", tol: tol, { gt }, { ct })
        }
    }

    // ResNet-18 forward and backward under bfloat16 autocast (eval mode, as the plain ResNet check).
    do {
        func step(_ device: Device) -> [Tensor] {
            torch.manualSeed(3)
            let model = models.resnet18(numClasses: 10).to(device)
            model.eval()
            let x = torch.randn(4, 3, 32, 32).to(device), y = torch.tensor([3, 8, 1, 0]).to(device)
            let (logits, loss) = torch.autocast(deviceType: device.type, dtype: .bfloat16) { () -> (Tensor, Tensor) in
                let logits = model(x)
                return (logits, F.crossEntropy(logits, y))
            }
            loss.backward()
            return [loss.detach(), logits.detach().float(), model.parameters()[0].grad!]
        }
        let g = step(cuda), c = step(.cpu)
        for (k, name) in ["loss", "logits", "conv1 weight grad"].enumerated() {
            check("ResNet-18 under bfloat16 autocast \(name)", tol: 0.1, { g[k] }, { c[k] })
        }
    }

    // GradScaler: a planted inf skips the step and halves the scale; a clean step unscales exactly.
    do {
        let scaler = torch.amp.GradScaler(device: "cuda", initScale: 1024, growthInterval: 1)
        torch.manualSeed(5)
        let lin = nn.Linear(16, 4).to(cuda)
        let opt = optim.SGD(lin.parameters(), lr: 0.1)
        let x = seeded([8, 16], 6, cuda)
        let before = lin.weight.detach().cpu()
        opt.zeroGrad()
        let loss = torch.autocast(deviceType: "cuda") { lin(x).float().pow(2).mean() }
        scaler.scale(loss * Double.infinity).backward()
        let stepped = scaler.step(opt)
        scaler.update()
        report("GradScaler skips a step with an inf gradient", !stepped && scaler.getScale() == 512
               && lin.weight.detach().cpu().toArray(as: Float.self) == before.toArray(as: Float.self))
        opt.zeroGrad()
        torch.autocast(deviceType: "cuda") { lin(x).float().pow(2).mean() }.backward()
        let reference = lin.weight.grad!.detach().clone()
        opt.zeroGrad()
        scaler.scale(torch.autocast(deviceType: "cuda") { lin(x).float().pow(2).mean() }).backward()
        scaler.unscale_(opt)
        check("GradScaler unscale_ restores the gradient", tol: 1e-6, { lin.weight.grad! }, { reference.cpu() })
        report("GradScaler steps when the gradients are finite", scaler.step(opt))
        scaler.update()
    }
}

/// Issue 26's ResNet-18 speed cases: train steps on 3×32×32 (batch 32 and 256, SGD momentum) and eval forwards on
/// 3×224×224 (batch 1 in float32; batch 256 in float32 and under bfloat16 autocast).
func runCNNBenchmarks() {
    torch.manualSeed(8)
    let model = models.resnet18(numClasses: 10).to(cuda)
    let opt = optim.SGD(model.parameters(), lr: 0.01, momentum: 0.9)
    for batch in [32, 256] {
        let xb = torch.rand(batch, 3, 32, 32).cuda(), yb = torch.randint(0, 10, [batch]).cuda()
        model.train()
        let us = timeIt(batch == 32 ? 20 : 5) { opt.zeroGrad(); F.crossEntropy(model(xb), yb).backward(); opt.step() }
        print(String(cFormat: "BENCH ResNet-18 train step 3x32x32 batch %d SGD momentum: %.2f ms", batch, us / 1000))
    }
    let imagenet = models.resnet18().to(cuda)
    imagenet.eval()
    torch.noGrad {
        let one = torch.rand(1, 3, 224, 224).cuda()
        print(String(cFormat: "BENCH ResNet-18 eval 3x224x224 batch 1: %.2f ms", timeIt(20) { _ = imagenet(one) } / 1000))
        let many = torch.rand(256, 3, 224, 224).cuda()
        let fp32 = timeIt(2) { _ = imagenet(many) }
        print(String(cFormat: "BENCH ResNet-18 eval 3x224x224 batch 256 float32: %.0f images/s", 256 / (fp32 / 1e6)))
        let bf16 = timeIt(2) { _ = torch.autocast(deviceType: "cuda", dtype: .bfloat16) { imagenet(many) } }
        print(String(cFormat: "BENCH ResNet-18 eval 3x224x224 batch 256 bfloat16 autocast: %.0f images/s", 256 / (bf16 / 1e6)))
    }
}
