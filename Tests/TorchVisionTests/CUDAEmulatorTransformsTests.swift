import XCTest
@testable import Torch
@testable import TorchVision

/// TorchVision's tensor transforms on CUDA tensors (the CUDA host emulator): each gives the CPU's result on the
/// device, with the same random draws from the same seed, one image at a time and batch-wise, so a data
/// pipeline can finish on the GPU as torchvision's v2 transforms let it. The functionals' device paths are
/// compared one by one in `CUDAEmulatorFunctionalTests`.
final class CUDAEmulatorTransformsTests: CUDAEmulatorVisionTestCase {

    /// A 3×H×W float image in [0, 1] and its uint8 twin, made on the CPU.
    private func images(_ h: Int = 12, _ w: Int = 10, seed: UInt64 = 1) -> (Tensor, Tensor) {
        torch.manualSeed(seed)
        let x = torch.rand(3, h, w)
        return (x, (x * 255).round().to(.uint8))
    }

    /// `t` on the CPU and on the device from the same seed; the device's result must stay there and match.
    private func assertSameOnDevice(_ name: String, _ t: any transforms.Transform, _ input: Tensor, tol: Double = 1e-5,
                                    batch: Bool = false, file: StaticString = #filePath, line: UInt = #line) {
        func run(_ x: Tensor) -> Tensor? {
            torch.manualSeed(77)
            return batch ? t.applyToBatch(x) : t(x)
        }
        guard let c = run(input) else { return XCTFail("\(name): no batch form", file: file, line: line) }
        guard let g = run(input.cuda()) else { return XCTFail("\(name): no batch form on CUDA", file: file, line: line) }
        XCTAssertEqual(g.device, .cuda(0), "\(name): result on \(g.device)", file: file, line: line)
        XCTAssertEqual(g.shape, c.shape, name, file: file, line: line)
        XCTAssertEqual(g.dtype, c.dtype, name, file: file, line: line)
        guard g.shape == c.shape else { return }
        let diff = (g.cpu().to(.float64) - c.to(.float64)).abs().max().item()
        XCTAssertLessThanOrEqual(diff, tol * max(1, c.to(.float64).abs().max().item()), "\(name): max |gpu − cpu| \(diff)",
                                 file: file, line: line)
    }

    func testGeometryAndNormalisation() {
        let (x, _) = images()
        let cases: [(String, any transforms.Transform)] = [
            ("Normalize", transforms.Normalize([0.5, 0.4, 0.3], [0.2, 0.25, 0.3])),
            ("CenterCrop", transforms.CenterCrop([6, 8])),
            ("Pad constant", transforms.Pad(2)),
            ("Pad reflect", transforms.Pad([1, 2], paddingMode: .reflect)),
            ("RandomCrop padded", transforms.RandomCrop(8, padding: 2)),
            ("RandomHorizontalFlip", transforms.RandomHorizontalFlip(p: 1)),
            ("RandomVerticalFlip", transforms.RandomVerticalFlip(p: 1)),
            ("Resize bilinear", transforms.Resize([7, 9])),
            ("RandomResizedCrop", transforms.RandomResizedCrop(8)),
            ("ConvertImageDtype", transforms.ConvertImageDtype(.float64)),
        ]
        for (name, t) in cases { assertSameOnDevice(name, t, x) }
    }

    func testColourAndErasing() {
        let (x, pixels) = images()
        let cases: [(String, any transforms.Transform, Tensor)] = [
            ("ColorJitter", transforms.ColorJitter(brightness: 0.4, contrast: 0.4, saturation: 0.4, hue: 0.1), x),
            ("Grayscale", transforms.Grayscale(3), x),
            ("GaussianBlur", transforms.GaussianBlur([3, 5], sigma: 1.5), x),
            ("RandomErasing", transforms.RandomErasing(p: 1), x),
            ("RandomInvert", transforms.RandomInvert(p: 1), x),
            ("RandomSolarize", transforms.RandomSolarize(threshold: 0.5, p: 1), x),
            ("RandomAdjustSharpness", transforms.RandomAdjustSharpness(sharpnessFactor: 2, p: 1), x),
            ("RandomAutocontrast", transforms.RandomAutocontrast(p: 1), x),
            ("RandomPosterize uint8", transforms.RandomPosterize(bits: 3, p: 1), pixels),
            ("RandomEqualize uint8", transforms.RandomEqualize(p: 1), pixels),
        ]
        for (name, t, input) in cases { assertSameOnDevice(name, t, input, tol: 1e-4) }
    }

    func testBatchWiseRandomCropsAndFlips() {
        torch.manualSeed(3)
        let batch = torch.rand(6, 3, 12, 12)
        let cases: [(String, any transforms.Transform)] = [
            ("RandomCrop + RandomHorizontalFlip", transforms.Compose([transforms.RandomCrop(10, padding: 2),
                                                                     transforms.RandomHorizontalFlip()])),
            ("RandomCrop with fill, vertical flip, Normalize",
             transforms.Compose([transforms.RandomCrop([8, 11], padding: [1, 3], fill: 0.5), transforms.RandomVerticalFlip(),
                                 transforms.Normalize([0.5, 0.4, 0.3], [0.2, 0.25, 0.3])])),
            ("CenterCrop, RandomResizedCrop-free batch", transforms.Compose([transforms.CenterCrop(9),
                                                                            transforms.RandomHorizontalFlip(p: 1)])),
            ("Normalize", transforms.Normalize([0.5, 0.4, 0.3], [0.2, 0.25, 0.3])),
        ]
        for (name, t) in cases { assertSameOnDevice(name, t, batch, batch: true) }
    }

    /// A whole pipeline finishing on the GPU: Resize → ColorJitter → Normalize on a CUDA image gives the CPU's
    /// result (float32 within 1e-5 relative; a uint8 image's values may land 1 apart before the conversion).
    func testResizeColorJitterNormalizePipeline() {
        let (x, pixels) = images(20, 16)
        let jitter = transforms.ColorJitter(brightness: 0.4, contrast: 0.4, saturation: 0.4, hue: 0.1)
        let normalize = transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
        assertSameOnDevice("float32 pipeline", transforms.Compose([transforms.Resize([12, 10]), jitter, normalize]), x)
        let bytes = transforms.Compose([transforms.Resize([12, 10]), jitter, transforms.ConvertImageDtype(.float32), normalize])
        assertSameOnDevice("uint8 pipeline", bytes, pixels, tol: 1.0 / 255 / 0.224 + 1e-5)
    }

    /// Random erasing with noise draws the noise on the device: the result stays there and only one
    /// C×h×w region changes.
    func testRandomErasingNoiseIsDrawnOnTheDevice() {
        let img = torch.full([3, 12, 10], 5.0).cuda()
        torch.manualSeed(5)
        let out = transforms.RandomErasing(p: 1, scale: (0.1, 0.3), value: nil)(img)
        XCTAssertEqual(out.device, .cuda(0))
        XCTAssertEqual(out.shape, [3, 12, 10])
        let changed = (out .!= 5.0).cpu().to(.int64)
        let perChannel = changed.sum(dim: [1, 2]).toArray(as: Int64.self)
        XCTAssertGreaterThan(perChannel[0], 0)
        XCTAssertEqual(Set(perChannel).count, 1, "every channel erased in the same region: \(perChannel)")
        let rows = changed[0].amax(dim: [1]).sum().item(as: Int.self), cols = changed[0].amax(dim: [0]).sum().item(as: Int.self)
        XCTAssertEqual(Int(perChannel[0]), rows * cols, "one rectangle")
    }

    /// A transform without a device path stops with the backend's one-line error, never a host copy.
    func testNoDevicePathStopsWithNotImplemented() {
        let img = torch.zeros(3, 4, 4).cuda()
        let message = DeviceImage.notImplementedMessage("draw_bounding_boxes", img)
        XCTAssertTrue(message.hasPrefix("NotImplementedError: \"draw_bounding_boxes\" has no 'CUDA' path"), message)
        XCTAssertTrue(message.contains("cuda:0") && message.contains(".cpu()"), message)
        XCTAssertFalse(message.contains("\n"))
        XCTAssertTrue(DeviceImage.isOnDevice(img))
        XCTAssertFalse(DeviceImage.isOnDevice(img.cpu()))
    }
}
