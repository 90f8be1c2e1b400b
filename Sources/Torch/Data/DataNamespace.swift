/// PyTorch's `torch.utils`.
public enum utils {
    /// PyTorch's `torch.utils.data`: datasets, samplers, collation and `DataLoader`.
    ///
    /// ```swift
    /// let ds = TensorDataset(X, Y)
    /// let parts = utils.data.randomSplit(ds, [0.8, 0.2], generator: Generator().manualSeed(42))
    /// for (x, y) in DataLoader(parts[0], batchSize: 2, shuffle: true) { ... }
    /// ```
    public enum data {}
}

/// `torch.utils.data.Dataset`, importable bare as in `from torch.utils.data import Dataset`.
public typealias Dataset = utils.data.Dataset
/// `torch.utils.data.DataLoader`, importable bare.
public typealias DataLoader<Batch> = utils.data.DataLoader<Batch>
/// `torch.utils.data.TensorDataset`, importable bare.
public typealias TensorDataset<Element> = utils.data.TensorDataset<Element>
