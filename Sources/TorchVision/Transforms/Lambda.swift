import Torch

extension transforms {
    /// A user function as a transform (torchvision's `Lambda`).
    ///
    /// ```swift
    /// let flatten = transforms.Lambda { $0.view(-1) }
    /// ```
    public struct Lambda: Transform {
        /// The function.
        public let lambda: (Tensor) -> Tensor

        /// Wraps `lambda`.
        public init(_ lambda: @escaping (Tensor) -> Tensor) { self.lambda = lambda }

        public func callAsFunction(_ input: Tensor) -> Tensor { lambda(input) }

        /// On a picture the function gets its uint8 C×H×W pixels; a uint8 result with 1, 3 or 4 channels
        /// stays a picture, anything else becomes a tensor.
        public func apply(_ sample: Sample) -> Sample {
            guard case .image(let pixels) = sample else { return .tensor(lambda(sample.value)) }
            let out = lambda(pixels)
            return out.dtype == .uint8 && out.dim == 3 && [1, 3, 4].contains(out.shape[0]) ? .image(out) : .tensor(out)
        }

        public var description: String { "Lambda()" }
    }
}
