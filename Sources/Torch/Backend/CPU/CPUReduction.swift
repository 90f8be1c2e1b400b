import CTorchKernels

/// The CPU kernels of the reductions (sum, prod, max/min with indices, all/any, cumsum/cumprod); their CUDA twin is
/// `CUDAReduction`.
enum CPUReduction {
    /// Applies `row(pointer, K)` to each output element's K reduced values (contiguous) and stores results.
    /// `x` must already have the compute element type `T`.
    @inline(__always)
    static func rows<T, R>(_ x: Tensor, _ plan: ReductionPlan, _ outType: DType, _: T.Type, _: R.Type,
                          _ row: (UnsafePointer<T>, Int) -> R) -> Tensor {
        let perm = plan.kept + plan.reduced
        let xp = (perm == Array(0..<x.dim) ? x : x.permute(perm)).contiguous()
        let out = Tensor(uninitializedShape: plan.outShape, dtype: outType)
        let m = shapeNumel(plan.keptShape), k = plan.count
        let src = UnsafePointer(xp.pointer(T.self)), dst = out.pointer(R.self)
        parallelFor(m, grain: max(1, elementwiseGrain / max(k, 1))) { lo, hi in
            for i in lo..<hi { dst[i] = row(src + i * k, k) }
        }
        return out
    }

    /// Sum over the reduced dims of `src` (already of the accumulation dtype), in its dtype.
    static func sum(_ src: Tensor, _ plan: ReductionPlan) -> Tensor {
        let compute = src.dtype
        // Leading dims of a contiguous tensor: accumulate whole rows (bias gradients, batch sums).
        if src.isContiguous && !plan.reduced.isEmpty && plan.reduced == Array(0..<plan.reduced.count) && !plan.kept.isEmpty {
            let out = Tensor(uninitializedShape: plan.outShape, dtype: compute)
            let m = shapeNumel(plan.keptShape), k = plan.count
            func columns<T: NumericElement>(_: T.Type) {
                let s = UnsafePointer(src.pointer(T.self)), d = out.pointer(T.self)
                parallelFor(m, grain: max(64, elementwiseGrain / max(k, 1))) { lo, hi in
                    for j in lo..<hi { d[j] = T.zeroValue }
                    for i in 0..<k {
                        let r = s + i * m
                        for j in lo..<hi { d[j] += r[j] }
                    }
                }
            }
            switch compute {
            case .float32: columns(Float.self)
            case .float64: columns(Double.self)
            case .int64: columns(Int64.self)
            case .int32: columns(Int32.self)
            default: columns(UInt8.self)
            }
            return out
        }
        // Kept dims a run strictly inside a contiguous tensor, [A, M, B] (a conv bias gradient sums over N and the
        // spatial dims): the general path below would first permute the kept dims to the front, a full copy (3 % of
        // a small CNN's training step, perf).
        let middle: (a: Int, m: Int, b: Int)?
        if src.isContiguous, let first = plan.kept.first, let last = plan.kept.last, first > 0, last < src.dim - 1,
           plan.kept == Array(first...last) {
            middle = (src.shape[..<first].reduce(1, *), shapeNumel(plan.keptShape), src.shape[(last + 1)...].reduce(1, *))
        } else {
            middle = nil
        }
        func run<T: NumericElement>(_: T.Type, add: (T, T) -> T, _ row: (UnsafePointer<T>, Int) -> T) -> Tensor {
            guard let middle else { return rows(src, plan, compute, T.self, T.self, row) }
            let out = Tensor(uninitializedShape: plan.outShape, dtype: compute)
            sumMiddle(UnsafePointer(src.pointer(T.self)), a: middle.a, m: middle.m, b: middle.b, into: out.pointer(T.self), add: add, row)
            return out
        }
        let r: Tensor
        switch compute {
        case .float32: r = run(Float.self, add: +) { p, n in ct_vsum_f32(p, Int64(n)) }
        case .float64:
            r = run(Double.self, add: +) { p, n in
                var a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0
                var i = 0
                while i + 4 <= n { a0 += p[i]; a1 += p[i + 1]; a2 += p[i + 2]; a3 += p[i + 3]; i += 4 }
                while i < n { a0 += p[i]; i += 1 }
                return (a0 + a1) + (a2 + a3)
            }
        case .int64: r = run(Int64.self, add: &+) { p, n in (0..<n).reduce(0) { $0 &+ p[$1] } }
        case .int32: r = run(Int32.self, add: &+) { p, n in (0..<n).reduce(0) { $0 &+ p[$1] } }
        case .uint8: r = run(UInt8.self, add: &+) { p, n in (0..<n).reduce(0) { $0 &+ p[$1] } }
        default: preconditionFailure("sum: unsupported dtype \(compute)")
        }
        return r
    }

    /// out[j] = Σ over i < a of row(x + (i·m + j)·b, b): the sum of a contiguous [a, m, b] tensor over its first and last
    /// dims. Each chunk of the pool takes a range of j and, for every i, walks its rows in memory order.
    private static func sumMiddle<T: NumericElement>(_ x: UnsafePointer<T>, a: Int, m: Int, b: Int, into out: UnsafeMutablePointer<T>,
                                              add: (T, T) -> T, _ row: (UnsafePointer<T>, Int) -> T) {
        parallelFor(m, grain: max(1, elementwiseGrain / max(a * b, 1))) { lo, hi in
            for j in lo..<hi { out[j] = a > 0 ? row(x + j * b, b) : T.zeroValue }
            for i in 1..<max(a, 1) {
                for j in lo..<hi { out[j] = add(out[j], row(x + (i * m + j) * b, b)) }
            }
        }
    }

    /// (values, int64 indices) of max/min over the one reduced dim of `plan`; NaN wins like PyTorch.
    static func extremum(_ which: Extremum, _ src: Tensor, _ plan: ReductionPlan) -> (Tensor, Tensor) {
        let compute = src.dtype
        func run<T: NumericElement>(_: T.Type) -> (Tensor, Tensor) {
            let idx = rows(src, plan, .int64, T.self, Int64.self) { p, n in
                var best = 0
                for i in 1..<max(n, 1) {
                    let v = p[i], b = p[best]
                    if v != v && b == b { best = i; break }     // NaN
                    if which == .max ? v > b : v < b { best = i }
                }
                return Int64(best)
            }
            let vals = rows(src, plan, compute, T.self, T.self) { p, n in
                var b = p[0]
                for i in 1..<max(n, 1) {
                    let v = p[i]
                    if v != v { return v }
                    if which == .max ? v > b : v < b { b = v }
                }
                return b
            }
            return (vals, idx)
        }
        switch compute {
        case .float32: return run(Float.self)
        case .float64: return run(Double.self)
        case .int64: return run(Int64.self)
        case .int32: return run(Int32.self)
        default: return run(UInt8.self)
        }
    }

    /// Product over the reduced dims, in `src`'s dtype (int64 for the narrower integer types).
    static func prod(_ src: Tensor, _ plan: ReductionPlan) -> Tensor {
        func run<T: NumericElement>(_: T.Type) -> Tensor {
            rows(src, plan, src.dtype, T.self, T.self) { p, n in (0..<n).reduce(T.oneValue) { $0 * p[$1] } }
        }
        switch src.dtype {
        case .float32: return run(Float.self)
        case .float64: return run(Double.self)
        case .int32: return run(Int32.self)
        default: return rows(src, plan, .int64, Int64.self, Int64.self) { p, n in (0..<n).reduce(1) { $0 &* p[$1] } }
        }
    }

    /// `all` (every element true) or `any` over the reduced dims of a bool tensor.
    static func allOrAny(_ x: Tensor, _ plan: ReductionPlan, all: Bool) -> Tensor {
        rows(x, plan, .bool, Bool.self, Bool.self) { p, n in
            if all { for i in 0..<n where !p[i] { return false }; return true }
            for i in 0..<n where p[i] { return true }
            return false
        }
    }

    /// An inclusive scan (cumsum or cumprod) of `x` along dim `d`, computed in float64, converted to `outType`.
    static func scan(_ x: Tensor, _ d: Int, _ outType: DType, _ op: CUDAReduceOp) -> Tensor {
        let f: (Double, Double) -> Double = op == .cumsum ? (+) : (*)
        let moved = x.movedim(d, -1).to(.float64).contiguous()
        let n = moved.shape.last!, rows = moved.numel / Swift.max(n, 1)
        let work = Tensor(uninitializedShape: moved.shape, dtype: .float64)
        let s = moved.pointer(Double.self), o = work.pointer(Double.self)
        for r in 0..<rows {
            var acc = 0.0
            for i in 0..<n {
                acc = i == 0 ? s[r * n] : f(acc, s[r * n + i])
                o[r * n + i] = acc
            }
        }
        return torch.noGrad { work.movedim(-1, d).to(outType).contiguous() }
    }
}
