import CTorchKernels

/// The fused recurrent-layer kernels behind `nn.RNN`, `nn.LSTM` and `nn.GRU` (docs/PERFORMANCE.md,
/// "Convolution, pooling, RNN"): one layer in one direction over a whole sequence is one forward
/// call and one autograd node.
///
/// Forward: the input projection of every time step is one GEMM (`x · W_ihᵀ` for all T·B rows,
/// biases folded in); each step adds `h · W_hhᵀ` with a GEMM straight into that step's slice of
/// the gate buffer and runs one fused gate pass (vectorized sigmoid/tanh for float32) that leaves
/// behind what backward needs. Backward through time walks the steps once, producing the gate
/// gradients of every step (one `dG · W_hh` GEMM per step for the recurrent path); the input,
/// `W_ih`, `W_hh` and bias gradients are then single GEMMs / sums over all T·B rows.

/// The recurrence of a layer (PyTorch's `mode`).
enum RNNMode: Equatable {
    case rnnTanh, rnnRelu, lstm, gru

    /// Gate blocks per hidden unit: LSTM i,f,g,o; GRU r,z,n; plain RNN one.
    var gateCount: Int {
        switch self {
        case .lstm: return 4
        case .gru: return 3
        case .rnnTanh, .rnnRelu: return 1
        }
    }

    /// PyTorch's mode string (`RNNBase.mode`).
    var name: String {
        switch self {
        case .lstm: return "LSTM"
        case .gru: return "GRU"
        case .rnnTanh: return "RNN_TANH"
        case .rnnRelu: return "RNN_RELU"
        }
    }

    /// The grad_fn PyTorch's CPU path shows on a one-layer, one-direction output: LSTM runs as
    /// mkldnn's fused layer, GRU and plain RNN stack per-step outputs.
    var nodeName: String { self == .lstm ? "MkldnnRnnLayerBackward0" : "StackBackward0" }
}

/// One layer-direction's parameters: `W_ih [G·H, in]`, `W_hh [G·H, H]`, biases `[G·H]`.
struct RNNLayerParams {
    let wIh: Tensor
    let wHh: Tensor
    let bIh: Tensor?
    let bHh: Tensor?
}

// MARK: - Raw helpers (float32 / float64)

/// C[m×n] (row stride rsc) = A·B + beta·C with A(i,k) at a[i·rsa + k·csa], B(k,j) at b[k·rsb + j·csb].
@inline(__always)
private func rawGemm<T: FloatElement>(_ m: Int, _ n: Int, _ k: Int,
                                      _ a: UnsafePointer<T>, _ rsa: Int, _ csa: Int,
                                      _ b: UnsafePointer<T>, _ rsb: Int, _ csb: Int,
                                      beta: T, _ c: UnsafeMutablePointer<T>, _ rsc: Int) {
    if m == 0 || n == 0 { return }
    if T.self == Float.self {
        ct_sgemm(Int64(m), Int64(n), Int64(k), 1,
                 UnsafeRawPointer(a).assumingMemoryBound(to: Float.self), Int64(rsa), Int64(csa),
                 UnsafeRawPointer(b).assumingMemoryBound(to: Float.self), Int64(rsb), Int64(csb),
                 Float(beta), UnsafeMutableRawPointer(c).assumingMemoryBound(to: Float.self), Int64(rsc))
    } else {
        ct_dgemm(Int64(m), Int64(n), Int64(k), 1,
                 UnsafeRawPointer(a).assumingMemoryBound(to: Double.self), Int64(rsa), Int64(csa),
                 UnsafeRawPointer(b).assumingMemoryBound(to: Double.self), Int64(rsb), Int64(csb),
                 Double(beta), UnsafeMutableRawPointer(c).assumingMemoryBound(to: Double.self), Int64(rsc))
    }
}

/// y = sigmoid(x) over n contiguous values (y may alias x).
@inline(__always)
private func vSigmoid<T: FloatElement>(_ x: UnsafePointer<T>, _ y: UnsafeMutablePointer<T>, _ n: Int) {
    if T.self == Float.self {
        ct_vsigmoid_f32(UnsafeRawPointer(x).assumingMemoryBound(to: Float.self),
                        UnsafeMutableRawPointer(y).assumingMemoryBound(to: Float.self), Int64(n))
    } else {
        for i in 0..<n { y[i] = 1 / (1 + T.exp(-x[i])) }
    }
}

/// y = tanh(x) over n contiguous values (y may alias x).
@inline(__always)
private func vTanh<T: FloatElement>(_ x: UnsafePointer<T>, _ y: UnsafeMutablePointer<T>, _ n: Int) {
    if T.self == Float.self {
        ct_vtanh_f32(UnsafeRawPointer(x).assumingMemoryBound(to: Float.self),
                     UnsafeMutableRawPointer(y).assumingMemoryBound(to: Float.self), Int64(n))
    } else {
        for i in 0..<n { y[i] = T.tanh(x[i]) }
    }
}

/// Column sums of a contiguous rows×cols matrix into `out` (cols values).
private func columnSums<T: FloatElement>(_ p: UnsafePointer<T>, rows: Int, cols: Int, into out: UnsafeMutablePointer<T>) {
    out.initialize(repeating: 0, count: cols)
    for r in 0..<rows {
        let row = p + r * cols
        for j in 0..<cols { out[j] += row[j] }
    }
}

/// A contiguous tensor with `t`'s values (itself when already contiguous), not recorded.
@inline(__always)
private func dense(_ t: Tensor) -> Tensor { t.isContiguous ? t : t.contiguousCopy() }

// MARK: - Layer forward

/// Runs one recurrent layer in one direction over a whole sequence.
///
/// - Parameters:
///   - input: `[T, B, in]` (any strides).
///   - h0: `[B, H]`; c0: `[B, H]` for LSTM, else nil.
///   - reverse: run from the last step to the first (the `_reverse` direction).
/// - Returns: `output [T, B, H]` (contiguous, step t at index t in either direction), the final
///   hidden state `[B, H]` and, for LSTM, the final cell state.
/// When an input requires grad, all outputs share one node (`RNNMode.nodeName`) whose backward is
/// the hand-written backward through time (first-order only).
func rnnLayerForward(_ mode: RNNMode, input: Tensor, h0: Tensor, c0: Tensor?, _ params: RNNLayerParams,
                     reverse: Bool) -> (output: Tensor, hN: Tensor, cN: Tensor?) {
    let steps = input.shape[0], batch = input.shape[1], inSize = input.shape[2]
    let hidden = h0.shape[1], gsize = mode.gateCount * hidden
    let dtype = input.dtype
    let x = dense(input)
    let wIh = dense(params.wIh), wHh = dense(params.wHh)
    let bIh = params.bIh.map(dense), bHh = params.bHh.map(dense)
    let hInit = dense(h0), cInit = c0.map(dense)

    // Buffers kept for backward. `gates`: LSTM activated i,f,g,o; GRU r,z,n; RNN unused after the step.
    let gates = Tensor(uninitializedShape: [steps, batch, gsize], dtype: dtype)
    let output = Tensor(uninitializedShape: [steps, batch, hidden], dtype: dtype)
    let hN = Tensor(uninitializedShape: [batch, hidden], dtype: dtype)
    let cN: Tensor? = mode == .lstm ? Tensor(uninitializedShape: [batch, hidden], dtype: dtype) : nil
    // LSTM: cell states and tanh(cell) per step; GRU: W_hn·h + b_hn per step.
    let cells: Tensor? = mode == .lstm ? Tensor(uninitializedShape: [steps, batch, hidden], dtype: dtype) : nil
    let tanhCells: Tensor? = mode == .lstm ? Tensor(uninitializedShape: [steps, batch, hidden], dtype: dtype) : nil
    let hnBuf: Tensor? = mode == .gru ? Tensor(uninitializedShape: [steps, batch, hidden], dtype: dtype) : nil

    func run<T: FloatElement>(_: T.Type) {
        let xp = UnsafePointer(x.pointer(T.self))
        let wih = UnsafePointer(wIh.pointer(T.self)), whh = UnsafePointer(wHh.pointer(T.self))
        let gp = gates.pointer(T.self), op = output.pointer(T.self)
        let bh = batch * hidden, bg = batch * gsize

        // Input projection for all steps: gates = bias + x · W_ihᵀ (GRU: b_hn stays out, it is
        // scaled by r).
        var beta: T = 0
        if bIh != nil || bHh != nil {
            let combined = UnsafeMutablePointer<T>.allocate(capacity: gsize)
            defer { combined.deallocate() }
            combined.initialize(repeating: 0, count: gsize)
            if let bIh { let p = bIh.pointer(T.self); for j in 0..<gsize { combined[j] += p[j] } }
            if let bHh {
                let p = bHh.pointer(T.self)
                for j in 0..<(mode == .gru ? 2 * hidden : gsize) { combined[j] += p[j] }
            }
            for r in 0..<(steps * batch) { (gp + r * gsize).update(from: combined, count: gsize) }
            beta = 1
        }
        rawGemm(steps * batch, gsize, inSize, xp, inSize, 1, wih, 1, inSize, beta: beta, gp, gsize)

        let hg: UnsafeMutablePointer<T>? = mode == .gru ? .allocate(capacity: bg) : nil
        defer { hg?.deallocate() }
        let bhn: UnsafePointer<T>? = mode == .gru ? bHh.map { UnsafePointer($0.pointer(T.self) + 2 * hidden) } : nil

        var hPrev = UnsafePointer(hInit.pointer(T.self))
        var cPrev = cInit.map { UnsafePointer($0.pointer(T.self)) }
        for s in 0..<steps {
            let t = reverse ? steps - 1 - s : s
            let gt = gp + t * bg, ht = op + t * bh
            switch mode {
            case .lstm:
                rawGemm(batch, gsize, hidden, hPrev, hidden, 1, whh, 1, hidden, beta: 1, gt, gsize)
                let ct = cells!.pointer(T.self) + t * bh, tct = tanhCells!.pointer(T.self) + t * bh
                let cp = cPrev!
                for b in 0..<batch {
                    let row = gt + b * gsize
                    vSigmoid(row, row, 2 * hidden)
                    vTanh(row + 2 * hidden, row + 2 * hidden, hidden)
                    vSigmoid(row + 3 * hidden, row + 3 * hidden, hidden)
                    let c = ct + b * hidden, cpb = cp + b * hidden
                    for j in 0..<hidden { c[j] = row[hidden + j] * cpb[j] + row[j] * row[2 * hidden + j] }
                }
                vTanh(ct, tct, bh)
                for b in 0..<batch {
                    let o = gt + b * gsize + 3 * hidden, tc = tct + b * hidden, h = ht + b * hidden
                    for j in 0..<hidden { h[j] = o[j] * tc[j] }
                }
                cPrev = UnsafePointer(ct)
            case .gru:
                let hgp = hg!
                rawGemm(batch, gsize, hidden, hPrev, hidden, 1, whh, 1, hidden, beta: 0, hgp, gsize)
                let hnt = hnBuf!.pointer(T.self) + t * bh
                for b in 0..<batch {
                    let row = gt + b * gsize, hrow = hgp + b * gsize, hn = hnt + b * hidden
                    for j in 0..<(2 * hidden) { row[j] += hrow[j] }
                    vSigmoid(row, row, 2 * hidden)
                    let n = row + 2 * hidden
                    if let bhn {
                        for j in 0..<hidden { hn[j] = hrow[2 * hidden + j] + bhn[j] }
                    } else {
                        for j in 0..<hidden { hn[j] = hrow[2 * hidden + j] }
                    }
                    for j in 0..<hidden { n[j] += row[j] * hn[j] }
                    vTanh(n, n, hidden)
                    let z = row + hidden, hp = hPrev + b * hidden, h = ht + b * hidden
                    for j in 0..<hidden { h[j] = n[j] + z[j] * (hp[j] - n[j]) }
                }
            case .rnnTanh:
                rawGemm(batch, gsize, hidden, hPrev, hidden, 1, whh, 1, hidden, beta: 1, gt, gsize)
                vTanh(gt, ht, bh)
            case .rnnRelu:
                rawGemm(batch, gsize, hidden, hPrev, hidden, 1, whh, 1, hidden, beta: 1, gt, gsize)
                for i in 0..<bh { let v = gt[i]; ht[i] = v < 0 ? 0 : v }
            }
            hPrev = UnsafePointer(ht)
        }
        hN.pointer(T.self).update(from: hPrev, count: bh)
        if let cN, let cPrev { cN.pointer(T.self).update(from: cPrev, count: bh) }
    }
    switch dtype {
    case .float32: run(Float.self)
    case .float64: run(Double.self)
    default: preconditionFailure("\(mode.name): expected a float32 or float64 input (got \(dtype))")
    }

    var inputs: [Tensor] = [input, h0]
    if let c0 { inputs.append(c0) }
    inputs += [params.wIh, params.wHh]
    if let b = params.bIh { inputs.append(b) }
    if let b = params.bHh { inputs.append(b) }
    if anyNeedsGrad(inputs) {
        let needs = inputs.map { $0._requiresGrad }
        let ctx = RNNLayerBackward(mode: mode, reverse: reverse, x: SavedTensor(x), h0: SavedTensor(hInit),
                                   c0: cInit.map { SavedTensor($0) },
                                   wIh: SavedTensor(wIh), wHh: SavedTensor(wHh), hasBias: params.bIh != nil,
                                   gates: gates, output: SavedTensor(output: output), cells: cells,
                                   tanhCells: tanhCells, hn: hnBuf)
        var outs = [output, hN]
        if let cN { outs.append(cN) }
        recordMulti(mode.nodeName, outs, inputs: inputs) { node, grads in
            ctx.backward(node, gOut: grads[0], gHN: grads[1], gCN: grads.count > 2 ? grads[2] : nil, needs: needs)
        }
    }
    return (output, hN, cN)
}

// MARK: - Layer backward

/// What one layer-direction's backward through time needs.
private struct RNNLayerBackward {
    let mode: RNNMode
    let reverse: Bool
    let x: SavedTensor
    let h0: SavedTensor
    let c0: SavedTensor?
    let wIh: SavedTensor
    let wHh: SavedTensor
    let hasBias: Bool
    let gates: Tensor
    let output: SavedTensor
    let cells: Tensor?
    let tanhCells: Tensor?
    let hn: Tensor?

    /// Gradients for `[input, h0, (c0), W_ih, W_hh, (b_ih, b_hh)]`, nil where `needs` is false.
    func backward(_ node: Node, gOut: Tensor?, gHN: Tensor?, gCN: Tensor?, needs: [Bool]) -> [Tensor?] {
        let x = x.unpack(node), h0 = h0.unpack(node), c0 = c0?.unpack(node)
        let wIh = wIh.unpack(node), wHh = wHh.unpack(node), output = output.unpack(node)
        let steps = x.shape[0], batch = x.shape[1], inSize = x.shape[2]
        let hidden = h0.shape[1], gsize = mode.gateCount * hidden
        let dtype = x.dtype
        let bh = batch * hidden, bg = batch * gsize
        let hasC = c0 != nil
        // Input order: input, h0, (c0), W_ih, W_hh, (b_ih, b_hh).
        let iW = hasC ? 3 : 2
        let needX = needs[0], needH0 = needs[1], needC0 = hasC && needs[2]
        let needWih = needs[iW], needWhh = needs[iW + 1]
        let needBih = hasBias && needs[iW + 2], needBhh = hasBias && needs[iW + 3]

        let gOutD: Tensor? = gOut.map { $0.dtype == dtype && $0.strides.last == 1 ? $0 : $0.to(dtype).contiguousCopy() }
        let dG = Tensor(uninitializedShape: [steps, batch, gsize], dtype: dtype)
        // GRU: the gradient reaching W_hh·h + b_hh differs from the input-side one in the n block.
        let dHG: Tensor = mode == .gru ? Tensor(uninitializedShape: [steps, batch, gsize], dtype: dtype) : dG
        let dh = gHN.map { $0.to(dtype).contiguousCopy() } ?? torch.zeros([batch, hidden], dtype: dtype)
        let dc: Tensor? = mode == .lstm ? (gCN.map { $0.to(dtype).contiguousCopy() } ?? torch.zeros([batch, hidden], dtype: dtype)) : nil

        func run<T: FloatElement>(_: T.Type) {
            let gp = UnsafePointer(gates.pointer(T.self)), op = UnsafePointer(output.pointer(T.self))
            let dgp = dG.pointer(T.self), dhgp = dHG.pointer(T.self)
            let dhp = dh.pointer(T.self)
            let whh = UnsafePointer(wHh.pointer(T.self))
            let h0p = UnsafePointer(h0.pointer(T.self))
            let goP = gOutD.map { UnsafePointer($0.pointer(T.self)) }
            let goS0 = gOutD?.strides[0] ?? 0, goS1 = gOutD?.strides[1] ?? 0
            for s in 0..<steps {
                // Backward visits the steps in the opposite order of the forward pass.
                let t = reverse ? s : steps - 1 - s
                let first = reverse ? t == steps - 1 : t == 0
                let tPrev = reverse ? t + 1 : t - 1
                let hPrev = first ? h0p : op + tPrev * bh
                if let goP {
                    for b in 0..<batch {
                        let g = goP + t * goS0 + b * goS1, d = dhp + b * hidden
                        for j in 0..<hidden { d[j] += g[j] }
                    }
                }
                let gt = gp + t * bg, dgt = dgp + t * bg
                switch mode {
                case .lstm:
                    let dcp = dc!.pointer(T.self)
                    let cPrev = first ? UnsafePointer(c0!.pointer(T.self)) : UnsafePointer(cells!.pointer(T.self)) + tPrev * bh
                    let tct = UnsafePointer(tanhCells!.pointer(T.self)) + t * bh
                    for b in 0..<batch {
                        let row = gt + b * gsize, drow = dgt + b * gsize
                        let dhb = dhp + b * hidden, dcb = dcp + b * hidden
                        let tc = tct + b * hidden, cp = cPrev + b * hidden
                        for j in 0..<hidden {
                            let i = row[j], f = row[hidden + j], g = row[2 * hidden + j], o = row[3 * hidden + j]
                            let dhv = dhb[j], tcv = tc[j]
                            let dcv = dcb[j] + dhv * o * (1 - tcv * tcv)
                            drow[j] = dcv * g * i * (1 - i)
                            drow[hidden + j] = dcv * cp[j] * f * (1 - f)
                            drow[2 * hidden + j] = dcv * i * (1 - g * g)
                            drow[3 * hidden + j] = dhv * tcv * o * (1 - o)
                            dcb[j] = dcv * f
                        }
                    }
                    rawGemm(batch, hidden, gsize, UnsafePointer(dgt), gsize, 1, whh, hidden, 1, beta: 0, dhp, hidden)
                case .gru:
                    let hnt = UnsafePointer(hn!.pointer(T.self)) + t * bh
                    let dhgt = dhgp + t * bg
                    for b in 0..<batch {
                        let row = gt + b * gsize, drow = dgt + b * gsize, dhrow = dhgt + b * gsize
                        let dhb = dhp + b * hidden, hp = hPrev + b * hidden, hnb = hnt + b * hidden
                        for j in 0..<hidden {
                            let r = row[j], z = row[hidden + j], n = row[2 * hidden + j]
                            let dhv = dhb[j]
                            let dpn = dhv * (1 - z) * (1 - n * n)
                            let dpr = dpn * hnb[j] * r * (1 - r)
                            let dpz = dhv * (hp[j] - n) * z * (1 - z)
                            drow[j] = dpr; drow[hidden + j] = dpz; drow[2 * hidden + j] = dpn
                            dhrow[j] = dpr; dhrow[hidden + j] = dpz; dhrow[2 * hidden + j] = dpn * r
                            dhb[j] = dhv * z
                        }
                    }
                    rawGemm(batch, hidden, gsize, UnsafePointer(dhgt), gsize, 1, whh, hidden, 1, beta: 1, dhp, hidden)
                case .rnnTanh, .rnnRelu:
                    let ht = op + t * bh
                    if mode == .rnnTanh {
                        for i in 0..<bh { let h = ht[i]; dgt[i] = dhp[i] * (1 - h * h) }
                    } else {
                        for i in 0..<bh { dgt[i] = ht[i] > 0 ? dhp[i] : 0 }
                    }
                    rawGemm(batch, hidden, gsize, UnsafePointer(dgt), gsize, 1, whh, hidden, 1, beta: 0, dhp, hidden)
                }
            }
        }
        switch dtype {
        case .float32: run(Float.self)
        case .float64: run(Double.self)
        default: preconditionFailure("\(mode.name) backward: unsupported dtype \(dtype)")
        }

        func run2<T: FloatElement>(_: T.Type) -> [Tensor?] {
            let rows = steps * batch
            let dgp = UnsafePointer(dG.pointer(T.self)), dhgp = UnsafePointer(dHG.pointer(T.self))
            var gx: Tensor?, gWih: Tensor?, gWhh: Tensor?, gBih: Tensor?, gBhh: Tensor?
            if needX {
                let g = Tensor(uninitializedShape: [steps, batch, inSize], dtype: dtype)
                rawGemm(rows, inSize, gsize, dgp, gsize, 1, UnsafePointer(wIh.pointer(T.self)), inSize, 1,
                        beta: 0, g.pointer(T.self), inSize)
                gx = g
            }
            if needWih {
                // xᵀ · dG (packs better than dGᵀ · x), returned transposed.
                let g = Tensor(uninitializedShape: [inSize, gsize], dtype: dtype)
                rawGemm(inSize, gsize, rows, UnsafePointer(x.pointer(T.self)), 1, inSize, dgp, gsize, 1,
                        beta: 0, g.pointer(T.self), gsize)
                gWih = g.t()
            }
            if needWhh {
                // Σ_t h_{t−1}ᵀ · dHG_t: the previous hidden states are the output shifted by one step
                // (one GEMM over (T−1)·B rows) plus h0 for the first step.
                let g = Tensor(uninitializedShape: [hidden, gsize], dtype: dtype)
                let gpw = g.pointer(T.self), op = UnsafePointer(output.pointer(T.self))
                let firstT = reverse ? steps - 1 : 0
                let shifted = (steps - 1) * batch
                if shifted > 0 {
                    // forward: out[0..<T−1] with dHG[1..<T]; reverse: out[1..<T] with dHG[0..<T−1].
                    let hs = reverse ? op + batch * hidden : op
                    let ds = reverse ? dhgp : dhgp + batch * gsize
                    rawGemm(hidden, gsize, shifted, hs, 1, hidden, ds, gsize, 1, beta: 0, gpw, gsize)
                }
                rawGemm(hidden, gsize, batch, UnsafePointer(h0.pointer(T.self)), 1, hidden,
                        dhgp + firstT * batch * gsize, gsize, 1, beta: shifted > 0 ? 1 : 0, gpw, gsize)
                gWhh = g.t()
            }
            if needBih {
                let g = Tensor(uninitializedShape: [gsize], dtype: dtype)
                columnSums(dgp, rows: rows, cols: gsize, into: g.pointer(T.self))
                gBih = g
            }
            if needBhh {
                if mode != .gru, let gBih {
                    gBhh = gBih.contiguousCopy()
                } else {
                    let g = Tensor(uninitializedShape: [gsize], dtype: dtype)
                    columnSums(dhgp, rows: rows, cols: gsize, into: g.pointer(T.self))
                    gBhh = g
                }
            }
            var out: [Tensor?] = [gx, needH0 ? dh : nil]
            if hasC { out.append(needC0 ? dc : nil) }
            out += [gWih, gWhh]
            if hasBias { out += [gBih, gBhh] }
            return out
        }
        switch dtype {
        case .float32: return run2(Float.self)
        default: return run2(Double.self)
        }
    }
}
