extension utils.data {
    /// A sample type the default collate function knows how to batch (PyTorch's
    /// `default_collate` rules): tensors are stacked along a new first dimension, Swift numbers
    /// become a 1-D tensor (`Int` → int64, `Double` → float64, `Float` → float32, `Bool` → bool),
    /// strings stay an array, arrays and dictionaries are collated element by element. Tuples of
    /// collatable values are collated position by position (see `defaultCollate`).
    public protocol Collatable {
        /// What a batch of this type becomes.
        associatedtype Batch
        /// Collates `samples` (at least one) into a batch.
        static func collate(_ samples: [Self]) -> Batch
    }

    /// Collates a batch of samples (PyTorch's `default_collate`).
    ///
    /// ```swift
    /// let batch = utils.data.defaultCollate([torch.zeros(3), torch.ones(3)])   // shape [2, 3]
    /// ```
    public static func defaultCollate<T: Collatable>(_ samples: [T]) -> T.Batch {
        T.collate(samples)
    }

    /// Collates a batch of tuples position by position: `[(x, y)]` → `(stack(xs), stack(ys))`.
    ///
    /// ```swift
    /// let (x, y) = utils.data.defaultCollate([(torch.zeros(3), 0), (torch.ones(3), 1)])
    /// // x: [2, 3] float32, y: tensor([0, 1])
    /// ```
    public static func defaultCollate<A: Collatable, B: Collatable, each T: Collatable>(
        _ samples: [(A, B, repeat each T)]
    ) -> (A.Batch, B.Batch, repeat (each T).Batch) {
        collateTuples(samples)
    }
}

/// Transposes a batch of tuples and collates each position.
func collateTuples<each T: utils.data.Collatable>(_ samples: [(repeat each T)]) -> (repeat (each T).Batch) {
    let columns = (repeat CollateColumn<each T>(capacity: samples.count))
    for sample in samples {
        repeat (each columns).values.append(each sample)
    }
    return (repeat (each columns).collate())
}

/// One tuple position's values while a batch of tuples is being transposed.
final class CollateColumn<T: utils.data.Collatable> {
    var values: [T] = []
    init(capacity: Int) { values.reserveCapacity(capacity) }
    func collate() -> T.Batch { T.collate(values) }
}

extension Tensor: utils.data.Collatable {
    /// Stacks the samples along a new first dimension (`torch.stack(samples, 0)`).
    public static func collate(_ samples: [Tensor]) -> Tensor { collateStack(samples) }
}

extension Int: utils.data.Collatable {
    /// An int64 tensor of the values.
    public static func collate(_ samples: [Int]) -> Tensor { Tensor(samples.map { Int64($0) }, shape: [samples.count]) }
}
extension Int64: utils.data.Collatable {
    /// An int64 tensor of the values.
    public static func collate(_ samples: [Int64]) -> Tensor { Tensor(samples, shape: [samples.count]) }
}
extension Int32: utils.data.Collatable {
    /// An int32 tensor of the values.
    public static func collate(_ samples: [Int32]) -> Tensor { Tensor(samples, shape: [samples.count]) }
}
extension UInt8: utils.data.Collatable {
    /// A uint8 tensor of the values.
    public static func collate(_ samples: [UInt8]) -> Tensor { Tensor(samples, shape: [samples.count]) }
}
extension Double: utils.data.Collatable {
    /// A float64 tensor of the values (Python floats collate to float64).
    public static func collate(_ samples: [Double]) -> Tensor { Tensor(samples, shape: [samples.count]) }
}
extension Float: utils.data.Collatable {
    /// A float32 tensor of the values.
    public static func collate(_ samples: [Float]) -> Tensor { Tensor(samples, shape: [samples.count]) }
}
extension Bool: utils.data.Collatable {
    /// A bool tensor of the values.
    public static func collate(_ samples: [Bool]) -> Tensor { Tensor(samples, shape: [samples.count]) }
}
extension String: utils.data.Collatable {
    /// The strings unchanged, as a list.
    public static func collate(_ samples: [String]) -> [String] { samples }
}

extension Array: utils.data.Collatable where Element: utils.data.Collatable {
    /// Collates position by position: `[[a0, b0], [a1, b1]]` → `[collate([a0, a1]), collate([b0, b1])]`.
    /// Every sample must have the same length.
    public static func collate(_ samples: [[Element]]) -> [Element.Batch] {
        let n = samples.first?.count ?? 0
        precondition(samples.allSatisfy { $0.count == n }, "each element in list of batch should be of equal size")
        return (0..<n).map { k in Element.collate(samples.map { $0[k] }) }
    }
}

extension Dictionary: utils.data.Collatable where Value: utils.data.Collatable {
    /// Collates key by key: `[["x": a0], ["x": a1]]` → `["x": collate([a0, a1])]`. Keys come from the
    /// first sample and must be present in all of them.
    public static func collate(_ samples: [[Key: Value]]) -> [Key: Value.Batch] {
        guard let first = samples.first else { return [:] }
        var out: [Key: Value.Batch] = [:]
        for key in first.keys {
            out[key] = Value.collate(samples.map { s in
                guard let v = s[key] else { preconditionFailure("default_collate: key \(key) is missing from a sample") }
                return v
            })
        }
        return out
    }
}

/// The message PyTorch's `torch.stack` gives for samples of different sizes, or nil when they agree.
func collateStackError(_ shapes: [[Int]]) -> String? {
    guard let first = shapes.first else { return "stack expects a non-empty TensorList" }
    if let k = shapes.firstIndex(where: { $0 != first }) {
        return "stack expects each tensor to be equal size, but got \(shapeString(first)) at entry 0 and \(shapeString(shapes[k])) at entry \(k)"
    }
    return nil
}

/// `torch.stack(samples, 0)` for collation: one allocation and one copy per sample (a plain
/// memcpy for contiguous samples), the dtypes promoted as `torch.stack` does, and a
/// `StackBackward0` node when a sample requires grad.
func collateStack(_ samples: [Tensor]) -> Tensor {
    if let message = collateStackError(samples.map { $0.shape }) { preconditionFailure(message) }
    let dtype = samples.dropFirst().allSatisfy({ $0.dtype == samples[0].dtype }) ? samples[0].dtype : resultType(samples)
    let sampleShape = samples[0].shape
    let out = Tensor(uninitializedShape: [samples.count] + sampleShape, dtype: dtype)
    let n = shapeNumel(sampleShape), bytes = n * dtype.itemSize
    for (i, s) in samples.enumerated() {
        if s.dtype == dtype && s.isContiguous {
            if bytes > 0 { (out.rawPointer + i * bytes).copyMemory(from: s.rawPointer, byteCount: bytes) }
        } else {
            let dst = Tensor(storage: out.storage, shape: sampleShape, strides: contiguousStrides(sampleShape), offset: i * n, dtype: dtype)
            copyKernel(from: s, into: dst)
        }
    }
    if anyNeedsGrad(samples) {
        let count = samples.count
        record("StackBackward0", out, inputs: samples) { _, g in (0..<count).map { g.select(0, $0) } }
    }
    return out
}
