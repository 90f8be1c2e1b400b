extension utils.data {
    /// The given indices in a random order, drawn afresh each iteration (PyTorch's
    /// `SubsetRandomSampler`: `indices[i]` for `i` in `torch.randperm(count, generator)`).
    public struct SubsetRandomSampler: Sampler {
        /// The indices to permute.
        public let indices: [Int]
        /// The generator; nil uses `torch.defaultGenerator`.
        public let generator: Torch.Generator?

        /// Samples `indices` in random order.
        public init(_ indices: [Int], generator: Torch.Generator? = nil) {
            self.indices = indices
            self.generator = generator
        }

        /// Number of indices.
        public var count: Int { indices.count }

        public func makeIterator() -> some IteratorProtocol<Int> {
            let indices = self.indices, g = generator
            return SegmentedIterator(segments: 1) { _ in
                randpermIndices(indices.count, g ?? torch.defaultGenerator).map { indices[$0] }
            }
        }
    }
}
