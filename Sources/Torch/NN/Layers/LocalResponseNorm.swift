/// Local response normalisation (AlexNet): `F.localResponseNorm` and `nn.LocalResponseNorm`.

extension nn.functional {
    /// Divides every element of an `(N, C, *)` input by `(k + alpha/size · Σ x²)^beta`, the sum running over
    /// `size` neighbouring channels (`size/2` before, `(size−1)/2` after, zeros past the edges), as PyTorch's
    /// `F.local_response_norm`. Built from differentiable ops, so second derivatives work.
    ///
    /// ```swift
    /// let y = F.localResponseNorm(torch.randn(2, 8, 5, 5), size: 5, alpha: 1e-4, beta: 0.75, k: 2)
    /// ```
    public static func localResponseNorm(_ input: Tensor, size: Int, alpha: Double = 1e-4, beta: Double = 0.75,
                                         k: Double = 1) -> Tensor {
        precondition(input.dim >= 3, "Expected 3D or higher dimensionality input (got \(input.dim) dimensions)")
        precondition(size > 0, "local_response_norm: size must be positive, got \(size)")
        if input.numel == 0 { return input.clone() }
        let s = input.shape, c = s[1]
        // [N, C, M] with zero channels padded before and after, then a running window sum over channels.
        let squares = (input * input).reshape([s[0], 1, c, -1])
        let padded = F.pad(squares, [0, 0, size / 2, (size - 1) / 2])
        var window = padded.narrow(2, 0, c)
        for j in 1..<Swift.max(size, 1) { window = window + padded.narrow(2, j, c) }
        let div = (window * (alpha / Double(size)) + k).pow(beta)
        return input / div.reshape(s)
    }
}

extension nn {
    /// `F.localResponseNorm` as a layer: `nn.LocalResponseNorm(2)` prints
    /// `LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)`.
    public final class LocalResponseNorm: Module {
        public let size: Int
        public let alpha: Double
        public let beta: Double
        public let k: Double
        public init(_ size: Int, alpha: Double = 1e-4, beta: Double = 0.75, k: Double = 1) {
            self.size = size; self.alpha = alpha; self.beta = beta; self.k = k
            super.init()
        }
        public override func forward(_ x: Tensor) -> Tensor { F.localResponseNorm(x, size: size, alpha: alpha, beta: beta, k: k) }
        public override func extraRepr() -> String { "\(size), alpha=\(pyFloat(alpha)), beta=\(pyFloat(beta)), k=\(pyFloat(k))" }
    }
}
