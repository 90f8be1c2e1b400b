extension utils.data {
    /// Indices drawn with probabilities proportional to `weights` (PyTorch's
    /// `WeightedRandomSampler`: `torch.multinomial(weights, numSamples, replacement, generator)`
    /// with float64 weights, drawn afresh each iteration).
    ///
    /// ```swift
    /// let sampler = utils.data.WeightedRandomSampler([0.1, 0.9, 0.4], 5, replacement: true)
    /// ```
    public struct WeightedRandomSampler: Sampler {
        /// The (unnormalised, non-negative) weights as a float64 vector.
        public let weights: Tensor
        /// Indices per iteration.
        public let numSamples: Int
        /// Draw with replacement.
        public let replacement: Bool
        /// The generator; nil uses `torch.defaultGenerator`.
        public let generator: Torch.Generator?

        /// Samples `numSamples` indices of `weights`.
        public init(_ weights: [Double], _ numSamples: Int, replacement: Bool = true, generator: Torch.Generator? = nil) {
            self.init(Tensor(weights, shape: [weights.count]), numSamples, replacement: replacement, generator: generator)
        }

        /// Samples `numSamples` indices of a 1-D weight tensor.
        public init(_ weights: Tensor, _ numSamples: Int, replacement: Bool = true, generator: Torch.Generator? = nil) {
            precondition(numSamples > 0, "num_samples should be a positive integer value, but got num_samples=\(numSamples)")
            precondition(weights.dim == 1, "weights should be a 1d sequence but given weights have shape \(shapeTuple(weights.shape))")
            self.weights = weights.to(.float64).contiguous()
            self.numSamples = numSamples
            self.replacement = replacement
            self.generator = generator
        }

        /// Same as `init(_:_:replacement:generator:)` with PyTorch's keyword names.
        public init(weights: [Double], numSamples: Int, replacement: Bool = true, generator: Torch.Generator? = nil) {
            self.init(weights, numSamples, replacement: replacement, generator: generator)
        }

        /// `numSamples`.
        public var count: Int { numSamples }

        public func makeIterator() -> some IteratorProtocol<Int> {
            let w = weights, n = numSamples, r = replacement, g = generator
            return SegmentedIterator(segments: 1) { _ in
                torch.multinomial(w, n, replacement: r, generator: g).toArray(as: Int.self)
            }
        }
    }
}

/// A shape as Python prints a `torch.Size` tuple: `(3, 2)`, `(4,)`.
func shapeTuple(_ shape: [Int]) -> String {
    "torch.Size([\(shape.map(String.init).joined(separator: ", "))])"
}
