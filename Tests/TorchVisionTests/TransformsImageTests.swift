import XCTest
@testable import TorchVision
@testable import Torch

/// Transforms on PIL-style `Image`s against torchvision on PIL images (Pillow's resampling, warps and
/// enhancers): exact.
final class TransformsImageTests: XCTestCase {
    private var photo: Image { Image(tensor: TransformsFixture.image) }

    private func run(_ name: String) -> Tensor {
        func pixels(_ t: any transforms.Transform) -> Tensor { (t(photo) as Image).tensor() }
        switch name {
        case "grayscale": return pixels(transforms.Grayscale())
        case "grayscale3": return pixels(transforms.Grayscale(3))
        case "hflip": return pixels(transforms.RandomHorizontalFlip(p: 1))
        case "center_crop": return pixels(transforms.CenterCrop([10, 12]))
        case "pad_reflect": return pixels(transforms.Pad([1, 2], paddingMode: .reflect))
        case "resize_bilinear": return pixels(transforms.Resize([9, 13]))
        case "resize_up_bicubic": return pixels(transforms.Resize([25, 31], interpolation: .bicubic))
        case "resize_nearest": return pixels(transforms.Resize(12, interpolation: .nearest))
        case "brightness": return pixels(transforms.ColorJitter(brightnessRange: (1.3, 1.3)))
        case "rotate": return pixels(transforms.RandomRotation((30, 30), interpolation: .bilinear))
        case "rotate_nearest_expand": return pixels(transforms.RandomRotation((-40, -40), expand: true))
        case "rotate_center_fill":
            return pixels(transforms.RandomRotation((15, 15), interpolation: .bilinear, center: [5, 6], fill: [10, 20, 30]))
        case "affine": return pixels(transforms.RandomAffine(15, translate: (0.1, 0.1), scale: (0.9, 1.1), shear: [5], interpolation: .bilinear))
        case "affine_nearest": return pixels(transforms.RandomAffine(25, shear: [-5, 5, -8, 8]))
        case "perspective": return pixels(transforms.RandomPerspective(p: 1))
        case "perspective_nearest": return pixels(transforms.RandomPerspective(p: 1, interpolation: .nearest, fill: [50]))
        case "resize_down_bicubic": return pixels(transforms.Resize(7, interpolation: .bicubic))
        case "resize_width_only": return pixels(transforms.Resize([17, 40]))
        case "random_resized_crop": return pixels(transforms.RandomResizedCrop(11))
        case "sharpness": return pixels(transforms.RandomAdjustSharpness(sharpnessFactor: 2.5, p: 1))
        case "blur_sharpness": return pixels(transforms.RandomAdjustSharpness(sharpnessFactor: 0.2, p: 1))
        case "autocontrast": return pixels(transforms.RandomAutocontrast(p: 1))
        case "equalize": return pixels(transforms.RandomEqualize(p: 1))
        case _ where name.hasPrefix("randaugment_"): return pixels(transforms.RandAugment(numOps: 3, magnitude: 12))
        case _ where name.hasPrefix("trivialaugment_"): return pixels(transforms.TrivialAugmentWide())
        case "jitter": return pixels(transforms.ColorJitter(brightness: 0.4, contrast: 0.4, saturation: 0.4, hue: 0.1))
        case "jitter2": return pixels(transforms.ColorJitter(brightness: 0.5, contrast: 0.6, saturation: 0.7, hue: 0.3))
        case "contrast": return pixels(transforms.ColorJitter(brightnessRange: nil, contrastRange: (1.7, 1.7)))
        case "contrast_low": return pixels(transforms.ColorJitter(brightnessRange: nil, contrastRange: (0.4, 0.4)))
        case "saturation": return pixels(transforms.ColorJitter(brightnessRange: nil, saturationRange: (1.6, 1.6)))
        case "saturation_low": return pixels(transforms.ColorJitter(brightnessRange: nil, saturationRange: (0.3, 0.3)))
        case "hue": return pixels(transforms.ColorJitter(brightnessRange: nil, hueRange: (0.2, 0.2)))
        case "hue_negative": return pixels(transforms.ColorJitter(brightnessRange: nil, hueRange: (-0.37, -0.37)))
        case "to_tensor": return transforms.ToTensor()(photo)
        case "to_pil_float": return transforms.functional.toPILImage(TransformsFixture.floatImage * 0.9).tensor()
        default: fatalError("unknown case \(name)")
        }
    }

    func testImagesMatchTorchvisionOnPILImages() {
        let cases = TransformsFixture.of("pil")
        XCTAssertEqual(cases.count, 41)
        for c in cases {
            let name = c["name"] as! String
            torch.manualSeed(UInt64(c["seed"] as? Int ?? 0))
            let expected = TransformsFixture.tensor(c["output"]!)
            let atol = expected.dtype.isFloatingPoint ? 1e-6 : 0
            assertImagesClose(run(name), expected, atol: atol, name)
        }
    }

    func testFunctionalOpsOnImagesAgreeWithTheTransforms() {
        let fixture = Dictionary(uniqueKeysWithValues: TransformsFixture.of("pil").map { ($0["name"] as! String, TransformsFixture.tensor($0["output"]!)) })
        typealias TF = transforms.functional
        assertImagesClose(TF.rotate(photo, 30, interpolation: .bilinear).tensor(), fixture["rotate"]!, atol: 0, "rotate")
        assertImagesClose(TF.rotate(photo, -40, expand: true).tensor(), fixture["rotate_nearest_expand"]!, atol: 0, "rotate expand")
        assertImagesClose(TF.resize(photo, [12], interpolation: .nearest).tensor(), fixture["resize_nearest"]!, atol: 0, "resize")
        assertImagesClose(TF.centerCrop(photo, [10, 12]).tensor(), fixture["center_crop"]!, atol: 0, "center crop")
        assertImagesClose(TF.hflip(photo).tensor(), fixture["hflip"]!, atol: 0, "hflip")
        assertImagesClose(TF.adjustBrightness(photo, 1.3).tensor(), fixture["brightness"]!, atol: 0, "brightness")
        XCTAssertEqual(TF.rotate(photo, 180).tensor().toArray(as: UInt8.self),
                       TransformsFixture.image.flip(1, 2).contiguous().toArray(as: UInt8.self))
    }

    func testPipelinesFromImageToTensor() {
        let t = transforms.Compose([transforms.Resize(12), transforms.CenterCrop(10), transforms.ToTensor(),
                                    transforms.Normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5])])
        let x: Tensor = t(photo)
        XCTAssertEqual(x.shape, [3, 10, 10])
        XCTAssertEqual(x.dtype, .float32)
        let direct = transforms.ToTensor()(photo)
        XCTAssertEqual(direct.shape, [3, 17, 23])
        XCTAssertEqual(transforms.PILToTensor()(photo).toArray(as: UInt8.self), TransformsFixture.image.toArray(as: UInt8.self))
        let picture = transforms.ToPILImage()(TransformsFixture.floatImage)
        XCTAssertEqual(picture.mode, .RGB)
        XCTAssertEqual(picture.size.width, 23)
        let grey: Image = transforms.Compose([transforms.Grayscale(), transforms.RandomHorizontalFlip(p: 1)])(photo)
        XCTAssertEqual(grey.mode, .L)
        XCTAssertEqual(transforms.ToPILImage(mode: .L).description, "ToPILImage(mode=L)")
        let crops: Tensor = transforms.Compose([transforms.FiveCrop(6), transforms.ConvertImageDtype(.float32)])(photo)
        XCTAssertEqual(crops.shape, [5, 3, 6, 6])
        assertImagesClose(crops[4], transforms.ToTensor()(transforms.functional.centerCrop(photo, [6])), atol: 1e-7)
        let asFloat: Tensor = transforms.Lambda { $0.to(.float32) }(photo)
        XCTAssertEqual(asFloat.dtype, .float32)
        let inverted: Image = transforms.Lambda { 255 - $0 }(photo)
        XCTAssertEqual(inverted.getpixel(0, 0).map { 255 - Int($0) }, photo.getpixel(0, 0).map { Int($0) })
    }
}
