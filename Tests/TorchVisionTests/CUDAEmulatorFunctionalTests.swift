import XCTest
@testable import Torch
@testable import TorchVision

/// Each of `transforms.functional`'s device paths on the CUDA host emulator against the CPU path, on float32
/// and uint8 images: the result must stay on the device, keep the CPU's shape and dtype, and agree within
/// float32 rounding (1e-5 relative) or, for uint8, at most 1 apart (a value on a rounding boundary). A device
/// image never reaches `PixelPlanes` (which stops for GPU tensors), so a path that still went through the host
/// would stop these tests.
final class CUDAEmulatorFunctionalTests: CUDAEmulatorVisionTestCase {
    private typealias TF = transforms.functional

    /// A float image in [0, 1] of `shape` and its uint8 twin, made on the CPU.
    private func images(_ shape: [Int] = [3, 12, 10], seed: UInt64 = 1) -> (Tensor, Tensor) {
        torch.manualSeed(seed)
        let x = torch.rand(shape)
        return (x, (x * 255).round().to(.uint8))
    }

    /// `f` of `input` on the CPU and of its CUDA copy: same shape and dtype, on the device, values within
    /// 1e-5 relative (floating) or 1 (integer).
    private func assertDeviceMatches(_ name: String, _ input: Tensor, file: StaticString = #filePath, line: UInt = #line,
                                     _ f: (Tensor) -> Tensor) {
        let c = f(input)
        let g = f(input.cuda())
        XCTAssertEqual(g.device, .cuda(0), "\(name): result on \(g.device)", file: file, line: line)
        XCTAssertEqual(g.shape, c.shape, name, file: file, line: line)
        XCTAssertEqual(g.dtype, c.dtype, name, file: file, line: line)
        guard g.shape == c.shape, c.numel > 0 else { return }
        let diff = (g.cpu().to(.float64) - c.to(.float64)).abs().max().item()
        let tol = c.dtype.isFloatingPoint ? 1e-5 * max(1, c.to(.float64).abs().max().item()) : 1
        XCTAssertLessThanOrEqual(diff, tol, "\(name) \(input.dtype): max |gpu − cpu| \(diff)", file: file, line: line)
    }

    /// Runs `f` on the float image and on its uint8 twin.
    private func assertBothDTypes(_ name: String, _ shape: [Int] = [3, 12, 10], file: StaticString = #filePath,
                                  line: UInt = #line, _ f: (Tensor) -> Tensor) {
        let (x, pixels) = images(shape)
        assertDeviceMatches(name, x, file: file, line: line, f)
        assertDeviceMatches(name, pixels, file: file, line: line, f)
    }

    func testResizeEveryModeOnTheDevice() {
        let modes: [transforms.InterpolationMode] = [.bilinear, .bicubic, .nearest, .nearestExact]
        for mode in modes {
            for antialias in [true, false] {
                let tag = "resize \(mode) antialias \(antialias)"
                assertBothDTypes("\(tag) down", [2, 3, 17, 13]) { TF.resize($0, [7, 5], interpolation: mode, antialias: antialias) }
                assertBothDTypes("\(tag) up") { TF.resize($0, [19, 23], interpolation: mode, antialias: antialias) }
                assertBothDTypes("\(tag) smaller edge") { TF.resize($0, [6], interpolation: mode, antialias: antialias) }
            }
        }
        assertBothDTypes("resized_crop", [3, 16, 16]) { TF.resizedCrop($0, 2, 3, 10, 9, [6, 7]) }
        assertBothDTypes("grey 2-D resize", [9, 11]) { TF.resize($0, [4, 5]) }
        assertDeviceMatches("float64 bicubic", images().0.to(.float64)) { TF.resize($0, [5, 4], interpolation: .bicubic) }
    }

    func testBlurAndColourOnTheDevice() {
        assertBothDTypes("gaussian_blur") { TF.gaussianBlur($0, kernelSize: [3, 5], sigma: [0.8, 1.4]) }
        assertBothDTypes("rgb_to_grayscale 1") { TF.rgbToGrayscale($0) }
        assertBothDTypes("rgb_to_grayscale 3", [2, 3, 6, 5]) { TF.rgbToGrayscale($0, numOutputChannels: 3) }
        for factor in [0.0, 0.6, 1.7] {
            assertBothDTypes("adjust_brightness \(factor)") { TF.adjustBrightness($0, factor) }
            assertBothDTypes("adjust_contrast \(factor)", [2, 3, 6, 5]) { TF.adjustContrast($0, factor) }
            assertBothDTypes("adjust_saturation \(factor)") { TF.adjustSaturation($0, factor) }
        }
        assertBothDTypes("adjust_contrast grey", [1, 8, 7]) { TF.adjustContrast($0, 0.5) }
        for factor in [-0.5, -0.27, 0.0, 0.13, 0.5] {
            assertBothDTypes("adjust_hue \(factor)", [2, 3, 7, 6]) { TF.adjustHue($0, factor) }
        }
        // Pure, grey and saturated pixels hit every hue sector and the max == min branch.
        let swatches = torch.tensor([[1.0, 0, 0, 1, 0.5, 0.2], [0.0, 1, 0, 1, 0.5, 0.9], [0.0, 0, 1, 0, 0.5, 0.9]]).float().view(3, 1, 6)
        assertDeviceMatches("adjust_hue swatches", swatches) { TF.adjustHue($0, 0.31) }
    }

    func testToneOnTheDevice() {
        assertBothDTypes("invert") { TF.invert($0) }
        assertDeviceMatches("solarize float", images().0) { TF.solarize($0, 0.4) }
        assertDeviceMatches("solarize uint8", images().1) { TF.solarize($0, 100) }
        for bits in [0, 3, 8] { assertDeviceMatches("posterize \(bits)", images().1) { TF.posterize($0, bits) } }
        for gamma in [0.5, 2.2] { assertBothDTypes("adjust_gamma \(gamma)") { TF.adjustGamma($0, gamma, gain: 1.1) } }
        for factor in [0.0, 0.5, 2.0] { assertBothDTypes("adjust_sharpness \(factor)", [2, 3, 7, 6]) { TF.adjustSharpness($0, factor) } }
        // A flat plane keeps its value in autocontrast and its histogram in equalize.
        let (x, pixels) = images([3, 9, 8])
        _ = x[1].fill_(0.25)
        _ = pixels[1].fill_(77)
        assertDeviceMatches("autocontrast float", x) { TF.autocontrast($0) }
        assertDeviceMatches("autocontrast uint8", pixels) { TF.autocontrast($0) }
        assertDeviceMatches("equalize", pixels) { TF.equalize($0) }
        assertDeviceMatches("equalize batch", images([2, 3, 16, 16]).1) { TF.equalize($0) }
    }

    func testGeometryOnTheDevice() {
        for mode: transforms.InterpolationMode in [.nearest, .bilinear] {
            assertBothDTypes("rotate \(mode)") { TF.rotate($0, 33, interpolation: mode) }
            assertBothDTypes("rotate expand fill \(mode)") { TF.rotate($0, -20, interpolation: mode, expand: true, fill: [0.2, 0.5, 0.9]) }
            assertBothDTypes("affine \(mode)", [2, 3, 12, 10]) {
                TF.affine($0, angle: 12, translate: [2, -1], scale: 0.9, shear: [8, -4], interpolation: mode, fill: [0.7])
            }
            assertBothDTypes("perspective \(mode)") {
                TF.perspective($0, [[0, 0], [9, 0], [9, 11], [0, 11]], [[1, 2], [8, 0], [9, 10], [0, 9]], interpolation: mode,
                               fill: [1])
            }
        }
        torch.manualSeed(9)
        let displacement = (torch.rand([1, 12, 10, 2]) - 0.5) * 0.3
        assertBothDTypes("elastic_transform") { TF.elasticTransform($0, displacement, fill: [0.5]) }
        assertBothDTypes("elastic_transform device field") { TF.elasticTransform($0, displacement.to($0.device), interpolation: .nearest) }
    }

    /// The random geometry transforms and the augmentation policies compose the functionals: from the same
    /// seed they draw the same parameters and ops on both devices (the policies on uint8, as torchvision's
    /// posterize and equalize require).
    func testRandomTransformsAndPoliciesOnTheDevice() {
        let (x, pixels) = images([3, 16, 16])
        let cases: [(String, any transforms.Transform, Tensor)] = [
            ("RandomAffine", transforms.RandomAffine((-20, 20), translate: (0.1, 0.1), scale: (0.8, 1.1)), x),
            ("RandomPerspective", transforms.RandomPerspective(distortionScale: 0.4, p: 1), x),
            ("ElasticTransform", transforms.ElasticTransform(alpha: [20], sigma: [1.5]), x),
            ("RandAugment", transforms.RandAugment(), pixels),
            ("TrivialAugmentWide", transforms.TrivialAugmentWide(), pixels),
        ]
        for (name, t, input) in cases {
            for seed: UInt64 in [1, 2, 3] {
                assertDeviceMatches("\(name) seed \(seed)", input) { img in
                    torch.manualSeed(seed)
                    return t(img)
                }
            }
        }
    }

    /// The dense resampling matrix of a filter adds the taps that clamp onto the same source pixel, so every
    /// row keeps the filter's total weight.
    func testAxisFilterMatrixAddsClampedTaps() {
        let cubic = AxisFilter.interpolating(5, 9, cubic: true)
        let m = cubic.matrix(inputSize: 5, dtype: .float64, device: .cpu)
        XCTAssertEqual(m.shape, [9, 5])
        let rows = m.sum(dim: [1]).toArray(as: Double.self)
        for (o, total) in rows.enumerated() {
            let expected = cubic.weight[(o * 4)..<(o * 4 + 4)].reduce(0, +)
            XCTAssertEqual(total, expected, accuracy: 1e-12, "row \(o)")
        }
        // Output 0 of an upscale sits left of pixel 0: its three left taps are clamped onto pixel 0.
        XCTAssertEqual(Array(cubic.index[0..<4]), [0, 0, 0, 1])
        XCTAssertEqual(m[0, 0].item(), cubic.weight[0] + cubic.weight[1] + cubic.weight[2], accuracy: 1e-12)
        XCTAssertEqual(m[0, 1].item(), cubic.weight[3], accuracy: 1e-12)
    }
}
