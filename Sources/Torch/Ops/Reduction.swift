import CTorchKernels

/// Reductions over all elements or chosen dims (`dim:` one or several, `keepdim:`): sum mean prod
/// max min amax amin argmax argmin all any std var norm logsumexp, and cumsum/cumprod.

/// The reduction geometry: which dims are kept and which are reduced.
struct ReductionPlan {
    let reduced: [Int]
    let kept: [Int]
    let outShape: [Int]        // with keepdim applied
    let keptShape: [Int]       // kept dims only
    let count: Int             // elements per output (K)

    init(_ shape: [Int], dims: [Int]?, keepdim: Bool, op: String) {
        let rank = shape.count
        var red: [Int]
        if let dims, !dims.isEmpty {
            red = dims.map { normalizeDim($0, rank, op: op) }
            precondition(Set(red).count == red.count, "\(op): dim \(dims) appears multiple times in the list of dims")
            red.sort()
        } else {
            red = Array(0..<rank)
        }
        if rank == 0 { red = [] }
        reduced = red
        kept = (0..<rank).filter { !red.contains($0) }
        keptShape = kept.map { shape[$0] }
        count = red.reduce(1) { $0 * shape[$1] }
        if keepdim {
            outShape = (0..<rank).map { red.contains($0) ? 1 : shape[$0] }
        } else {
            outShape = keptShape
        }
    }
}

/// Sum over the reduced dims into the accumulation dtype (float stays float; ints → int64).
func sumForward(_ x: Tensor, _ plan: ReductionPlan, dtype: DType?) -> Tensor {
    let outType = dtype ?? (x.dtype.isFloatingPoint ? x.dtype : .int64)
    let compute = outType.computeType
    let src = x.to(compute)
    let out: Tensor
    switch src.device {
    case .cpu: out = CPUReduction.sum(src, plan)
    case .cuda: out = CUDAReduction.values(.sum, src, plan)
    }
    return out.to(outType)
}

/// Expands a reduced gradient back over the reduced dims.
func expandReducedGradient(_ g: Tensor, inputShape: [Int], plan: ReductionPlan, keepdim: Bool) -> Tensor {
    var gg = g
    if !keepdim { for d in plan.reduced { gg = gg.unsqueeze(d) } }
    return gg.expand(inputShape)
}

/// Which value to keep in a max/min-like reduction.
enum Extremum { case max, min }

/// (values, indices) of max/min over one dim; NaN wins like PyTorch.
private func extremumAlongDim(_ x: Tensor, _ dim: Int, keepdim: Bool, _ which: Extremum) -> (Tensor, Tensor) {
    let plan = ReductionPlan(x.shape, dims: [dim], keepdim: keepdim, op: which == .max ? "max" : "min")
    precondition(x.numel > 0 || plan.count > 0, "\(which == .max ? "max" : "min")(): Expected reduction dim \(dim) to have non-zero size.")
    let compute = x.dtype.computeType == .bool ? DType.uint8 : x.dtype.computeType
    let src = x.to(compute)
    var r: (Tensor, Tensor)
    switch src.device {
    case .cpu: r = CPUReduction.extremum(which, src, plan)
    case .cuda: r = CUDAReduction.withIndices(which == .max ? .argmax : .argmin, src, plan)
    }
    if r.0.dtype != x.dtype { r.0 = r.0.to(x.dtype) }
    return r
}

/// The `_saved_` attributes of sum/mean: `dim` as written and `keepdim` when reducing over dims,
/// then the input's sizes (and, for mean, its element count).
private func reductionAttributes(_ dims: [Int]?, _ keepdim: Bool, _ inShape: [Int], numel: Bool) -> () -> [SavedAttribute] {
    {
        var r: [SavedAttribute] = []
        if let dims { r += [.ints("dim", dims), .bool("keepdim", keepdim)] }
        if numel { r.append(.int("self_sym_numel", shapeNumel(inShape))) }
        r.append(.ints("self_sym_sizes", inShape))
        return r
    }
}

extension Tensor {
    /// Sum of all elements.
    public func sum(dtype: DType? = nil) -> Tensor { sumImpl(dims: nil, keepdim: false, dtype: dtype, name: "SumBackward0") }
    /// Sum over `dim`.
    public func sum(dim: Int, keepdim: Bool = false, dtype: DType? = nil) -> Tensor {
        sumImpl(dims: [dim], keepdim: keepdim, dtype: dtype, name: "SumBackward1")
    }
    /// Sum over several dims.
    public func sum(dim: [Int], keepdim: Bool = false, dtype: DType? = nil) -> Tensor {
        sumImpl(dims: dim, keepdim: keepdim, dtype: dtype, name: "SumBackward1")
    }

    private func sumImpl(dims: [Int]?, keepdim: Bool, dtype: DType?, name: String) -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.sum(dims: dims ?? [], keepdim: keepdim), [self], { sumImpl(dims: dims, keepdim: keepdim, dtype: dtype, name: name) }) { return r }
        if _slowPath(Autocast.isActive), dtype == nil,
           let r = Autocast.run(.sum, [self], { $0[0]!.sumImpl(dims: dims, keepdim: keepdim, dtype: nil, name: name) }) { return r }
        let plan = ReductionPlan(shape, dims: dims, keepdim: keepdim, op: "sum")
        let out = sumForward(self, plan, dtype: dtype)
        if needsGrad {
            let inShape = shape, inType = self.dtype
            record(name, out, inputs: [self], saved: reductionAttributes(dims, keepdim, inShape, numel: false)) { _, g in
                [expandReducedGradient(g, inputShape: inShape, plan: plan, keepdim: keepdim).to(inType)]
            }
        }
        return out
    }

    /// Mean of all elements (floating types).
    public func mean(dtype: DType? = nil) -> Tensor { meanImpl(dims: nil, keepdim: false, dtype: dtype, name: "MeanBackward0") }
    public func mean(dim: Int, keepdim: Bool = false, dtype: DType? = nil) -> Tensor {
        meanImpl(dims: [dim], keepdim: keepdim, dtype: dtype, name: "MeanBackward1")
    }
    public func mean(dim: [Int], keepdim: Bool = false, dtype: DType? = nil) -> Tensor {
        meanImpl(dims: dim, keepdim: keepdim, dtype: dtype, name: "MeanBackward1")
    }

    private func meanImpl(dims: [Int]?, keepdim: Bool, dtype: DType?, name: String) -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.mean(dims: dims ?? [], keepdim: keepdim), [self], { meanImpl(dims: dims, keepdim: keepdim, dtype: dtype, name: name) }) { return r }
        let outType = dtype ?? self.dtype
        precondition(outType.isFloatingPoint, "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: \(self.dtype.name.capitalized)")
        let plan = ReductionPlan(shape, dims: dims, keepdim: keepdim, op: "mean")
        let s = sumForward(self, plan, dtype: outType)
        let k = Double(plan.count)
        let out = torch.noGrad { s / k }
        if needsGrad {
            let inShape = shape
            record(name, out, inputs: [self], saved: reductionAttributes(dims, keepdim, inShape, numel: true)) { _, g in
                [expandReducedGradient(g, inputShape: inShape, plan: plan, keepdim: keepdim) / k]
            }
        }
        return out
    }

    /// Product of all elements.
    public func prod(dtype: DType? = nil) -> Tensor { prodImpl(dims: nil, keepdim: false, dtype: dtype, name: "ProdBackward0") }
    public func prod(dim: Int, keepdim: Bool = false, dtype: DType? = nil) -> Tensor {
        prodImpl(dims: [dim], keepdim: keepdim, dtype: dtype, name: "ProdBackward1")
    }

    private func prodImpl(dims: [Int]?, keepdim: Bool, dtype: DType?, name: String) -> Tensor {
        if _slowPath(Autocast.isActive), dtype == nil,
           let r = Autocast.run(.prod, [self], { $0[0]!.prodImpl(dims: dims, keepdim: keepdim, dtype: nil, name: name) }) { return r }
        let plan = ReductionPlan(shape, dims: dims, keepdim: keepdim, op: "prod")
        let outType = dtype ?? (self.dtype.isFloatingPoint ? self.dtype : .int64)
        let src = self.to(outType.computeType)
        var out: Tensor
        switch src.device {
        case .cpu: out = CPUReduction.prod(src, plan)
        case .cuda: out = CUDAReduction.values(.prod, src, plan)
        }
        out = out.to(outType)
        if needsGrad {
            let sx = SavedTensor(self), so = SavedTensor(output: out)
            let inShape = shape
            record(name, out, inputs: [self]) { node, g in
                let x = sx.unpack(node), o = so.unpack(node)
                let ge = expandReducedGradient(g * o, inputShape: inShape, plan: plan, keepdim: keepdim)
                // Exact where x != 0; elements equal to zero get the product of the others.
                let safe = torch.where(x .== 0, torch.onesLike(x), x)
                let others = torch.where(x .== 0, expandReducedGradient(g, inputShape: inShape, plan: plan, keepdim: keepdim)
                                            * productOfOthers(x, plan: plan, keepdim: keepdim), ge / safe)
                return [others]
            }
        }
        return out
    }

    /// Largest element (NaN if any).
    public func max() -> Tensor { fullExtremum(.max) }
    /// Smallest element.
    public func min() -> Tensor { fullExtremum(.min) }

    private func fullExtremum(_ which: Extremum) -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.extremum(max: which == .max, dims: nil, keepdim: false, withIndices: false), [self], { fullExtremum(which) }) { return r }
        precondition(numel > 0, "\(which == .max ? "max" : "min")(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.")
        let (v, _) = extremumAlongDim(reshape(-1), 0, keepdim: false, which)
        if needsGrad {
            let sx = SavedTensor(self), so = SavedTensor(output: v)
            record(which == .max ? "MaxBackward1" : "MinBackward1", v, inputs: [self]) { node, g in
                let mask = (sx.unpack(node) .== so.unpack(node)).to(g.dtype)
                return [mask * (g / mask.sum())]
            }
        }
        return v
    }

    /// (values, indices) of the maximum along `dim`.
    public func max(dim: Int, keepdim: Bool = false) -> (values: Tensor, indices: Tensor) { extremum(.max, dim, keepdim) }
    /// (values, indices) of the minimum along `dim`.
    public func min(dim: Int, keepdim: Bool = false) -> (values: Tensor, indices: Tensor) { extremum(.min, dim, keepdim) }

    private func extremum(_ which: Extremum, _ dim: Int, _ keepdim: Bool) -> (values: Tensor, indices: Tensor) {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.ops(.extremum(max: which == .max, dims: [dim], keepdim: keepdim, withIndices: true), [self], {
            let (v, i) = extremum(which, dim, keepdim); return [v, i] }) { return (r[0], r[1]) }
        if self.dim == 0 { return (self.clone(), torch.zeros([], dtype: .int64, device: device)) }
        let (v, i) = extremumAlongDim(self, dim, keepdim: keepdim, which)
        if needsGrad {
            let inShape = shape, d = normalizeDim(dim, self.dim, op: "max")
            record(which == .max ? "MaxBackward0" : "MinBackward0", v, inputs: [self]) { _, g in
                let gi = keepdim ? g : g.unsqueeze(d)
                let ii = keepdim ? i : i.unsqueeze(d)
                return [torch.zeros(inShape, dtype: g.dtype, device: g.device).scatter(d, ii, gi)]
            }
        }
        return (v, i)
    }

    /// Maximum over dims (values only).
    public func amax(dim: [Int] = [], keepdim: Bool = false) -> Tensor { amaxImpl(.max, dim, keepdim) }
    public func amin(dim: [Int] = [], keepdim: Bool = false) -> Tensor { amaxImpl(.min, dim, keepdim) }

    private func amaxImpl(_ which: Extremum, _ dims: [Int], _ keepdim: Bool) -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.extremum(max: which == .max, dims: dims, keepdim: keepdim, withIndices: false), [self], { amaxImpl(which, dims, keepdim) }) { return r }
        let plan = ReductionPlan(shape, dims: dims, keepdim: keepdim, op: "amax")
        let flat = permute(plan.kept + plan.reduced).reshape(plan.keptShape + [plan.count])
        var (v, _) = extremumAlongDim(torch.noGrad { flat.detach() }, -1, keepdim: false, which)
        v = v.reshape(plan.outShape)
        if needsGrad {
            let sx = SavedTensor(self), so = SavedTensor(output: v), inShape = shape
            record(which == .max ? "AmaxBackward0" : "AminBackward0", v, inputs: [self]) { node, g in
                let o = expandReducedGradient(so.unpack(node), inputShape: inShape, plan: plan, keepdim: keepdim)
                let mask = (sx.unpack(node) .== o).to(g.dtype)
                let cnt = expandReducedGradient(mask.sum(dim: plan.reduced, keepdim: true), inputShape: inShape, plan: plan, keepdim: true)
                return [mask * expandReducedGradient(g, inputShape: inShape, plan: plan, keepdim: keepdim) / cnt]
            }
        }
        return v
    }

    /// Index of the maximum (over the flattened tensor, or along `dim`).
    public func argmax(dim: Int? = nil, keepdim: Bool = false) -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.argExtremum(max: true, dim: dim, keepdim: keepdim), [self], { argmax(dim: dim, keepdim: keepdim) }) { return r }
        guard let dim else { return extremumAlongDim(reshape(-1), 0, keepdim: false, .max).1 }
        return extremumAlongDim(self, dim, keepdim: keepdim, .max).1
    }
    /// Index of the minimum.
    public func argmin(dim: Int? = nil, keepdim: Bool = false) -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.argExtremum(max: false, dim: dim, keepdim: keepdim), [self], { argmin(dim: dim, keepdim: keepdim) }) { return r }
        guard let dim else { return extremumAlongDim(reshape(-1), 0, keepdim: false, .min).1 }
        return extremumAlongDim(self, dim, keepdim: keepdim, .min).1
    }

    /// True if all elements are nonzero.
    public func all() -> Tensor { boolReduce(nil, false, all: true) }
    public func all(dim: Int, keepdim: Bool = false) -> Tensor { boolReduce([dim], keepdim, all: true) }
    /// True if any element is nonzero.
    public func any() -> Tensor { boolReduce(nil, false, all: false) }
    public func any(dim: Int, keepdim: Bool = false) -> Tensor { boolReduce([dim], keepdim, all: false) }

    private func boolReduce(_ dims: [Int]?, _ keepdim: Bool, all: Bool) -> Tensor {
        let plan = ReductionPlan(shape, dims: dims, keepdim: keepdim, op: all ? "all" : "any")
        switch device {
        case .cpu: return CPUReduction.allOrAny(to(.bool), plan, all: all)
        case .cuda: return CUDAReduction.values(all ? .min : .max, to(.bool), plan)
        }
    }

    /// Variance with Bessel's correction by default (`correction: 1`, PyTorch's `unbiased=True`).
    public func `var`(dim: [Int]? = nil, correction: Int = 1, keepdim: Bool = false) -> Tensor {
        varianceOrStd(dim, correction, keepdim, std: false)
    }
    public func `var`(dim: Int, correction: Int = 1, keepdim: Bool = false) -> Tensor { self.var(dim: [dim], correction: correction, keepdim: keepdim) }
    public func `var`(unbiased: Bool) -> Tensor { self.var(dim: nil, correction: unbiased ? 1 : 0) }

    /// Standard deviation (`sqrt(var)`).
    public func std(dim: [Int]? = nil, correction: Int = 1, keepdim: Bool = false) -> Tensor {
        varianceOrStd(dim, correction, keepdim, std: true)
    }
    public func std(dim: Int, correction: Int = 1, keepdim: Bool = false) -> Tensor { std(dim: [dim], correction: correction, keepdim: keepdim) }
    public func std(unbiased: Bool) -> Tensor { std(dim: nil, correction: unbiased ? 1 : 0) }

    /// var/std with PyTorch's backward formulas (VarBackward0 / StdBackward0), which stay finite
    /// where the composite formula would give inf - inf (e.g. `correction` ≥ the group size).
    private func varianceOrStd(_ dim: [Int]?, _ correction: Int, _ keepdim: Bool, std: Bool) -> Tensor {
        let name = std ? "std" : "var"
        precondition(dtype.isFloatingPoint, "\(name)(): expected a floating point input (got \(dtype))")
        let plan = ReductionPlan(shape, dims: dim, keepdim: keepdim, op: name)
        let dof = Double(Swift.max(plan.count - correction, 0))
        let out = torch.noGrad { () -> Tensor in
            let d = self - mean(dim: plan.reduced, keepdim: true)
            let v = (d * d).sum(dim: plan.reduced, keepdim: keepdim) / dof
            return std ? v.sqrt() : v
        }
        if needsGrad {
            let sx = SavedTensor(self), so: SavedTensor? = std ? SavedTensor(output: out) : nil, inShape = shape
            record(std ? "StdBackward0" : "VarBackward0", out, inputs: [self]) { node, g in
                let x = sx.unpack(node)
                var gv = g
                if let so {
                    let r = so.unpack(node)
                    gv = torch.where(r .== 0, torch.zerosLike(g), g / (r * 2))
                }
                let centered = x - x.mean(dim: plan.reduced, keepdim: true)
                return [expandReducedGradient(gv, inputShape: inShape, plan: plan, keepdim: keepdim) * centered * (2 / dof)]
            }
        }
        return out
    }

    /// p-norm over all elements or `dim` (p = 2 by default; `.infinity` for the max norm).
    public func norm(p: Double = 2, dim: [Int]? = nil, keepdim: Bool = false) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.norm, [self], { $0[0]!.norm(p: p, dim: dim, keepdim: keepdim) }) { return r }
        let dims = dim ?? []
        let out: Tensor = torch.noGrad {
            let a = abs()
            switch p {
            case .infinity: return a.amax(dim: dims, keepdim: keepdim)
            case -.infinity: return a.amin(dim: dims, keepdim: keepdim)
            case 0: return (self .!= 0).to(dtype.floatingResult).sum(dim: dims, keepdim: keepdim)
            case 1: return a.sum(dim: dims, keepdim: keepdim)
            case 2: return (self * self).sum(dim: dims, keepdim: keepdim).sqrt()
            default: return a.pow(p).sum(dim: dims, keepdim: keepdim).pow(1 / p)
            }
        }
        if needsGrad {
            // PyTorch's norm_backward: finite (0) at a zero vector, where the composite formula gives NaN.
            let plan = ReductionPlan(shape, dims: dims, keepdim: keepdim, op: "norm")
            let sx = SavedTensor(self), so = SavedTensor(output: out), inShape = shape
            record("LinalgVectorNormBackward0", out, inputs: [self]) { node, g in
                let x = sx.unpack(node)
                let n = expandReducedGradient(so.unpack(node), inputShape: inShape, plan: plan, keepdim: keepdim)
                let ge = expandReducedGradient(g, inputShape: inShape, plan: plan, keepdim: keepdim)
                let zero = torch.zerosLike(ge)
                switch p {
                case 0: return [zero]
                case 1: return [x.sign() * ge]
                case 2: return [x * torch.where(n .== 0, zero, ge / n)]
                case .infinity, -.infinity:
                    let mask = (x.abs() .== n).to(ge.dtype)
                    let count = expandReducedGradient(mask.sum(dim: plan.reduced, keepdim: true), inputShape: inShape, plan: plan, keepdim: true)
                    return [x.sign() * mask * ge / count]
                default:
                    return [x * x.abs().pow(p - 2) * torch.where(n .== 0, zero, ge / n.pow(p - 1))]
                }
            }
        }
        return out
    }
    public func norm(p: Double = 2, dim: Int, keepdim: Bool = false) -> Tensor { norm(p: p, dim: [dim], keepdim: keepdim) }

    /// log(sum(exp(x))) over `dim`, computed stably.
    public func logsumexp(dim: [Int], keepdim: Bool = false) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.logsumexp, [self], { $0[0]!.logsumexp(dim: dim, keepdim: keepdim) }) { return r }
        // An empty input has no max: log(sum(exp(x))) is -inf (or empty), as in PyTorch.
        if numel == 0 { return exp().sum(dim: dim, keepdim: keepdim).log() }
        let out: Tensor = torch.noGrad {
            let m = amax(dim: dim, keepdim: true)
            let safeM = torch.where(m.isinf(), torch.zerosLike(m), m)
            let r = (self - safeM).exp().sum(dim: dim, keepdim: true).log() + safeM
            return keepdim ? r : r.squeeze(dim: dim)
        }
        if needsGrad {
            // PyTorch's logsumexp_backward: g * exp(x - result).
            let plan = ReductionPlan(shape, dims: dim, keepdim: keepdim, op: "logsumexp")
            let sx = SavedTensor(self), so = SavedTensor(output: out), inShape = shape
            record("LogsumexpBackward0", out, inputs: [self]) { node, g in
                let r = expandReducedGradient(so.unpack(node), inputShape: inShape, plan: plan, keepdim: keepdim)
                return [expandReducedGradient(g, inputShape: inShape, plan: plan, keepdim: keepdim) * (sx.unpack(node) - r).exp()]
            }
        }
        return out
    }
    public func logsumexp(dim: Int, keepdim: Bool = false) -> Tensor { logsumexp(dim: [dim], keepdim: keepdim) }

    /// Running sum along `dim`.
    public func cumsum(dim: Int, dtype: DType? = nil) -> Tensor {
        if _slowPath(Autocast.isActive), dtype == nil, let r = Autocast.run(.cumsum, [self], { $0[0]!.cumsum(dim: dim) }) { return r }
        let d = normalizeDim(dim, Swift.max(self.dim, 1), op: "cumsum")
        if _slowPath(ONNXTrace.isOn), self.dim > 0, let r = ONNXTrace.op(.cumsum(dim: d), [self], { cumsum(dim: dim, dtype: dtype) }) { return r }
        let outType = dtype ?? (self.dtype.isFloatingPoint ? self.dtype : .int64)
        let out = scan(d, outType, .cumsum)
        if needsGrad {
            record("CumsumBackward0", out, inputs: [self], saved: { [.int("dim", dim)] }) { _, g in
                // Reverse cumulative sum: total - cumsum + g.
                [g.sum(dim: d, keepdim: true) - g.cumsum(dim: d) + g]
            }
        }
        return out
    }

    /// Running product along `dim`.
    public func cumprod(dim: Int, dtype: DType? = nil) -> Tensor {
        if _slowPath(Autocast.isActive), dtype == nil, let r = Autocast.run(.cumprod, [self], { $0[0]!.cumprod(dim: dim) }) { return r }
        let d = normalizeDim(dim, Swift.max(self.dim, 1), op: "cumprod")
        let outType = dtype ?? (self.dtype.isFloatingPoint ? self.dtype : .int64)
        let out = scan(d, outType, .cumprod)
        if needsGrad {
            let sx = SavedTensor(self), so = SavedTensor(output: out)
            record("CumprodBackward0", out, inputs: [self]) { node, g in
                let x = sx.unpack(node), o = so.unpack(node)
                func reverseCumsum(_ t: Tensor) -> Tensor { t.sum(dim: d, keepdim: true) - t.cumsum(dim: d) + t }
                if x.dim == 0 { return [g] }
                let isZero = x .== 0
                if isZero.any().item() == 0 { return [reverseCumsum(g * o) / x] }
                if GradMode.isEnabled {
                    // create_graph with zeros: PyTorch's O(n²) formula, differentiable everywhere:
                    // grad[k] = prod(x[..<k]) * (g[k] + sum_{j>k} g[j] * prod(x[k+1...j])).
                    let n = x.shape[d]
                    var total: Tensor? = nil
                    for k in 0..<n {
                        var term = g.narrow(d, k, 1)
                        if k + 1 < n {
                            let rest = n - k - 1
                            term = term + (g.narrow(d, k + 1, rest) * x.narrow(d, k + 1, rest).cumprod(dim: d)).sum(dim: d, keepdim: true)
                        }
                        if k > 0 { term = term * x.narrow(d, 0, k).prod(dim: d, keepdim: true) }
                        let placed = embedGradient(term, into: x.shape) { $0.narrow(d, k, 1) }
                        total = total.map { $0 + placed } ?? placed
                    }
                    return [total!]
                }
                // With zeros (PyTorch's cumprod_backward): before the first zero of a line the
                // quotient formula holds; at the first zero the gradient is the reverse cumsum of
                // g * cumprod(x with that zero replaced by 1); after it, 0.
                let (before, first) = torch.noGrad { () -> (Tensor, Tensor) in
                    let zerosSoFar = isZero.to(.int64).cumsum(dim: d)
                    return (zerosSoFar .== 0, isZero & (zerosSoFar .== 1))
                }
                let ones = torch.onesLike(x)
                let gBefore = reverseCumsum(g * o) / torch.where(before, x, ones)
                let gFirst = reverseCumsum(g * torch.where(first, ones, x).cumprod(dim: d))
                return [torch.where(before, gBefore, torch.where(first, gFirst, torch.zerosLike(gFirst)))]
            }
        }
        return out
    }

    /// An inclusive scan with `f` along dim `d`, in the compute type of `outType`.
    private func scan(_ d: Int, _ outType: DType, _ op: CUDAReduceOp) -> Tensor {
        if self.dim == 0 { return to(outType).clone() }
        switch device {
        case .cpu: return CPUReduction.scan(self, d, outType, op)
        case .cuda: return torch.noGrad { CUDAReduction.scan(op, to(outType), dim: d) }
        }
    }
}

/// For prod's gradient at zeros: the product of the other elements of each reduced group.
private func productOfOthers(_ x: Tensor, plan: ReductionPlan, keepdim: Bool) -> Tensor {
    // Differentiable (for create_graph): the zero itself counts as 1 in the product of the others.
    let zeros = (x .== 0)
    var nonzeroProd = torch.where(zeros, torch.onesLike(x), x)
    for d in plan.reduced { nonzeroProd = nonzeroProd.prod(dim: d, keepdim: true) }
    let zeroCount = zeros.to(x.dtype).sum(dim: plan.reduced, keepdim: true)
    // Only a single zero in the group has a nonzero gradient.
    return torch.where(zeroCount .== 1, nonzeroProd.expand(x.shape), torch.zerosLike(x))
}

extension torch {
    public static func sum(_ x: Tensor) -> Tensor { x.sum() }
    public static func sum(_ x: Tensor, dim: Int, keepdim: Bool = false) -> Tensor { x.sum(dim: dim, keepdim: keepdim) }
    public static func sum(_ x: Tensor, dim: [Int], keepdim: Bool = false) -> Tensor { x.sum(dim: dim, keepdim: keepdim) }
    public static func mean(_ x: Tensor) -> Tensor { x.mean() }
    public static func mean(_ x: Tensor, dim: Int, keepdim: Bool = false) -> Tensor { x.mean(dim: dim, keepdim: keepdim) }
    public static func mean(_ x: Tensor, dim: [Int], keepdim: Bool = false) -> Tensor { x.mean(dim: dim, keepdim: keepdim) }
    public static func prod(_ x: Tensor) -> Tensor { x.prod() }
    public static func max(_ x: Tensor) -> Tensor { x.max() }
    public static func min(_ x: Tensor) -> Tensor { x.min() }
    public static func max(_ x: Tensor, dim: Int, keepdim: Bool = false) -> (values: Tensor, indices: Tensor) { x.max(dim: dim, keepdim: keepdim) }
    public static func min(_ x: Tensor, dim: Int, keepdim: Bool = false) -> (values: Tensor, indices: Tensor) { x.min(dim: dim, keepdim: keepdim) }
    public static func argmax(_ x: Tensor, dim: Int? = nil, keepdim: Bool = false) -> Tensor { x.argmax(dim: dim, keepdim: keepdim) }
    public static func argmin(_ x: Tensor, dim: Int? = nil, keepdim: Bool = false) -> Tensor { x.argmin(dim: dim, keepdim: keepdim) }
    public static func all(_ x: Tensor) -> Tensor { x.all() }
    public static func any(_ x: Tensor) -> Tensor { x.any() }
    public static func std(_ x: Tensor, dim: [Int]? = nil, correction: Int = 1, keepdim: Bool = false) -> Tensor { x.std(dim: dim, correction: correction, keepdim: keepdim) }
    public static func `var`(_ x: Tensor, dim: [Int]? = nil, correction: Int = 1, keepdim: Bool = false) -> Tensor { x.var(dim: dim, correction: correction, keepdim: keepdim) }
    public static func norm(_ x: Tensor, p: Double = 2, dim: [Int]? = nil, keepdim: Bool = false) -> Tensor { x.norm(p: p, dim: dim, keepdim: keepdim) }
    public static func logsumexp(_ x: Tensor, dim: Int, keepdim: Bool = false) -> Tensor { x.logsumexp(dim: dim, keepdim: keepdim) }
    public static func cumsum(_ x: Tensor, dim: Int) -> Tensor { x.cumsum(dim: dim) }
    public static func cumprod(_ x: Tensor, dim: Int) -> Tensor { x.cumprod(dim: dim) }
}
