import Torch

extension transforms {
    /// An image transform: a function from tensor to tensor that a dataset applies to each sample.
    ///
    /// Images are tensors: `uint8` H×W or H×W×C arrays as datasets read them (what `ToTensor` takes),
    /// and `uint8` or float C×H×W image tensors (with any leading batch dimensions where torchvision
    /// allows them) for the geometric and colour transforms. A transform that works the same on every
    /// sample of a stacked batch can say so with `applyToBatch(_:)`, which lets datasets build whole
    /// batches at once; random transforms do not, since each sample draws its own parameters.
    public protocol Transform: CustomStringConvertible {
        /// Transforms one image.
        func callAsFunction(_ input: Tensor) -> Tensor
        /// Transforms a stack of images (a new leading batch dimension over what `callAsFunction`
        /// takes), equal to stacking the per-image results; nil when the transform cannot.
        func applyToBatch(_ batch: Tensor) -> Tensor?
    }
}

extension transforms.Transform {
    /// By default a transform only works image by image.
    public func applyToBatch(_ batch: Tensor) -> Tensor? { nil }
}
