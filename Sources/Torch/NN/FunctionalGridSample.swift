/// Spatial transformers: `F.affineGrid` (the sampling grid of a batch of affine maps) and `F.gridSample`
/// (sampling an input at grid locations: bilinear/trilinear, nearest, bicubic; zeros, border or reflection
/// padding), for 4-D and 5-D inputs, like PyTorch's `affine_grid` / `grid_sample`.
///
/// Both are composed of differentiable ops (matmul; gather and products of the interpolation weights), so the
/// gradients w.r.t. the input, the grid and theta come from those ops and second derivatives work.

extension nn.functional {
    /// How `F.gridSample` computes a value from the input around a grid location.
    public enum GridSampleMode: String, Sendable {
        /// Linear interpolation of the 2ᵏ neighbours (bilinear for 4-D, trilinear for 5-D inputs).
        case bilinear
        /// The nearest input element (ties to even); no gradient w.r.t. the grid.
        case nearest
        /// Cubic convolution (A = −0.75) of the 4ᵏ neighbours (bicubic for 4-D, tricubic for 5-D inputs).
        case bicubic
    }

    /// What `F.gridSample` reads outside the input.
    public enum GridSamplePadding: String, Sendable {
        /// Zeros.
        case zeros
        /// The nearest edge value (locations clamped into the input).
        case border
        /// The input mirrored at its edges.
        case reflection
    }

    /// The sampling grid of the affine maps `theta` (`[N, 2, 3]` for `size = [N, C, H, W]`, `[N, 3, 4]` for
    /// `[N, C, D, H, W]`): output `[N, H, W, 2]` (or `[N, D, H, W, 3]`) of (x, y[, z]) locations in [−1, 1]
    /// coordinates, for `F.gridSample`.
    ///
    /// ```swift
    /// let theta = torch.tensor([[[1.0, 0, 0], [0, 1, 0]]])              // identity
    /// let grid = F.affineGrid(theta, size: [1, 3, 8, 8], alignCorners: false)
    /// let same = F.gridSample(x, grid, alignCorners: false)               // == x
    /// ```
    public static func affineGrid(_ theta: Tensor, size: [Int], alignCorners: Bool = false) -> Tensor {
        precondition(theta.dtype.isFloatingPoint, "Expected theta to have floating point type, but got \(theta.dtype)")
        precondition(size.count == 4 || size.count == 5, "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. Got size \(shapeString(size)).")
        let k = size.count - 2
        precondition(theta.dim == 3 && theta.shape[0] == size[0] && theta.shape[1] == k && theta.shape[2] == k + 1,
                     "Expected a batch of \(k)D affine matrices of shape Nx\(k)x\(k + 1) for size \(shapeString(size)). Got \(shapeString(theta.shape)).")
        precondition(size.dropFirst(2).allSatisfy { $0 > 0 }, "affine_grid: expected non-zero, positive output size. Got \(shapeString(size)).")
        let spatial = Array(size.dropFirst(2))           // [H, W] or [D, H, W]
        let count = spatial.reduce(1, *)
        // Base grid [*spatial, k + 1]: x varies along the last spatial dim, then y, (z); then a column of ones.
        var columns: [Tensor] = []
        for axis in 0..<k {
            let dimIndex = k - 1 - axis                  // x → W (last), y → H, z → D
            var steps = [Int](repeating: 1, count: k + 1)
            steps[dimIndex] = spatial[dimIndex]
            columns.append(normalizedRange(spatial[dimIndex], alignCorners: alignCorners, dtype: theta.dtype, device: theta.device)
                .view(steps).expand(spatial + [1]))
        }
        columns.append(torch.ones(spatial + [1], dtype: theta.dtype, device: theta.device))
        let base = torch.cat(columns, dim: -1).reshape([1, count, k + 1]).expand([size[0], count, k + 1])
        return torch.matmul(base, theta.transpose(1, 2)).view([size[0]] + spatial + [k])
    }

    /// `steps` points evenly spaced in [−1, 1] (pixel centres when not `alignCorners`) on `device`; `[0]` for one
    /// step.
    private static func normalizedRange(_ steps: Int, alignCorners: Bool, dtype: DType, device: Device) -> Tensor {
        if steps <= 1 { return torch.zeros([steps], dtype: dtype, device: device) }
        let r = torch.linspace(-1, 1, steps: steps, dtype: dtype, device: device)
        return alignCorners ? r : r * Double(steps - 1) / Double(steps)
    }

    /// Samples `input` (`[N, C, H, W]` or `[N, C, D, H, W]`) at the locations in `grid` (`[N, Ho, Wo, 2]` or
    /// `[N, Do, Ho, Wo, 3]`, (x, y[, z]) in [−1, 1], −1 the first pixel's centre with `alignCorners`, its left
    /// edge without): output `[N, C, Ho, Wo]` (or `[N, C, Do, Ho, Wo]`).
    ///
    /// ```swift
    /// let y = F.gridSample(x, grid, mode: .bilinear, paddingMode: .border, alignCorners: true)
    /// ```
    public static func gridSample(_ input: Tensor, _ grid: Tensor, mode: GridSampleMode = .bilinear,
                                  paddingMode: GridSamplePadding = .zeros, alignCorners: Bool = false) -> Tensor {
        checkedArguments {
            try gridSampleCheck(inputShape: input.shape, gridShape: grid.shape, inputDType: input.dtype,
                                gridDType: grid.dtype, mode: mode)
        }
        let k = input.dim - 2
        let n = input.shape[0], c = input.shape[1]
        let outSpatial = Array(grid.shape[1...k])
        let locations = outSpatial.reduce(1, *)
        let spatial = Array(input.shape.dropFirst(2))    // [H, W] or [D, H, W]
        // Per grid axis a (x, y, z): the input size along it and the flat stride of that input dim.
        let axisSize = (0..<k).map { spatial[k - 1 - $0] }
        let axisStride = (0..<k).map { a in spatial[(k - a)...].reduce(1, *) }
        let flatInput = input.reshape([n, c, spatial.reduce(1, *)])
        let g = grid.reshape([n, locations, k])
        let coords = (0..<k).map { a in unnormalize(g.select(2, a), size: axisSize[a], alignCorners: alignCorners) }

        /// The input at integer locations `at[a]` (float tensors `[N, L]`), zero where outside: `[N, C, L]`.
        func values(_ at: [Tensor]) -> Tensor {
            let (index, inside) = torch.noGrad { () -> (Tensor, Tensor) in
                var flat = torch.zeros([n, locations], dtype: .int64, device: input.device)
                var inside = torch.ones([n, locations], dtype: input.dtype, device: input.device)
                for a in 0..<k {
                    inside = inside * (at[a] .>= 0).to(input.dtype) * (at[a] .<= Double(axisSize[a] - 1)).to(input.dtype)
                    flat = flat + at[a].clamp(min: 0, max: Double(axisSize[a] - 1)).to(.int64) * axisStride[a]
                }
                return (flat.unsqueeze(1).expand([n, c, locations]).contiguous(), inside.unsqueeze(1))
            }
            return flatInput.gather(2, index) * inside
        }

        var out: Tensor
        switch mode {
        case .nearest:
            let at = coords.enumerated().map { a, v in
                torch.noGrad { padCoordinate(v, size: axisSize[a], padding: paddingMode, alignCorners: alignCorners).round() }
            }
            out = values(at)
        case .bilinear:
            let padded = coords.enumerated().map { a, v in padCoordinate(v, size: axisSize[a], padding: paddingMode, alignCorners: alignCorners) }
            let low = padded.map { v in torch.noGrad { v.floor() } }
            let frac = zip(padded, low).map { $0 - $1 }
            out = torch.zeros([n, c, locations], dtype: input.dtype, device: input.device)
            for corner in 0..<(1 << k) {
                var at: [Tensor] = [], weight: Tensor? = nil
                for a in 0..<k {
                    let high = corner >> a & 1 == 1
                    at.append(high ? low[a] + 1 : low[a])
                    let w = high ? frac[a] : 1 - frac[a]
                    weight = weight.map { $0 * w } ?? w
                }
                out = out + values(at) * weight!.unsqueeze(1)
            }
        case .bicubic:
            let low = coords.map { v in torch.noGrad { v.floor() } }
            let weights = zip(coords, low).map { v, l -> [Tensor] in
                let t = v - l
                let a = -0.75
                func near(_ x: Tensor) -> Tensor { ((x * (a + 2) - (a + 3)) * x * x) + 1 }
                func far(_ x: Tensor) -> Tensor { ((x * a - 5 * a) * x + 8 * a) * x - 4 * a }
                return [far(t + 1), near(t), near(1 - t), far(2 - t)]
            }
            out = torch.zeros([n, c, locations], dtype: input.dtype, device: input.device)
            for tap in 0..<(1 << (2 * k)) {     // 4^k taps: two bits of `tap` per axis
                var at: [Tensor] = [], weight: Tensor? = nil
                for a in 0..<k {
                    let o = tap >> (2 * a) & 3
                    at.append(torch.noGrad {
                        padCoordinate(low[a] + Double(o - 1), size: axisSize[a], padding: paddingMode, alignCorners: alignCorners).trunc()
                    })
                    weight = weight.map { $0 * weights[a][o] } ?? weights[a][o]
                }
                out = out + values(at) * weight!.unsqueeze(1)
            }
        }
        return out.view([n, c] + outSpatial)
    }

    /// Checks `F.gridSample`'s arguments, with PyTorch's messages.
    static func gridSampleCheck(inputShape: [Int], gridShape: [Int], inputDType: DType, gridDType: DType,
                                mode: GridSampleMode) throws {
        let sizes = "input with sizes \(shapeString(inputShape)) and grid with sizes \(shapeString(gridShape))"
        try requireArgument((inputShape.count == 4 || inputShape.count == 5) && gridShape.count == inputShape.count,
                    "grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but got \(sizes)")
        try requireArgument(inputDType == gridDType && inputDType.isFloatingPoint,
                    "grid_sampler(): expected input and grid to have the same floating-point dtype, but input has \(inputDType) and grid has \(gridDType)")
        try requireArgument(inputShape[0] == gridShape[0], "grid_sampler(): expected grid and input to have same batch size, but got \(sizes)")
        let k = inputShape.count - 2
        try requireArgument(gridShape[k + 1] == k, "grid_sampler(): expected grid to have size \(k) in last dimension, but got grid with sizes \(shapeString(gridShape))")
        try requireArgument(inputShape.dropFirst(2).allSatisfy { $0 > 0 }, "grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes \(shapeString(inputShape))")
    }

    /// A grid value in [−1, 1] as an input position along an axis of `size` elements.
    private static func unnormalize(_ v: Tensor, size: Int, alignCorners: Bool) -> Tensor {
        alignCorners ? (v + 1) * (Double(size - 1) / 2) : ((v + 1) * Double(size) - 1) / 2
    }

    /// Applies the padding mode to input positions: border clamps, reflection mirrors then clamps.
    private static func padCoordinate(_ v: Tensor, size: Int, padding: GridSamplePadding, alignCorners: Bool) -> Tensor {
        switch padding {
        case .zeros: return v
        case .border: return v.clamp(min: 0, max: Double(size - 1))
        case .reflection:
            let mirrored = alignCorners ? reflect(v, twiceLow: 0, twiceHigh: 2 * (size - 1))
                : reflect(v, twiceLow: -1, twiceHigh: 2 * size - 1)
            return mirrored.clamp(min: 0, max: Double(size - 1))
        }
    }

    /// Mirrors `v` into [twiceLow/2, twiceHigh/2] as often as needed.
    private static func reflect(_ v: Tensor, twiceLow: Int, twiceHigh: Int) -> Tensor {
        if twiceLow == twiceHigh { return v * 0 }
        let low = Double(twiceLow) / 2, span = Double(twiceHigh - twiceLow) / 2
        let distance = (v - low).abs()
        let extra = distance.fmod(span)
        let odd = torch.noGrad { (distance / span).floor().remainder(2) }
        return extra * (1 - odd * 2) + (odd * span + low)
    }
}

