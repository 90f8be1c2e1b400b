import XCTest
@testable import Torch
import TorchVision

/// TorchVision's ResNet-18 on the CUDA host emulator against the CPU: convolutions, BatchNorm2d, max pooling,
/// residual additions, adaptive average pooling and every gradient on the device. In eval mode: with two 32×32
/// images, training-mode BatchNorm in the last stage normalises two values per channel, which turns rounding
/// differences into large gradient differences on any two devices.
final class CUDAEmulatorModelsTests: XCTestCase {
    override class func setUp() {
        super.setUp()
        CUDARuntime.useEmulator()
    }

    override class func tearDown() {
        CUDARuntime.stopEmulator()
        super.tearDown()
    }

    func testResNet18ForwardAndBackwardMatchTheCPU() {
        func step(_ device: Device) -> (loss: Double, logits: Tensor, grad: Tensor) {
            torch.manualSeed(3)
            let model = models.resnet18(numClasses: 10).to(device)
            model.eval()
            let x = torch.randn(2, 3, 32, 32).to(device), y = torch.tensor([3, 8]).to(device)
            let logits = model(x)
            let loss = F.crossEntropy(logits, y)
            loss.backward()
            return (loss.item(), logits.detach().cpu(), model.parameters()[0].grad!.cpu())
        }
        let g = step(.cuda(0)), c = step(.cpu)
        XCTAssertEqual(g.loss, c.loss, accuracy: 1e-5)
        XCTAssertLessThan((g.logits - c.logits).abs().max().item(), 1e-4)
        XCTAssertLessThan((g.grad - c.grad).abs().max().item(), 1e-4 * max(1, c.grad.abs().max().item()))
    }
}
