import Torch

extension transforms {
    /// An image transform: a function from tensor to tensor that a dataset applies to each sample.
    ///
    /// Images are tensors: `uint8` H×W or H×W×C as read from files, or float C×H×W after
    /// `ToTensor`. A transform that works the same on every sample of a stacked batch can say so
    /// with `applyToBatch(_:)`, which lets datasets build whole batches at once.
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
