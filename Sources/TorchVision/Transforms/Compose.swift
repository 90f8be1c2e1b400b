import Torch

extension transforms {
    /// Applies transforms one after the other (torchvision's `Compose`).
    ///
    /// ```swift
    /// let t = transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.5], [0.5])])
    /// let x = t(image)   // float 1×28×28 in [-1, 1]
    /// ```
    ///
    /// A leading `ToTensor` followed by single-channel `Normalize`s maps each byte of a grey
    /// image to one float, so on uint8 H×W images (and B×H×W batches) those steps run as one
    /// 256-entry table lookup per pixel. The table is made by running the transforms themselves on
    /// all 256 byte values, so the results are identical to applying them one by one.
    public struct Compose: Transform {
        /// The transforms, in application order.
        public let transforms: [any Transform]
        private let byteTable: ByteTable?

        /// Composes `transforms`.
        public init(_ transforms: [any Transform]) {
            self.transforms = transforms
            byteTable = ByteTable(transforms)
        }

        public func callAsFunction(_ input: Tensor) -> Tensor { apply(.tensor(input)).value }

        /// Each transform in turn on a picture or tensor.
        public func apply(_ sample: transforms.Sample) -> transforms.Sample {
            if case .tensor(let t) = sample, let table = byteTable, let x = table.apply(t, batched: false) {
                return transforms[table.count...].reduce(.tensor(x)) { s, t in t.apply(s) }
            }
            return transforms.reduce(sample) { s, t in t.apply(s) }
        }

        /// Batched when every part is, or when the parts from the first random one on can draw
        /// each sample's parameters in the per-sample order (crops, flips, and the deterministic
        /// `ToTensor`, `Normalize`, `ConvertImageDtype`, `CenterCrop`): the result equals
        /// transforming sample by sample under the same seed.
        public func applyToBatch(_ batch: Tensor) -> Tensor? {
            var x = batch
            var rest = transforms[...]
            if let table = byteTable, let y = table.apply(batch, batched: true) {
                x = y
                rest = transforms[table.count...]
            }
            while let t = rest.first {
                // A random transform's applyToBatch is nil and draws nothing.
                if !(t is any BatchSteppable), let y = t.applyToBatch(x) {
                    x = y
                    rest = rest.dropFirst()
                    continue
                }
                return BatchRun.apply(rest, to: x)
            }
            return x
        }

        /// torchvision's repr: `Compose(` then each transform on its own indented line, then `)`.
        public var description: String {
            "Compose(" + transforms.map { "\n    \($0)" }.joined() + "\n)"
        }
    }
}

/// The leading `ToTensor` + single-channel `Normalize` steps of a `Compose` as a byte → float table.
private struct ByteTable {
    /// How many leading transforms the table replaces.
    let count: Int
    /// The default dtype the table was made under (ToTensor's output type).
    let dtype: DType
    let values: Tensor

    init?(_ ts: [any transforms.Transform]) {
        guard ts.first is transforms.ToTensor else { return nil }
        var k = 1
        while k < ts.count, let n = ts[k] as? transforms.Normalize, n.mean.count == 1, n.std.count == 1, !n.inplace { k += 1 }
        // Run the real transforms on a 1×256 image holding every byte value.
        var x = torch.arange(256, dtype: .uint8).view(1, 256)
        for t in ts[0..<k] { x = t(x) }
        count = k
        dtype = x.dtype
        values = x.contiguous().view(256)
    }

    /// `input` (uint8 H×W, or B×H×W when `batched`) through the table: float 1×H×W or B×1×H×W.
    /// Nil when the input is not a contiguous grey uint8 image or the default dtype changed.
    func apply(_ input: Tensor, batched: Bool) -> Tensor? {
        guard input.dtype == .uint8, input.dim == (batched ? 3 : 2), input.isContiguous, input.device == .cpu,
              torch.defaultDType == dtype else { return nil }
        var shape = input.shape
        shape.insert(1, at: batched ? 1 : 0)
        let out = torch.empty(shape, dtype: dtype)
        let n = input.numel
        let src = (input.storage.data + input.storageOffset).assumingMemoryBound(to: UInt8.self)
        func gather<T>(_: T.Type) {
            let lut = (values.storage.data + values.storageOffset * MemoryLayout<T>.stride).assumingMemoryBound(to: T.self)
            let dst = (out.storage.data + out.storageOffset * MemoryLayout<T>.stride).assumingMemoryBound(to: T.self)
            for i in 0..<n { dst[i] = lut[Int(src[i])] }
        }
        switch dtype {
        case .float64: gather(Double.self)
        default: gather(Float.self)
        }
        return out
    }
}
