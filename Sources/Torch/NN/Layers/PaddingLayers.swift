/// Padding layers over `F.pad`: `nn.ZeroPad1d/2d/3d`, `nn.ConstantPad1d/2d/3d`, `nn.ReflectionPad1d/2d/3d`,
/// `nn.ReplicationPad1d/2d/3d`, `nn.CircularPad1d/2d/3d`, with PyTorch's arguments and reprs.
///
/// ```swift
/// let pad = nn.ZeroPad2d([1, 1, 2, 0])        // ZeroPad2d((1, 1, 2, 0)): left, right, top, bottom
/// let y = pad(torch.randn(1, 3, 4, 4))          // [1, 3, 6, 6]
/// let r = nn.ReflectionPad1d(2)                 // ReflectionPad1d((2, 2))
/// ```

extension nn {
    /// What every padding layer shares (PyTorch's `_ConstantPadNd`, `_ReflectionPadNd`, …): the `(before, after)`
    /// amounts of the last `dims` dims, last dim first, and how the border is filled.
    public class PadNd: Module {
        /// `2 · dims` amounts: (left, right) of the last dim, then of the dim before it, …
        public let padding: [Int]
        /// How the border is filled.
        public let mode: F.PadMode
        /// The fill value (constant mode only).
        public let value: Double
        let dims: Int

        init(dims: Int, padding: any IntOrTuple, mode: F.PadMode, value: Double = 0) {
            let given = padding.intTupleValues
            precondition(given.count == 1 || given.count == 2 * dims,
                         "Padding layer: padding must be an int or a tuple of \(2 * dims) ints, got \(given)")
            self.dims = dims
            self.padding = given.count == 1 ? Array(repeating: given[0], count: 2 * dims) : given
            self.mode = mode
            self.value = value
            super.init()
        }

        public override func forward(_ x: Tensor) -> Tensor {
            precondition(x.dim == dims + 1 || x.dim == dims + 2,
                         "\(typeName): expected \(dims + 1)D or \(dims + 2)D input, but got input of shape \(shapeString(x.shape))")
            return F.pad(x, padding, mode: mode, value: value)
        }

        public override func extraRepr() -> String { pyTuple(padding) }
    }

    /// Constant padding with a given value (PyTorch's `_ConstantPadNd`); repr `padding=(…), value=…`.
    public class ConstantPadNd: PadNd {
        init(dims: Int, padding: any IntOrTuple, value: Double) {
            super.init(dims: dims, padding: padding, mode: .constant, value: value)
        }
        public override func extraRepr() -> String { "padding=\(pyTuple(padding)), value=\(pyFloat(value))" }
    }

    /// Pads the last dim with `value`: `nn.ConstantPad1d(2, 3.5)`.
    public final class ConstantPad1d: ConstantPadNd {
        public init(_ padding: any IntOrTuple, _ value: Double) { super.init(dims: 1, padding: padding, value: value) }
    }
    /// Pads the last two dims with `value`: `nn.ConstantPad2d([1, 1, 2, 0], 3.5)`.
    public final class ConstantPad2d: ConstantPadNd {
        public init(_ padding: any IntOrTuple, _ value: Double) { super.init(dims: 2, padding: padding, value: value) }
    }
    /// Pads the last three dims with `value`.
    public final class ConstantPad3d: ConstantPadNd {
        public init(_ padding: any IntOrTuple, _ value: Double) { super.init(dims: 3, padding: padding, value: value) }
    }

    /// Zero-pads the last dim: `nn.ZeroPad1d(2)`.
    public final class ZeroPad1d: PadNd {
        public init(_ padding: any IntOrTuple) { super.init(dims: 1, padding: padding, mode: .constant) }
    }
    /// Zero-pads the last two dims: `nn.ZeroPad2d([1, 1, 2, 0])` (left, right, top, bottom).
    public final class ZeroPad2d: PadNd {
        public init(_ padding: any IntOrTuple) { super.init(dims: 2, padding: padding, mode: .constant) }
    }
    /// Zero-pads the last three dims.
    public final class ZeroPad3d: PadNd {
        public init(_ padding: any IntOrTuple) { super.init(dims: 3, padding: padding, mode: .constant) }
    }

    /// Mirrors the last dim about its edges (edge excluded).
    public final class ReflectionPad1d: PadNd {
        public init(_ padding: any IntOrTuple) { super.init(dims: 1, padding: padding, mode: .reflect) }
    }
    /// Mirrors the last two dims about their edges (edge excluded).
    public final class ReflectionPad2d: PadNd {
        public init(_ padding: any IntOrTuple) { super.init(dims: 2, padding: padding, mode: .reflect) }
    }
    /// Mirrors the last three dims about their edges (edge excluded).
    public final class ReflectionPad3d: PadNd {
        public init(_ padding: any IntOrTuple) { super.init(dims: 3, padding: padding, mode: .reflect) }
    }

    /// Repeats the edge values of the last dim.
    public final class ReplicationPad1d: PadNd {
        public init(_ padding: any IntOrTuple) { super.init(dims: 1, padding: padding, mode: .replicate) }
    }
    /// Repeats the edge values of the last two dims.
    public final class ReplicationPad2d: PadNd {
        public init(_ padding: any IntOrTuple) { super.init(dims: 2, padding: padding, mode: .replicate) }
    }
    /// Repeats the edge values of the last three dims.
    public final class ReplicationPad3d: PadNd {
        public init(_ padding: any IntOrTuple) { super.init(dims: 3, padding: padding, mode: .replicate) }
    }

    /// Wraps the last dim around.
    public final class CircularPad1d: PadNd {
        public init(_ padding: any IntOrTuple) { super.init(dims: 1, padding: padding, mode: .circular) }
    }
    /// Wraps the last two dims around.
    public final class CircularPad2d: PadNd {
        public init(_ padding: any IntOrTuple) { super.init(dims: 2, padding: padding, mode: .circular) }
    }
    /// Wraps the last three dims around.
    public final class CircularPad3d: PadNd {
        public init(_ padding: any IntOrTuple) { super.init(dims: 3, padding: padding, mode: .circular) }
    }
}
