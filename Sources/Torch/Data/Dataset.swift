extension utils.data {
    /// A map-style dataset (PyTorch's `Dataset`): `count` samples addressed by index.
    ///
    /// ```swift
    /// final class MyDataset: Dataset {
    ///     let x: Tensor, y: Tensor
    ///     init(_ x: Tensor, _ y: Tensor) { self.x = x.clone().detach(); self.y = y.clone().detach() }
    ///     var count: Int { x.size(0) }                                     // __len__
    ///     subscript(ix: Int) -> (Tensor, Tensor) { (x[ix], y[ix]) }        // __getitem__
    /// }
    /// ```
    ///
    /// A dataset used with `DataLoader(numWorkers: n)` with `n > 0` is read from several threads at
    /// once; its subscript must not mutate shared state.
    public protocol Dataset<Element> {
        /// The type of one sample.
        associatedtype Element
        /// Number of samples (PyTorch's `__len__`).
        var count: Int { get }
        /// The sample at `index` in `0..<count` (PyTorch's `__getitem__`).
        subscript(index: Int) -> Element { get }
    }

    /// A dataset that can build a whole batch at once, faster than fetching its samples one by one
    /// and collating them (the role of PyTorch's `__getitems__`).
    ///
    /// `DataLoader` uses it when no custom collate function is given. The result must equal what
    /// the default collate function makes of `indices.map { self[$0] }`; returning nil falls back
    /// to that per-sample path.
    public protocol BatchedDataset<Element>: Dataset {
        /// The default-collated batch type.
        associatedtype Batch
        /// The batch of the samples at `indices`, or nil to let the caller fetch them one by one.
        func collatedBatch(_ indices: [Int]) -> Batch?
    }
}

/// Arrays are datasets of their elements, as Python lists are for `DataLoader`.
extension Array: utils.data.Dataset {}

/// Integer ranges are datasets of their values (`RandomSampler(0..<10)`, like `range(10)`).
extension Range: utils.data.Dataset where Bound == Int {}

/// "index i is out of range for a dataset of n samples": the message of a bad dataset index.
func datasetIndexMessage(_ index: Int, count: Int, _ what: String) -> String {
    "\(what): index \(index) is out of range for a dataset of \(count) samples"
}
