import XCTest
import Foundation
import TorchVision
import Torch
import TutorialModels

/// Issue 9's accuracy target: the CNN of 2 conv + BatchNorm + max-pool and 2 linear layers (TutorialModels.FashionCNN),
/// Adam 1e-3, batch 64, reaches ≥ 0.87 test accuracy on the real Fashion-MNIST after one epoch (PyTorch's same
/// program: 0.88). Skipped with a message when the dataset is not installed; run it in a release build.
final class FashionMNISTCNNTests: XCTestCase {
    func testOneEpochReachesEightySevenPercent() throws {
        try RealFashionMNIST.requireFiles()
        torch.manualSeed(0)
        let model = FashionCNN()
        let r = try RealFashionMNIST.trainOneEpoch(model, optim.Adam(model.parameters(), lr: 1e-3), testBatchSize: 256)
        print(String(format: "FashionCNN, one Fashion-MNIST epoch: train loss %.4f, test accuracy %.4f, %.1f s training",
                     r.trainLoss, r.accuracy, r.trainSeconds))
        XCTAssertTrue(r.trainLoss.isFinite)
        XCTAssertGreaterThanOrEqual(r.accuracy, 0.87, "test accuracy after one epoch")
    }
}
