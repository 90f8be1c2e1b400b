import Foundation
import Torch

private typealias TF = transforms.functional

extension transforms {
    /// The image operations RandAugment and TrivialAugmentWide pick from, in torchvision's order (the
    /// random index selects by position).
    public enum AugmentOp: String, CaseIterable, Sendable {
        case identity = "Identity", shearX = "ShearX", shearY = "ShearY", translateX = "TranslateX", translateY = "TranslateY"
        case rotate = "Rotate", brightness = "Brightness", color = "Color", contrast = "Contrast", sharpness = "Sharpness"
        case posterize = "Posterize", solarize = "Solarize", autoContrast = "AutoContrast", equalize = "Equalize"

        /// Applies the operation with `magnitude` (shear as a slope, translation in pixels, rotation in
        /// degrees, enhancement as `1 + magnitude`, posterize bits, solarize threshold).
        public func apply(_ img: Tensor, magnitude: Double, interpolation: InterpolationMode, fill: [Double]?) -> Tensor {
            switch self {
            case .identity: return img
            case .shearX, .shearY:
                let degrees = atan(magnitude) * 180 / .pi
                return TF.affine(img, angle: 0, translate: [0, 0], scale: 1, shear: self == .shearX ? [degrees, 0] : [0, degrees],
                                 interpolation: interpolation, fill: fill, center: [0, 0])
            case .translateX, .translateY:
                let t = Int(magnitude)
                return TF.affine(img, angle: 0, translate: self == .translateX ? [t, 0] : [0, t], scale: 1, shear: [0, 0],
                                 interpolation: interpolation, fill: fill)
            case .rotate: return TF.rotate(img, magnitude, interpolation: interpolation, fill: fill)
            case .brightness: return TF.adjustBrightness(img, 1 + magnitude)
            case .color: return TF.adjustSaturation(img, 1 + magnitude)
            case .contrast: return TF.adjustContrast(img, 1 + magnitude)
            case .sharpness: return TF.adjustSharpness(img, 1 + magnitude)
            case .posterize: return TF.posterize(img, Int(magnitude))
            case .solarize: return TF.solarize(img, magnitude)
            case .autoContrast: return TF.autocontrast(img)
            case .equalize: return TF.equalize(img)
            }
        }

        /// Applies the operation to a PIL-style picture the way torchvision does for PIL images (Pillow's
        /// warps and enhancers).
        public func apply(_ img: Image, magnitude: Double, interpolation: InterpolationMode, fill: [Double]?) -> Image {
            let fill = fill ?? [0]
            switch self {
            case .identity: return img
            case .shearX, .shearY:
                let degrees = atan(magnitude) * 180 / .pi
                return TF.affine(img, angle: 0, translate: [0, 0], scale: 1, shear: self == .shearX ? [degrees, 0] : [0, degrees],
                                 interpolation: interpolation, fill: fill, center: [0, 0])
            case .translateX, .translateY:
                let t = Int(magnitude)
                return TF.affine(img, angle: 0, translate: self == .translateX ? [t, 0] : [0, t], scale: 1, shear: [0, 0],
                                 interpolation: interpolation, fill: fill)
            case .rotate: return TF.rotate(img, magnitude, interpolation: interpolation, fill: fill)
            case .brightness: return TF.adjustBrightness(img, 1 + magnitude)
            case .color: return TF.adjustSaturation(img, 1 + magnitude)
            case .contrast: return TF.adjustContrast(img, 1 + magnitude)
            case .sharpness: return TF.adjustSharpness(img, 1 + magnitude)
            case .posterize: return TF.posterize(img, Int(magnitude))
            case .solarize: return TF.solarize(img, magnitude)
            case .autoContrast: return TF.autocontrast(img)
            case .equalize: return TF.equalize(img)
            }
        }

        /// Applies the operation to a picture or a tensor.
        func apply(_ sample: Sample, magnitude: Double, interpolation: InterpolationMode, fill: [Double]?) -> Sample {
            switch sample {
            case .image(let pixels):
                return .image(apply(Image(tensor: pixels), magnitude: magnitude, interpolation: interpolation, fill: fill).tensor())
            case .tensor(let t):
                let c = TF.getDimensions(t)[0]
                return .tensor(apply(t, magnitude: magnitude, interpolation: interpolation, fill: fill.map { transforms.fillList($0, channels: c) }))
            }
        }

        /// The `bins` magnitudes of this operation (float32 like torchvision's tables; empty for operations
        /// without one) and whether a random sign applies. `wide` selects TrivialAugmentWide's ranges;
        /// `imageSize` (height, width) scales RandAugment's translations.
        func magnitudes(bins: Int, wide: Bool, imageSize: (Int, Int)) -> ([Double], Bool) {
            func linspace(_ a: Double, _ b: Double) -> [Double] {
                let (fa, fb) = (Float(a), Float(b))
                if bins == 1 { return [Double(fa)] }
                let step = (fb - fa) / Float(bins - 1)
                return (0..<bins).map { i in Double(i < bins / 2 ? fa + step * Float(i) : fb - step * Float(bins - 1 - i)) }
            }
            let enhance = wide ? 0.99 : 0.9
            switch self {
            case .identity, .autoContrast, .equalize: return ([], false)
            case .shearX, .shearY: return (linspace(0, wide ? 0.99 : 0.3), true)
            case .translateX: return (linspace(0, wide ? 32 : 150.0 / 331.0 * Double(imageSize.1)), true)
            case .translateY: return (linspace(0, wide ? 32 : 150.0 / 331.0 * Double(imageSize.0)), true)
            case .rotate: return (linspace(0, wide ? 135 : 30), true)
            case .brightness, .color, .contrast, .sharpness: return (linspace(0, enhance), true)
            case .posterize:
                let divisor = Float(bins - 1) / (wide ? 6 : 4)
                return ((0..<bins).map { Double(8 - Int((Float($0) / divisor).rounded(.toNearestOrEven))) }, false)
            case .solarize: return (linspace(255, 0), false)
            }
        }
    }

    /// RandAugment (torchvision's `RandAugment`): `numOps` operations picked uniformly, each with the fixed
    /// `magnitude` bin out of `numMagnitudeBins`, signed at random. For uint8 images.
    public struct RandAugment: Transform {
        public let numOps: Int, magnitude: Int, numMagnitudeBins: Int
        public let interpolation: InterpolationMode
        public let fill: [Double]?

        public init(numOps: Int = 2, magnitude: Int = 9, numMagnitudeBins: Int = 31, interpolation: InterpolationMode = .nearest,
                    fill: [Double]? = nil) {
            precondition(magnitude >= 0 && magnitude < numMagnitudeBins, "RandAugment: magnitude must be in [0, numMagnitudeBins)")
            self.numOps = numOps
            self.magnitude = magnitude
            self.numMagnitudeBins = numMagnitudeBins
            self.interpolation = interpolation
            self.fill = fill
        }

        public func callAsFunction(_ input: Tensor) -> Tensor { apply(.tensor(input)).value }

        /// Tensors go through the tensor kernels, pictures through Pillow's, as in torchvision.
        public func apply(_ sample: Sample) -> Sample {
            let d = TF.getDimensions(sample.value)
            var out = sample
            for _ in 0..<numOps {
                let op = AugmentOp.allCases[RandomDraw.randint(0, AugmentOp.allCases.count)]
                let (table, signed) = op.magnitudes(bins: numMagnitudeBins, wide: false, imageSize: (d[1], d[2]))
                var m = table.isEmpty ? 0 : table[magnitude]
                if signed && RandomDraw.randint(0, 2) != 0 { m = -m }
                out = op.apply(out, magnitude: m, interpolation: interpolation, fill: fill)
            }
            return out
        }

        public var description: String {
            "RandAugment(num_ops=\(numOps), magnitude=\(magnitude), num_magnitude_bins=\(numMagnitudeBins), "
                + "interpolation=InterpolationMode.\(interpolation.rawValue.uppercased()), fill=\(fill.map(PyRepr.fill) ?? "None"))"
        }
    }

    /// TrivialAugment (torchvision's `TrivialAugmentWide`): one operation and one magnitude bin, both
    /// picked uniformly, signed at random. For uint8 images.
    public struct TrivialAugmentWide: Transform {
        public let numMagnitudeBins: Int
        public let interpolation: InterpolationMode
        public let fill: [Double]?

        public init(numMagnitudeBins: Int = 31, interpolation: InterpolationMode = .nearest, fill: [Double]? = nil) {
            self.numMagnitudeBins = numMagnitudeBins
            self.interpolation = interpolation
            self.fill = fill
        }

        public func callAsFunction(_ input: Tensor) -> Tensor { apply(.tensor(input)).value }

        /// Tensors go through the tensor kernels, pictures through Pillow's, as in torchvision.
        public func apply(_ sample: Sample) -> Sample {
            let d = TF.getDimensions(sample.value)
            let op = AugmentOp.allCases[RandomDraw.randint(0, AugmentOp.allCases.count)]
            let (table, signed) = op.magnitudes(bins: numMagnitudeBins, wide: true, imageSize: (d[1], d[2]))
            // Operations without magnitudes draw nothing more, as in torchvision.
            var m = table.isEmpty ? 0 : table[RandomDraw.randint(0, table.count)]
            if signed && RandomDraw.randint(0, 2) != 0 { m = -m }
            return op.apply(sample, magnitude: m, interpolation: interpolation, fill: fill)
        }

        public var description: String {
            "TrivialAugmentWide(num_magnitude_bins=\(numMagnitudeBins), "
                + "interpolation=InterpolationMode.\(interpolation.rawValue.uppercased()), fill=\(fill.map(PyRepr.fill) ?? "None"))"
        }
    }
}
