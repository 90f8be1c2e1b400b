extension utils.data {
    /// Several datasets with the same element type, one after the other (PyTorch's `ConcatDataset`).
    ///
    /// ```swift
    /// let both = utils.data.ConcatDataset([trainA, trainB])
    /// ```
    public struct ConcatDataset<Element>: Dataset {
        /// The parts, in order.
        public let datasets: [any Dataset<Element>]
        /// Running totals of the parts' sizes (PyTorch's `cumulative_sizes`).
        public let cumulativeSizes: [Int]

        /// Concatenates `datasets`.
        public init(_ datasets: [any Dataset<Element>]) {
            precondition(!datasets.isEmpty, "datasets should not be an empty iterable")
            self.datasets = datasets
            var total = 0
            cumulativeSizes = datasets.map { total += $0.count; return total }
        }

        /// Total number of samples.
        public var count: Int { cumulativeSizes.last ?? 0 }

        /// The `index`-th sample counting through the parts in order; negative indices count
        /// from the end, as in PyTorch.
        public subscript(index: Int) -> Element {
            var idx = index
            if idx < 0 {
                precondition(-idx <= count, "absolute value of index should not exceed dataset length")
                idx += count
            }
            precondition(idx < count, datasetIndexMessage(index, count: count, "ConcatDataset"))
            // bisect_right(cumulative_sizes, idx)
            var lo = 0, hi = cumulativeSizes.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if idx < cumulativeSizes[mid] { hi = mid } else { lo = mid + 1 }
            }
            let start = lo == 0 ? 0 : cumulativeSizes[lo - 1]
            return datasets[lo][idx - start]
        }
    }
}
