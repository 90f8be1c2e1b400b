#if canImport(Glibc)
import Glibc
#endif
import Torch

private typealias TF = transforms.functional

extension transforms {
    /// The image operations of the automatic augmentation policies (torchvision's `_apply_op`):
    /// AutoAugment, RandAugment, TrivialAugmentWide and AugMix each pick from a list of them
    /// (`AugmentSpace.ops`) by position, so the lists keep torchvision's order.
    public enum AugmentOp: String, CaseIterable, Sendable {
        case identity = "Identity", shearX = "ShearX", shearY = "ShearY", translateX = "TranslateX", translateY = "TranslateY"
        case rotate = "Rotate", brightness = "Brightness", color = "Color", contrast = "Contrast", sharpness = "Sharpness"
        case posterize = "Posterize", solarize = "Solarize", autoContrast = "AutoContrast", equalize = "Equalize"
        case invert = "Invert"

        /// Applies the operation with `magnitude` (shear as a slope, translation in pixels, rotation in
        /// degrees, enhancement as `1 + magnitude`, posterize bits, solarize threshold) to an image tensor.
        public func apply(_ img: Tensor, magnitude: Double, interpolation: InterpolationMode, fill: [Double]?) -> Tensor {
            run(img, magnitude: magnitude, interpolation: interpolation, fill: fill)
        }

        /// Applies the operation to a PIL-style picture the way torchvision does for PIL images (Pillow's
        /// warps and enhancers; no `fill` means black).
        public func apply(_ img: Image, magnitude: Double, interpolation: InterpolationMode, fill: [Double]?) -> Image {
            run(img, magnitude: magnitude, interpolation: interpolation, fill: fill ?? [0])
        }

        /// Applies the operation to a picture or a tensor (whose `fill` is repeated for every channel).
        func apply(_ sample: Sample, magnitude: Double, interpolation: InterpolationMode, fill: [Double]?) -> Sample {
            switch sample {
            case .image(let pixels):
                return .image(apply(Image(tensor: pixels), magnitude: magnitude, interpolation: interpolation, fill: fill).tensor())
            case .tensor(let t):
                let c = TF.getDimensions(t)[0]
                return .tensor(apply(t, magnitude: magnitude, interpolation: interpolation, fill: fill.map { transforms.fillList($0, channels: c) }))
            }
        }

        /// The one table of what each operation does, for tensors and pictures alike.
        private func run<I: AugmentOperand>(_ img: I, magnitude: Double, interpolation: InterpolationMode, fill: I.Fill) -> I
        where I.Output == I {
            switch self {
            case .identity: return img
            case .shearX, .shearY:
                let degrees = atan(magnitude) * 180 / .pi
                return img.affine(translate: [0, 0], shear: self == .shearX ? [degrees, 0] : [0, degrees],
                                  interpolation: interpolation, fill: fill, center: [0, 0])
            case .translateX, .translateY:
                let t = Int(magnitude)
                return img.affine(translate: self == .translateX ? [t, 0] : [0, t], shear: [0, 0],
                                  interpolation: interpolation, fill: fill, center: nil)
            case .rotate: return img.rotate(magnitude, interpolation: interpolation, fill: fill)
            case .brightness: return img.enhanced(.brightness, 1 + magnitude)
            case .color: return img.enhanced(.saturation, 1 + magnitude)
            case .contrast: return img.enhanced(.contrast, 1 + magnitude)
            case .sharpness: return img.enhanced(.sharpness, 1 + magnitude)
            case .posterize: return img.toned(.posterize(Int(magnitude)))
            case .solarize: return img.toned(.solarize(magnitude))
            case .autoContrast: return img.toned(.autocontrast)
            case .equalize: return img.toned(.equalize)
            case .invert: return img.toned(.invert)
            }
        }
    }

    /// The operation lists and magnitude ranges of the automatic augmentation policies
    /// (torchvision's `_augmentation_space` of each class).
    public enum AugmentSpace: Sendable {
        /// AutoAugment's (with `Invert`) and RandAugment's (with `Identity`) ranges.
        case autoAugment, randAugment
        /// TrivialAugmentWide's wider ranges.
        case trivialAugmentWide
        /// AugMix's ranges; `allOps` adds brightness, colour, contrast and sharpness.
        case augMix(allOps: Bool)

        /// The operations in torchvision's order (a random index selects by position).
        public var ops: [AugmentOp] {
            let enhance: [AugmentOp] = [.brightness, .color, .contrast, .sharpness]
            let geometry: [AugmentOp] = [.shearX, .shearY, .translateX, .translateY, .rotate]
            let tone: [AugmentOp] = [.posterize, .solarize, .autoContrast, .equalize]
            switch self {
            case .autoAugment: return geometry + enhance + tone + [.invert]
            case .randAugment, .trivialAugmentWide: return [.identity] + geometry + enhance + tone
            case .augMix(let allOps): return geometry + tone + (allOps ? enhance : [])
            }
        }

        /// The `bins` magnitudes of `op` (float32 like torchvision's tables; empty for operations without
        /// one) and whether a random sign applies; `imageSize` (height, width) scales the translations.
        public func magnitudes(_ op: AugmentOp, bins: Int, imageSize: (Int, Int)) -> ([Double], Bool) {
            func linspace(_ a: Double, _ b: Double) -> [Double] {
                let (fa, fb) = (Float(a), Float(b))
                if bins == 1 { return [Double(fa)] }
                let step = (fb - fa) / Float(bins - 1)
                return (0..<bins).map { i in Double(i < bins / 2 ? fa + step * Float(i) : fb - step * Float(bins - 1 - i)) }
            }
            /// `top - (arange(bins) / ((bins - 1) / steps)).round()`.
            func bits(_ top: Int, steps: Float) -> [Double] {
                let divisor = Float(bins - 1) / steps
                return (0..<bins).map { Double(top - Int((Float($0) / divisor).rounded(.toNearestOrEven))) }
            }
            var wide = false, augMix = false
            switch self {
            case .trivialAugmentWide: wide = true
            case .augMix: augMix = true
            case .autoAugment, .randAugment: break
            }
            switch op {
            case .identity, .autoContrast, .equalize, .invert: return ([], false)
            case .shearX, .shearY: return (linspace(0, wide ? 0.99 : 0.3), true)
            case .translateX, .translateY:
                let extent = Double(op == .translateX ? imageSize.1 : imageSize.0)
                return (linspace(0, wide ? 32 : augMix ? extent / 3 : 150.0 / 331.0 * extent), true)
            case .rotate: return (linspace(0, wide ? 135 : 30), true)
            case .brightness, .color, .contrast, .sharpness: return (linspace(0, wide ? 0.99 : 0.9), true)
            case .posterize: return (wide ? bits(8, steps: 6) : augMix ? bits(4, steps: 4) : bits(8, steps: 4), false)
            case .solarize: return (linspace(255, 0), false)
            }
        }
    }
}

/// An image the augmentation operations work on: a tensor (torchvision's tensor kernels) or a
/// PIL-style `Image` (Pillow's), so `AugmentOp` states each operation once for both.
protocol AugmentOperand {
    /// What `fill` is for this kind of image (optional for tensors, a colour for pictures).
    associatedtype Fill
    /// The kind of image the operations give back (the conforming type itself; `Tensor` is a
    /// non-final class, so the requirements cannot return `Self`).
    associatedtype Output
    func affine(translate: [Int], shear: [Double], interpolation: transforms.InterpolationMode, fill: Fill, center: [Int]?) -> Output
    func rotate(_ angle: Double, interpolation: transforms.InterpolationMode, fill: Fill) -> Output
    func enhanced(_ kind: AugmentEnhance, _ factor: Double) -> Output
    func toned(_ kind: AugmentTone) -> Output
}

/// The enhancement operations (a factor, 1 = unchanged).
enum AugmentEnhance { case brightness, saturation, contrast, sharpness }

/// The tone operations.
enum AugmentTone { case posterize(Int), solarize(Double), autocontrast, equalize, invert }

extension Tensor: AugmentOperand {
    func affine(translate: [Int], shear: [Double], interpolation: transforms.InterpolationMode, fill: [Double]?, center: [Int]?) -> Tensor {
        TF.affine(self, angle: 0, translate: translate, scale: 1, shear: shear, interpolation: interpolation, fill: fill, center: center)
    }
    func rotate(_ angle: Double, interpolation: transforms.InterpolationMode, fill: [Double]?) -> Tensor {
        TF.rotate(self, angle, interpolation: interpolation, fill: fill)
    }
    func enhanced(_ kind: AugmentEnhance, _ factor: Double) -> Tensor {
        switch kind {
        case .brightness: return TF.adjustBrightness(self, factor)
        case .saturation: return TF.adjustSaturation(self, factor)
        case .contrast: return TF.adjustContrast(self, factor)
        case .sharpness: return TF.adjustSharpness(self, factor)
        }
    }
    func toned(_ kind: AugmentTone) -> Tensor {
        switch kind {
        case .posterize(let bits): return TF.posterize(self, bits)
        case .solarize(let threshold): return TF.solarize(self, threshold)
        case .autocontrast: return TF.autocontrast(self)
        case .equalize: return TF.equalize(self)
        case .invert: return TF.invert(self)
        }
    }
}

extension Image: AugmentOperand {
    func affine(translate: [Int], shear: [Double], interpolation: transforms.InterpolationMode, fill: [Double], center: [Int]?) -> Image {
        TF.affine(self, angle: 0, translate: translate, scale: 1, shear: shear, interpolation: interpolation, fill: fill, center: center)
    }
    func rotate(_ angle: Double, interpolation: transforms.InterpolationMode, fill: [Double]) -> Image {
        TF.rotate(self, angle, interpolation: interpolation, fill: fill)
    }
    func enhanced(_ kind: AugmentEnhance, _ factor: Double) -> Image {
        switch kind {
        case .brightness: return TF.adjustBrightness(self, factor)
        case .saturation: return TF.adjustSaturation(self, factor)
        case .contrast: return TF.adjustContrast(self, factor)
        case .sharpness: return TF.adjustSharpness(self, factor)
        }
    }
    func toned(_ kind: AugmentTone) -> Image {
        switch kind {
        case .posterize(let bits): return TF.posterize(self, bits)
        case .solarize(let threshold): return TF.solarize(self, threshold)
        case .autocontrast: return TF.autocontrast(self)
        case .equalize: return TF.equalize(self)
        case .invert: return TF.invert(self)
        }
    }
}
