extension utils.data {
    /// Restricts data loading to this rank's share of the dataset (PyTorch's
    /// `DistributedSampler`): every rank sees `count` indices, disjoint across ranks, padded by
    /// repeating the first indices (or trimmed with `dropLast`) so all ranks run the same number
    /// of steps. With `shuffle`, the order is `torch.randperm(n)` from a generator seeded with
    /// `seed + epoch`, so the index lists equal PyTorch's for the same seed, epoch and rank.
    ///
    /// ```swift
    /// let sampler = DistributedSampler(trainSet)               // rank and world size from `dist`
    /// let loader = DataLoader(trainSet, batchSize: 32, sampler: sampler)
    /// for epoch in 0..<epochs {
    ///     sampler.setEpoch(epoch)                              // a new shuffle each epoch
    ///     for (x, y) in loader { ... }
    /// }
    /// ```
    ///
    /// A class, so that `setEpoch` reaches the copy a `DataLoader` holds.
    public final class DistributedSampler: Sampler {
        /// Size of the dataset.
        public let datasetCount: Int
        /// Number of ranks sharing the data.
        public let numReplicas: Int
        /// This process's rank.
        public let rank: Int
        /// Whether each epoch draws a new permutation.
        public let shuffle: Bool
        /// Base seed; the permutation of epoch `e` is seeded with `seed + e`.
        public let seed: UInt64
        /// Drop the tail that does not divide evenly instead of padding.
        public let dropLast: Bool
        /// The epoch `setEpoch` set last.
        public private(set) var epoch = 0
        /// Indices per rank (PyTorch's `num_samples`).
        public let numSamples: Int
        /// Indices over all ranks (PyTorch's `total_size`).
        public let totalSize: Int

        /// - Parameters:
        ///   - numReplicas: number of ranks (default: `dist.getWorldSize()`).
        ///   - rank: this rank (default: `dist.getRank()`).
        public init<D: Dataset>(_ dataset: D, numReplicas: Int? = nil, rank: Int? = nil, shuffle: Bool = true,
                                seed: UInt64 = 0, dropLast: Bool = false) {
            let replicas = numReplicas ?? DistributedSampler.defaultFromGroup("num_replicas") { dist.getWorldSize() }
            let r = rank ?? DistributedSampler.defaultFromGroup("rank") { dist.getRank() }
            precondition(replicas > 0, "DistributedSampler: num_replicas must be positive, got \(replicas)")
            precondition(r >= 0 && r < replicas,
                         "Invalid rank \(r), rank should be in the interval [0, \(replicas - 1)]")
            let n = dataset.count
            datasetCount = n
            self.numReplicas = replicas
            self.rank = r
            self.shuffle = shuffle
            self.seed = seed
            self.dropLast = dropLast
            if dropLast && n % replicas != 0 {
                numSamples = (n - replicas + replicas - 1) / replicas   // ceil((n - replicas) / replicas), n >= 0
            } else {
                numSamples = (n + replicas - 1) / replicas
            }
            totalSize = numSamples * replicas
        }

        private static func defaultFromGroup(_ name: String, _ value: () -> Int) -> Int {
            precondition(dist.isInitialized(),
                         "DistributedSampler: \(name) not given and the default process group is not initialized; call dist.initProcessGroup first or pass numReplicas: and rank:")
            return value()
        }

        /// Sets the epoch, which seeds the next shuffle (call it before each epoch, as in PyTorch).
        public func setEpoch(_ epoch: Int) { self.epoch = epoch }

        /// `numSamples`.
        public var count: Int { numSamples }

        /// This rank's indices for the current epoch.
        public func indices() -> [Int] {
            var all: [Int]
            if shuffle {
                let g = Torch.Generator().manualSeed(seed &+ UInt64(bitPattern: Int64(epoch)))
                all = randpermIndices(datasetCount, g)
            } else {
                all = Array(0..<datasetCount)
            }
            if !dropLast {
                let padding = totalSize - all.count
                if padding > 0 && !all.isEmpty {
                    let base = all
                    var k = 0
                    while k < padding { all.append(base[k % base.count]); k += 1 }
                }
            } else {
                all = Array(all.prefix(totalSize))
            }
            return Array(stride(from: rank, to: totalSize, by: numReplicas).map { all[$0] })
        }

        public func makeIterator() -> IndexingIterator<[Int]> { indices().makeIterator() }
    }
}

/// `torch.utils.data.DistributedSampler`, importable bare.
public typealias DistributedSampler = utils.data.DistributedSampler
