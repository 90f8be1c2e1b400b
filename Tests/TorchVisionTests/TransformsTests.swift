import XCTest
@testable import TorchVision
@testable import Torch

private typealias TF = transforms.functional

/// The transform classes against torchvision 0.29: random parameters for a seed (our generator replays
/// PyTorch's CPU stream, and each transform draws what torchvision draws, in the same order), outputs under a
/// seed, and reprs.
final class TransformsTests: XCTestCase {
    private var image: Tensor { TransformsFixture.image }

    private func doubles(_ a: Any) -> [Double] { (a as! [NSNumber]).map { $0.doubleValue } }

    func testRandomParametersMatchTorchvisionForTheSameSeed() {
        var checked = 0
        for c in TransformsFixture.of("params") {
            let seed = UInt64(c["seed"] as! Int)
            let p = c["params"] as! [Any]
            let name = c["name"] as! String
            torch.manualSeed(seed)
            switch name {
            case "RandomResizedCrop":
                let (i, j, h, w) = transforms.RandomResizedCrop.getParams(image, scale: (0.08, 1.0), ratio: (3.0 / 4, 4.0 / 3))
                XCTAssertEqual([i, j, h, w], p as! [Int], "\(name) seed \(seed)")
            case "RandomCrop":
                let (i, j, h, w) = transforms.RandomCrop.getParams(image, outputSize: [10, 12])
                XCTAssertEqual([i, j, h, w], p as! [Int], "\(name) seed \(seed)")
            case "RandomRotation":
                XCTAssertEqual(transforms.RandomRotation.getParams((-30, 30)), doubles(p)[0], accuracy: 1e-12)
            case "RandomAffine":
                let (a, t, s, sh) = transforms.RandomAffine.getParams(degrees: (-20, 20), translate: (0.1, 0.2), scaleRanges: (0.8, 1.2),
                                                                     shears: [-5, 5, -3, 3], imageSize: (23, 17))
                XCTAssertEqual(a, (p[0] as! NSNumber).doubleValue, accuracy: 1e-12)
                XCTAssertEqual([t.0, t.1], p[1] as! [Int])
                XCTAssertEqual(s, (p[2] as! NSNumber).doubleValue, accuracy: 1e-12)
                XCTAssertEqual(sh.0, doubles(p[3])[0], accuracy: 1e-12)
                XCTAssertEqual(sh.1, doubles(p[3])[1], accuracy: 1e-12)
            case "RandomPerspective":
                let (start, end) = transforms.RandomPerspective.getParams(width: 23, height: 17, distortionScale: 0.5)
                XCTAssertEqual(start, p[0] as! [[Int]])
                XCTAssertEqual(end, p[1] as! [[Int]], "\(name) seed \(seed)")
            case "ColorJitter":
                let (order, b, c, s, h) = transforms.ColorJitter.getParams(brightness: (0.6, 1.4), contrast: (0.7, 1.3),
                                                                          saturation: (0.5, 1.5), hue: (-0.1, 0.1))
                XCTAssertEqual(order, p[0] as! [Int])
                for (got, want) in zip([b!, c!, s!, h!], doubles(Array(p[1...]))) { XCTAssertEqual(got, want, accuracy: 1e-12) }
            case "RandomErasing":
                let (i, j, h, w, _) = transforms.RandomErasing.getParams(TransformsFixture.floatImage, scale: (0.02, 0.33),
                                                                         ratio: (0.3, 3.3), value: [0])
                XCTAssertEqual([i, j, h, w], p as! [Int], "\(name) seed \(seed)")
            case "GaussianBlur":
                XCTAssertEqual(transforms.GaussianBlur.getParams(0.1, 2.0), doubles(p)[0], accuracy: 1e-12)
            default:
                XCTFail("unknown params case \(name)")
            }
            checked += 1
        }
        XCTAssertEqual(checked, 16)
    }

    private func transform(_ name: String) -> any transforms.Transform {
        switch name {
        case "RandomHorizontalFlip": return transforms.RandomHorizontalFlip()
        case "RandomVerticalFlip": return transforms.RandomVerticalFlip()
        case "RandomResizedCrop": return transforms.RandomResizedCrop(12)
        case "RandomCrop": return transforms.RandomCrop(15, padding: 2, paddingMode: .reflect)
        case "RandomCrop_pad_if_needed": return transforms.RandomCrop([20, 25], padIfNeeded: true, fill: 9)
        case "RandomRotation": return transforms.RandomRotation(25)
        case "RandomAffine": return transforms.RandomAffine(15, translate: (0.1, 0.1), scale: (0.9, 1.1), shear: [5])
        case "RandomPerspective": return transforms.RandomPerspective(p: 1.0)
        case "ColorJitter": return transforms.ColorJitter(brightness: 0.4, contrast: 0.4, saturation: 0.4, hue: 0.1)
        case "RandomGrayscale": return transforms.RandomGrayscale(p: 0.5)
        case "RandomErasing": return transforms.RandomErasing(p: 1.0)
        case "GaussianBlur": return transforms.GaussianBlur(5, sigma: (0.1, 2.0))
        case "RandomApply": return transforms.RandomApply([transforms.RandomHorizontalFlip(p: 1.0)], p: 0.5)
        case "RandAugment": return transforms.RandAugment()
        case "RandAugment_bilinear_fill": return transforms.RandAugment(numOps: 3, magnitude: 15, interpolation: .bilinear, fill: [20, 40, 60])
        case "TrivialAugmentWide": return transforms.TrivialAugmentWide()
        case "RandomInvert": return transforms.RandomInvert()
        case "ElasticTransform": return transforms.ElasticTransform(alpha: 20, sigma: 1.5)
        case "ElasticTransform_nearest_fill":
            return transforms.ElasticTransform(alpha: [30, 10], sigma: [1, 0.5], interpolation: .nearest, fill: [10, 200, 30])
        case "RandomAdjustSharpness": return transforms.RandomAdjustSharpness(sharpnessFactor: 1.8)
        default: fatalError("unknown transform \(name)")
        }
    }

    func testSeededOutputsMatchTorchvision() {
        for c in TransformsFixture.of("forward") {
            let name = c["name"] as! String
            let t = transform(name)
            torch.manualSeed(UInt64(c["seed"] as! Int))
            let x = name == "RandomErasing" ? TransformsFixture.floatImage : image
            for (k, e) in (c["outputs"] as! [Any]).enumerated() {
                let expected = TransformsFixture.tensor(e)
                assertImagesClose(t(x), expected, atol: expected.dtype.isFloatingPoint ? 1e-5 : 1, "\(name) call \(k)")
            }
        }
    }

    func testComposeReprMatchesTorchvision() {
        let c = TransformsFixture.of("repr")[0]
        let t = transforms.Compose([
            transforms.Resize(32), transforms.Resize([20, 30], interpolation: .nearest, maxSize: nil, antialias: false),
            transforms.CenterCrop(10), transforms.RandomCrop(28, padding: 2),
            transforms.RandomCrop([20, 25], padIfNeeded: true, fill: 9, paddingMode: .edge), transforms.RandomResizedCrop(224),
            transforms.FiveCrop(4), transforms.TenCrop([4, 5], verticalFlip: true), transforms.RandomHorizontalFlip(),
            transforms.RandomVerticalFlip(p: 0.3), transforms.RandomRotation(25),
            transforms.RandomRotation((-10, 20), interpolation: .bilinear, expand: true, center: [3, 4], fill: [5]),
            transforms.RandomAffine(15, translate: (0.1, 0.1), scale: (0.9, 1.1), shear: [5]), transforms.RandomAffine(0),
            transforms.RandomPerspective(), transforms.ColorJitter(brightness: 0.4, contrast: 0.4, saturation: 0.4, hue: 0.1),
            transforms.ColorJitter(brightness: 0.5), transforms.Grayscale(), transforms.Grayscale(3), transforms.RandomGrayscale(),
            transforms.RandomErasing(), transforms.GaussianBlur(5, sigma: (0.1, 2.0)), transforms.GaussianBlur([3, 5], sigma: 1.5),
            transforms.Pad(2), transforms.Pad([1, 2], fill: 3, paddingMode: .reflect), transforms.ConvertImageDtype(.float32),
        ])
        let expected = c["lines"] as! [String]
        for (i, line) in t.transforms.map({ "\($0)" }).enumerated() {
            XCTAssertEqual(line, expected[i])
        }
        let tail: [any transforms.Transform] = [
            transforms.ToTensor(), transforms.Normalize([0.5], [0.5]),
            transforms.RandomApply([transforms.RandomHorizontalFlip(), transforms.CenterCrop(3)], p: 0.3),
            transforms.RandomChoice([transforms.RandomHorizontalFlip(), transforms.CenterCrop(3)]),
            transforms.RandomOrder([transforms.RandomHorizontalFlip(), transforms.CenterCrop(3)]),
            transforms.RandomInvert(), transforms.RandomPosterize(bits: 3), transforms.RandomSolarize(threshold: 128, p: 0.2),
            transforms.RandomAdjustSharpness(sharpnessFactor: 2), transforms.RandomAutocontrast(), transforms.RandomEqualize(p: 0.3),
            transforms.RandAugment(), transforms.TrivialAugmentWide(fill: [1, 2, 3]), transforms.ElasticTransform(),
        ]
        for (k, tr) in tail.enumerated() { XCTAssertEqual("\(tr)", expected[expected.count - tail.count + k]) }
    }

    func testRandomTransformsAreDeterministicUnderManualSeed() {
        let t = transforms.Compose([transforms.RandomResizedCrop(10), transforms.RandomHorizontalFlip(),
                                    transforms.ColorJitter(brightness: 0.3, hue: 0.1), transforms.RandomRotation(10)])
        torch.manualSeed(5)
        let a = t(image)
        torch.manualSeed(5)
        let b = t(image)
        XCTAssertEqual(a.toArray(as: Double.self), b.toArray(as: Double.self))
        XCTAssertEqual(a.shape, [3, 10, 10])
    }

    func testBatchedInputsTransformEveryImage() {
        let batch = torch.stack([image, TF.hflip(image)])
        let resized = TF.resize(batch, [9, 7])
        assertImagesClose(resized[1], TF.resize(TF.hflip(image), [9, 7]), atol: 0)
        XCTAssertEqual(transforms.Resize(8).applyToBatch(batch)?.shape, [2, 3, 8, 10])
        let rotated = TF.rotate(batch.to(.float32), 30, interpolation: .bilinear)
        assertImagesClose(rotated[0], TF.rotate(image.to(.float32), 30, interpolation: .bilinear), atol: 0)
        assertImagesClose(TF.adjustContrast(batch, 1.4)[1], TF.adjustContrast(TF.hflip(image), 1.4), atol: 0)
    }

    func testRandomContainersPickAndOrder() {
        let x = Tensor([1.0, 2, 3, 4], shape: [1, 1, 4])
        let add1 = transforms.Lambda { $0 + 1 }, double = transforms.Lambda { $0 * 2 }
        torch.manualSeed(0)
        for _ in 0..<5 {
            XCTAssertEqual(transforms.RandomChoice([add1, double], p: [0, 1])(x).toArray(as: Double.self), [2, 4, 6, 8])
            XCTAssertEqual(transforms.RandomApply([add1], p: 0)(x).toArray(as: Double.self), [1, 2, 3, 4])
            XCTAssertEqual(transforms.RandomApply([add1, double], p: 1)(x).toArray(as: Double.self), [4, 6, 8, 10])
        }
        // Both orders occur and each applies both transforms.
        var seen = Set<[Double]>()
        for _ in 0..<20 { seen.insert(transforms.RandomOrder([add1, double])(x).toArray(as: Double.self)) }
        XCTAssertEqual(seen, [[4, 6, 8, 10], [3, 5, 7, 9]])
        var picks = Set<[Double]>()
        for _ in 0..<20 { picks.insert(transforms.RandomChoice([add1, double])(x).toArray(as: Double.self)) }
        XCTAssertEqual(picks, [[2, 3, 4, 5], [2, 4, 6, 8]])
    }

    func testPicturesFlowThroughPipelinesUntilConverted() {
        let crop = transforms.Compose([transforms.CenterCrop(10), transforms.RandomHorizontalFlip(p: 1)])
        guard case .image(let pixels) = crop.apply(.image(image)) else { return XCTFail("expected a picture") }
        XCTAssertEqual(pixels.toArray(as: UInt8.self), TF.hflip(TF.centerCrop(image, [10])).contiguous().toArray(as: UInt8.self))
        let toTensor = transforms.Compose([transforms.CenterCrop(10), transforms.ToTensor(), transforms.Normalize([0.5], [0.5])])
        guard case .tensor(let x) = toTensor.apply(.image(image)) else { return XCTFail("expected a tensor") }
        assertImagesClose(x, (TF.centerCrop(image, [10]).to(.float32) / 255 - 0.5) / 0.5, atol: 0)
        guard case .tensor(let raw) = transforms.PILToTensor().apply(.image(image)) else { return XCTFail("expected a tensor") }
        XCTAssertEqual(raw.dtype, .uint8)
        // ToPILImage truncates float × 255, then the picture goes on through the next transforms.
        let back = transforms.Compose([transforms.ToPILImage(), transforms.Resize(8), transforms.PILToTensor()])
        let f = Tensor([0.5, 0.999, 0.2, 1.0], shape: [1, 2, 2])
        XCTAssertEqual(transforms.ToPILImage()(f).toArray(as: UInt8.self), [127, 254, 51, 255])
        XCTAssertEqual(back.apply(.tensor(TransformsFixture.floatImage)).value.shape, [3, 8, 10])
        XCTAssertEqual(transforms.PILToTensor()(image.permute(1, 2, 0)).toArray(as: UInt8.self), image.toArray(as: UInt8.self))
        XCTAssertEqual("\(transforms.ToPILImage(mode: .RGB))", "ToPILImage(mode=RGB)")
    }

    func testPaddingModesOnARow() {
        let row = Tensor([1.0, 2, 3, 4], shape: [1, 1, 4])
        func padded(_ mode: transforms.PaddingMode) -> [Double] { TF.pad(row, [2, 0], paddingMode: mode).toArray(as: Double.self) }
        XCTAssertEqual(padded(.constant), [0, 0, 1, 2, 3, 4, 0, 0])
        XCTAssertEqual(padded(.edge), [1, 1, 1, 2, 3, 4, 4, 4])
        XCTAssertEqual(padded(.reflect), [3, 2, 1, 2, 3, 4, 3, 2])
        XCTAssertEqual(padded(.symmetric), [2, 1, 1, 2, 3, 4, 4, 3])
    }

    func testTinyImagesDoNotBreakTheKernels() {
        let one = torch.full([3, 1, 1], 7.0, dtype: .uint8)
        for mode in [transforms.InterpolationMode.nearest, .nearestExact, .bilinear, .bicubic] {
            for aa in [true, false] {
                XCTAssertEqual(TF.resize(one, [3, 4], interpolation: mode, antialias: aa).toArray(as: Double.self),
                               [Double](repeating: 7, count: 36), "\(mode) antialias \(aa)")
            }
        }
        let five = torch.arange(25, dtype: .float32).view(1, 5, 5)
        XCTAssertEqual(TF.resize(five, [1, 1]).item(), 12, accuracy: 1e-5)
        XCTAssertEqual(TF.rotate(one, 33, interpolation: .bilinear).shape, [3, 1, 1])
        XCTAssertEqual(TF.crop(five, 1, 1, 0, 3).shape, [1, 0, 3])
        XCTAssertEqual(TF.pad(five, [0, 2], paddingMode: .symmetric).shape, [1, 9, 5])
        torch.manualSeed(3)
        XCTAssertEqual(transforms.RandomResizedCrop(4)(one).shape, [3, 4, 4])
    }

    func testResizeOutputSizes() {
        XCTAssertTrue(TF.resizedOutputSize(height: 17, width: 23, [12]) == (12, 16))
        XCTAssertTrue(TF.resizedOutputSize(height: 17, width: 23, [15], maxSize: 18) == (13, 18))
        XCTAssertTrue(TF.resizedOutputSize(height: 30, width: 20, [10]) == (15, 10))
    }
}
