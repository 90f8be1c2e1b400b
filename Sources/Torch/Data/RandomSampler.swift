extension utils.data {
    /// Random indices (PyTorch's `RandomSampler`): a fresh permutation each iteration, or, with
    /// `replacement`, `numSamples` independent uniform draws.
    ///
    /// Random numbers come exactly as in PyTorch: without a generator, each iteration seeds a new
    /// generator from the default one (`torch.empty((), dtype=torch.int64).random_()`); then
    /// `torch.randperm(n, generator)` per pass over the data, or `torch.randint` in chunks of 32.
    /// So `torch.manualSeed(0)` followed by `DataLoader(ds, batchSize: 2, shuffle: true)` visits
    /// the samples in PyTorch's order.
    public struct RandomSampler: Sampler {
        /// Size of the data source.
        public let dataCount: Int
        /// Draw with replacement.
        public let replacement: Bool
        /// Indices per iteration.
        public let numSamples: Int
        /// The generator; nil draws a seed from `torch.defaultGenerator` each iteration.
        public let generator: Torch.Generator?

        /// Samples indices of `dataSource`.
        public init<D: Dataset>(_ dataSource: D, replacement: Bool = false, numSamples: Int? = nil, generator: Torch.Generator? = nil) {
            let n = numSamples ?? dataSource.count
            precondition(n > 0, "num_samples should be a positive integer value, but got num_samples=\(n)")
            dataCount = dataSource.count
            self.replacement = replacement
            self.numSamples = n
            self.generator = generator
        }

        /// `numSamples`.
        public var count: Int { numSamples }

        public func makeIterator() -> some IteratorProtocol<Int> {
            let n = dataCount, total = numSamples, given = generator
            var g: Torch.Generator = given ?? torch.defaultGenerator
            let start = { if given == nil { g = Torch.Generator().manualSeed(derivedSeed(torch.defaultGenerator)) } }
            if replacement {
                return SegmentedIterator(segments: total / 32 + 1, start: start) { k in
                    let size = k < total / 32 ? 32 : total % 32
                    return size == 0 ? [] : torch.randint(n, [size], generator: g).toArray(as: Int.self)
                }
            }
            precondition(n > 0, "RandomSampler: cannot draw \(total) samples without replacement from an empty data source")
            return SegmentedIterator(segments: total / n + 1, start: start) { k in
                let perm = randpermIndices(n, g)
                return k < total / n ? perm : Array(perm.prefix(total % n))
            }
        }
    }
}

/// A seed drawn as PyTorch's `int(torch.empty((), dtype=torch.int64).random_(generator=g))`:
/// 64 random bits reduced modulo 2^63.
func derivedSeed(_ g: Torch.Generator) -> UInt64 {
    g.random64() % (UInt64(Int64.max) + 1)
}

/// `torch.randperm(n, generator: g)` as an index array.
func randpermIndices(_ n: Int, _ g: Torch.Generator) -> [Int] {
    var r = Array(0..<n)
    if n > 1 {
        for i in 0..<(n - 1) {
            let z = Int(UInt64(g.random()) % UInt64(n - i))
            r.swapAt(i, z + i)
        }
    }
    return r
}
