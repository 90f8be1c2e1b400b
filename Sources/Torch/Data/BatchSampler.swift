extension utils.data {
    /// Groups another sampler's indices into batches (PyTorch's `BatchSampler`).
    ///
    /// ```swift
    /// let batches = Array(utils.data.BatchSampler(utils.data.SequentialSampler(0..<10), batchSize: 3, dropLast: false))
    /// // [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    /// ```
    public struct BatchSampler: Sampler {
        /// The index sampler.
        public let sampler: any Sampler<Int>
        /// Indices per batch.
        public let batchSize: Int
        /// Drop the last batch when it is smaller than `batchSize`.
        public let dropLast: Bool

        /// Batches `sampler`'s indices.
        public init(_ sampler: any Sampler<Int>, batchSize: Int, dropLast: Bool) {
            precondition(batchSize > 0, "batch_size should be a positive integer value, but got batch_size=\(batchSize)")
            self.sampler = sampler
            self.batchSize = batchSize
            self.dropLast = dropLast
        }

        /// Same as `init(_:batchSize:dropLast:)` with PyTorch's keyword name for the sampler.
        public init(sampler: any Sampler<Int>, batchSize: Int, dropLast: Bool) {
            self.init(sampler, batchSize: batchSize, dropLast: dropLast)
        }

        /// Number of batches.
        public var count: Int { dropLast ? sampler.count / batchSize : (sampler.count + batchSize - 1) / batchSize }

        public func makeIterator() -> Iterator {
            Iterator(base: sampler.makeIterator(), batchSize: batchSize, dropLast: dropLast)
        }

        /// Pulls `batchSize` indices at a time, running the underlying sampler to its end exactly
        /// as PyTorch's implementation does (which matters for when random numbers are drawn).
        public struct Iterator: IteratorProtocol {
            var base: any IteratorProtocol<Int>
            let batchSize: Int
            let dropLast: Bool
            var done = false

            public mutating func next() -> [Int]? {
                if done { return nil }
                var batch: [Int] = []
                batch.reserveCapacity(batchSize)
                while batch.count < batchSize {
                    guard let i = base.next() else { done = true; break }
                    batch.append(i)
                }
                if batch.isEmpty || (dropLast && batch.count < batchSize) { done = true; return nil }
                return batch
            }
        }
    }
}
