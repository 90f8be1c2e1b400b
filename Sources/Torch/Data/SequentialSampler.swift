extension utils.data {
    /// Indices `0..<count` in order (PyTorch's `SequentialSampler`).
    public struct SequentialSampler: Sampler {
        /// Number of indices.
        public let count: Int

        /// Samples every index of `dataSource` in order.
        public init<D: Dataset>(_ dataSource: D) { count = dataSource.count }

        public func makeIterator() -> Range<Int>.Iterator { (0..<count).makeIterator() }
    }
}
