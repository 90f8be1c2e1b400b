/// Upsampling layers over `F.interpolate`: `nn.Upsample`, `nn.UpsamplingNearest2d`, `nn.UpsamplingBilinear2d`.

/// Python's repr of an int-or-tuple size (`3`, `(3, 4)`) and of a float-or-tuple scale (`2.0`, `(2.0, 1.5)`).
private func pySize(_ v: [Int]) -> String { v.count == 1 ? "\(v[0])" : pyTuple(v) }
private func pyScale(_ v: [Double]) -> String {
    v.count == 1 ? pyFloat(v[0]) : "(" + v.map(pyFloat).joined(separator: ", ") + ")"
}

extension nn {
    /// Resizes the spatial dims of `(N, C, *)` inputs to `size` or by `scaleFactor` (PyTorch's `nn.Upsample`).
    ///
    /// ```swift
    /// let up = nn.Upsample(scaleFactor: 2, mode: .bilinear)   // Upsample(scale_factor=2.0, mode='bilinear')
    /// let y = up(torch.randn(1, 3, 8, 8))                      // [1, 3, 16, 16]
    /// ```
    public class Upsample: Module {
        /// The output spatial size (one value for every dim, or one per dim), or nil.
        public let size: [Int]?
        /// The spatial multiplier (one value, or one per dim), or nil.
        public let scaleFactor: [Double]?
        public let mode: F.InterpolationMode
        public let alignCorners: Bool?
        public let recomputeScaleFactor: Bool?

        public init(size: (any IntOrTuple)? = nil, scaleFactor: (any ScaleFactorValue)? = nil,
                    mode: F.InterpolationMode = .nearest, alignCorners: Bool? = nil, recomputeScaleFactor: Bool? = nil) {
            self.size = size?.intTupleValues
            self.scaleFactor = scaleFactor?.scaleFactorValues
            self.mode = mode
            self.alignCorners = alignCorners
            self.recomputeScaleFactor = recomputeScaleFactor
            super.init()
        }

        public override func forward(_ x: Tensor) -> Tensor {
            F.interpolate(x, size: size, scaleFactor: scaleFactor, mode: mode, alignCorners: alignCorners,
                          recomputeScaleFactor: recomputeScaleFactor)
        }

        public override func extraRepr() -> String {
            let what = scaleFactor.map { "scale_factor=" + pyScale($0) } ?? "size=" + (size.map(pySize) ?? "None")
            return what + ", mode='\(mode.rawValue)'"
        }
    }

    /// Nearest-neighbour upsampling of 4-D inputs: `nn.UpsamplingNearest2d(scaleFactor: 2)`.
    public final class UpsamplingNearest2d: Upsample {
        public init(size: (any IntOrTuple)? = nil, scaleFactor: (any ScaleFactorValue)? = nil) {
            super.init(size: size, scaleFactor: scaleFactor, mode: .nearest)
        }
    }

    /// Bilinear upsampling of 4-D inputs with aligned corners: `nn.UpsamplingBilinear2d(size: [3, 4])`.
    public final class UpsamplingBilinear2d: Upsample {
        public init(size: (any IntOrTuple)? = nil, scaleFactor: (any ScaleFactorValue)? = nil) {
            super.init(size: size, scaleFactor: scaleFactor, mode: .bilinear, alignCorners: true)
        }
    }
}
