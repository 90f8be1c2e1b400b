import XCTest
import Foundation
import TorchVision
import Torch
import TutorialModels

/// Tutorial 000's MLP trained for one epoch on the real Fashion-MNIST (issue 3, "Correctness"):
/// Examples/FashionMNISTMLP's network, loaders, loss and optimizer, then evaluation on the test set.
/// The epoch runs at lr 0.01, the first epoch of `fashion-mnist-mlp ROOT 20 5` (decay from epoch 5):
/// with the tutorial's decay at epoch 0 (lr 0.001) one epoch reaches only ≈ 0.79 in PyTorch too.
/// Skipped with a message when the dataset is not installed.
final class FashionMNISTTrainingTests: XCTestCase {
    func testOneEpochReachesEightyPercent() throws {
        try RealFashionMNIST.requireFiles()
        torch.manualSeed(0)
        let model = TutorialMLP(28 * 28, 300, 100, 10)
        let optimizer = optim.SGD(model.parameters(), lr: 0.01, momentum: 0.5)
        let r = try RealFashionMNIST.trainOneEpoch(model, optimizer, testBatchSize: 128) { $0.view($0.size(0), -1) }
        print(String(format: "one Fashion-MNIST epoch: train loss %.4f, test accuracy %.4f, %.2f s",
                     r.trainLoss, r.accuracy, r.trainSeconds))
        XCTAssertTrue(r.trainLoss.isFinite)
        XCTAssertGreaterThanOrEqual(r.accuracy, 0.80, "test accuracy after one epoch")
    }
}
