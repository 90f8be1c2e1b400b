extension utils.data {
    /// A dataset of tensors sliced along their first dimension (PyTorch's `TensorDataset`).
    ///
    /// The element type follows the number of tensors: `TensorDataset(X)` gives `Tensor`,
    /// `TensorDataset(X, Y)` gives `(Tensor, Tensor)`, three or four tensors give 3- and 4-tuples,
    /// and `TensorDataset(tensors: [...])` (any number) gives `[Tensor]`. So a two-tensor dataset batches
    /// into `(x, y)` pairs:
    ///
    /// ```swift
    /// let ds = TensorDataset(X, Y)
    /// let (x0, y0) = ds[0]
    /// for (x, y) in DataLoader(ds, batchSize: 2, shuffle: true) { ... }
    /// ```
    public struct TensorDataset<Element>: Dataset {
        /// The tensors, all of the same first-dimension size.
        public let tensors: [Tensor]
        private let sample: ([Tensor], Int) -> Element

        private init(_ tensors: [Tensor], _ sample: @escaping ([Tensor], Int) -> Element) {
            precondition(!tensors.isEmpty, "TensorDataset: expected at least one tensor")
            precondition(tensors.allSatisfy { $0.dim > 0 }, "TensorDataset: tensors must have at least one dimension (got shapes \(tensors.map { $0.shape }))")
            let n = tensors[0].shape[0]
            precondition(tensors.allSatisfy { $0.shape[0] == n },
                         "Size mismatch between tensors: first dimensions \(tensors.map { $0.shape[0] })")
            self.tensors = tensors
            self.sample = sample
        }

        /// Number of samples: the tensors' first dimension.
        public var count: Int { tensors[0].shape[0] }

        /// The `index`-th slice of every tensor (a view, like `tensor[index]`).
        public subscript(index: Int) -> Element {
            precondition(index >= -count && index < count, datasetIndexMessage(index, count: count, "TensorDataset"))
            return sample(tensors, index)
        }
    }
}

extension utils.data.TensorDataset where Element == Tensor {
    /// A dataset over one tensor; its samples are `tensor[i]`.
    public init(_ tensor: Tensor) {
        self.init([tensor]) { t, i in t[0].select(0, i) }
    }
}

extension utils.data.TensorDataset where Element == (Tensor, Tensor) {
    /// A dataset of `(a[i], b[i])` pairs (inputs and targets).
    public init(_ a: Tensor, _ b: Tensor) {
        self.init([a, b]) { t, i in (t[0].select(0, i), t[1].select(0, i)) }
    }
}

extension utils.data.TensorDataset where Element == (Tensor, Tensor, Tensor) {
    /// A dataset of `(a[i], b[i], c[i])` triples.
    public init(_ a: Tensor, _ b: Tensor, _ c: Tensor) {
        self.init([a, b, c]) { t, i in (t[0].select(0, i), t[1].select(0, i), t[2].select(0, i)) }
    }
}

extension utils.data.TensorDataset where Element == (Tensor, Tensor, Tensor, Tensor) {
    /// A dataset of `(a[i], b[i], c[i], d[i])` 4-tuples.
    public init(_ a: Tensor, _ b: Tensor, _ c: Tensor, _ d: Tensor) {
        self.init([a, b, c, d]) { t, i in (t[0].select(0, i), t[1].select(0, i), t[2].select(0, i), t[3].select(0, i)) }
    }
}

extension utils.data.TensorDataset where Element == [Tensor] {
    /// A dataset over an array of tensors; its samples are arrays `[t0[i], t1[i], ...]`.
    public init(tensors: [Tensor]) {
        self.init(tensors) { t, i in t.map { $0.select(0, i) } }
    }
}
