#if canImport(Glibc)
import Glibc
#endif

extension torch {
    /// Samples from Dirichlet distributions with concentrations `alpha` (the last dimension holds one
    /// distribution's concentrations), with PyTorch's CPU algorithm and random stream
    /// (`torch._sample_dirichlet`): a Gamma(αᵢ, 1) sample per element in double precision
    /// (Marsaglia–Tsang, boosted for α < 1), normalised along the last dimension.
    ///
    /// ```swift
    /// let w = torch._sampleDirichlet(torch.tensor([1.0, 1.0, 1.0]).float().view(1, 3))   // rows sum to 1
    /// ```
    public static func _sampleDirichlet(_ alpha: Tensor, generator: Generator? = nil) -> Tensor {
        precondition(alpha.dtype.isFloatingPoint && alpha.dim >= 1,
                     "_sample_dirichlet: expected a floating point tensor with at least one dimension, got \(alpha.dtype) \(alpha.shape)")
        let g = generator ?? defaultGenerator
        let a = alpha.to(.float64).contiguous().toArray(as: Double.self)
        var gamma = a.map { Swift.max(Double.leastNormalMagnitude, standardGamma($0, g)) }
        let k = alpha.shape[alpha.dim - 1]
        let isFloat = alpha.dtype != .float64
        for row in stride(from: 0, to: gamma.count, by: Swift.max(k, 1)) {
            var sum = 0.0
            for i in row..<(row + k) { sum += gamma[i] }
            for i in row..<(row + k) {
                let v = gamma[i] / sum
                // Clamped to [smallest normal, largest value below 1] of the output type.
                gamma[i] = isFloat ? Double(Swift.min(Float(1).nextDown, Swift.max(Float.leastNormalMagnitude, Float(v))))
                                   : Swift.min(Double(1).nextDown, Swift.max(Double.leastNormalMagnitude, v))
            }
        }
        return Tensor(gamma, shape: alpha.shape).to(alpha.dtype)
    }

    /// One Gamma(`alpha`, 1) sample as PyTorch's `sample_gamma<double>` draws it.
    static func standardGamma(_ alpha: Double, _ g: Generator) -> Double {
        var alpha = alpha, scale = 1.0
        if alpha < 1 {
            if alpha == 0 { return 0 }
            scale *= Glibc.pow(1 - g.uniformDouble(0, 1), 1 / alpha)
            alpha += 1
        }
        // PyTorch writes 1.0f / 3.0f and 0.0331f: float constants in double arithmetic.
        let d = alpha - Double(Float(1) / Float(3))
        let c = 1 / (9 * d).squareRoot()
        while true {
            var x = 0.0, y = 0.0
            repeat {
                x = g.normalDouble()
                y = 1 + c * x
            } while y <= 0
            let v = y * y * y
            let u = 1 - g.uniformDouble(0, 1)
            let xx = x * x
            if u < 1 - Double(Float(0.0331)) * xx * xx { return scale * d * v }
            if Glibc.log(u) < 0.5 * xx + d * (1 - v + Glibc.log(v)) { return scale * d * v }
        }
    }
}
