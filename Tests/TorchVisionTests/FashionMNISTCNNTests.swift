import XCTest
import Foundation
import TorchVision
import Torch
import TutorialModels

/// Issue 9's accuracy target: the CNN of 2 conv + BatchNorm + max-pool and 2 linear layers (TutorialModels.FashionCNN),
/// Adam 1e-3, batch 64, reaches ≥ 0.87 test accuracy on the real Fashion-MNIST after one epoch (PyTorch's same
/// program: 0.88). Skipped with a message when the dataset is not installed; run it in a release build.
final class FashionMNISTCNNTests: XCTestCase {
    private let root = "/usr/share/datasets/fashion-mnist"

    func testOneEpochReachesEightySevenPercent() throws {
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
        let testLoader = DataLoader(testDataset, batchSize: 256, shuffle: false)

        torch.manualSeed(0)
        let model = FashionCNN()
        let criterion = nn.CrossEntropyLoss()
        let optimizer = optim.Adam(model.parameters(), lr: 1e-3)

        model.train()
        var trainLoss = 0.0
        for (img, label) in trainLoader {
            optimizer.zeroGrad()
            let loss = criterion(model(img), label)
            loss.backward()
            optimizer.step()
            trainLoss += loss.item()
        }
        let trainSeconds = Date().timeIntervalSince(start)
        model.eval()
        var correct = 0.0
        torch.noGrad {
            for (img, label) in testLoader {
                let (_, pred) = model(img).max(dim: 1)
                correct += (pred .== label).sum().item()
            }
        }
        let accuracy = correct / Double(testDataset.count)
        print(String(format: "FashionCNN, one Fashion-MNIST epoch: train loss %.4f, test accuracy %.4f, %.1f s training",
                     trainLoss / Double(trainLoader.count), accuracy, trainSeconds))
        XCTAssertTrue(trainLoss.isFinite)
        XCTAssertGreaterThanOrEqual(accuracy, 0.87, "test accuracy after one epoch")
    }
}
