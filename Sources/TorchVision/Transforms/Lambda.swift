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

        public var description: String { "Lambda()" }
    }
}
