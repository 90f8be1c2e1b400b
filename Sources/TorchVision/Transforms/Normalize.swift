import Torch

extension transforms {
    /// Normalises each channel of a float (…, C, H, W) tensor: `(x - mean[c]) / std[c]`
    /// (torchvision's `Normalize`), with `mean` and `std` converted to the tensor's dtype first.
    ///
    /// ```swift
    /// let t = transforms.Normalize([0.1307], [0.3081])
    /// ```
    public struct Normalize: Transform, BatchSteppable {
        /// Per-channel means (one value applies to every channel).
        public let mean: [Double]
        /// Per-channel standard deviations.
        public let std: [Double]
        /// Normalise the input in place instead of returning a new tensor.
        public let inplace: Bool
        /// `mean` and `std` as float32 C×1×1 tensors (the common case, made once).
        private let mean32: Tensor, std32: Tensor

        /// Normalises with `mean` and `std`.
        public init(_ mean: [Double], _ std: [Double], inplace: Bool = false) {
            precondition(!mean.isEmpty && !std.isEmpty, "Normalize: mean and std must not be empty")
            self.mean = mean
            self.std = std
            self.inplace = inplace
            mean32 = Tensor(mean, shape: [mean.count, 1, 1]).to(.float32)
            std32 = Tensor(std, shape: [std.count, 1, 1]).to(.float32)
        }

        /// Same as `init(_:_:inplace:)` with the arguments labelled.
        public init(mean: [Double], std: [Double], inplace: Bool = false) {
            self.init(mean, std, inplace: inplace)
        }

        public func callAsFunction(_ input: Tensor) -> Tensor {
            if let message = Self.inputError(input.shape, input.dtype) { preconditionFailure(message) }
            var m = input.dtype == .float32 ? mean32 : Tensor(mean, shape: [mean.count, 1, 1]).to(input.dtype)
            var s = input.dtype == .float32 ? std32 : Tensor(std, shape: [std.count, 1, 1]).to(input.dtype)
            precondition(!s.toArray(as: Double.self).contains(0),
                         "std evaluated to zero after conversion to \(input.dtype), leading to division by zero.")
            (m, s) = (m.to(input.device), s.to(input.device))  // no copy when already there
            return inplace ? input.sub_(m).div_(s) : (input - m) / s
        }

        /// The same per-channel formula applies to any leading batch dimensions.
        public func applyToBatch(_ batch: Tensor) -> Tensor? {
            callAsFunction(batch)
        }

        func batchStep(sampleShape: [Int]) -> BatchStep? {
            // An invalid sample is left to the per-sample path, which reports it.
            sampleShape.count >= 3 ? MapStep(outputShape: sampleShape) { callAsFunction($0) } : nil
        }

        /// torchvision's messages for a non-float or non-image input; nil when valid.
        static func inputError(_ shape: [Int], _ dtype: DType) -> String? {
            if !dtype.isFloatingPoint { return "Input tensor should be a float tensor. Got \(dtype)." }
            if shape.count < 3 {
                return "Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = torch.Size([\(shape.map(String.init).joined(separator: ", "))])"
            }
            return nil
        }

        public var description: String { "Normalize(mean=\(mean), std=\(std))" }
    }
}
