import XCTest
@testable import Torch
import TorchVision

/// TorchVision's ResNet-18 on the CUDA host emulator against the CPU: convolutions, BatchNorm2d, max pooling,
/// residual additions, adaptive average pooling and every gradient on the device. In eval mode: with two 32×32
/// images, training-mode BatchNorm in the last stage normalises two values per channel, which turns rounding
/// differences into large gradient differences on any two devices.
final class CUDAEmulatorModelsTests: CUDAEmulatorVisionTestCase {
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

    /// Models whose layers ResNet lacks (MobileNetV3's Hardswish, Hardsigmoid and squeeze-excitation, SqueezeNet's
    /// concatenations and ceil-mode pooling): one train-mode step's loss and first gradient, then eval logits, as on
    /// the CPU. (cuda-check runs every model of the registry on a GPU; the emulator's GEMMs are plain loops.)
    func testSmallModelsTrainAndEvaluateAsOnTheCPU() throws {
        for name in ["mobilenet_v3_small", "squeezenet1_1"] {
            func run(_ device: Device) throws -> [Tensor] {
                torch.manualSeed(5)
                let model = try models.getModel(name, numClasses: 10).to(device)
                // Dropout draws its masks from each device's own generator: off, so the devices compute the same.
                for m in model.modules() where m is nn.Dropout { m.eval() }
                let x = torch.randn(2, 3, 32, 32).to(device), y = torch.tensor([1, 7]).to(device)
                let loss = F.crossEntropy(model(x), y)
                loss.backward()
                let grad = model.parameters()[0].grad!.cpu()
                model.eval()
                return [loss.detach().cpu(), grad, torch.noGrad { model(x) }.cpu()]
            }
            let g = try run(.cuda(0)), c = try run(.cpu)
            XCTAssertEqual(g[0].item(), c[0].item(), accuracy: 1e-4 * max(1, abs(c[0].item())), "\(name) loss")
            XCTAssertLessThan((g[1] - c[1]).abs().max().item(), 1e-2 * max(1e-6, c[1].abs().max().item()), "\(name) gradient")
            XCTAssertLessThan((g[2] - c[2]).abs().max().item(), 1e-4 * max(1, c[2].abs().max().item()), "\(name) eval logits")
        }
    }

    /// The same under bfloat16 autocast on each device: convolutions and the classifier in bfloat16, BatchNorm
    /// and the residual additions on bfloat16 activations, the loss in float32, float32 gradients.
    func testResNet18UnderBFloat16AutocastMatchesTheCPUsAutocast() {
        func step(_ device: Device) -> (loss: Double, logits: Tensor, grad: Tensor) {
            torch.manualSeed(3)
            let model = models.resnet18(numClasses: 10).to(device)
            model.eval()
            let x = torch.randn(2, 3, 32, 32).to(device), y = torch.tensor([3, 8]).to(device)
            let (logits, loss) = torch.autocast(deviceType: device.type, dtype: .bfloat16) { () -> (Tensor, Tensor) in
                let logits = model(x)
                return (logits, F.crossEntropy(logits, y))
            }
            XCTAssertEqual(logits.dtype, .bfloat16)
            XCTAssertEqual(loss.dtype, .float32)
            loss.backward()
            let grad = model.parameters()[0].grad!
            XCTAssertEqual(grad.dtype, .float32)
            return (loss.item(), logits.detach().float().cpu(), grad.cpu())
        }
        let g = step(.cuda(0)), c = step(.cpu)
        // Twenty layers of bfloat16 rounding (2⁻⁸ each) in a different summation order on each device.
        XCTAssertEqual(g.loss, c.loss, accuracy: 0.05 * max(1, abs(c.loss)))
        XCTAssertLessThan((g.logits - c.logits).abs().max().item(), 0.1 * max(1, c.logits.abs().max().item()))
        XCTAssertLessThan((g.grad - c.grad).abs().max().item(), 0.2 * max(1e-3, c.grad.abs().max().item()))
    }
}

/// A TorchVision test case whose tests run on the CUDA host emulator (turned on for the class, off after it).
class CUDAEmulatorVisionTestCase: XCTestCase {
    override class func setUp() {
        super.setUp()
        CUDARuntime.useEmulator()
    }

    override class func tearDown() {
        CUDARuntime.stopEmulator()
        super.tearDown()
    }
}
