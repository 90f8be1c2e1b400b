// cuda-check's real-data runs (issue 26): tutorial 001's LeNet-5 on the CIFAR-10 fixture files (genuine format,
// a few images) trained on the GPU to the CPU's losses, and the Fashion-MNIST CNN trained for 3 epochs on the GPU
// with the whole dataset on the device (PASS at ≥ 0.90 test accuracy; its epoch time is a BENCH line, twin in
// scripts/bench_cuda_pytorch.py --fashion-mnist).
import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import Torch
import TorchVision
import TutorialModels

/// LeNet-5 (TutorialLeNet5) on the CIFAR-10 files under `root` (torchvision's layout, e.g. the repository's
/// Tests/Fixtures/cifar/py), five SGD-momentum epochs of batch 4 on each device; the losses must agree.
func runCIFARLeNet(root: String) {
    let normalize = transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5])])
    let train: datasets.CIFAR10
    do { train = try datasets.CIFAR10(root: root, train: true, transform: normalize) } catch {
        return report("LeNet-5 on the CIFAR-10 files", false, "\(error)")
    }
    func losses(_ device: Device) -> Tensor {
        torch.manualSeed(1)
        let model = TutorialLeNet5().to(device)
        let opt = optim.SGD(model.parameters(), lr: 0.01, momentum: 0.9)
        let loader = DataLoader(train, batchSize: 4, shuffle: true, generator: Generator().manualSeed(2))
        var out: [Tensor] = []
        for _ in 0..<5 {
            for (x, y) in loader {
                opt.zeroGrad()
                let loss = F.crossEntropy(model(x.to(device)), y.to(device))
                loss.backward()
                opt.step()
                out.append(loss.detach().cpu())
            }
        }
        return torch.stack(out)
    }
    let g = losses(cuda), c = losses(.cpu)
    check("LeNet-5 on the CIFAR-10 files (\(train.count) images), 5 epochs: losses", tol: 1e-3, { g.cuda() }, { c })
}

/// The Fashion-MNIST CNN (TutorialModels.FashionCNN, issue 9's), Adam 1e-3, batch 64, images scaled to [-1, 1],
/// the whole training split on the GPU and shuffled there, 3 epochs.
func runFashionMNIST(root: String) {
    let train, test: datasets.FashionMNIST
    do {
        train = try datasets.FashionMNIST(root: root, train: true)
        test = try datasets.FashionMNIST(root: root, train: false)
    } catch { return report("Fashion-MNIST CNN on CUDA", false, "\(error)") }
    guard Array(train.data.shape.suffix(2)) == [28, 28], Array(test.data.shape.suffix(2)) == [28, 28] else {
        return report("Fashion-MNIST CNN on CUDA", false, "expected 28×28 images in \(root), got \(train.data.shape)")
    }
    func images(_ d: datasets.FashionMNIST) -> Tensor { ((d.data.to(.float32) / 255 - 0.5) / 0.5).unsqueeze(1).to(cuda) }
    let xTrain = images(train), yTrain = train.targets.to(cuda), xTest = images(test), yTest = test.targets.to(cuda)
    torch.manualSeed(0)
    let model = FashionCNN().to(cuda)
    let opt = optim.Adam(model.parameters(), lr: 1e-3)
    let n = xTrain.shape[0]
    var best = Double.infinity, accuracy = 0.0
    for epoch in 1...3 {
        model.train()
        torch.cuda.synchronize()
        let t0 = DispatchTime.now().uptimeNanoseconds
        let order = torch.randperm(n, device: cuda)
        for start in stride(from: 0, to: n, by: 64) {
            let idx = order[start..<min(n, start + 64)]
            let x = xTrain.indexSelect(0, idx), y = yTrain.indexSelect(0, idx)
            opt.zeroGrad()
            F.crossEntropy(model(x), y).backward()
            opt.step()
        }
        torch.cuda.synchronize()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
        best = min(best, seconds)
        model.eval()
        let correct: Double = torch.noGrad {
            stride(from: 0, to: xTest.shape[0], by: 1000).reduce(0.0) { sum, s in
                let e = min(xTest.shape[0], s + 1000)
                return sum + (model(xTest[s..<e]).argmax(dim: 1) .== yTest[s..<e]).sum().item()
            }
        }
        accuracy = correct / Double(xTest.shape[0])
        print(String(cFormat: "# Fashion-MNIST CNN on CUDA, epoch %d: test accuracy %.4f, %.2f s", epoch, accuracy, seconds))
    }
    report("Fashion-MNIST CNN on CUDA: test accuracy after 3 epochs >= 0.90", accuracy >= 0.90, String(cFormat: "%.4f", accuracy))
    print(String(cFormat: "BENCH Fashion-MNIST CNN epoch batch 64 Adam data on the GPU: %.2f s", best))
}

/// Issue 26's "every TorchVision model trains and evaluates on CUDA": each model of the registry (10 classes, at
/// its smallest input or 64×64) takes one SGD step on two images in train mode and then an eval forward, on each
/// device from the same weights; loss, logits and the first parameter's gradient must agree. On the emulator only
/// the three smallest run (`quick`), the GEMMs there being plain loops.
func runModelZooChecks(quick: Bool) {
    let names = quick ? ["mobilenet_v3_small", "shufflenet_v2_x1_0", "squeezenet1_1"] : models.listModels()
    for name in names {
        guard let entry = models.entry(named: name) else { continue }
        let side = max(entry.minSize, 64)
        func run(_ device: Device) -> [Tensor] {
            torch.manualSeed(5)
            guard let model = try? models.getModel(name, numClasses: 10) else { return [] }
            model.to(device)
            let x = torch.randn(2, 3, side, side).to(device), y = torch.tensor([1, 7]).to(device)
            model.train()
            // Dropout draws its masks from each device's own generator: off, so the devices compute the same.
            for m in model.modules() where m is nn.Dropout { m.eval() }
            let loss = F.crossEntropy(model(x), y)
            loss.backward()
            let grad = model.parameters()[0].grad!.detach()
            model.eval()
            let logits = torch.noGrad { model(x) }
            return [loss.detach(), grad, logits]
        }
        let g = run(cuda), c = run(.cpu)
        guard g.count == 3, c.count == 3 else { report("\(name) on CUDA", false, "could not build"); continue }
        // Train-mode BatchNorm over two images magnifies rounding differences in the gradients (as in the ResNet
        // check), so gradients compare relative to their largest element.
        check("\(name) train step loss", tol: 1e-3, { g[0] }, { c[0] })
        let scale = max(1e-6, c[1].abs().max().item())
        check("\(name) first parameter's gradient (relative to its max)", tol: 1e-2, { g[1] / scale }, { c[1] / scale })
        check("\(name) eval logits", tol: 1e-3, { g[2] }, { c[2] })
    }
}
