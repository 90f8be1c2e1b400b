import Torch

extension transforms {
    /// An image transform: a function from tensor to tensor that a dataset applies to each sample.
    ///
    /// Images are tensors: `uint8` H×W or H×W×C arrays as datasets read them (what `ToTensor` takes),
    /// and `uint8` or float C×H×W image tensors (with any leading batch dimensions where torchvision
    /// allows them) for the geometric and colour transforms. A transform that works the same on every
    /// sample of a stacked batch can say so with `applyToBatch(_:)`, which lets datasets build whole
    /// batches at once; random transforms do not on their own, since each sample draws its own
    /// parameters, but a `Compose` of crops, flips and the conversions still runs batch-wise by drawing
    /// every sample's parameters in the per-sample order (see `Compose.applyToBatch`).
    ///
    /// In a pipeline that starts from a PIL-style picture, what flows between transforms is a
    /// `Sample`: the picture (as its uint8 C×H×W pixels) until a conversion such as `ToTensor` turns it
    /// into a tensor. `apply(_:)` says how a transform treats each; by default a picture goes through
    /// `callAsFunction` as its pixel tensor and stays a picture.
    public protocol Transform: CustomStringConvertible {
        /// Transforms one image.
        func callAsFunction(_ input: Tensor) -> Tensor
        /// Transforms a stack of images (a new leading batch dimension over what `callAsFunction`
        /// takes), equal to stacking the per-image results; nil when the transform cannot.
        func applyToBatch(_ batch: Tensor) -> Tensor?
        /// Transforms a picture or a tensor, saying which one comes out.
        func apply(_ sample: Sample) -> Sample
    }

    /// What flows through a pipeline: a PIL-style picture, held as its uint8 C×H×W pixels, or a tensor
    /// (torchvision's transforms take either a PIL image or a tensor).
    public enum Sample {
        /// A picture's pixels, uint8 C×H×W (C = 1, 3 or 4 for modes L, RGB, RGBA).
        case image(Tensor)
        /// A tensor.
        case tensor(Tensor)

        /// The tensor in either case.
        public var value: Tensor {
            switch self {
            case .image(let t), .tensor(let t): return t
            }
        }
    }
}

extension transforms.Transform {
    /// By default a transform only works image by image.
    public func applyToBatch(_ batch: Tensor) -> Tensor? { nil }

    /// By default a picture goes through `callAsFunction` as its uint8 C×H×W pixels and stays a picture.
    public func apply(_ sample: transforms.Sample) -> transforms.Sample {
        switch sample {
        case .image(let pixels):
            let out = callAsFunction(pixels)
            precondition(out.dtype == .uint8 && out.dim == 3,
                         "\(self): on a PIL-style image the result must stay a uint8 C×H×W picture, got \(out.dtype) \(out.shape)")
            return .image(out)
        case .tensor(let t): return .tensor(callAsFunction(t))
        }
    }
}
