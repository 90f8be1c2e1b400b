// Tutorial 000: the 784-300-100-10 MLP with BatchNorm1d on Fashion-MNIST (the tutorial used MNIST;
// Fashion-MNIST is its drop-in replacement), CrossEntropyLoss, SGD momentum 0.5, the learning rate
// divided by 10 every 5 epochs through param_groups, 20 epochs, the tutorial's printed lines.
// Data: `apt-get install dataset-fashion-mnist` (/usr/share/datasets/fashion-mnist), or pass --data-dir.
//   swift run -c release fashion-mnist-mlp [--data-dir DIR] [--epochs N] [--decay-start E] [--device auto|cpu|cuda|cuda:N]
import ArgumentParser
import ExampleSupport
import Foundation
import Torch
import TorchVision

@main
struct FashionMNISTMLP: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fashion-mnist-mlp", abstract: "Tutorial 000: the 784-300-100-10 MLP with BatchNorm1d on Fashion-MNIST.")

    @Option(help: ArgumentHelp("The Fashion-MNIST folder (apt-get install dataset-fashion-mnist).", valueName: "folder"))
    var dataDir = "/usr/share/datasets/fashion-mnist"

    @Option(help: "Number of epochs.")
    var epochs = 20

    @Option(help: "The first epoch whose learning rate is divided by 10, then every 5th (the tutorial: 0, 5, 10, 15).")
    var decayStart = 0

    @OptionGroup var placement: DeviceOption

    func validate() throws {
        guard epochs > 0 else { throw ValidationError("--epochs must be a positive integer (got \(epochs))") }
    }

    func run() throws {
        let device = try placement.device()
        let root = dataDir
        let numEpochs = epochs
        let trainBatchSize = 64, testBatchSize = 128, lr = 0.01, momentum = 0.5

        let transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize(mean: [0.5], std: [0.5])])
        let trainDataset: datasets.FashionMNIST
        let testDataset: datasets.FashionMNIST
        do {
            trainDataset = try datasets.FashionMNIST(root: root, train: true, transform: transform)
            testDataset = try datasets.FashionMNIST(root: root, train: false, transform: transform)
        } catch {
            print("cannot load Fashion-MNIST from \(root): \(error)\n(install it with: apt-get install dataset-fashion-mnist)")
            throw ExitCode.failure
        }
        let trainLoader = DataLoader(trainDataset, batchSize: trainBatchSize, shuffle: true, pinMemory: device != .cpu)
        let testLoader = DataLoader(testDataset, batchSize: testBatchSize, shuffle: false, pinMemory: device != .cpu)

        final class Net: nn.Module {
            let layer1: nn.Sequential, layer2: nn.Sequential, layer3: nn.Sequential
            init(_ inDim: Int, _ h1: Int, _ h2: Int, _ outDim: Int) {
                layer1 = nn.Sequential(nn.Linear(inDim, h1), nn.BatchNorm1d(h1))
                layer2 = nn.Sequential(nn.Linear(h1, h2), nn.BatchNorm1d(h2))
                layer3 = nn.Sequential(nn.Linear(h2, outDim))
                super.init()
            }
            override func forward(_ x: Tensor) -> Tensor {
                layer3(F.relu(layer2(F.relu(layer1(x)))))
            }
        }

        torch.manualSeed(0)
        let model = Net(28 * 28, 300, 100, 10).to(device)
        let criterion = nn.CrossEntropyLoss()
        let optimizer = optim.SGD(model.parameters(), lr: lr, momentum: momentum)

        for epoch in 0..<numEpochs {
            var trainLoss = 0.0, trainAcc = 0.0
            model.train()
            if epoch >= decayStart && (epoch - decayStart) % 5 == 0 { optimizer.paramGroups[0].lr *= 0.1 }
            for (cpuImg, cpuLabel) in trainLoader {
                let img = cpuImg.to(device), label = cpuLabel.to(device)
                let flat = img.view(img.size(0), -1)
                let out = model(flat)
                let loss = criterion(out, label)
                optimizer.zeroGrad()
                loss.backward()
                optimizer.step()
                trainLoss += loss.item()
                let (_, pred) = out.max(dim: 1)
                trainAcc += (pred .== label).sum().item() / Double(img.shape[0])
            }
            var evalLoss = 0.0, evalAcc = 0.0
            model.eval()
            torch.noGrad {
                for (cpuImg, cpuLabel) in testLoader {
                    let img = cpuImg.to(device), label = cpuLabel.to(device)
                    let out = model(img.view(img.size(0), -1))
                    evalLoss += criterion(out, label).item()
                    let (_, pred) = out.max(dim: 1)
                    evalAcc += (pred .== label).sum().item() / Double(img.shape[0])
                }
            }
            let nTrain = Double(trainLoader.count), nTest = Double(testLoader.count)
            print(String(format: "epoch: %d, Train Loss: %.4f, Train Acc: %.4f, Test Loss: %.4f, Test Acc: %.4f",
                         epoch, trainLoss / nTrain, trainAcc / nTrain, evalLoss / nTest, evalAcc / nTest))
        }
    }
}
