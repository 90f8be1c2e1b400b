#if canImport(Glibc)
import Glibc
#endif

extension torch {
    /// Draws `numSamples` category indices per row of `input` (non-negative weights, 1-D or 2-D),
    /// with PyTorch's CPU algorithm and random stream: with replacement (and more than one sample),
    /// a binary search of the normalised cumulative weights for each uniform float64 draw; without
    /// replacement (or for one sample), the largest `weight / Exp(1)` keys.
    ///
    /// ```swift
    /// let idx = torch.multinomial(torch.tensor([0.1, 0.5, 0.4]), 4, replacement: true)   // int64, shape [4]
    /// ```
    public static func multinomial(_ input: Tensor, _ numSamples: Int, replacement: Bool = false, generator: Generator? = nil) -> Tensor {
        if let message = multinomialError(shape: input.shape, dtype: input.dtype, numSamples: numSamples, replacement: replacement) {
            preconditionFailure(message)
        }
        let g = generator ?? defaultGenerator
        let rows = input.dim == 2 ? input.shape[0] : 1
        let categories = input.shape[input.dim - 1]
        let w = input.to(.float64).contiguous().toArray(as: Double.self)
        var out = [Int64](repeating: 0, count: rows * numSamples)
        if !replacement || numSamples == 1 {
            // Validity checks as PyTorch's fast path makes them.
            precondition(w.allSatisfy { $0 >= 0 && $0 < .infinity }, "probability tensor contains either `inf`, `nan` or element < 0")
            for r in 0..<rows {
                let row = w[(r * categories)..<((r + 1) * categories)]
                precondition(row.reduce(0, +) != 0, "invalid multinomial distribution (sum of probabilities <= 0)")
            }
            // q = empty_like(self).exponential_(1, gen); q = self / q; topk/argmax over the last dim.
            // exponential_ draws one uniform float64 per element in row-major order.
            var q = [Double](repeating: 0, count: w.count)
            for i in 0..<w.count {
                let u = Double(g.random64() & ((1 << 53) - 1)) * 0x1p-53
                q[i] = w[i] / (-1.0 * Glibc.log1p(-u))
            }
            for r in 0..<rows {
                let base = r * categories
                let order = (0..<categories).sorted { a, b in
                    let qa = q[base + a], qb = q[base + b]
                    return qa > qb || (qa == qb && a < b)
                }
                for j in 0..<numSamples { out[r * numSamples + j] = Int64(order[j]) }
            }
        } else if input.dtype == .float64 {
            sampleWithReplacement(w, rows: rows, categories: categories, numSamples: numSamples, g, into: &out)
        } else {
            // float32/float16/bfloat16 accumulate the cumulative distribution in float, as PyTorch does.
            sampleWithReplacement(w.map { Float($0) }, rows: rows, categories: categories, numSamples: numSamples, g, into: &out)
        }
        return Tensor(out, shape: input.dim == 2 ? [rows, numSamples] : [numSamples])
    }

    /// PyTorch's `multinomial_with_replacement` CPU kernel, accumulating in `T`.
    private static func sampleWithReplacement<T: BinaryFloatingPoint>(_ w: [T], rows: Int, categories: Int, numSamples: Int,
                                                                      _ g: Generator, into out: inout [Int64]) {
        var cum = [T](repeating: 0, count: categories)
        for r in 0..<rows {
            var sum: T = 0
            for j in 0..<categories {
                let v = w[r * categories + j]
                precondition(v >= 0, "invalid multinomial distribution (encountering probability entry < 0)")
                precondition(v.isFinite, "invalid multinomial distribution (encountering probability entry = infinity or NaN)")
                sum += v
                cum[j] = sum
            }
            precondition(sum > 0, "invalid multinomial distribution (sum of probabilities <= 0)")
            for j in 0..<categories { cum[j] /= sum }
            cum[categories - 1] = 1
            for s in 0..<numSamples {
                let u = Double(g.random64() & ((1 << 53) - 1)) * 0x1p-53
                var lo = 0, hi = categories
                while hi - lo > 0 {
                    let mid = lo + (hi - lo) / 2
                    if Double(cum[mid]) < u { lo = mid + 1 } else { hi = mid }
                }
                out[r * numSamples + s] = Int64(lo)
            }
        }
    }

    /// PyTorch's argument checks for `multinomial`; nil when the call is valid.
    static func multinomialError(shape: [Int], dtype: DType, numSamples: Int, replacement: Bool) -> String? {
        if !dtype.isFloatingPoint { return "multinomial only supports floating-point dtypes for input, got: \(dtype)" }
        if shape.count != 1 && shape.count != 2 { return "prob_dist must be 1 or 2 dim" }
        if numSamples <= 0 { return "cannot sample n_sample <= 0 samples" }
        let categories = shape[shape.count - 1]
        if categories == 0 { return "multinomial: expected a non-empty probability distribution" }
        if !replacement && numSamples > categories { return "cannot sample n_sample > prob_dist.size(-1) samples without replacement" }
        return nil
    }
}

extension Tensor {
    /// `torch.multinomial(self, numSamples, replacement:, generator:)`.
    public func multinomial(_ numSamples: Int, replacement: Bool = false, generator: Generator? = nil) -> Tensor {
        torch.multinomial(self, numSamples, replacement: replacement, generator: generator)
    }
}
