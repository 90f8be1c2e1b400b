import Torch

private typealias TF = transforms.functional

/// A deterministic image function applied with probability `p` (one `torch.rand(1) < p` draw, as
/// torchvision's `RandomInvert`, `RandomPosterize`, `RandomSolarize`, `RandomAdjustSharpness`,
/// `RandomAutocontrast` and `RandomEqualize` do); the conforming types only say what the function is.
public protocol RandomlyAppliedTransform: transforms.Transform {
    /// The probability of applying the function.
    var p: Double { get }
    /// The function, applied unconditionally.
    func applyAlways(_ input: Tensor) -> Tensor
    /// torchvision's repr arguments before `p=`, each followed by a comma (`"bits=3,"`), or empty.
    var reprArguments: String { get }
}

extension RandomlyAppliedTransform {
    public func callAsFunction(_ input: Tensor) -> Tensor { RandomDraw.chance(p) ? applyAlways(input) : input }
    public var reprArguments: String { "" }
    public var description: String { "\(type(of: self))(\(reprArguments)p=\(PyRepr.float(p)))" }
}

extension transforms {
    /// Inverts colours with probability `p` (torchvision's `RandomInvert`).
    public struct RandomInvert: RandomlyAppliedTransform {
        public let p: Double
        public init(p: Double = 0.5) { self.p = p }
        public func applyAlways(_ input: Tensor) -> Tensor { TF.invert(input) }
    }

    /// Keeps the top `bits` bits of each uint8 value with probability `p` (torchvision's `RandomPosterize`).
    public struct RandomPosterize: RandomlyAppliedTransform {
        public let bits: Int, p: Double
        public init(bits: Int, p: Double = 0.5) { self.bits = bits; self.p = p }
        public func applyAlways(_ input: Tensor) -> Tensor { TF.posterize(input, bits) }
        public var reprArguments: String { "bits=\(bits)," }
    }

    /// Inverts the values at or above `threshold` with probability `p` (torchvision's `RandomSolarize`).
    public struct RandomSolarize: RandomlyAppliedTransform {
        public let threshold: Double, p: Double
        public init(threshold: Double, p: Double = 0.5) { self.threshold = threshold; self.p = p }
        public func applyAlways(_ input: Tensor) -> Tensor { TF.solarize(input, threshold) }
        public var reprArguments: String { "threshold=\(PyRepr.number(threshold))," }
    }

    /// Adjusts sharpness by `sharpnessFactor` with probability `p` (torchvision's `RandomAdjustSharpness`).
    public struct RandomAdjustSharpness: RandomlyAppliedTransform {
        public let sharpnessFactor: Double, p: Double
        public init(sharpnessFactor: Double, p: Double = 0.5) {
            precondition(sharpnessFactor >= 0, "sharpness_factor (\(sharpnessFactor)) is not non-negative.")
            self.sharpnessFactor = sharpnessFactor
            self.p = p
        }
        public func applyAlways(_ input: Tensor) -> Tensor { TF.adjustSharpness(input, sharpnessFactor) }
        public var reprArguments: String { "sharpness_factor=\(PyRepr.number(sharpnessFactor))," }

        /// A picture is sharpened the way Pillow's `ImageEnhance.Sharpness` does it.
        public func apply(_ sample: Sample) -> Sample {
            guard case .image(let pixels) = sample else { return .tensor(callAsFunction(sample.value)) }
            return RandomDraw.chance(p) ? .image(PillowColor.sharpness(pixels, sharpnessFactor)) : sample
        }
    }

    /// Stretches each channel to the full range with probability `p` (torchvision's `RandomAutocontrast`).
    public struct RandomAutocontrast: RandomlyAppliedTransform {
        public let p: Double
        public init(p: Double = 0.5) { self.p = p }
        public func applyAlways(_ input: Tensor) -> Tensor { TF.autocontrast(input) }

        /// A picture is stretched the way Pillow's `ImageOps.autocontrast` does it.
        public func apply(_ sample: Sample) -> Sample {
            guard case .image(let pixels) = sample else { return .tensor(callAsFunction(sample.value)) }
            return RandomDraw.chance(p) ? .image(PillowColor.autocontrast(pixels)) : sample
        }
    }

    /// Equalises each channel's histogram with probability `p` (torchvision's `RandomEqualize`).
    public struct RandomEqualize: RandomlyAppliedTransform {
        public let p: Double
        public init(p: Double = 0.5) { self.p = p }
        public func applyAlways(_ input: Tensor) -> Tensor { TF.equalize(input) }
    }
}
