#if canImport(Glibc)
import Glibc
#endif

/// PyTorch's `lerp` for a scalar weight: `a + w * (b - a)` for w < 0.5, else `b - (b - a) * (1 - w)`.
@inline(__always) func lerp<T: FloatElement>(_ a: T, _ b: T, _ w: T) -> T {
    w < 0.5 ? a + w * (b - a) : b - (b - a) * (1 - w)
}

/// The scalars of one Adam update in float32.
struct AdamConstants {
    var w1: Float, beta2: Float, w2: Float, eps: Float, bc2Sqrt: Float, negStep: Float
}

/// Adam's update without weight decay, maximize or amsgrad on float32 elements `r`, eight lanes at a time: the
/// same arithmetic per element as the generic loop in `Adam.step` (PyTorch's lerp for exp_avg, then
/// exp_avg_sq, the bias-corrected denominator and the step).
func adamUpdateFloat(p: UnsafeMutableRawPointer, g: UnsafeMutableRawPointer, m: UnsafeMutableRawPointer,
                     v: UnsafeMutableRawPointer, _ r: Range<Int>, _ c: AdamConstants) {
    typealias V = SIMD8<Float>
    let lowWeight = c.w1 < 0.5, oneMinusW1 = 1 - c.w1
    @inline(__always) func update(_ gi: V, _ mo: V, _ vo: V, _ po: V) -> (m: V, v: V, p: V) {
        let mi = lowWeight ? mo + c.w1 * (gi - mo) : gi - (gi - mo) * oneMinusW1
        let vi = vo * c.beta2 + gi * gi * c.w2
        let denom = vi.squareRoot() / c.bc2Sqrt + c.eps
        return (mi, vi, po + (mi / denom) * c.negStep)
    }
    var i = r.lowerBound
    let stride = MemoryLayout<Float>.stride
    while i + 8 <= r.upperBound {
        let o = i * stride
        let u = update(g.loadUnaligned(fromByteOffset: o, as: V.self), m.loadUnaligned(fromByteOffset: o, as: V.self),
                       v.loadUnaligned(fromByteOffset: o, as: V.self), p.loadUnaligned(fromByteOffset: o, as: V.self))
        m.storeBytes(of: u.m, toByteOffset: o, as: V.self)
        v.storeBytes(of: u.v, toByteOffset: o, as: V.self)
        p.storeBytes(of: u.p, toByteOffset: o, as: V.self)
        i += 8
    }
    if i < r.upperBound {
        // The last < 8 elements in zero-padded lanes (a zero lane stays finite: 0 / (0 + eps)).
        let k = r.upperBound - i
        var gv = V(repeating: 0), mv = V(repeating: 0), vv = V(repeating: 0), pv = V(repeating: 0)
        for j in 0..<k {
            let o = (i + j) * stride
            gv[j] = g.load(fromByteOffset: o, as: Float.self); mv[j] = m.load(fromByteOffset: o, as: Float.self)
            vv[j] = v.load(fromByteOffset: o, as: Float.self); pv[j] = p.load(fromByteOffset: o, as: Float.self)
        }
        let u = update(gv, mv, vv, pv)
        for j in 0..<k {
            let o = (i + j) * stride
            m.storeBytes(of: u.m[j], toByteOffset: o, as: Float.self)
            v.storeBytes(of: u.v[j], toByteOffset: o, as: Float.self)
            p.storeBytes(of: u.p[j], toByteOffset: o, as: Float.self)
        }
    }
}

extension optim {
    /// Adam (and, with decoupled weight decay, AdamW) with PyTorch's exact update and `amsgrad`.
    ///
    /// ```swift
    /// let opt = optim.Adam(model.parameters(), lr: 1e-3)
    /// ```
    public class Adam: Optimizer {
        public init(_ params: [Tensor], lr: Double = 1e-3, betas: (Double, Double) = (0.9, 0.999), eps: Double = 1e-8,
                    weightDecay: Double = 0, amsgrad: Bool = false, maximize: Bool = false) {
            Adam.check(lr, betas, eps, weightDecay)
            super.init(params, defaults: Adam.defaults(lr, betas, eps, weightDecay, amsgrad, maximize, decoupled: false))
        }

        public init(groups: [ParamGroup], lr: Double = 1e-3, betas: (Double, Double) = (0.9, 0.999), eps: Double = 1e-8,
                    weightDecay: Double = 0, amsgrad: Bool = false, maximize: Bool = false) {
            super.init(groups: groups, defaults: Adam.defaults(lr, betas, eps, weightDecay, amsgrad, maximize, decoupled: false))
        }

        init(params: [Tensor], adamDefaults: [(key: String, value: StateValue)]) { super.init(params, defaults: adamDefaults) }
        init(groups: [ParamGroup], adamDefaults: [(key: String, value: StateValue)]) { super.init(groups: groups, defaults: adamDefaults) }

        static func check(_ lr: Double, _ betas: (Double, Double), _ eps: Double, _ wd: Double) {
            precondition(lr >= 0, "Invalid learning rate: \(lr)")
            precondition(eps >= 0, "Invalid epsilon value: \(eps)")
            precondition(betas.0 >= 0 && betas.0 < 1, "Invalid beta parameter at index 0: \(betas.0)")
            precondition(betas.1 >= 0 && betas.1 < 1, "Invalid beta parameter at index 1: \(betas.1)")
            precondition(wd >= 0, "Invalid weight_decay value: \(wd)")
        }

        static func defaults(_ lr: Double, _ betas: (Double, Double), _ eps: Double, _ wd: Double, _ amsgrad: Bool,
                             _ maximize: Bool, decoupled: Bool) -> [(key: String, value: StateValue)] {
            [("lr", .double(lr)), ("betas", .tuple([.double(betas.0), .double(betas.1)])), ("eps", .double(eps)),
             ("weight_decay", .double(wd)), ("amsgrad", .bool(amsgrad)), ("maximize", .bool(maximize)),
             ("foreach", .none), ("capturable", .bool(false)), ("differentiable", .bool(false)), ("fused", .none),
             ("decoupled_weight_decay", .bool(decoupled))]
        }

        public override func step() {
            forEachParameter { group, p, g, st, fused in
                let lr = group.lr, (beta1, beta2) = group.pair("betas"), eps = group.double("eps")
                let wd = group.double("weight_decay"), amsgrad = group.bool("amsgrad"), maximize = group.bool("maximize")
                let decoupled = group.bool("decoupled_weight_decay")
                let step = st.incrementStep()
                let expAvg = st.buffer("exp_avg") { torch.zerosLike(p) }
                let expAvgSq = st.buffer("exp_avg_sq") { torch.zerosLike(p) }
                let maxSq: Tensor? = amsgrad ? st.buffer("max_exp_avg_sq") { torch.zerosLike(p) } : nil
                let bc1 = 1 - Glibc.pow(beta1, step), bc2 = 1 - Glibc.pow(beta2, step)
                let stepSize = lr / bc1, bc2Sqrt = bc2.squareRoot()
                let n = p.numel
                if p.isCuda {
                    if CUDAOptimizer.canFuse([p, g, expAvg, expAvgSq, maxSq]) {
                        fused.adam(p: p, grad: g, expAvg: expAvg, expAvgSq: expAvgSq, maxExpAvgSq: maxSq,
                                           stepSize: stepSize, beta1: beta1, beta2: beta2, eps: eps, weightDecay: wd,
                                           bc2Sqrt: bc2Sqrt, lr: lr, maximize: maximize, decoupled: decoupled)
                        return
                    }
                    // Non-contiguous or half-precision tensors: the loop below as device ops.
                    var grad = maximize ? -g : g
                    if wd != 0 {
                        if decoupled { p.mul_(1 - lr * wd) } else { grad = grad + p * wd }
                    }
                    expAvg.add_((grad - expAvg) * (1 - beta1))
                    expAvgSq.mul_(beta2).add_(grad * grad * (1 - beta2))
                    var second = expAvgSq
                    if let maxSq { maxSq.copy_(maxSq.maximum(expAvgSq)); second = maxSq }
                    p.add_((expAvg / (second.sqrt() / bc2Sqrt + eps)) * -stepSize)
                    return
                }
                func kernel<T: FloatElement>(_: T.Type) {
                    let pp = p.pointer(T.self), gp = g.pointer(T.self)
                    let m = expAvg.pointer(T.self), v = expAvgSq.pointer(T.self), vmax = maxSq?.pointer(T.self)
                    let w1 = T(1 - beta1), tb2 = T(beta2), w2 = T(1 - beta2), teps = T(eps)
                    let twd = T(wd), decay = T(1 - lr * wd), tStep = T(stepSize), tbc2 = T(bc2Sqrt)
                    if !maximize && wd == 0 && vmax == nil, T.self == Float.self {
                        // The common case, 8 lanes at a time (the scalar loop below is not vectorised).
                        let f = { (x: T) in x as! Float }
                        let c = AdamConstants(w1: f(w1), beta2: f(tb2), w2: f(w2), eps: f(teps), bc2Sqrt: f(tbc2),
                                              negStep: -f(tStep))
                        fusedUpdate(n) { r in
                            adamUpdateFloat(p: UnsafeMutableRawPointer(pp), g: UnsafeMutableRawPointer(gp),
                                            m: UnsafeMutableRawPointer(m), v: UnsafeMutableRawPointer(v), r, c)
                        }
                        return
                    }
                    fusedUpdate(n) { r in
                        for i in r {
                            var grad = maximize ? -gp[i] : gp[i]
                            if wd != 0 {
                                if decoupled { pp[i] = pp[i] * decay } else { grad = grad + pp[i] * twd }
                            }
                            m[i] = lerp(m[i], grad, w1)
                            v[i] = v[i] * tb2 + grad * grad * w2
                            var second = v[i]
                            if let vmax { vmax[i] = Swift.max(vmax[i], v[i]); second = vmax[i] }
                            let denom = second.squareRoot() / tbc2 + teps
                            pp[i] = pp[i] + (m[i] / denom) * -tStep
                        }
                    }
                }
                if p.dtype == .float32 { kernel(Float.self) } else { kernel(Double.self) }
            }
        }
    }

    /// AdamW: Adam with decoupled weight decay (default 0.01).
    public final class AdamW: Adam {
        public override init(_ params: [Tensor], lr: Double = 1e-3, betas: (Double, Double) = (0.9, 0.999), eps: Double = 1e-8,
                    weightDecay: Double = 1e-2, amsgrad: Bool = false, maximize: Bool = false) {
            Adam.check(lr, betas, eps, weightDecay)
            super.init(params: params, adamDefaults: Adam.defaults(lr, betas, eps, weightDecay, amsgrad, maximize, decoupled: true))
        }

        public override init(groups: [ParamGroup], lr: Double = 1e-3, betas: (Double, Double) = (0.9, 0.999), eps: Double = 1e-8,
                    weightDecay: Double = 1e-2, amsgrad: Bool = false, maximize: Bool = false) {
            super.init(groups: groups, adamDefaults: Adam.defaults(lr, betas, eps, weightDecay, amsgrad, maximize, decoupled: true))
        }
    }
}
