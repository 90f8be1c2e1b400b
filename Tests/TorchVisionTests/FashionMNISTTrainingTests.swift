import XCTest
import Foundation
@testable import TorchVision
@testable import Torch
import TutorialModels

/// Tutorial 000's MLP trained for one epoch on the real Fashion-MNIST (issue 3, "Correctness"):
/// Examples/FashionMNISTMLP's network, loaders, loss and optimizer, then evaluation on the test set.
/// The epoch runs at lr 0.01, the first epoch of `fashion-mnist-mlp ROOT 20 5` (decay from epoch 5):
/// with the tutorial's decay at epoch 0 (lr 0.001) one epoch reaches only ≈ 0.79 in PyTorch too.
/// Skipped with a message when the dataset is not installed.
final class FashionMNISTTrainingTests: XCTestCase {
    private let root = "/usr/share/datasets/fashion-mnist"


    func testOneEpochReachesEightyPercent() throws {
        for file in ["train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                     "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]
        where !FileManager.default.fileExists(atPath: root + "/" + file) {
            throw XCTSkip("\(root)/\(file) is missing: install the Debian package dataset-fashion-mnist to run this test")
        }
        let start = Date()
        let transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize(mean: [0.5], std: [0.5])])
        let trainDataset = try datasets.FashionMNIST(root: root, train: true, transform: transform)
        let testDataset = try datasets.FashionMNIST(root: root, train: false, transform: transform)
        let trainLoader = DataLoader(trainDataset, batchSize: 64, shuffle: true, generator: Generator().manualSeed(0))
        let testLoader = DataLoader(testDataset, batchSize: 128, shuffle: false)

        torch.manualSeed(0)
        let model = TutorialMLP(28 * 28, 300, 100, 10)
        let criterion = nn.CrossEntropyLoss()
        let optimizer = optim.SGD(model.parameters(), lr: 0.01, momentum: 0.5)

        model.train()
        var trainLoss = 0.0
        for (img, label) in trainLoader {
            let out = model(img.view(img.size(0), -1))
            let loss = criterion(out, label)
            optimizer.zeroGrad()
            loss.backward()
            optimizer.step()
            trainLoss += loss.item()
        }
        model.eval()
        var correct = 0.0
        torch.noGrad {
            for (img, label) in testLoader {
                let (_, pred) = model(img.view(img.size(0), -1)).max(dim: 1)
                correct += (pred .== label).sum().item()
            }
        }
        let accuracy = correct / Double(testDataset.count)
        let seconds = Date().timeIntervalSince(start)
        print(String(format: "one Fashion-MNIST epoch: train loss %.4f, test accuracy %.4f, %.2f s",
                     trainLoss / Double(trainLoader.count), accuracy, seconds))
        XCTAssertTrue(trainLoss.isFinite)
        XCTAssertGreaterThanOrEqual(accuracy, 0.80, "test accuracy after one epoch")
    }
}
