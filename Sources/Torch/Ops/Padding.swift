/// `F.pad`: constant, reflect, replicate and circular padding of the last dims (PyTorch's `torch.nn.functional.pad`).

extension nn.functional {
    /// How `F.pad` fills the border.
    public enum PadMode: String, Sendable {
        /// A constant `value` (negative pads crop).
        case constant
        /// The input mirrored about its edge, edge excluded: `[1 2 3]` padded by 2 → `3 2 [1 2 3] 2 1`.
        case reflect
        /// The edge value repeated: `1 1 [1 2 3] 3 3`.
        case replicate
        /// The input wrapped around: `2 3 [1 2 3] 1 2`.
        case circular
    }

    /// Pads the last `pad.count / 2` dims of `input`: `pad` lists (before, after) amounts starting from the last
    /// dim, as in PyTorch (`[left, right, top, bottom]` pads W then H).
    ///
    /// ```swift
    /// let x = torch.arange(6.0).view(1, 2, 3)
    /// F.pad(x, [1, 1])                      // zeros left and right of the last dim: [1, 2, 5]
    /// F.pad(x, [2, 0], mode: .reflect)      // [[2, 1, 0, 1, 2], …]
    /// ```
    public static func pad(_ input: Tensor, _ pad: [Int], mode: PadMode = .constant, value: Double = 0) -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.pad(pad, mode: mode, value: value), [input], { nn.functional.pad(input, pad, mode: mode, value: value) }) { return r }
        precondition(pad.count % 2 == 0, "Padding length must be divisible by 2")
        let k = pad.count / 2
        precondition(k <= input.dim, "Padding length should be less than or equal to two times the input dimension but got padding length \(pad.count) and input of dimension \(input.dim)")
        switch mode {
        case .constant:
            return constantPad(input, pad, value: value)
        case .reflect, .replicate, .circular:
            precondition(pad.allSatisfy { $0 >= 0 } || mode == .circular,
                         "\(mode.rawValue) padding: negative padding is only supported in constant and circular mode, got \(pad)")
            var out = input
            for i in 0..<k {
                let d = input.dim - 1 - i
                let (before, after) = (pad[2 * i], pad[2 * i + 1])
                if before == 0 && after == 0 { continue }
                let size = input.shape[d]
                switch mode {
                case .reflect:
                    precondition(before < size && after < size,
                                 "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (\(before), \(after)) at dimension \(d) of input \(shapeString(input.shape))")
                case .circular:
                    precondition(before <= size && after <= size,
                                 "Padding value causes wrapping around more than once.")
                default:
                    precondition(size > 0, "replicate padding: input dimension \(d) is empty in input \(shapeString(input.shape))")
                }
                let index = (-before..<(size + after)).map { j -> Int64 in
                    switch mode {
                    case .reflect:
                        let period = 2 * (size - 1)
                        var m = period == 0 ? 0 : ((j % period) + period) % period
                        if m >= size { m = period - m }
                        return Int64(m)
                    case .replicate: return Int64(Swift.min(Swift.max(j, 0), size - 1))
                    default: return Int64(((j % size) + size) % size)
                    }
                }
                out = out.indexSelect(d, Tensor(index, shape: [index.count]))
            }
            return out
        }
    }

    /// Constant padding (negative amounts crop), recorded as `ConstantPadNdBackward0`.
    private static func constantPad(_ input: Tensor, _ pad: [Int], value: Double) -> Tensor {
        var outShape = input.shape
        // For each padded dim: the region of the input that survives and where it lands in the output.
        var regions: [(dim: Int, inStart: Int, outStart: Int, length: Int)] = []
        for i in 0..<(pad.count / 2) {
            let d = input.dim - 1 - i
            let (before, after) = (pad[2 * i], pad[2 * i + 1])
            let size = input.shape[d]
            let newSize = size + before + after
            precondition(newSize >= 0, "The input size \(size), plus negative padding \(before) and \(after) resulted in a negative output size, which is invalid. Check dimension \(d) of your input.")
            outShape[d] = newSize
            let inStart = Swift.max(-before, 0), outStart = Swift.max(before, 0)
            let length = Swift.max(0, Swift.min(size - inStart, newSize - outStart))
            regions.append((d, inStart, outStart, length))
        }
        let out = torch.full(outShape, value, dtype: input.dtype, device: input.device)
        torch.noGrad {
            var src = input, dst = out
            for r in regions {
                src = src.narrow(r.dim, r.inStart, r.length)
                dst = dst.narrow(r.dim, r.outStart, r.length)
            }
            if src.numel > 0 { copyKernel(from: src, into: dst) }
        }
        if input.needsGrad {
            let inShape = input.shape
            record("ConstantPadNdBackward0", out, inputs: [input]) { _, g in
                // The gradient of the kept region, zero-padded back where the input was cropped.
                var inner = g
                var back: [Int] = []
                for r in regions {
                    inner = inner.narrow(r.dim, r.outStart, r.length)
                    back += [r.inStart, inShape[r.dim] - r.inStart - r.length]
                }
                return [back.allSatisfy { $0 == 0 } ? inner : constantPad(inner, back, value: 0)]
            }
        }
        return out
    }
}
