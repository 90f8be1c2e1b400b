/// Instance normalisation: `F.instanceNorm` and `nn.InstanceNorm1d/2d/3d` — each sample's channels normalised
/// over their own spatial positions. Computed as a batch norm of the `(1, N·C, *)` view, so the gradients (and
/// second derivatives) are batch norm's.

extension nn.functional {
    /// Normalises every (sample, channel) plane of an `(N, C, *)` input over its spatial positions
    /// (PyTorch's `F.instance_norm`), then scales by `weight` and shifts by `bias` (per channel).
    ///
    /// With `useInputStats` (the default) the plane statistics are used and, when given, `runningMean` /
    /// `runningVar` (`[C]`) are updated in place with `momentum`, averaged over the batch; otherwise the running
    /// statistics normalise.
    ///
    /// ```swift
    /// let y = F.instanceNorm(torch.randn(2, 3, 8, 8))   // every [8, 8] plane: mean 0, variance 1
    /// ```
    public static func instanceNorm(_ input: Tensor, runningMean: Tensor? = nil, runningVar: Tensor? = nil,
                                    weight: Tensor? = nil, bias: Tensor? = nil, useInputStats: Bool = true,
                                    momentum: Double = 0.1, eps: Double = 1e-5) -> Tensor {
        precondition(input.dim >= 2, "instance_norm: expected an input of at least 2 dims (N, C, *), got shape \(shapeString(input.shape))")
        let s = input.shape, n = s[0], c = s[1], spatial = Array(s.dropFirst(2))
        if useInputStats {
            precondition(spatial.reduce(1, *) > 1, "Expected more than 1 spatial element when training, got input size \(shapeString(s))")
        }
        for (name, t) in [("weight", weight), ("bias", bias), ("running_mean", runningMean), ("running_var", runningVar)] {
            if let t {
                precondition(t.dim == 1 && t.numel == c, "instance_norm: expected \(name) of shape [\(c)] for input \(shapeString(s)), got \(shapeString(t.shape))")
            }
        }
        /// `[C]` → `[N·C]`, the value of channel c repeated for every sample.
        func perPlane(_ t: Tensor?) -> Tensor? { t.map { $0.unsqueeze(0).expand([n, c]).reshape([n * c]) } }
        let planeMean = torch.noGrad { perPlane(runningMean)?.contiguous() }
        let planeVar = torch.noGrad { perPlane(runningVar)?.contiguous() }
        let out = F.batchNorm(input.reshape([1, n * c] + spatial), planeMean, planeVar,
                              weight: perPlane(weight), bias: perPlane(bias), training: useInputStats,
                              momentum: momentum, eps: eps)
        if useInputStats {
            torch.noGrad {
                if let runningMean, let planeMean { runningMean.copy_(planeMean.view(n, c).mean(dim: 0)) }
                if let runningVar, let planeVar { runningVar.copy_(planeVar.view(n, c).mean(dim: 0)) }
            }
        }
        return out.view(s)
    }
}

extension nn {
    /// What `nn.InstanceNorm1d/2d/3d` share (PyTorch's `_InstanceNorm`): no affine parameters and no running
    /// statistics unless asked for; an unbatched input (one dim fewer) is accepted.
    public class InstanceNormNd: NormBase {
        let spatialDims: Int

        init(spatialDims: Int, _ numFeatures: Int, eps: Double, momentum: Double?, affine: Bool,
             trackRunningStats: Bool, bias: Bool, dtype: DType?) {
            self.spatialDims = spatialDims
            super.init(numFeatures, eps: eps, momentum: momentum, affine: affine, trackRunningStats: trackRunningStats,
                       bias: bias, dtype: dtype, layer: "InstanceNorm")
        }

        public override func forward(_ input: Tensor) -> Tensor {
            let unbatched = spatialDims + 1
            precondition(input.dim == unbatched || input.dim == unbatched + 1,
                         "expected \(unbatched)D or \(unbatched + 1)D input (got \(input.dim)D input)")
            let featureDim = input.dim - unbatched
            if affine {
                precondition(input.shape[featureDim] == numFeatures,
                             "expected input's size at dim=\(featureDim) to match num_features (\(numFeatures)), but got: \(input.shape[featureDim]).")
            }
            let x = input.dim == unbatched ? input.unsqueeze(0) : input
            let y = F.instanceNorm(x, runningMean: runningMean, runningVar: runningVar, weight: weight, bias: bias,
                                   useInputStats: training || !trackRunningStats, momentum: momentum ?? 0, eps: eps)
            return input.dim == unbatched ? y.squeeze(0) : y
        }

        public override func extraRepr() -> String {
            "\(numFeatures), eps=\(pyFloat(eps)), momentum=\(momentum.map(pyFloat) ?? "None"), affine=\(pyBool(affine)), "
                + "bias=\(pyBool(bias != nil)), track_running_stats=\(pyBool(trackRunningStats))"
        }
    }

    /// Instance normalisation of `(N, C, L)` (or unbatched `(C, L)`) inputs.
    ///
    /// ```swift
    /// let norm = nn.InstanceNorm1d(16)   // InstanceNorm1d(16, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)
    /// ```
    public final class InstanceNorm1d: InstanceNormNd {
        public init(_ numFeatures: Int, eps: Double = 1e-5, momentum: Double? = 0.1, affine: Bool = false,
                    trackRunningStats: Bool = false, bias: Bool = true, dtype: DType? = nil) {
            super.init(spatialDims: 1, numFeatures, eps: eps, momentum: momentum, affine: affine,
                       trackRunningStats: trackRunningStats, bias: bias, dtype: dtype)
        }
    }

    /// Instance normalisation of `(N, C, H, W)` (or `(C, H, W)`) inputs, as style-transfer networks use it.
    public final class InstanceNorm2d: InstanceNormNd {
        public init(_ numFeatures: Int, eps: Double = 1e-5, momentum: Double? = 0.1, affine: Bool = false,
                    trackRunningStats: Bool = false, bias: Bool = true, dtype: DType? = nil) {
            super.init(spatialDims: 2, numFeatures, eps: eps, momentum: momentum, affine: affine,
                       trackRunningStats: trackRunningStats, bias: bias, dtype: dtype)
        }
    }

    /// Instance normalisation of `(N, C, D, H, W)` (or `(C, D, H, W)`) inputs.
    public final class InstanceNorm3d: InstanceNormNd {
        public init(_ numFeatures: Int, eps: Double = 1e-5, momentum: Double? = 0.1, affine: Bool = false,
                    trackRunningStats: Bool = false, bias: Bool = true, dtype: DType? = nil) {
            super.init(spatialDims: 3, numFeatures, eps: eps, momentum: momentum, affine: affine,
                       trackRunningStats: trackRunningStats, bias: bias, dtype: dtype)
        }
    }
}
