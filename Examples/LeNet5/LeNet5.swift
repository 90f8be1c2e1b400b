// Tutorial 001's LeNet-5 program: two 5×5 convolutions with ReLU and 2×2 max pooling, then 400 → 120 → 84 → 10,
// CrossEntropyLoss, SGD (lr 0.001, momentum 0.9), batch 64, the per-epoch loss and the test accuracy.
// The tutorial trains on CIFAR-10, which cannot be downloaded here: this program uses Fashion-MNIST
// (`apt-get install dataset-fashion-mnist`), each 28×28 image padded to 32×32 so LeNet-5's shapes are the tutorial's,
// with one input channel instead of three.
//
//     swift run -c release lenet5 [--data-dir DIR] [--epochs N] [--device auto|cpu|cuda|cuda:N]
import ArgumentParser
import ExampleSupport
import Foundation
import Torch
import TorchVision

@main
struct LeNet5Example: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lenet5", abstract: "Tutorial 001: LeNet-5 trained on Fashion-MNIST (padded to 32×32).")

    @Option(help: ArgumentHelp("The Fashion-MNIST folder (apt-get install dataset-fashion-mnist).", valueName: "folder"))
    var dataDir = "/usr/share/datasets/fashion-mnist"

    @Option(help: "Number of epochs.")
    var epochs = 10

    @OptionGroup var placement: DeviceOption

    func validate() throws {
        guard epochs > 0 else { throw ValidationError("--epochs must be a positive integer (got \(epochs))") }
    }

    func run() throws {
        final class LeNet5: nn.Module {
            let features: nn.Sequential
            let classifier: nn.Sequential

            init(inChannels: Int = 3, numClasses: Int = 10) {
                features = nn.Sequential(
                    nn.Conv2d(inChannels, 6, kernelSize: 5),     // C1: 6@28×28
                    nn.ReLU(inplace: true),
                    nn.MaxPool2d(kernelSize: 2, stride: 2),      // S2: 6@14×14
                    nn.Conv2d(6, 16, kernelSize: 5),             // C3: 16@10×10
                    nn.ReLU(inplace: true),
                    nn.MaxPool2d(kernelSize: 2, stride: 2))      // S4: 16@5×5
                classifier = nn.Sequential(
                    nn.Linear(16 * 5 * 5, 120), nn.ReLU(inplace: true),   // C5
                    nn.Linear(120, 84), nn.ReLU(inplace: true),           // F6
                    nn.Linear(84, numClasses))                            // output
                super.init()
            }

            override func forward(_ input: Tensor) -> Tensor {
                let x = features(input)
                return classifier(x.view(x.size(0), -1))
            }
        }

        let device = try placement.device()
        let root = dataDir
        let numEpochs = epochs

        let transform = transforms.Compose([
            transforms.ToTensor(),
            transforms.Normalize(mean: [0.5], std: [0.5]),
            transforms.Lambda { F.pad($0, [2, 2, 2, 2], value: -1) },   // 28×28 → 32×32, padded with the background value
        ])
        let trainDataset: datasets.FashionMNIST, testDataset: datasets.FashionMNIST
        do {
            trainDataset = try datasets.FashionMNIST(root: root, train: true, transform: transform)
            testDataset = try datasets.FashionMNIST(root: root, train: false, transform: transform)
        } catch {
            print("cannot load Fashion-MNIST from \(root): \(error)\n(install it with: apt-get install dataset-fashion-mnist)")
            throw ExitCode.failure
        }
        print("LeNet-5 on Fashion-MNIST (28×28 padded to 32×32, 1 channel) from \(root); the tutorial uses CIFAR-10")
        let trainLoader = DataLoader(trainDataset, batchSize: 64, shuffle: true, pinMemory: device != .cpu)
        let testLoader = DataLoader(testDataset, batchSize: 64, shuffle: false, pinMemory: device != .cpu)

        torch.manualSeed(0)
        let model = LeNet5(inChannels: 1).to(device)
        let criterion = nn.CrossEntropyLoss()
        let optimizer = optim.SGD(model.parameters(), lr: 0.001, momentum: 0.9)

        for epoch in 0..<numEpochs {
            model.train()
            var epochLoss = 0.0
            let start = Date()
            for (cpuImages, cpuLabels) in trainLoader {
                let images = cpuImages.to(device), labels = cpuLabels.to(device)
                optimizer.zeroGrad()
                let outputs = model(images)
                let loss = criterion(outputs, labels)
                loss.backward()
                optimizer.step()
                epochLoss += loss.item()
            }
            print(String(format: "Epoch %d/%d, Loss: %.4f (%.1f s)", epoch + 1, numEpochs,
                         epochLoss / Double(trainLoader.count), Date().timeIntervalSince(start)))
        }

        model.eval()
        var correct = 0.0, total = 0.0
        torch.noGrad {
            for (cpuImages, cpuLabels) in testLoader {
                let images = cpuImages.to(device), labels = cpuLabels.to(device)
                let outputs = model(images)
                let (_, predicted) = torch.max(outputs, dim: 1)
                total += Double(labels.size(0))
                correct += (predicted .== labels).sum().item()
            }
        }
        print(String(format: "Test Accuracy: %.2f%%", 100 * correct / total))
    }
}
