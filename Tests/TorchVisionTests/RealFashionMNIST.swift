import XCTest
import Foundation
import TorchVision
import Torch

/// The real Fashion-MNIST from Debian's `dataset-fashion-mnist`, for the accuracy tests: skips with a message when
/// the files are missing, and runs one epoch of a train loop plus a test-set evaluation.
enum RealFashionMNIST {
    static let root = "/usr/share/datasets/fashion-mnist"

    /// Throws `XCTSkip` naming the missing file and the package that provides it.
    static func requireFiles() throws {
        for file in ["train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                     "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]
        where !FileManager.default.fileExists(atPath: root + "/" + file) {
            throw XCTSkip("\(root)/\(file) is missing: install the Debian package dataset-fashion-mnist to run this test")
        }
    }

    /// What one epoch gave: the mean training loss, the test accuracy and the seconds spent training.
    struct EpochResult {
        var trainLoss: Double
        var accuracy: Double
        var trainSeconds: Double
    }

    /// Trains `model` for one epoch (batch 64, shuffled with seed 0, images scaled to [-1, 1]) with `optimizer`,
    /// feeding each batch through `input` first, then measures the test accuracy in eval mode.
    static func trainOneEpoch(_ model: nn.Module, _ optimizer: optim.Optimizer, testBatchSize: Int,
                              input: @escaping (Tensor) -> Tensor = { $0 }) throws -> EpochResult {
        try requireFiles()
        let start = Date()
        let transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize(mean: [0.5], std: [0.5])])
        let trainDataset = try datasets.FashionMNIST(root: root, train: true, transform: transform)
        let testDataset = try datasets.FashionMNIST(root: root, train: false, transform: transform)
        let trainLoader = DataLoader(trainDataset, batchSize: 64, shuffle: true, generator: Generator().manualSeed(0))
        let testLoader = DataLoader(testDataset, batchSize: testBatchSize, shuffle: false)
        let criterion = nn.CrossEntropyLoss()

        model.train()
        var trainLoss = 0.0
        for (img, label) in trainLoader {
            optimizer.zeroGrad()
            let loss = criterion(model(input(img)), label)
            loss.backward()
            optimizer.step()
            trainLoss += loss.item()
        }
        let trainSeconds = Date().timeIntervalSince(start)
        model.eval()
        var correct = 0.0
        torch.noGrad {
            for (img, label) in testLoader {
                let (_, pred) = model(input(img)).max(dim: 1)
                correct += (pred .== label).sum().item()
            }
        }
        return EpochResult(trainLoss: trainLoss / Double(trainLoader.count), accuracy: correct / Double(testDataset.count),
                           trainSeconds: trainSeconds)
    }
}
