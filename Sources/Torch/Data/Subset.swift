extension utils.data {
    /// The samples of `dataset` at `indices`, in that order (PyTorch's `Subset`).
    ///
    /// ```swift
    /// let firstTen = utils.data.Subset(ds, Array(0..<10))
    /// ```
    public struct Subset<Base: Dataset>: Dataset {
        /// The whole dataset.
        public let dataset: Base
        /// Which of its samples this subset holds.
        public let indices: [Int]

        /// The subset of `dataset` at `indices`.
        public init(_ dataset: Base, _ indices: [Int]) {
            self.dataset = dataset
            self.indices = indices
        }

        /// Same as `init(_:_:)` with PyTorch's keyword names.
        public init(dataset: Base, indices: [Int]) { self.init(dataset, indices) }

        /// Number of indices.
        public var count: Int { indices.count }

        /// `dataset[indices[index]]`.
        public subscript(index: Int) -> Base.Element {
            precondition(index >= 0 && index < indices.count, datasetIndexMessage(index, count: indices.count, "Subset"))
            return dataset[indices[index]]
        }
    }
}

/// A subset of a batch-capable dataset batches through it.
extension utils.data.Subset: utils.data.BatchedDataset where Base: utils.data.BatchedDataset {
    public func collatedBatch(_ indices: [Int]) -> Base.Batch? {
        dataset.collatedBatch(indices.map { self.indices[$0] })
    }
}
