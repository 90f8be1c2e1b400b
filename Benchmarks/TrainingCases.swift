// Training cases (issue 3, "Speed"): tutorial 000's MLP train step with SGD and with Adam, one Fashion-MNIST
// epoch of that MLP through DataLoader, and tutorial 003's two-layer Adam step. Twins in scripts/bench_pytorch.py.
import Foundation
import Torch
import TorchVision
import TutorialModels


/// Where the Fashion-MNIST IDX files are (Debian package dataset-fashion-mnist).
let fashionMNISTRoot = "/usr/share/datasets/fashion-mnist"

/// One train step of the tutorial MLP on a fixed batch of 64 (`randn` images, `randint` labels):
/// forward, CrossEntropyLoss, zero_grad, backward, step; ms per step.
func mlpStepCase(adam: Bool) -> (BenchSettings) -> BenchResult {
    return { s in
        let model = TutorialMLP(28 * 28, 300, 100, 10)
        let x = torch.randn(64, 28 * 28), y = torch.randint(0, 10, [64])
        let criterion = nn.CrossEntropyLoss()
        let optimizer: optim.Optimizer = adam ? optim.Adam(model.parameters(), lr: 1e-3)
                                              : optim.SGD(model.parameters(), lr: 0.01, momentum: 0.5)
        model.train()
        let t = measure(s) { iters in
            for _ in 0..<iters {
                let loss = criterion(model(x), y)
                optimizer.zeroGrad()
                loss.backward()
                optimizer.step()
            }
        }
        return .millis(t)
    }
}

/// One training epoch of the tutorial: Fashion-MNIST (ToTensor + Normalize(0.5, 0.5)) through
/// DataLoader(batch 64, shuffle), the tutorial's loop body (loss.item() and the accuracy count included);
/// seconds per epoch. Skipped when the dataset is not installed.
func mlpEpochCase(_ s: BenchSettings) -> BenchResult {
    let transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize(mean: [0.5], std: [0.5])])
    guard let train = try? datasets.FashionMNIST(root: fashionMNISTRoot, train: true, transform: transform) else {
        return .skip("\(fashionMNISTRoot) has no Fashion-MNIST (apt-get install dataset-fashion-mnist)")
    }
    let loader = DataLoader(train, batchSize: 64, shuffle: true)
    let model = TutorialMLP(28 * 28, 300, 100, 10)
    let criterion = nn.CrossEntropyLoss()
    let optimizer = optim.SGD(model.parameters(), lr: 0.01, momentum: 0.5)
    model.train()
    var trainLoss = 0.0, trainAcc = 0.0
    let t = measure(s) { iters in
        for _ in 0..<iters {
            for (img, label) in loader {
                let out = model(img.view(img.size(0), -1))
                let loss = criterion(out, label)
                optimizer.zeroGrad()
                loss.backward()
                optimizer.step()
                trainLoss += loss.item()
                let (_, pred) = out.max(dim: 1)
                trainAcc += (pred .== label).sum().item() / Double(img.shape[0])
            }
        }
    }
    sink = torch.tensor([trainLoss, trainAcc])
    return .seconds(t)
}

/// Tutorial 003's optim way: x [64, 1000] → Linear(1000, 100, bias: false) → ReLU → Linear(100, 10, bias: false),
/// weights normal_, MSELoss(reduction: sum), Adam lr 1e-4; one step (forward, zero_grad, backward, step), ms.
func twoLayerAdamStepCase(_ s: BenchSettings) -> BenchResult {
    let x = torch.randn(64, 1000), y = torch.randn(64, 10)
    let model = nn.Sequential(nn.Linear(1000, 100, bias: false), nn.ReLU(), nn.Linear(100, 10, bias: false))
    nn.init_.normal_((model[0] as! nn.Linear).weight)
    nn.init_.normal_((model[2] as! nn.Linear).weight)
    let lossFn = nn.MSELoss(reduction: .sum)
    let optimizer = optim.Adam(model.parameters(), lr: 1e-4)
    let t = measure(s) { iters in
        for _ in 0..<iters {
            let loss = lossFn(model(x), y)
            optimizer.zeroGrad()
            loss.backward()
            optimizer.step()
        }
    }
    return .millis(t)
}

func registerTrainingCases() {
    register("mlp_step_sgd", "tutorial 000 MLP train step, batch 64, SGD momentum 0.5 (ms)", mlpStepCase(adam: false))
    register("mlp_step_adam", "tutorial 000 MLP train step, batch 64, Adam (ms)", mlpStepCase(adam: true))
    register("mlp_epoch", "tutorial 000 MLP, one Fashion-MNIST epoch through DataLoader batch 64 shuffle (s)", mlpEpochCase)
    register("twolayer_adam_step", "tutorial 003 64x1000 -> 100 -> 10, ReLU, MSELoss sum, Adam step (ms)",
             twoLayerAdamStepCase)
}
