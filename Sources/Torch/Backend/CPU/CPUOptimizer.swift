/// The optimizer updates on the CPU (twin of `CUDAOptimizer`): one fused pass per parameter over contiguous
/// memory, in parallel chunks. An update comes as the optimizer kernels take it (`OptimizerKernelOp`, which
/// documents each op's buffers, shared scalars `f`, per-tensor scalars `s` and flags), so each optimizer states
/// its rule once and `OptimizerUpdates` (Optim/Optimizer.swift) sends it here or to a multi-tensor launch.
/// The loops convert the same `f`/`s` values to the element type as the CUDA kernels do, operation for
/// operation, so both devices round alike.
enum CPUOptimizer {
    /// Updates `tensors[0]` (parameter, gradient and state buffers in `op`'s order, nil = absent; contiguous, of
    /// one dtype and size) by `op`, with `flags` (shared and per-tensor together) and the scalars `f` and `s`.
    static func update(_ op: OptimizerKernelOp, _ tensors: [Tensor?], flags: OptimizerKernelFlags, f: [Double], s: [Double]) {
        let p = tensors[0]!
        switch p.dtype {
        case .float32: update(Float.self, op, tensors, flags, f, s)
        case .float64: update(Double.self, op, tensors, flags, f, s)
        default: preconditionFailure("\(op.name): parameters must be float32 or float64 (got \(p.dtype))")
        }
    }

    private static func update<T: FloatElement>(_: T.Type, _ op: OptimizerKernelOp, _ tensors: [Tensor?],
                                                 _ flags: OptimizerKernelFlags, _ f: [Double], _ s: [Double]) {
        let n = tensors[0]!.numel
        let pp = tensors[0]!.pointer(T.self), gp = tensors[1]!.pointer(T.self)
        func buffer(_ k: Int) -> UnsafeMutablePointer<T>? { tensors.count > k ? tensors[k]?.pointer(T.self) : nil }
        let maximize = flags.contains(.maximize)
        switch op {
        case .sgd:
            sgd(n, pp, gp, buffer(2), lr: f[0], momentum: f[1], dampening: f[2], wd: f[3], nesterov: flags.contains(.nesterov),
                maximize: maximize, firstStep: flags.contains(.firstStep))
        case .adam:
            adam(n, pp, gp, buffer(2)!, buffer(3)!, buffer(4), beta1: f[1], beta2: f[2], eps: f[3], wd: f[4], decay: f[6],
                 stepSize: s[0], bc2Sqrt: s[1], maximize: maximize, decoupled: flags.contains(.decoupled))
        case .rmsprop:
            rmsprop(n, pp, gp, buffer(2)!, buffer(3), buffer(4), alpha: f[0], oneMinusAlpha: f[1], eps: f[2], wd: f[3],
                    momentum: f[4], lr: f[5], maximize: maximize)
        case .adagrad:
            let teps = T(f[0]), twd = T(f[1]), tclr = T(s[0]), wd = f[1]
            let sum = buffer(2)!
            fusedUpdate(n) { r in
                for i in r {
                    var grad = maximize ? -gp[i] : gp[i]
                    if wd != 0 { grad = grad + pp[i] * twd }
                    sum[i] = sum[i] + grad * grad
                    let std = sum[i].squareRoot() + teps
                    pp[i] = pp[i] + (grad / std) * -tclr
                }
            }
        case .adadelta:
            let sq = buffer(2)!, acc = buffer(3)!
            let trho = T(f[0]), w = T(f[1]), teps = T(f[2]), twd = T(f[3]), tlr = T(f[4]), wd = f[3]
            fusedUpdate(n) { r in
                for i in r {
                    var grad = maximize ? -gp[i] : gp[i]
                    if wd != 0 { grad = grad + pp[i] * twd }
                    sq[i] = sq[i] * trho + grad * grad * w
                    let std = (sq[i] + teps).squareRoot()
                    let delta = ((acc[i] + teps).squareRoot() / std) * grad
                    acc[i] = acc[i] * trho + delta * delta * w
                    pp[i] = pp[i] + delta * -tlr
                }
            }
        case .adamax:
            let m = buffer(2)!, u = buffer(3)!
            let w1 = T(f[0]), tb2 = T(f[1]), teps = T(f[2]), twd = T(f[3]), tclr = T(s[0]), wd = f[3]
            fusedUpdate(n) { r in
                for i in r {
                    var grad = maximize ? -gp[i] : gp[i]
                    if wd != 0 { grad = grad + pp[i] * twd }
                    m[i] = lerp(m[i], grad, w1)
                    let a = u[i] * tb2, b = Swift.abs(grad) + teps
                    u[i] = (a.isNaN || a > b) ? a : b
                    pp[i] = pp[i] + (m[i] / u[i]) * -tclr
                }
            }
        case .nadam:
            let m = buffer(2)!, v = buffer(3)!, decoupled = flags.contains(.decoupled)
            let w1 = T(f[0]), tb2 = T(f[1]), w2 = T(f[2]), teps = T(f[3]), twd = T(f[4]), wd = f[4]
            let decay = T(f[5]), tbc2 = T(s[0]), tc1 = T(s[1]), tc2 = T(s[2])
            fusedUpdate(n) { r in
                for i in r {
                    var grad = maximize ? -gp[i] : gp[i]
                    if wd != 0 { if decoupled { pp[i] = pp[i] * decay } else { grad = grad + pp[i] * twd } }
                    m[i] = lerp(m[i], grad, w1)
                    v[i] = v[i] * tb2 + grad * grad * w2
                    let denom = (v[i] / tbc2).squareRoot() + teps
                    pp[i] = pp[i] + (grad / denom) * tc1
                    pp[i] = pp[i] + (m[i] / denom) * tc2
                }
            }
        case .radam:
            let m = buffer(2)!, v = buffer(3)!, decoupled = flags.contains(.decoupled), rectified = flags.contains(.rectified)
            let w1 = T(f[0]), tb2 = T(f[1]), w2 = T(f[2]), teps = T(f[3]), twd = T(f[4]), wd = f[4]
            let decay = T(f[5]), tlr = T(f[6]), tbc1 = T(s[0]), tbc2s = T(s[1]), trect = T(s[2])
            fusedUpdate(n) { r in
                for i in r {
                    var grad = maximize ? -gp[i] : gp[i]
                    if wd != 0 { if decoupled { pp[i] = pp[i] * decay } else { grad = grad + pp[i] * twd } }
                    m[i] = lerp(m[i], grad, w1)
                    v[i] = v[i] * tb2 + grad * grad * w2
                    let corrected = m[i] / tbc1
                    if rectified {
                        let adaptive = tbc2s / (v[i].squareRoot() + teps)
                        pp[i] = pp[i] - corrected * tlr * adaptive * trect
                    } else {
                        pp[i] = pp[i] - corrected * tlr
                    }
                }
            }
        }
    }

    /// SGD with momentum buffer `bp` (momentum ≠ 0), dampening, Nesterov momentum, weight decay and maximize.
    private static func sgd<T: FloatElement>(_ n: Int, _ pp: UnsafeMutablePointer<T>, _ gp: UnsafeMutablePointer<T>,
                                              _ bp: UnsafeMutablePointer<T>?, lr: Double, momentum: Double, dampening: Double,
                                              wd: Double, nesterov: Bool, maximize: Bool, firstStep: Bool) {
        let tlr = T(lr), tm = T(momentum), td = T(1 - dampening), twd = T(wd)
        let plain = !maximize && wd == 0 && !nesterov
        if plain, let bp, !firstStep {
            // The common case as a branch-free loop the compiler vectorises (same arithmetic as below).
            fusedUpdate(n) { r in
                for i in r {
                    let b = bp[i] * tm + gp[i] * td
                    bp[i] = b
                    pp[i] = pp[i] + b * -tlr
                }
            }
            return
        }
        if plain && bp == nil {
            fusedUpdate(n) { r in
                for i in r { pp[i] = pp[i] + gp[i] * -tlr }
            }
            return
        }
        fusedUpdate(n) { r in
            for i in r {
                var d = maximize ? -gp[i] : gp[i]
                if wd != 0 { d = d + pp[i] * twd }
                if let bp {
                    let b = firstStep ? d : bp[i] * tm + d * td
                    bp[i] = b
                    d = nesterov ? d + b * tm : b
                }
                pp[i] = pp[i] + d * -tlr
            }
        }
    }

    /// Adam/AdamW (`decay` = 1 − lr · weight decay for the decoupled form), amsgrad with `vmax`.
    private static func adam<T: FloatElement>(_ n: Int, _ pp: UnsafeMutablePointer<T>, _ gp: UnsafeMutablePointer<T>,
                                               _ m: UnsafeMutablePointer<T>, _ v: UnsafeMutablePointer<T>,
                                               _ vmax: UnsafeMutablePointer<T>?, beta1: Double, beta2: Double, eps: Double,
                                               wd: Double, decay: Double, stepSize: Double, bc2Sqrt: Double,
                                               maximize: Bool, decoupled: Bool) {
        let w1 = T(1 - beta1), tb2 = T(beta2), w2 = T(1 - beta2), teps = T(eps)
        let twd = T(wd), tdecay = T(decay), tStep = T(stepSize), tbc2 = T(bc2Sqrt)
        if !maximize && wd == 0 && vmax == nil, T.self == Float.self {
            // The common case, 8 lanes at a time (the scalar loop below is not vectorised).
            let f = { (x: T) in x as! Float }
            let c = AdamConstants(w1: f(w1), beta2: f(tb2), w2: f(w2), eps: f(teps), bc2Sqrt: f(tbc2), negStep: -f(tStep))
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
                    if decoupled { pp[i] = pp[i] * tdecay } else { grad = grad + pp[i] * twd }
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

    /// RMSprop with square average `sq`, momentum buffer `b` (momentum > 0) and gradient average `ga` (centered).
    private static func rmsprop<T: FloatElement>(_ n: Int, _ pp: UnsafeMutablePointer<T>, _ gp: UnsafeMutablePointer<T>,
                                                  _ sq: UnsafeMutablePointer<T>, _ b: UnsafeMutablePointer<T>?,
                                                  _ ga: UnsafeMutablePointer<T>?, alpha: Double, oneMinusAlpha: Double,
                                                  eps: Double, wd: Double, momentum: Double, lr: Double, maximize: Bool) {
        let ta = T(alpha), wa = T(oneMinusAlpha), teps = T(eps), twd = T(wd), tm = T(momentum), tlr = T(lr)
        fusedUpdate(n) { r in
            for i in r {
                var grad = maximize ? -gp[i] : gp[i]
                if wd != 0 { grad = grad + pp[i] * twd }
                sq[i] = sq[i] * ta + grad * grad * wa
                var avg: T
                if let ga {
                    ga[i] = lerp(ga[i], grad, wa)
                    avg = (sq[i] + ga[i] * ga[i] * -1).squareRoot()
                } else {
                    avg = sq[i].squareRoot()
                }
                avg = avg + teps
                if let b {
                    b[i] = b[i] * tm + grad / avg
                    pp[i] = pp[i] + b[i] * -tlr
                } else {
                    pp[i] = pp[i] + (grad / avg) * -tlr
                }
            }
        }
    }
}

/// Runs `body(range)` over `0..<n` in parallel chunks (the per-element optimizer updates).
@inline(__always)
private func fusedUpdate(_ n: Int, _ body: (Range<Int>) -> Void) {
    parallelFor(n, grain: elementwiseGrain) { lo, hi in body(lo..<hi) }
}

/// PyTorch's `lerp` for a scalar weight: `a + w * (b - a)` for w < 0.5, else `b - (b - a) * (1 - w)`.
@inline(__always) private func lerp<T: FloatElement>(_ a: T, _ b: T, _ w: T) -> T {
    w < 0.5 ? a + w * (b - a) : b - (b - a) * (1 - w)
}

/// The scalars of one Adam update in float32.
private struct AdamConstants {
    var w1: Float, beta2: Float, w2: Float, eps: Float, bc2Sqrt: Float, negStep: Float
}

/// Adam's update without weight decay, maximize or amsgrad on float32 elements `r`, eight lanes at a time: the
/// same arithmetic per element as the scalar loop of `CPUOptimizer.adam` (PyTorch's lerp for exp_avg, then
/// exp_avg_sq, the bias-corrected denominator and the step).
private func adamUpdateFloat(p: UnsafeMutableRawPointer, g: UnsafeMutableRawPointer, m: UnsafeMutableRawPointer,
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
