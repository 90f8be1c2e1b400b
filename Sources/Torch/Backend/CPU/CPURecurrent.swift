import CTorchKernels

/// The fused recurrent-layer kernels behind `nn.RNN`, `nn.LSTM` and `nn.GRU` (docs/performance.md,
/// "Convolution, pooling, RNN"): one layer in one direction over a whole sequence is one forward
/// call and one autograd node.
///
/// Forward: the input projection of every time step is one GEMM (`x · W_ihᵀ` for all T·B rows,
/// biases folded in); each step adds `h · W_hhᵀ` with a GEMM straight into that step's slice of
/// the gate buffer and runs one fused gate pass (vectorized sigmoid/tanh for float32) that leaves
/// behind what backward needs. Backward through time walks the steps once, producing the gate
/// gradients of every step (one `dG · W_hh` GEMM per step for the recurrent path); the input,
/// `W_ih`, `W_hh` and bias gradients are then single GEMMs / sums over all T·B rows.
///
/// `rnnLayerForward` (NN/RecurrentLayer.swift) keeps the autograd node and picks the device once: CPU layers come
/// here, CUDA layers are composed from device ops.
enum CPURecurrent {
    /// What `forward` keeps for `backward`: `gates` (LSTM activated i,f,g,o; GRU r,z,n; RNN unused after the
    /// step), LSTM's cell states and tanh(cell) per step, GRU's W_hn·h + b_hn per step.
    struct Saved {
        let gates: Tensor
        let cells: Tensor?
        let tanhCells: Tensor?
        let hn: Tensor?
    }

    /// One layer in one direction over a whole sequence: `x` `[T, B, in]`, `h0` (and for LSTM `c0`) `[B, H]` and
    /// the parameters, all contiguous and of one dtype (float32 or float64). Returns `output [T, B, H]` (step t
    /// at index t in either direction), the final hidden state `[B, H]`, for LSTM the final cell state, and what
    /// `backward` needs.
    static func forward(_ mode: RNNMode, x: Tensor, h0 hInit: Tensor, c0 cInit: Tensor?, _ params: RNNLayerParams,
                        reverse: Bool) -> (output: Tensor, hN: Tensor, cN: Tensor?, saved: Saved) {
        let steps = x.shape[0], batch = x.shape[1], inSize = x.shape[2]
        let hidden = hInit.shape[1], gsize = mode.gateCount * hidden
        let dtype = x.dtype
        let wIh = params.wIh, wHh = params.wHh, bIh = params.bIh, bHh = params.bHh

        // Buffers kept for backward. `gates`: LSTM activated i,f,g,o; GRU r,z,n; RNN unused after the step.
        let gates = Tensor(uninitializedShape: [steps, batch, gsize], dtype: dtype)
        let output = Tensor(uninitializedShape: [steps, batch, hidden], dtype: dtype)
        let hN = Tensor(uninitializedShape: [batch, hidden], dtype: dtype)
        let cN: Tensor? = mode == .lstm ? Tensor(uninitializedShape: [batch, hidden], dtype: dtype) : nil
        // LSTM: cell states and tanh(cell) per step; GRU: W_hn·h + b_hn per step.
        let cells: Tensor? = mode == .lstm ? Tensor(uninitializedShape: [steps, batch, hidden], dtype: dtype) : nil
        let tanhCells: Tensor? = mode == .lstm ? Tensor(uninitializedShape: [steps, batch, hidden], dtype: dtype) : nil
        let hnBuf: Tensor? = mode == .gru ? Tensor(uninitializedShape: [steps, batch, hidden], dtype: dtype) : nil

        func run<T: RNNScalar>(_: T.Type) {
            let xp = UnsafePointer(x.pointer(T.self))
            let wih = UnsafePointer(wIh.pointer(T.self))
            let gp = gates.pointer(T.self), op = output.pointer(T.self)
            let bh = batch * hidden, bg = batch * gsize
            let h2 = 2 * hidden, h3 = 3 * hidden

            // W_hhᵀ [H, G] with contiguous rows, read in place by every step's GEMM.
            let whhT = UnsafeMutablePointer<T>.allocate(capacity: hidden * gsize)
            defer { whhT.deallocate() }
            transpose(UnsafePointer(wHh.pointer(T.self)), rows: gsize, cols: hidden, into: whhT)
            // Biases added in each step's gate pass: b_ih + b_hh (GRU: b_hh's n block is scaled by r,
            // so it stays apart as `bhn`).
            let bias: UnsafeMutablePointer<T>? = (bIh != nil || bHh != nil) ? .allocate(capacity: gsize) : nil
            defer { bias?.deallocate() }
            if let bias {
                bias.initialize(repeating: 0, count: gsize)
                if let bIh { let p = bIh.pointer(T.self); for j in 0..<gsize { bias[j] += p[j] } }
                if let bHh {
                    let p = bHh.pointer(T.self)
                    for j in 0..<(mode == .gru ? h2 : gsize) { bias[j] += p[j] }
                }
            }
            let bhn: UnsafePointer<T>? = mode == .gru ? bHh.map { UnsafePointer($0.pointer(T.self) + h2) } : nil

            // Input projection of all steps at once: gates = x · W_ihᵀ.
            rawGemm(steps * batch, gsize, inSize, xp, inSize, 1, wih, 1, inSize, beta: 0, gp, gsize)

            let hg: UnsafeMutablePointer<T>? = mode == .gru ? .allocate(capacity: bg) : nil
            defer { hg?.deallocate() }

            var hPrev = UnsafePointer(hInit.pointer(T.self))
            var cPrev = cInit.map { UnsafePointer($0.pointer(T.self)) }
            for s in 0..<steps {
                let t = reverse ? steps - 1 - s : s
                let gt = gp + t * bg, ht = op + t * bh
                switch mode {
                case .lstm:
                    stepGemm(batch, gsize, hidden, hPrev, hidden, whhT, beta: 1, gt, gsize)
                    let ct = cells!.pointer(T.self) + t * bh, tct = tanhCells!.pointer(T.self) + t * bh
                    let cp = cPrev!
                    if T.self == Float.self {
                        ct_lstm_cell_fwd_f32(Int64(batch), Int64(hidden), f32(gt), bias.map { UnsafePointer(f32($0)) },
                                             UnsafePointer(f32(cp)), f32(ct), f32(tct), f32(ht))
                    } else {
                        for b in 0..<batch {
                            let row = gt + b * gsize, c = ct + b * hidden, cpb = cp + b * hidden
                            if let bias {
                                func add<L: RNNLane>(_: L.Type, _ j: Int) where L.Element == T { (L.load(row + j) + L.load(bias + j)).store(row + j) }
                                lanes(gsize, { add(SIMD8<T>.self, $0) }, { add(T.self, $0) })
                            }
                            vSigmoid(row, row, h2)
                            vTanh(row + h2, row + h2, hidden)
                            vSigmoid(row + h3, row + h3, hidden)
                            func cell<L: RNNLane>(_: L.Type, _ j: Int) where L.Element == T {
                                (L.load(row + hidden + j) * L.load(cpb + j) + L.load(row + j) * L.load(row + h2 + j)).store(c + j)
                            }
                            lanes(hidden, { cell(SIMD8<T>.self, $0) }, { cell(T.self, $0) })
                        }
                        vTanh(ct, tct, bh)
                        for b in 0..<batch {
                            let row = gt + b * gsize, tc = tct + b * hidden, h = ht + b * hidden
                            func out<L: RNNLane>(_: L.Type, _ j: Int) where L.Element == T { (L.load(row + h3 + j) * L.load(tc + j)).store(h + j) }
                            lanes(hidden, { out(SIMD8<T>.self, $0) }, { out(T.self, $0) })
                        }
                    }
                    cPrev = UnsafePointer(ct)
                case .gru:
                    let hgp = hg!
                    stepGemm(batch, gsize, hidden, hPrev, hidden, whhT, beta: 0, hgp, gsize)
                    let hnt = hnBuf!.pointer(T.self) + t * bh
                    for b in 0..<batch {
                        let row = gt + b * gsize, hrow = hgp + b * gsize, hn = hnt + b * hidden
                        let hp = hPrev + b * hidden, h = ht + b * hidden
                        func rz<L: RNNLane>(_: L.Type, _ j: Int) where L.Element == T {
                            var v = L.load(row + j) + L.load(hrow + j)
                            if let bias { v = v + L.load(bias + j) }
                            v.store(row + j)
                        }
                        lanes(h2, { rz(SIMD8<T>.self, $0) }, { rz(T.self, $0) })
                        vSigmoid(row, row, h2)
                        let n = row + h2
                        func pre<L: RNNLane>(_: L.Type, _ j: Int) where L.Element == T {
                            var hv = L.load(hrow + h2 + j)
                            if let bhn { hv = hv + L.load(bhn + j) }
                            hv.store(hn + j)
                            var v = L.load(n + j) + L.load(row + j) * hv
                            if let bias { v = v + L.load(bias + h2 + j) }
                            v.store(n + j)
                        }
                        lanes(hidden, { pre(SIMD8<T>.self, $0) }, { pre(T.self, $0) })
                        vTanh(n, n, hidden)
                        func out<L: RNNLane>(_: L.Type, _ j: Int) where L.Element == T {
                            let nv = L.load(n + j)
                            (nv + L.load(row + hidden + j) * (L.load(hp + j) - nv)).store(h + j)
                        }
                        lanes(hidden, { out(SIMD8<T>.self, $0) }, { out(T.self, $0) })
                    }
                case .rnnTanh, .rnnRelu:
                    stepGemm(batch, gsize, hidden, hPrev, hidden, whhT, beta: 1, gt, gsize)
                    let relu = mode == .rnnRelu
                    // G = H: the step's gates are one contiguous [B, H] block.
                    if bias != nil || relu {
                        func act<L: RNNLane>(_: L.Type, _ i: Int) where L.Element == T {
                            var v = L.load(gt + i)
                            if let bias { v = v + L.load(bias + i % hidden) }
                            (relu ? v.rnnRelu : v).store(relu ? ht + i : gt + i)
                        }
                        if hidden % 8 == 0 {
                            lanes(bh, { act(SIMD8<T>.self, $0) }, { act(T.self, $0) })
                        } else {
                            for i in 0..<bh { act(T.self, i) }
                        }
                    }
                    if !relu { vTanh(gt, ht, bh) }
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
        return (output, hN, cN, Saved(gates: gates, cells: cells, tanhCells: tanhCells, hn: hnBuf))
    }

    /// The gradients for `[input, h0, (c0), W_ih, W_hh, (b_ih, b_hh)]` (nil where `needs` is false) of `forward`'s
    /// layer, from the gradients of its output, final hidden state and (LSTM) final cell state.
    static func backward(_ mode: RNNMode, reverse: Bool, x: Tensor, h0: Tensor, c0: Tensor?, wIh: Tensor, wHh: Tensor,
                         hasBias: Bool, output: Tensor, saved: Saved, gOut: Tensor?, gHN: Tensor?, gCN: Tensor?,
                         needs: [Bool]) -> [Tensor?] {
        let gates = saved.gates, cells = saved.cells, tanhCells = saved.tanhCells, hn = saved.hn
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
        // Bias gradients are column sums of the gate gradients, accumulated step by step while
        // each step's block is still in cache (LSTM/RNN: b_ih and b_hh get the same values).
        let gBih: Tensor? = needBih || needBhh ? torch.zeros([gsize], dtype: dtype) : nil
        let gBhhGRU: Tensor? = mode == .gru && needBhh ? torch.zeros([gsize], dtype: dtype) : nil
        let dc: Tensor? = mode == .lstm ? (gCN.map { $0.to(dtype).contiguousCopy() } ?? torch.zeros([batch, hidden], dtype: dtype)) : nil

        func run<T: RNNScalar>(_: T.Type) {
            let gp = UnsafePointer(gates.pointer(T.self)), op = UnsafePointer(output.pointer(T.self))
            let dgp = dG.pointer(T.self), dhgp = dHG.pointer(T.self)
            let dhp = dh.pointer(T.self)
            let whh = UnsafePointer(wHh.pointer(T.self))
            let h0p = UnsafePointer(h0.pointer(T.self))
            let goP = gOutD.map { UnsafePointer($0.pointer(T.self)) }
            let goS0 = gOutD?.strides[0] ?? 0, goS1 = gOutD?.strides[1] ?? 0
            let h2 = 2 * hidden, h3 = 3 * hidden
            for s in 0..<steps {
                // Backward visits the steps in the opposite order of the forward pass.
                let t = reverse ? s : steps - 1 - s
                let first = reverse ? t == steps - 1 : t == 0
                let tPrev = reverse ? t + 1 : t - 1
                let hPrev = first ? h0p : op + tPrev * bh
                if let goP {
                    for b in 0..<batch {
                        let g = goP + t * goS0 + b * goS1, d = dhp + b * hidden
                        func add<L: RNNLane>(_: L.Type, _ j: Int) where L.Element == T { (L.load(d + j) + L.load(g + j)).store(d + j) }
                        lanes(hidden, { add(SIMD8<T>.self, $0) }, { add(T.self, $0) })
                    }
                }
                let gt = gp + t * bg, dgt = dgp + t * bg
                switch mode {
                case .lstm:
                    let dcp = dc!.pointer(T.self)
                    let cPrev = first ? UnsafePointer(c0!.pointer(T.self)) : UnsafePointer(cells!.pointer(T.self)) + tPrev * bh
                    let tct = UnsafePointer(tanhCells!.pointer(T.self)) + t * bh
                    if T.self == Float.self {
                        ct_lstm_cell_bwd_f32(Int64(batch), Int64(hidden), UnsafePointer(f32(gt)), UnsafePointer(f32(tct)),
                                             UnsafePointer(f32(cPrev)), UnsafePointer(f32(dhp)), f32(dcp), f32(dgt),
                                             gBih.map { f32($0.pointer(T.self)) })
                    } else {
                        for b in 0..<batch {
                            let row = gt + b * gsize, drow = dgt + b * gsize
                            let dhb = dhp + b * hidden, dcb = dcp + b * hidden
                            let tc = tct + b * hidden, cp = cPrev + b * hidden
                            func cell<L: RNNLane>(_: L.Type, _ j: Int) where L.Element == T {
                                let one = L.rnnOne
                                let i = L.load(row + j), f = L.load(row + hidden + j)
                                let g = L.load(row + h2 + j), o = L.load(row + h3 + j)
                                let dhv = L.load(dhb + j), tcv = L.load(tc + j)
                                let dcv = L.load(dcb + j) + dhv * o * (one - tcv * tcv)
                                (dcv * g * i * (one - i)).store(drow + j)
                                (dcv * L.load(cp + j) * f * (one - f)).store(drow + hidden + j)
                                (dcv * i * (one - g * g)).store(drow + h2 + j)
                                (dhv * tcv * o * (one - o)).store(drow + h3 + j)
                                (dcv * f).store(dcb + j)
                            }
                            lanes(hidden, { cell(SIMD8<T>.self, $0) }, { cell(T.self, $0) })
                        }
                        if let gBih { addColumnSums(UnsafePointer(dgt), rows: batch, cols: gsize, into: gBih.pointer(T.self)) }
                    }
                    stepGemm(batch, hidden, gsize, UnsafePointer(dgt), gsize, whh, beta: 0, dhp, hidden)
                case .gru:
                    let hnt = UnsafePointer(hn!.pointer(T.self)) + t * bh
                    let dhgt = dhgp + t * bg
                    for b in 0..<batch {
                        let row = gt + b * gsize, drow = dgt + b * gsize, dhrow = dhgt + b * gsize
                        let dhb = dhp + b * hidden, hp = hPrev + b * hidden, hnb = hnt + b * hidden
                        func cell<L: RNNLane>(_: L.Type, _ j: Int) where L.Element == T {
                            let one = L.rnnOne
                            let r = L.load(row + j), z = L.load(row + hidden + j), n = L.load(row + h2 + j)
                            let dhv = L.load(dhb + j)
                            let dpn = dhv * (one - z) * (one - n * n)
                            let dpr = dpn * L.load(hnb + j) * r * (one - r)
                            let dpz = dhv * (L.load(hp + j) - n) * z * (one - z)
                            dpr.store(drow + j); dpz.store(drow + hidden + j); dpn.store(drow + h2 + j)
                            dpr.store(dhrow + j); dpz.store(dhrow + hidden + j); (dpn * r).store(dhrow + h2 + j)
                            (dhv * z).store(dhb + j)
                        }
                        lanes(hidden, { cell(SIMD8<T>.self, $0) }, { cell(T.self, $0) })
                    }
                    if let gBih { addColumnSums(UnsafePointer(dgt), rows: batch, cols: gsize, into: gBih.pointer(T.self)) }
                    if let gBhhGRU { addColumnSums(UnsafePointer(dhgt), rows: batch, cols: gsize, into: gBhhGRU.pointer(T.self)) }
                    stepGemm(batch, hidden, gsize, UnsafePointer(dhgt), gsize, whh, beta: 1, dhp, hidden)
                case .rnnTanh, .rnnRelu:
                    let ht = op + t * bh
                    let relu = mode == .rnnRelu
                    func act<L: RNNLane>(_: L.Type, _ j: Int) where L.Element == T {
                        let h = L.load(ht + j), d = L.load(dhp + j)
                        (relu ? d * h.rnnPositive : d * (L.rnnOne - h * h)).store(dgt + j)
                    }
                    lanes(bh, { act(SIMD8<T>.self, $0) }, { act(T.self, $0) })
                    if let gBih { addColumnSums(UnsafePointer(dgt), rows: batch, cols: gsize, into: gBih.pointer(T.self)) }
                    stepGemm(batch, hidden, gsize, UnsafePointer(dgt), gsize, whh, beta: 0, dhp, hidden)
                }
            }
        }
        switch dtype {
        case .float32: run(Float.self)
        case .float64: run(Double.self)
        default: preconditionFailure("\(mode.name) backward: unsupported dtype \(dtype)")
        }

        func run2<T: RNNScalar>(_: T.Type) -> [Tensor?] {
            let rows = steps * batch
            let dgp = UnsafePointer(dG.pointer(T.self)), dhgp = UnsafePointer(dHG.pointer(T.self))
            var gx: Tensor?, gWih: Tensor?, gWhh: Tensor?
            if needX {
                let g = Tensor(uninitializedShape: [steps, batch, inSize], dtype: dtype)
                rawGemm(rows, inSize, gsize, dgp, gsize, 1, UnsafePointer(wIh.pointer(T.self)), inSize, 1,
                        beta: 0, g.pointer(T.self), inSize)
                gx = g
            }
            if needWih {
                // dGᵀ · x, straight into W_ih's contiguous layout (a transposed view would be copied
                // again by gradient accumulation).
                let g = Tensor(uninitializedShape: [gsize, inSize], dtype: dtype)
                rawGemm(gsize, inSize, rows, dgp, 1, gsize, UnsafePointer(x.pointer(T.self)), inSize, 1,
                        beta: 0, g.pointer(T.self), inSize)
                gWih = g
            }
            if needWhh {
                // Σ_t h_{t−1}ᵀ · dHG_t: the previous hidden states are the output shifted by one step
                // (one GEMM over (T−1)·B rows) plus h0 for the first step.
                // dHGᵀ · h_prev, in W_hh's contiguous layout.
                let g = Tensor(uninitializedShape: [gsize, hidden], dtype: dtype)
                let gpw = g.pointer(T.self), op = UnsafePointer(output.pointer(T.self))
                let firstT = reverse ? steps - 1 : 0
                let shifted = (steps - 1) * batch
                if shifted > 0 {
                    // forward: out[0..<T−1] with dHG[1..<T]; reverse: out[1..<T] with dHG[0..<T−1].
                    let hs = reverse ? op + batch * hidden : op
                    let ds = reverse ? dhgp : dhgp + batch * gsize
                    rawGemm(gsize, hidden, shifted, ds, 1, gsize, hs, hidden, 1, beta: 0, gpw, hidden)
                }
                rawGemm(gsize, hidden, batch, dhgp + firstT * batch * gsize, 1, gsize,
                        UnsafePointer(h0.pointer(T.self)), hidden, 1, beta: shifted > 0 ? 1 : 0, gpw, hidden)
                gWhh = g
            }
            let gBhh: Tensor? = !needBhh ? nil : (mode == .gru ? gBhhGRU : (needBih ? gBih!.contiguousCopy() : gBih))
            var out: [Tensor?] = [gx, needH0 ? dh : nil]
            if hasC { out.append(needC0 ? dc : nil) }
            out += [gWih, gWhh]
            if hasBias { out += [needBih ? gBih : nil, gBhh] }
            return out
        }
        switch dtype {
        case .float32: return run2(Float.self)
        default: return run2(Double.self)
        }
    }
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

/// Scalars and SIMD vectors alike, so each elementwise formula is written once and serves both the
/// vector body and the tail of a loop.
protocol RNNLane {
    associatedtype Element
    static func + (a: Self, b: Self) -> Self
    static func - (a: Self, b: Self) -> Self
    static func * (a: Self, b: Self) -> Self
    static var rnnOne: Self { get }
    static var rnnZero: Self { get }
    /// `max(self, 0)`, NaN kept.
    var rnnRelu: Self { get }
    /// 1 where self > 0, else 0.
    var rnnPositive: Self { get }
    static func load(_ p: UnsafePointer<Element>) -> Self
    func store(_ p: UnsafeMutablePointer<Element>)
}

extension Float: RNNLane {
    static var rnnOne: Float { 1 }
    static var rnnZero: Float { 0 }
    var rnnRelu: Float { self < 0 ? 0 : self }
    var rnnPositive: Float { self > 0 ? 1 : 0 }
    @inline(__always) static func load(_ p: UnsafePointer<Float>) -> Float { p.pointee }
    @inline(__always) func store(_ p: UnsafeMutablePointer<Float>) { p.pointee = self }
}

extension Double: RNNLane {
    static var rnnOne: Double { 1 }
    static var rnnZero: Double { 0 }
    var rnnRelu: Double { self < 0 ? 0 : self }
    var rnnPositive: Double { self > 0 ? 1 : 0 }
    @inline(__always) static func load(_ p: UnsafePointer<Double>) -> Double { p.pointee }
    @inline(__always) func store(_ p: UnsafeMutablePointer<Double>) { p.pointee = self }
}

extension SIMD8: RNNLane where Scalar: BinaryFloatingPoint {
    typealias Element = Scalar
    static var rnnOne: SIMD8 { SIMD8(repeating: 1) }
    static var rnnZero: SIMD8 { SIMD8(repeating: 0) }
    var rnnRelu: SIMD8 { replacing(with: 0, where: self .< 0) }
    var rnnPositive: SIMD8 { SIMD8(repeating: 0).replacing(with: 1, where: self .> 0) }
    @inline(__always) static func load(_ p: UnsafePointer<Scalar>) -> SIMD8 {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD8.self)
    }
    @inline(__always) func store(_ p: UnsafeMutablePointer<Scalar>) {
        UnsafeMutableRawPointer(p).storeBytes(of: self, as: SIMD8.self)
    }
}

/// The element types of the recurrent kernels (float32, float64): scalar lanes of their own SIMD8.
protocol RNNScalar: FloatElement, SIMDScalar, RNNLane where Element == Self {}
extension Float: RNNScalar {}
extension Double: RNNScalar {}

/// Runs `vector(j)` for j = 0, 8, 16, … while 8 lanes fit, then `scalar(j)` for the tail.
@inline(__always)
private func lanes(_ n: Int, _ vector: (Int) -> Void, _ scalar: (Int) -> Void) {
    var j = 0
    while j + 8 <= n { vector(j); j += 8 }
    while j < n { scalar(j); j += 1 }
}

/// out[j] += Σ_r p[r·cols + j] over a contiguous rows×cols block.
private func addColumnSums<T: RNNScalar>(_ p: UnsafePointer<T>, rows: Int, cols: Int, into out: UnsafeMutablePointer<T>) {
    for r in 0..<rows {
        let row = p + r * cols
        func add<L: RNNLane>(_: L.Type, _ j: Int) where L.Element == T { (L.load(out + j) + L.load(row + j)).store(out + j) }
        lanes(cols, { add(SIMD8<T>.self, $0) }, { add(T.self, $0) })
    }
}

/// dst[cols × rows] = srcᵀ for a contiguous rows×cols source, in cache-sized blocks.
private func transpose<T>(_ src: UnsafePointer<T>, rows: Int, cols: Int, into dst: UnsafeMutablePointer<T>) {
    let tile = 16
    for r0 in stride(from: 0, to: rows, by: tile) {
        for c0 in stride(from: 0, to: cols, by: tile) {
            for r in r0..<Swift.min(r0 + tile, rows) {
                for c in c0..<Swift.min(c0 + tile, cols) { dst[c * rows + r] = src[r * cols + c] }
            }
        }
    }
}

/// Rows per GEMM call for the per-step products: up to 2·MR rows ct_sgemm reads a row-contiguous B
/// in place instead of packing it, and packing the whole recurrent weight at every step cost more
/// than the product's own loads (MR = 14 with AVX-512, 6 otherwise).
private let stepGemmRows = ct_isa_level() == 2 ? 28 : 12

/// C[m×n] (row stride rsc) = A[m×k] (row stride rsa) · B[k×n] (contiguous) + beta·C, in row blocks
/// of `stepGemmRows`.
@inline(__always)
private func stepGemm<T: FloatElement>(_ m: Int, _ n: Int, _ k: Int, _ a: UnsafePointer<T>, _ rsa: Int,
                                       _ b: UnsafePointer<T>, beta: T, _ c: UnsafeMutablePointer<T>, _ rsc: Int) {
    var r = 0
    while r < m {
        let rows = Swift.min(stepGemmRows, m - r)
        rawGemm(rows, n, k, a + r * rsa, rsa, 1, b, n, 1, beta: beta, c + r * rsc, rsc)
        r += rows
    }
}

/// The same memory as `Float` (call sites have checked `T.self == Float.self`).
@inline(__always)
private func f32<T>(_ p: UnsafeMutablePointer<T>) -> UnsafeMutablePointer<Float> {
    UnsafeMutableRawPointer(p).assumingMemoryBound(to: Float.self)
}
@inline(__always)
private func f32<T>(_ p: UnsafePointer<T>) -> UnsafeMutablePointer<Float> {
    UnsafeMutableRawPointer(mutating: p).assumingMemoryBound(to: Float.self)
}
