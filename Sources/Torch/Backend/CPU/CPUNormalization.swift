import CTorchKernels

/// Batch and layer normalisation on the CPU (twin of the norms of `CUDAFused`): the tensor-level entry points
/// that `nativeBatchNorm`/`nativeLayerNorm` (NN/Layers/Normalization.swift) and `syncBatchNorm`
/// (Distributed/SyncBatchNormOp.swift) dispatch to after their one device check, and below them the fused
/// kernels over raw pointers of contiguous memory.
///
/// Batch norm sees its input as (N, C, L) — L is the product of the spatial dims (1 for a
/// (N, C) input) — and reduces every channel over N and L. Work is split over channels when it
/// is large. The arithmetic follows PyTorch's CPU kernels: statistics accumulated in double (in
/// the element type for the (N, C) layout, as PyTorch's channels-last path does), the saved
/// mean and 1/√(var + eps) in the element type, and y = x · α + β with α = invstd · w,
/// β = b − mean · α per channel. Half types are computed in float32 (`DType.computeType`); the saved
/// statistics stay in that type.
enum CPUNormalization {
    /// A contiguous tensor of dtype `dt` with `t`'s values, without autograd (t itself when it
    /// already is one).
    static func operand(_ t: Tensor, _ dt: DType) -> Tensor {
        if t.dtype == dt && t.isContiguous { return t }
        let out = Tensor(uninitializedShape: t.shape, dtype: dt)
        copyKernel(from: t, into: out)
        return out
    }

    /// BatchNorm of an `(N, C, *)` input with per-channel `weight`/`bias`/running statistics: batch statistics when
    /// `training` (running ones updated in place, unbiased variance), else the running ones. The output in the
    /// input's dtype and the per-channel mean and invstd (compute dtype).
    static func batchNorm(_ input: Tensor, weight: Tensor?, bias: Tensor?, runningMean: Tensor?, runningVar: Tensor?,
                          training: Bool, momentum: Double, eps: Double) -> (Tensor, mean: Tensor, invstd: Tensor) {
        let n = input.shape[0], c = input.shape[1]
        let l = n == 0 ? 0 : input.numel / Swift.max(c, 1) / n
        let ct = input.dtype.computeType
        let x = operand(input, ct)
        let w = weight.map { operand($0, ct) }, b = bias.map { operand($0, ct) }
        let rm = runningMean.map { operand($0, ct) }, rv = runningVar.map { operand($0, ct) }
        let out = Tensor(uninitializedShape: input.shape, dtype: ct)
        let mean = Tensor(uninitializedShape: [c], dtype: ct), invstd = Tensor(uninitializedShape: [c], dtype: ct)
        func run<T: FloatElement>(_: T.Type) {
            batchNormForwardKernel(UnsafePointer(x.pointer(T.self)), out.pointer(T.self), n: n, c: c, l: l,
                                   weight: w.map { UnsafePointer($0.pointer(T.self)) },
                                   bias: b.map { UnsafePointer($0.pointer(T.self)) },
                                   mean: mean.pointer(T.self), invstd: invstd.pointer(T.self),
                                   runningMean: rm?.pointer(T.self), runningVar: rv?.pointer(T.self),
                                   training: training, momentum: momentum, eps: eps)
        }
        switch ct {
        case .float32: run(Float.self)
        case .float64: run(Double.self)
        default: preconditionFailure("batch_norm: unsupported dtype \(ct)")
        }
        if training {
            func writeBack(_ stat: Tensor?, _ work: Tensor?) {
                guard let stat, let work else { return }
                if stat !== work { copyKernel(from: work, into: stat) }
                stat.storage.bumpVersion()
            }
            writeBack(runningMean, rm)
            writeBack(runningVar, rv)
        }
        return (ct == input.dtype ? out : out.to(input.dtype), mean, invstd)
    }

    /// BatchNorm's gradients (each only when `needs` asks), in the dtypes of `x` and of the parameters.
    static func batchNormBackward(_ g: Tensor, _ x: Tensor, weight: Tensor?, mean: Tensor, invstd: Tensor, training: Bool,
                                  needs: (Bool, Bool, Bool)) -> (Tensor?, Tensor?, Tensor?) {
        let ct = x.dtype.computeType
        let xc = operand(x, ct), gc = operand(g, ct), wc = weight.map { operand($0, ct) }
        let n = x.shape[0], c = x.shape[1], l = x.numel / Swift.max(n * c, 1)
        let gx = needs.0 ? Tensor(uninitializedShape: x.shape, dtype: ct) : nil
        let gw = needs.1 ? Tensor(uninitializedShape: [c], dtype: ct) : nil
        let gb = needs.2 ? Tensor(uninitializedShape: [c], dtype: ct) : nil
        func run<T: FloatElement>(_: T.Type) {
            batchNormBackwardKernel(UnsafePointer(gc.pointer(T.self)), UnsafePointer(xc.pointer(T.self)), n: n, c: c, l: l,
                                    weight: wc.map { UnsafePointer($0.pointer(T.self)) },
                                    mean: UnsafePointer(mean.pointer(T.self)), invstd: UnsafePointer(invstd.pointer(T.self)),
                                    training: training, gradInput: gx?.pointer(T.self),
                                    gradWeight: gw?.pointer(T.self), gradBias: gb?.pointer(T.self))
        }
        switch ct {
        case .float32: run(Float.self)
        default: run(Double.self)
        }
        return (gx.map { $0.to(x.dtype) }, gw.map { $0.to(weight!.dtype) }, gb.map { $0.to(weight?.dtype ?? x.dtype) })
    }

    /// LayerNorm of `input` as `m` rows of `n`: the output in the input's dtype and the per-row mean and rstd
    /// (compute dtype).
    static func layerNorm(_ input: Tensor, rows m: Int, length n: Int, weight: Tensor?, bias: Tensor?, eps: Double)
        -> (Tensor, mean: Tensor, rstd: Tensor) {
        let ct = input.dtype.computeType
        let x = operand(input, ct)
        let w = weight.map { operand($0, ct) }, b = bias.map { operand($0, ct) }
        let out = Tensor(uninitializedShape: input.shape, dtype: ct)
        let mean = Tensor(uninitializedShape: [m], dtype: ct), rstd = Tensor(uninitializedShape: [m], dtype: ct)
        func run<T: FloatElement>(_: T.Type) {
            layerNormForwardKernel(UnsafePointer(x.pointer(T.self)), out.pointer(T.self), m: m, n: n,
                                   gamma: w.map { UnsafePointer($0.pointer(T.self)) },
                                   beta: b.map { UnsafePointer($0.pointer(T.self)) },
                                   mean: mean.pointer(T.self), rstd: rstd.pointer(T.self), eps: eps)
        }
        if m > 0 && n > 0 {
            switch ct {
            case .float32: run(Float.self)
            case .float64: run(Double.self)
            default: preconditionFailure("layer_norm: unsupported dtype \(ct)")
            }
        }
        return (ct == input.dtype ? out : out.to(input.dtype), mean, rstd)
    }

    /// LayerNorm's gradients (each only when `needs` asks; dγ/dβ shaped `paramShape`), in the dtypes of `x` and of
    /// the parameters.
    static func layerNormBackward(_ g: Tensor, _ x: Tensor, rows m: Int, length n: Int, weight: Tensor?, mean: Tensor,
                                  rstd: Tensor, paramShape: [Int], needs: (Bool, Bool, Bool)) -> (Tensor?, Tensor?, Tensor?) {
        let ct = x.dtype.computeType
        let xc = operand(x, ct), gc = operand(g, ct), wc = weight.map { operand($0, ct) }
        let gx = needs.0 ? Tensor(uninitializedShape: x.shape, dtype: ct) : nil
        let gw = needs.1 ? Tensor(uninitializedShape: paramShape, dtype: ct) : nil
        let gb = needs.2 ? Tensor(uninitializedShape: paramShape, dtype: ct) : nil
        func run<T: FloatElement>(_: T.Type) {
            layerNormBackwardKernel(UnsafePointer(gc.pointer(T.self)), UnsafePointer(xc.pointer(T.self)), m: m, n: n,
                                    gamma: wc.map { UnsafePointer($0.pointer(T.self)) },
                                    mean: UnsafePointer(mean.pointer(T.self)), rstd: UnsafePointer(rstd.pointer(T.self)),
                                    gradInput: gx?.pointer(T.self), gradWeight: gw?.pointer(T.self), gradBias: gb?.pointer(T.self))
        }
        if m > 0 && n > 0 {
            switch ct {
            case .float32: run(Float.self)
            default: run(Double.self)
            }
        } else {
            for t in [gx, gw, gb] { _ = t?.zero_() }
        }
        let pType = weight?.dtype ?? x.dtype
        return (gx.map { $0.to(x.dtype) }, gw.map { $0.to(pType) }, gb.map { $0.to(pType) })
    }

    // MARK: SyncBatchNorm's pieces

    /// This rank's per-channel `[count, mean (C), M2 (C)]` of an `(N, C, *)` input, float64 (`batchNormMomentsKernel`).
    static func batchNormMoments(_ input: Tensor) -> Tensor {
        let n = input.shape[0], c = input.shape[1], count = input.numel / c, l = n == 0 ? 0 : count / n
        let ct = input.dtype.computeType
        let local = Tensor(uninitializedShape: [2 * c + 1], dtype: .float64)
        let lp = local.pointer(Double.self)
        lp[0] = Double(count)
        if count > 0 {
            let x = operand(input, ct)
            switch ct {
            case .float32: batchNormMomentsKernel(UnsafePointer(x.pointer(Float.self)), n: n, c: c, l: l, mean: lp + 1, m2: lp + 1 + c)
            case .float64: batchNormMomentsKernel(UnsafePointer(x.pointer(Double.self)), n: n, c: c, l: l, mean: lp + 1, m2: lp + 1 + c)
            default: preconditionFailure("SyncBatchNorm: unsupported dtype \(ct)")
            }
        } else {
            for j in 1...(2 * c) { lp[j] = 0 }
        }
        return local
    }

    /// Merges the per-rank rows `[count, mean (C), M2 (C)]` of `gathered` (`[ranks, 2C + 1]`, float64) in rank order
    /// (Chan, Golub and LeVeque's pairwise update; empty ranks are skipped). Every rank gets bit-identical results.
    static func mergeMoments(_ gathered: Tensor, ranks: Int, channels c: Int) -> (count: Int, mean: [Double], m2: [Double]) {
        let rows = UnsafePointer(gathered.pointer(Double.self))
        var total = 0.0
        var mean = [Double](repeating: 0, count: c), m2 = [Double](repeating: 0, count: c)
        for r in 0..<ranks {
            let row = rows + r * (2 * c + 1)
            let nB = row[0]
            guard nB > 0 else { continue }
            let merged = total + nB
            let weightB = nB / merged, cross = total * nB / merged
            for j in 0..<c {
                let delta = row[1 + j] - mean[j]
                mean[j] += delta * weightB
                m2[j] += row[1 + c + j] + delta * delta * cross
            }
            total = merged
        }
        return (Int(total), mean, m2)
    }

    /// This rank's `[Σ dy (C), Σ (x − mean) · dy (C)]` in the compute dtype (`batchNormGradientSumsKernel`).
    static func batchNormGradientSums(_ g: Tensor, _ x: Tensor, mean: Tensor) -> Tensor {
        let ct = x.dtype.computeType
        let n = x.shape[0], c = x.shape[1], l = x.numel / Swift.max(n * c, 1)
        let sums = torch.zeros([2 * c], dtype: ct)
        guard x.numel > 0 else { return sums }
        let xc = operand(x, ct), gc = operand(g, ct)
        func reduce<T: FloatElement>(_: T.Type) {
            let s = sums.pointer(T.self)
            batchNormGradientSumsKernel(UnsafePointer(gc.pointer(T.self)), UnsafePointer(xc.pointer(T.self)), n: n, c: c, l: l,
                                        mean: UnsafePointer(mean.pointer(T.self)), sum: s, dotp: s + c)
        }
        if ct == .float32 { reduce(Float.self) } else { reduce(Double.self) }
        return sums
    }

    /// The training-mode input gradient from the all-reduced `sums` (`batchNormGradientSums` of every rank) over
    /// `count` values, in x's dtype (`batchNormGradientInputKernel`).
    static func batchNormGradientInput(_ g: Tensor, _ x: Tensor, weight: Tensor?, mean: Tensor, invstd: Tensor,
                                       sums: Tensor, count: Int) -> Tensor {
        let ct = x.dtype.computeType
        let n = x.shape[0], c = x.shape[1], l = x.numel / Swift.max(n * c, 1)
        let gx = Tensor(uninitializedShape: x.shape, dtype: ct)
        if x.numel > 0 {
            let xc = operand(x, ct), gc = operand(g, ct), wc = weight.map { operand($0, ct) }
            func input<T: FloatElement>(_: T.Type) {
                let s = UnsafePointer(sums.pointer(T.self))
                batchNormGradientInputKernel(UnsafePointer(gc.pointer(T.self)), UnsafePointer(xc.pointer(T.self)), n: n, c: c, l: l,
                                             weight: wc.map { UnsafePointer($0.pointer(T.self)) },
                                             mean: UnsafePointer(mean.pointer(T.self)), invstd: UnsafePointer(invstd.pointer(T.self)),
                                             sum: s, dotp: s + c, count: count, gradInput: gx.pointer(T.self))
            }
            if ct == .float32 { input(Float.self) } else { input(Double.self) }
        }
        return gx.to(x.dtype)
    }
}

// MARK: - Kernels

/// Channels per parallel chunk so each chunk holds about 32K elements.
@inline(__always) private func channelGrain(_ perChannel: Int) -> Int {
    Swift.max(1, elementwiseGrain / Swift.max(perChannel, 1))
}

/// Batch-norm forward over a contiguous (n, c, l) input. Training: writes the batch mean and
/// invstd into `mean`/`invstd` and updates the running statistics (unbiased variance) when
/// given. Evaluation: uses the running statistics. Then writes y = x · α + β.
private func batchNormForwardKernel<T: FloatElement>(
    _ x: UnsafePointer<T>, _ y: UnsafeMutablePointer<T>, n: Int, c: Int, l: Int,
    weight: UnsafePointer<T>?, bias: UnsafePointer<T>?,
    mean: UnsafeMutablePointer<T>, invstd: UnsafeMutablePointer<T>,
    runningMean: UnsafeMutablePointer<T>?, runningVar: UnsafeMutablePointer<T>?,
    training: Bool, momentum: Double, eps: Double
) {
    let count = n * l
    parallelFor(c, grain: channelGrain(count)) { c0, c1 in
        let width = c1 - c0
        if training {
            // invstd temporarily holds the sum of squared deviations.
            if l == 1 {
                for j in c0..<c1 { mean[j] = 0; invstd[j] = 0 }
                for r in 0..<n {
                    let row = x + r * c
                    for j in c0..<c1 { mean[j] += row[j] }
                }
                for j in c0..<c1 { mean[j] = T(Double(mean[j]) / Double(count)) }
                for r in 0..<n {
                    let row = x + r * c
                    for j in c0..<c1 {
                        let d = row[j] - mean[j]
                        invstd[j] += d * d
                    }
                }
            } else if T.self == Float.self {
                // Vectorised double sums in CTorchKernels (the same two passes as below), all the chunk's
                // channels in one call so that it can walk memory in order.
                let xf = UnsafeRawPointer(x).assumingMemoryBound(to: Float.self)
                let mf = UnsafeMutableRawPointer(mean).assumingMemoryBound(to: Float.self)
                withUnsafeTemporaryAllocation(of: Double.self, capacity: width) { m2 in
                    ct_bn_stats_f32(xf + c0 * l, Int64(n), Int64(c * l), Int64(l), Int64(width), mf + c0, m2.baseAddress!)
                    for j in 0..<width { invstd[c0 + j] = T(m2[j]) }
                }
            } else {
                for j in c0..<c1 {
                    var s = 0.0
                    for r in 0..<n {
                        let p = x + (r * c + j) * l
                        for k in 0..<l { s += Double(p[k]) }
                    }
                    let m = T(s / Double(count))
                    var v = 0.0
                    for r in 0..<n {
                        let p = x + (r * c + j) * l
                        for k in 0..<l {
                            let d = p[k] - m
                            v += Double(d * d)
                        }
                    }
                    mean[j] = m
                    invstd[j] = T(v)
                }
            }
            for j in c0..<c1 {
                let varSum = invstd[j]
                invstd[j] = T(1 / (Double(varSum / T(count)) + eps).squareRoot())
                if let rm = runningMean {
                    rm[j] = T(momentum * Double(mean[j]) + (1 - momentum) * Double(rm[j]))
                }
                if let rv = runningVar {
                    let unbiased = Double(varSum / T(count - 1))
                    rv[j] = T(momentum * unbiased + (1 - momentum) * Double(rv[j]))
                }
            }
        } else {
            let rm = runningMean!, rv = runningVar!
            let e = T(eps)
            for j in c0..<c1 {
                mean[j] = rm[j]
                invstd[j] = 1 / (rv[j] + e).squareRoot()
            }
        }
        // y = x · α + β
        let alpha = UnsafeMutablePointer<T>.allocate(capacity: 2 * width)
        defer { alpha.deallocate() }
        let beta = alpha + width
        for j in 0..<width {
            let a = invstd[c0 + j] * (weight?[c0 + j] ?? 1)
            alpha[j] = a
            beta[j] = (bias?[c0 + j] ?? 0) - mean[c0 + j] * a
        }
        if l == 1 {
            for r in 0..<n {
                let xi = x + r * c + c0, yo = y + r * c + c0
                for j in 0..<width { yo[j] = xi[j] * alpha[j] + beta[j] }
            }
        } else {
            for r in 0..<n {
                for j in 0..<width {
                    let off = (r * c + c0 + j) * l
                    let xi = x + off, yo = y + off
                    let a = alpha[j], b = beta[j]
                    for k in 0..<l { yo[k] = xi[k] * a + b }
                }
            }
        }
    }
}

/// Batch-norm backward over contiguous (n, c, l) gradOutput and input, given the mean and
/// invstd the forward used. Training: the full gradient through the batch statistics;
/// evaluation: gradOutput · invstd · w. Writes only the outputs that are non-nil.
private func batchNormBackwardKernel<T: FloatElement>(
    _ g: UnsafePointer<T>, _ x: UnsafePointer<T>, n: Int, c: Int, l: Int,
    weight: UnsafePointer<T>?, mean: UnsafePointer<T>, invstd: UnsafePointer<T>, training: Bool,
    gradInput: UnsafeMutablePointer<T>?, gradWeight: UnsafeMutablePointer<T>?, gradBias: UnsafeMutablePointer<T>?
) {
    let count = n * l
    parallelFor(c, grain: channelGrain(count)) { c0, c1 in
        let width = c1 - c0
        let buf = UnsafeMutablePointer<T>.allocate(capacity: 2 * width)
        defer { buf.deallocate() }
        let sum = buf, dotp = buf + width
        batchNormGradientSums(g, x, n: n, c: c, l: l, mean: mean, channels: c0, c1, sum: sum, dotp: dotp)
        for j in 0..<width {
            gradWeight?[c0 + j] = dotp[j] * invstd[c0 + j]
            gradBias?[c0 + j] = sum[j]
        }
        guard let dx = gradInput else { return }
        batchNormGradientInput(g, x, n: n, c: c, l: l, weight: weight, mean: mean, invstd: invstd, channels: c0, c1,
                               sum: sum, dotp: dotp, count: count, training: training, gradInput: dx)
    }
}

/// The reduction half of the batch-norm backward on its own (SyncBatchNorm sums these over the
/// ranks before the input gradient): per channel Σ dy into `sum[j]` and Σ (x − mean) · dy into
/// `dotp[j]`.
private func batchNormGradientSumsKernel<T: FloatElement>(
    _ g: UnsafePointer<T>, _ x: UnsafePointer<T>, n: Int, c: Int, l: Int, mean: UnsafePointer<T>,
    sum: UnsafeMutablePointer<T>, dotp: UnsafeMutablePointer<T>
) {
    parallelFor(c, grain: channelGrain(n * l)) { c0, c1 in
        batchNormGradientSums(g, x, n: n, c: c, l: l, mean: mean, channels: c0, c1, sum: sum + c0, dotp: dotp + c0)
    }
}

/// The elementwise half of the training-mode batch-norm backward on its own: the input gradient
/// from per-channel Σ dy (`sum`) and Σ (x − mean) · dy (`dotp`) taken over `count` values
/// (SyncBatchNorm: over every rank's batch).
private func batchNormGradientInputKernel<T: FloatElement>(
    _ g: UnsafePointer<T>, _ x: UnsafePointer<T>, n: Int, c: Int, l: Int, weight: UnsafePointer<T>?,
    mean: UnsafePointer<T>, invstd: UnsafePointer<T>, sum: UnsafePointer<T>, dotp: UnsafePointer<T>, count: Int,
    gradInput: UnsafeMutablePointer<T>
) {
    parallelFor(c, grain: channelGrain(n * l)) { c0, c1 in
        batchNormGradientInput(g, x, n: n, c: c, l: l, weight: weight, mean: mean, invstd: invstd, channels: c0, c1,
                               sum: sum + c0, dotp: dotp + c0, count: count, training: true, gradInput: gradInput)
    }
}

/// Σ dy and Σ (x − mean) · dy of channels c0..<c1 into `sum[0..<c1 − c0]` and `dotp[...]`:
/// accumulated in T for the (N, C) layout, in double otherwise (as PyTorch's CPU kernel).
@inline(__always) private func batchNormGradientSums<T: FloatElement>(
    _ g: UnsafePointer<T>, _ x: UnsafePointer<T>, n: Int, c: Int, l: Int, mean: UnsafePointer<T>,
    channels c0: Int, _ c1: Int, sum: UnsafeMutablePointer<T>, dotp: UnsafeMutablePointer<T>
) {
    let width = c1 - c0
    if l == 1 {
        for j in 0..<width { sum[j] = 0; dotp[j] = 0 }
        for r in 0..<n {
            let xi = x + r * c + c0, gi = g + r * c + c0, m = mean + c0
            for j in 0..<width {
                sum[j] += gi[j]
                dotp[j] += (xi[j] - m[j]) * gi[j]
            }
        }
    } else if T.self == Float.self {
        let gf = UnsafeRawPointer(g).assumingMemoryBound(to: Float.self)
        let xf = UnsafeRawPointer(x).assumingMemoryBound(to: Float.self)
        let mf = UnsafeRawPointer(mean).assumingMemoryBound(to: Float.self)
        withUnsafeTemporaryAllocation(of: Double.self, capacity: 2 * width) { sums in
            let s = sums.baseAddress!, d = s + width
            ct_bn_grad_sums_f32(gf + c0 * l, xf + c0 * l, Int64(n), Int64(c * l), Int64(l), Int64(width), mf + c0, s, d)
            for j in 0..<width {
                sum[j] = T(s[j])
                dotp[j] = T(d[j])
            }
        }
    } else {
        for j in 0..<width {
            let m = mean[c0 + j]
            var s = 0.0, d = 0.0
            for r in 0..<n {
                let off = (r * c + c0 + j) * l
                let xi = x + off, gi = g + off
                for q in 0..<l {
                    s += Double(gi[q])
                    d += Double((xi[q] - m) * gi[q])
                }
            }
            sum[j] = T(s)
            dotp[j] = T(d)
        }
    }
}

/// The input gradient of channels c0..<c1, given their Σ dy (`sum[0..<c1 − c0]`) and
/// Σ (x − mean) · dy (`dotp`) over `count` values. Training: (dy − Σdy/count − (x − mean) ·
/// invstd² · Σ(x − mean)dy/count) · invstd · w; evaluation: dy · invstd · w.
@inline(__always) private func batchNormGradientInput<T: FloatElement>(
    _ g: UnsafePointer<T>, _ x: UnsafePointer<T>, n: Int, c: Int, l: Int, weight: UnsafePointer<T>?,
    mean: UnsafePointer<T>, invstd: UnsafePointer<T>, channels c0: Int, _ c1: Int,
    sum: UnsafePointer<T>, dotp: UnsafePointer<T>, count: Int, training: Bool, gradInput dx: UnsafeMutablePointer<T>
) {
    let width = c1 - c0
    // Per channel: the mean gradient, the coefficient of (x − mean), and invstd · w.
    let buf = UnsafeMutablePointer<T>.allocate(capacity: 3 * width)
    defer { buf.deallocate() }
    let meanDy = buf, k = buf + width, scale = buf + 2 * width
    for j in 0..<width {
        let istd = invstd[c0 + j]
        scale[j] = istd * (weight?[c0 + j] ?? 1)
        k[j] = dotp[j] * istd * istd / T(count)
        meanDy[j] = sum[j] / T(count)
    }
    if l == 1 {
        for r in 0..<n {
            let xi = x + r * c + c0, gi = g + r * c + c0, o = dx + r * c + c0, m = mean + c0
            if training {
                for j in 0..<width { o[j] = (gi[j] - meanDy[j] - (xi[j] - m[j]) * k[j]) * scale[j] }
            } else {
                for j in 0..<width { o[j] = gi[j] * scale[j] }
            }
        }
    } else {
        for r in 0..<n {
            for j in 0..<width {
                let off = (r * c + c0 + j) * l
                let xi = x + off, gi = g + off, o = dx + off
                let m = mean[c0 + j], kk = k[j], gm = meanDy[j], s = scale[j]
                if training {
                    for q in 0..<l { o[q] = (gi[q] - gm - (xi[q] - m) * kk) * s }
                } else {
                    for q in 0..<l { o[q] = gi[q] * s }
                }
            }
        }
    }
}

/// Per-channel count-weighted moments of a contiguous (n, c, l) input, in double whatever T is:
/// the mean and M2 = Σ (x − mean)² (two passes). SyncBatchNorm merges these across ranks; the
/// forward kernel's own statistics are rounded to T and so too coarse for that merge.
private func batchNormMomentsKernel<T: FloatElement>(
    _ x: UnsafePointer<T>, n: Int, c: Int, l: Int, mean: UnsafeMutablePointer<Double>, m2: UnsafeMutablePointer<Double>
) {
    let count = n * l
    guard count > 0 else {
        for j in 0..<c { mean[j] = 0; m2[j] = 0 }
        return
    }
    let total = Double(count)
    parallelFor(c, grain: channelGrain(count)) { c0, c1 in
        if l == 1 {
            for j in c0..<c1 { mean[j] = 0; m2[j] = 0 }
            for r in 0..<n {
                let row = x + r * c
                for j in c0..<c1 { mean[j] += Double(row[j]) }
            }
            for j in c0..<c1 { mean[j] /= total }
            for r in 0..<n {
                let row = x + r * c
                for j in c0..<c1 {
                    let d = Double(row[j]) - mean[j]
                    m2[j] += d * d
                }
            }
        } else {
            for j in c0..<c1 {
                var s = 0.0
                for r in 0..<n {
                    let p = x + (r * c + j) * l
                    for q in 0..<l { s += Double(p[q]) }
                }
                let mu = s / total
                var v = 0.0
                for r in 0..<n {
                    let p = x + (r * c + j) * l
                    for q in 0..<l {
                        let d = Double(p[q]) - mu
                        v += d * d
                    }
                }
                mean[j] = mu
                m2[j] = v
            }
        }
    }
}

/// Layer-norm forward over `m` contiguous rows of `n` elements: per row mean and 1/√(var + eps)
/// (two passes in double), y = (x · rstd − mean · rstd) · γ + β.
private func layerNormForwardKernel<T: FloatElement>(
    _ x: UnsafePointer<T>, _ y: UnsafeMutablePointer<T>, m: Int, n: Int,
    gamma: UnsafePointer<T>?, beta: UnsafePointer<T>?,
    mean: UnsafeMutablePointer<T>, rstd: UnsafeMutablePointer<T>, eps: Double
) {
    parallelFor(m, grain: channelGrain(n)) { r0, r1 in
        for i in r0..<r1 {
            let xp = x + i * n, yp = y + i * n
            var s = 0.0
            for j in 0..<n { s += Double(xp[j]) }
            let mu = s / Double(n)
            var v = 0.0
            for j in 0..<n {
                let d = Double(xp[j]) - mu
                v += d * d
            }
            let muT = T(mu), rT = T(1 / (Swift.max(v / Double(n), 0) + eps).squareRoot())
            let b = -rT * muT
            if let gamma, let beta {
                for j in 0..<n { yp[j] = (xp[j] * rT + b) * gamma[j] + beta[j] }
            } else if let gamma {
                for j in 0..<n { yp[j] = (xp[j] * rT + b) * gamma[j] }
            } else {
                for j in 0..<n { yp[j] = xp[j] * rT + b }
            }
            mean[i] = muT
            rstd[i] = rT
        }
    }
}

/// Layer-norm backward over `m` rows of `n`: dx (rows in parallel) with PyTorch's three
/// coefficients, and dγ = Σ dy · x̂, dβ = Σ dy over rows.
private func layerNormBackwardKernel<T: FloatElement>(
    _ g: UnsafePointer<T>, _ x: UnsafePointer<T>, m: Int, n: Int, gamma: UnsafePointer<T>?,
    mean: UnsafePointer<T>, rstd: UnsafePointer<T>,
    gradInput: UnsafeMutablePointer<T>?, gradWeight: UnsafeMutablePointer<T>?, gradBias: UnsafeMutablePointer<T>?
) {
    if let dx = gradInput {
        let invN = 1 / Double(n)
        parallelFor(m, grain: channelGrain(n)) { r0, r1 in
            for i in r0..<r1 {
                let xp = x + i * n, gp = g + i * n, o = dx + i * n
                var ds = 0.0, db = 0.0
                if let gamma {
                    for j in 0..<n {
                        let dyg = Double(gp[j] * gamma[j])
                        ds += dyg * Double(xp[j])
                        db += dyg
                    }
                } else {
                    for j in 0..<n {
                        ds += Double(gp[j]) * Double(xp[j])
                        db += Double(gp[j])
                    }
                }
                let a = Double(rstd[i]), mu = Double(mean[i])
                let b = (db * mu - ds) * a * a * a * invN
                let cc = -b * mu - db * a * invN
                let aT = T(a), bT = T(b), cT = T(cc)
                if let gamma {
                    for j in 0..<n { o[j] = aT * gp[j] * gamma[j] + bT * xp[j] + cT }
                } else {
                    for j in 0..<n { o[j] = aT * gp[j] + bT * xp[j] + cT }
                }
            }
        }
    }
    if gradWeight == nil && gradBias == nil { return }
    // Column sums: each chunk of columns walks all rows.
    parallelFor(n, grain: channelGrain(m)) { j0, j1 in
        let w = j1 - j0
        if let gw = gradWeight { for j in j0..<j1 { gw[j] = 0 } }
        if let gb = gradBias { for j in j0..<j1 { gb[j] = 0 } }
        for i in 0..<m {
            let xp = x + i * n + j0, gp = g + i * n + j0
            let mu = mean[i], rs = rstd[i]
            if let gw = gradWeight {
                let o = gw + j0
                for j in 0..<w { o[j] += gp[j] * ((xp[j] - mu) * rs) }
            }
            if let gb = gradBias {
                let o = gb + j0
                for j in 0..<w { o[j] += gp[j] }
            }
        }
    }
}
