extension utils.data {
    /// Iterates a dataset in batches (PyTorch's `DataLoader`).
    ///
    /// ```swift
    /// let dl = DataLoader(TensorDataset(X, Y), batchSize: 2, shuffle: true)
    /// for (x, y) in dl { ... }           // x: [2, ...] inputs, y: [2, ...] targets
    /// print(dl.count)                    // number of batches (len(dl))
    /// ```
    ///
    /// Batches are made by the default collate function (tensors stacked, numbers turned into
    /// tensors, tuples collated position by position: see `Collatable`) or by `collateFn`.
    /// Indices come from `batchSampler`, or from `sampler` (default: sequential, or a
    /// `RandomSampler` when `shuffle` is true) grouped by `batchSize`, drawing random numbers as
    /// PyTorch does, so a seeded run visits samples in PyTorch's order.
    ///
    /// With `numWorkers > 0`, that many background threads fetch and collate batches ahead of the
    /// consumer (at most `prefetchFactor × numWorkers` batches in flight); batches still come out
    /// in sampler order. As in PyTorch, batch `i` is made by worker `i % numWorkers`, and each
    /// worker has its own `torch.defaultGenerator`, seeded with the iterator's base seed plus the
    /// worker's index, so random transforms draw exactly what they draw in PyTorch's workers
    /// (and, without random transforms, batches equal those of `numWorkers: 0`). The dataset's
    /// subscript and the collate function run on those threads, so they must be safe to call
    /// concurrently.
    public final class DataLoader<Batch>: Sequence {
        /// The dataset.
        public let dataset: any Dataset
        /// Samples per batch (ignored when a batch sampler is given).
        public let batchSize: Int
        /// Whether the last, smaller batch is dropped.
        public let dropLast: Bool
        /// Background fetching threads (0: fetch on the iterating thread).
        public let numWorkers: Int
        /// Batches each worker may have in flight.
        public let prefetchFactor: Int
        /// The generator for shuffling and base seeds; nil uses `torch.defaultGenerator`.
        public let generator: Torch.Generator?
        /// The index sampler (nil when a batch sampler was given directly).
        public let sampler: (any Sampler<Int>)?
        /// The sampler of index batches.
        public let batchSampler: any Sampler<[Int]>
        /// Whether batches come in page-locked host memory (`pinMemory: true` where a GPU is usable).
        public let pinMemory: Bool
        /// Indices → collated batch (pinned when `pinMemory`).
        let fetch: ([Int]) -> Batch

        /// The designated initialiser behind every public one.
        init(dataset: any Dataset, batchSize: Int, shuffle: Bool, sampler: (any Sampler<Int>)?,
             batchSampler: (any Sampler<[Int]>)?, numWorkers: Int, pinMemory: Bool = false, dropLast: Bool,
             prefetchFactor: Int?, generator: Torch.Generator?, fetch: @escaping ([Int]) -> Batch) {
            if let message = DataLoader.argumentError(batchSize: batchSize, shuffle: shuffle, hasSampler: sampler != nil,
                                                      hasBatchSampler: batchSampler != nil, numWorkers: numWorkers,
                                                      dropLast: dropLast, prefetchFactor: prefetchFactor) {
                preconditionFailure(message)
            }
            self.dataset = dataset
            self.batchSize = batchSize
            self.dropLast = dropLast
            self.numWorkers = numWorkers
            self.prefetchFactor = prefetchFactor ?? 2
            self.generator = generator
            if let bs = batchSampler {
                self.sampler = nil
                self.batchSampler = bs
            } else {
                let s: any Sampler<Int> = sampler ?? (shuffle
                    ? RandomSampler(0..<dataset.count, generator: generator)
                    : SequentialSampler(0..<dataset.count))
                self.sampler = s
                self.batchSampler = BatchSampler(s, batchSize: batchSize, dropLast: dropLast)
            }
            self.pinMemory = pinMemory && torch.cuda.isAvailable()
            if pinMemory && !self.pinMemory {
                writeStandardError("UserWarning: 'pin_memory' argument is set as true but no accelerator "
                    + "is found, then device pinned memory won't be used.\n")
            }
            self.fetch = self.pinMemory ? { pinnedBatch(fetch($0)) } : fetch
        }

        /// Number of batches per iteration (PyTorch's `len(loader)`).
        public var count: Int { batchSampler.count }

        public var underestimatedCount: Int { count }

        /// Starts an iteration: draws the base seed PyTorch's iterator draws (the default generator
        /// advances as in PyTorch; workers are seeded from it), then yields batches in sampler order.
        public func makeIterator() -> Iterator {
            let baseSeed = derivedSeed(generator ?? torch.defaultGenerator)
            return Iterator(self, baseSeed: baseSeed)
        }

        /// PyTorch's `DataLoader` argument checks; nil when the combination is valid.
        static func argumentError(batchSize: Int, shuffle: Bool, hasSampler: Bool, hasBatchSampler: Bool,
                                  numWorkers: Int, dropLast: Bool, prefetchFactor: Int?) -> String? {
            if numWorkers < 0 {
                return "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing."
            }
            if numWorkers == 0 && prefetchFactor != nil {
                return "prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None."
            }
            if let p = prefetchFactor, p < 1 {
                return "prefetch_factor option should be a positive integer, but got prefetch_factor=\(p)"
            }
            if hasSampler && shuffle {
                return "sampler option is mutually exclusive with shuffle"
            }
            if hasBatchSampler && (batchSize != 1 || shuffle || hasSampler || dropLast) {
                return "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
            }
            if !hasBatchSampler && batchSize <= 0 {
                return "batch_size should be a positive integer value, but got batch_size=\(batchSize)"
            }
            return nil
        }

        /// Yields the loader's batches; see `DataLoader`.
        public struct Iterator: IteratorProtocol {
            private let loader: DataLoader
            private var indices: any IteratorProtocol<[Int]>
            private let pool: PrefetchPool<Batch>?

            init(_ loader: DataLoader, baseSeed: UInt64) {
                self.loader = loader
                indices = loader.batchSampler.makeIterator()
                if loader.numWorkers > 0 {
                    let pool = PrefetchPool<Batch>(workers: loader.numWorkers, baseSeed: baseSeed, fetch: loader.fetch)
                    // PyTorch puts prefetchFactor × numWorkers index batches in flight up front.
                    for _ in 0..<(loader.prefetchFactor * loader.numWorkers) {
                        guard let idx = indices.next() else { break }
                        pool.submit(idx)
                    }
                    self.pool = pool
                } else {
                    pool = nil
                }
            }

            public mutating func next() -> Batch? {
                guard let pool = pool else {
                    guard let idx = indices.next() else { return nil }
                    return loader.fetch(idx)
                }
                guard let batch = pool.takeNext() else { return nil }
                if let idx = indices.next() { pool.submit(idx) }
                return batch
            }
        }
    }
}

// MARK: - Public initialisers

extension utils.data.DataLoader {
    /// A loader collating with the default collate function.
    ///
    /// - Parameters:
    ///   - dataset: the dataset; its elements must be `Collatable` (tensors, numbers, strings,
    ///     arrays, dictionaries of those) or tuples of them.
    ///   - batchSize: samples per batch.
    ///   - shuffle: visit samples in a new random order each iteration.
    ///   - sampler: where indices come from (exclusive with `shuffle`).
    ///   - batchSampler: where index batches come from (exclusive with `batchSize`, `shuffle`,
    ///     `sampler` and `dropLast`).
    ///   - numWorkers: background fetching threads.
    ///   - pinMemory: put batches in page-locked host memory, so `.to(device)` copies them faster (PyTorch's
    ///     `pin_memory`; tensors, arrays, dictionaries and tuples of up to three tensors are pinned; without a
    ///     usable GPU it warns and does nothing, as PyTorch does).
    ///   - dropLast: drop the last batch when it is incomplete.
    ///   - prefetchFactor: batches in flight per worker (default 2; only with workers).
    ///   - generator: the generator used for shuffling and the iterator's base seed.
    public convenience init<D: utils.data.Dataset>(
        _ dataset: D, batchSize: Int = 1, shuffle: Bool = false, sampler: (any utils.data.Sampler<Int>)? = nil,
        batchSampler: (any utils.data.Sampler<[Int]>)? = nil, numWorkers: Int = 0, pinMemory: Bool = false, dropLast: Bool = false,
        prefetchFactor: Int? = nil, generator: Torch.Generator? = nil
    ) where D.Element: utils.data.Collatable, Batch == D.Element.Batch {
        self.init(dataset: dataset, batchSize: batchSize, shuffle: shuffle, sampler: sampler, batchSampler: batchSampler,
                  numWorkers: numWorkers, pinMemory: pinMemory, dropLast: dropLast, prefetchFactor: prefetchFactor, generator: generator,
                  fetch: defaultFetch(dataset) { D.Element.collate($0) })
    }

    /// A loader collating tuple samples position by position with the default collate function:
    /// a dataset of `(Tensor, Tensor)` gives `(x, y)` batches. Parameters as above.
    public convenience init<D: utils.data.Dataset, A: utils.data.Collatable, B: utils.data.Collatable, each T: utils.data.Collatable>(
        _ dataset: D, batchSize: Int = 1, shuffle: Bool = false, sampler: (any utils.data.Sampler<Int>)? = nil,
        batchSampler: (any utils.data.Sampler<[Int]>)? = nil, numWorkers: Int = 0, pinMemory: Bool = false, dropLast: Bool = false,
        prefetchFactor: Int? = nil, generator: Torch.Generator? = nil
    ) where D.Element == (A, B, repeat each T), Batch == (A.Batch, B.Batch, repeat (each T).Batch) {
        self.init(dataset: dataset, batchSize: batchSize, shuffle: shuffle, sampler: sampler, batchSampler: batchSampler,
                  numWorkers: numWorkers, pinMemory: pinMemory, dropLast: dropLast, prefetchFactor: prefetchFactor, generator: generator,
                  fetch: defaultFetch(dataset) { collateTuples($0) })
    }

    /// A loader whose batches are made by `collateFn` from the list of samples
    /// (PyTorch's `collate_fn`). Other parameters as above.
    ///
    /// ```swift
    /// let dl = DataLoader(ds, batchSize: 4, collateFn: { samples in samples.map { $0.0.sum() } })
    /// ```
    public convenience init<D: utils.data.Dataset>(
        _ dataset: D, batchSize: Int = 1, shuffle: Bool = false, sampler: (any utils.data.Sampler<Int>)? = nil,
        batchSampler: (any utils.data.Sampler<[Int]>)? = nil, numWorkers: Int = 0,
        collateFn: @escaping ([D.Element]) -> Batch, pinMemory: Bool = false, dropLast: Bool = false,
        prefetchFactor: Int? = nil, generator: Torch.Generator? = nil
    ) {
        self.init(dataset: dataset, batchSize: batchSize, shuffle: shuffle, sampler: sampler, batchSampler: batchSampler,
                  numWorkers: numWorkers, pinMemory: pinMemory, dropLast: dropLast, prefetchFactor: prefetchFactor, generator: generator,
                  fetch: { indices in collateFn(indices.map { dataset[$0] }) })
    }

    /// Same as `init(_:batchSize:...collateFn:...)`, with the collate function labelled `collate:`.
    public convenience init<D: utils.data.Dataset>(
        _ dataset: D, batchSize: Int = 1, shuffle: Bool = false, sampler: (any utils.data.Sampler<Int>)? = nil,
        batchSampler: (any utils.data.Sampler<[Int]>)? = nil, numWorkers: Int = 0,
        collate: @escaping ([D.Element]) -> Batch, pinMemory: Bool = false, dropLast: Bool = false,
        prefetchFactor: Int? = nil, generator: Torch.Generator? = nil
    ) {
        self.init(dataset, batchSize: batchSize, shuffle: shuffle, sampler: sampler, batchSampler: batchSampler,
                  numWorkers: numWorkers, collateFn: collate, pinMemory: pinMemory, dropLast: dropLast, prefetchFactor: prefetchFactor,
                  generator: generator)
    }

    /// `DataLoader(dataset: ds, batchSize: ...)`, as PyTorch code often spells it.
    public convenience init<D: utils.data.Dataset>(
        dataset: D, batchSize: Int = 1, shuffle: Bool = false, sampler: (any utils.data.Sampler<Int>)? = nil,
        batchSampler: (any utils.data.Sampler<[Int]>)? = nil, numWorkers: Int = 0, pinMemory: Bool = false, dropLast: Bool = false,
        prefetchFactor: Int? = nil, generator: Torch.Generator? = nil
    ) where D.Element: utils.data.Collatable, Batch == D.Element.Batch {
        self.init(dataset, batchSize: batchSize, shuffle: shuffle, sampler: sampler, batchSampler: batchSampler,
                  numWorkers: numWorkers, pinMemory: pinMemory, dropLast: dropLast, prefetchFactor: prefetchFactor, generator: generator)
    }

    /// `DataLoader(dataset: ds, batchSize: ...)` for tuple samples.
    public convenience init<D: utils.data.Dataset, A: utils.data.Collatable, B: utils.data.Collatable, each T: utils.data.Collatable>(
        dataset: D, batchSize: Int = 1, shuffle: Bool = false, sampler: (any utils.data.Sampler<Int>)? = nil,
        batchSampler: (any utils.data.Sampler<[Int]>)? = nil, numWorkers: Int = 0, pinMemory: Bool = false, dropLast: Bool = false,
        prefetchFactor: Int? = nil, generator: Torch.Generator? = nil
    ) where D.Element == (A, B, repeat each T), Batch == (A.Batch, B.Batch, repeat (each T).Batch) {
        self.init(dataset, batchSize: batchSize, shuffle: shuffle, sampler: sampler, batchSampler: batchSampler,
                  numWorkers: numWorkers, pinMemory: pinMemory, dropLast: dropLast, prefetchFactor: prefetchFactor, generator: generator)
    }
}

/// The default-collate fetch: the dataset's own batch path when it has one (and accepts the
/// batch), else `collate` over the samples.
private func defaultFetch<D: utils.data.Dataset, B>(_ dataset: D, _ collate: @escaping ([D.Element]) -> B) -> ([Int]) -> B {
    let perSample: ([Int]) -> B = { indices in collate(indices.map { dataset[$0] }) }
    guard let batched = dataset as? any utils.data.BatchedDataset else { return perSample }
    func open<BD: utils.data.BatchedDataset>(_ d: BD) -> (([Int]) -> B)? {
        guard BD.Batch.self == B.self else { return nil }
        return { indices in
            if let b = d.collatedBatch(indices) { return b as! B }
            return perSample(indices)
        }
    }
    return open(batched) ?? perSample
}

/// `batch` with its tensors in page-locked host memory (PyTorch's `pin_memory` walk, for the batch shapes the
/// default collation makes: a tensor, an array or dictionary of tensors, or a tuple of up to three tensors);
/// other batches unchanged.
func pinnedBatch<B>(_ batch: B) -> B {
    if let t = batch as? Tensor { return t.pinMemory() as! B }
    if let ts = batch as? [Tensor] { return ts.map { $0.pinMemory() } as! B }
    if let d = batch as? [String: Tensor] { return d.mapValues { $0.pinMemory() } as! B }
    if let (a, b) = batch as? (Tensor, Tensor) { return (a.pinMemory(), b.pinMemory()) as! B }
    if let (a, b, c) = batch as? (Tensor, Tensor, Tensor) { return (a.pinMemory(), b.pinMemory(), c.pinMemory()) as! B }
    return batch
}
