/// ONNX's RNN, GRU and LSTM (gate orders i-o-f-c for LSTM, z-r-h for GRU; forward, reverse or bidirectional;
/// sequence_lens, initial states, peepholes, GRU's linear_before_reset; layout 0 or 1), computed in double
/// precision step by step.
extension ONNXOps {
    static var recurrentOps: [String: ONNXKernel] {
        var t: [String: ONNXKernel] = [:]
        t["RNN"] = { node, ins in try recurrent(node, ins, gates: 1) }
        t["GRU"] = { node, ins in try recurrent(node, ins, gates: 3) }
        t["LSTM"] = { node, ins in try recurrent(node, ins, gates: 4) }
        t["LinearAttention"] = { node, ins in try linearAttention(node, ins) }
        return t
    }

    /// LinearAttention: a [dk × dv] state per key/value head, updated each step by the rule (`linear`: S += k⊗v;
    /// `gated`: S = S·exp(decay) + k⊗v; `delta`: S += k⊗β(v − Sᵀk); `gated_delta`: decay, then the delta
    /// update), read by each query head of the group (o = scale · qᵀS). Computed in double precision.
    static func linearAttention(_ node: ONNXNode, _ ins: ONNXInputs) throws -> [Tensor] {
        let q = try ins.x(0), k = try ins.x(1), v = try ins.x(2)
        let past = ins.opt(3), decay = ins.opt(4), beta = ins.opt(5)
        guard let hq = try node.int("q_num_heads"), let hkv = try node.int("kv_num_heads"), hq > 0, hkv > 0, hq % hkv == 0 else {
            throw ONNXError.invalidAttribute(field: node.attrField("q_num_heads"),
                                             reason: "q_num_heads and kv_num_heads are required, positive, q a multiple of kv")
        }
        let rule = try node.string("update_rule", "gated_delta")
        guard ["linear", "gated", "delta", "gated_delta"].contains(rule) else {
            throw ONNXError.invalidAttribute(field: node.attrField("update_rule"), reason: "unknown rule '\(rule)'")
        }
        guard q.dim == 3, k.dim == 3, v.dim == 3, q.shape[2] % hq == 0, v.shape[2] % hkv == 0 else {
            throw node.fail("query, key, value must be [B, T, heads·dim], got \(q.shape), \(k.shape), \(v.shape)")
        }
        let B = q.shape[0], T = q.shape[1], dk = q.shape[2] / hq, dv = v.shape[2] / hkv, G = hq / hkv
        guard k.shape == [B, T, hkv * dk], v.shape[0] == B, v.shape[1] == T else {
            throw node.fail("key must be [\(B), \(T), \(hkv * dk)] and value [\(B), \(T), ·], got \(k.shape), \(v.shape)")
        }
        let gated = rule.hasPrefix("gated"), delta = rule.hasSuffix("delta")
        guard !gated || decay != nil else { throw node.fail("update rule '\(rule)' needs decay (input 4)") }
        guard !delta || beta != nil else { throw node.fail("update rule '\(rule)' needs beta (input 5)") }
        if let decay, decay.shape != [B, T, hkv * dk] && decay.shape != [B, T, hkv] {
            throw node.fail("decay must be [\(B), \(T), \(hkv * dk)] or [\(B), \(T), \(hkv)], got \(decay.shape)")
        }
        if let beta, beta.shape != [B, T, hkv] && beta.shape != [B, T, 1] {
            throw node.fail("beta must be [\(B), \(T), \(hkv)] or [\(B), \(T), 1], got \(beta.shape)")
        }
        if let past, past.shape != [B, hkv, dk, dv] { throw node.fail("past_state must be [\(B), \(hkv), \(dk), \(dv)], got \(past.shape)") }
        let scale = try node.float("scale") ?? 1 / Double(dk).squareRoot()
        let Q = q.toArray(as: Double.self), K = k.toArray(as: Double.self), V = v.toArray(as: Double.self)
        let D = decay?.toArray(as: Double.self) ?? [], Bt = beta?.toArray(as: Double.self) ?? []
        let perKeyDecay = decay?.shape[2] == hkv * dk, perHeadBeta = beta?.shape[2] == hkv
        var S = past?.toArray(as: Double.self) ?? [Double](repeating: 0, count: B * hkv * dk * dv)
        var out = [Double](repeating: 0, count: B * T * hq * dv)
        var retrieved = [Double](repeating: 0, count: dv)
        for b in 0..<B {
            for t in 0..<T {
                let bt = b * T + t
                for h in 0..<hkv {
                    let s0 = (b * hkv + h) * dk * dv
                    let kk = bt * hkv * dk + h * dk, vv = bt * hkv * dv + h * dv
                    if gated {
                        for i in 0..<dk {
                            let g = exp(perKeyDecay ? D[bt * hkv * dk + h * dk + i] : D[bt * hkv + h])
                            for j in 0..<dv { S[s0 + i * dv + j] *= g }
                        }
                    }
                    if delta {
                        let be = perHeadBeta ? Bt[bt * hkv + h] : Bt[bt]
                        for j in 0..<dv {
                            var r = 0.0
                            for i in 0..<dk { r += S[s0 + i * dv + j] * K[kk + i] }
                            retrieved[j] = be * (V[vv + j] - r)
                        }
                        for i in 0..<dk { for j in 0..<dv { S[s0 + i * dv + j] += K[kk + i] * retrieved[j] } }
                    } else {
                        for i in 0..<dk { for j in 0..<dv { S[s0 + i * dv + j] += K[kk + i] * V[vv + j] } }
                    }
                    for g in 0..<G {
                        let qh = h * G + g, qq = bt * hq * dk + qh * dk
                        for j in 0..<dv {
                            var o = 0.0
                            for i in 0..<dk { o += Q[qq + i] * S[s0 + i * dv + j] }
                            out[bt * hq * dv + qh * dv + j] = scale * o
                        }
                    }
                }
            }
        }
        return [Tensor(out, shape: [B, T, hq * dv]).to(q.dtype), Tensor(S, shape: [B, hkv, dk, dv]).to(q.dtype)]
    }

    static func activation(_ name: String, _ alpha: Double?, _ beta: Double?, _ node: ONNXNode) throws -> (Double) -> Double {
        switch name.lowercased() {
        case "sigmoid": return { 1 / (1 + exp(-$0)) }
        case "tanh": return { tanh($0) }
        case "relu": return { Swift.max($0, 0) }
        case "affine": let a = alpha ?? 1, b = beta ?? 0; return { a * $0 + b }
        case "leakyrelu": let a = alpha ?? 0.01; return { $0 >= 0 ? $0 : a * $0 }
        case "thresholdedrelu": let a = alpha ?? 1; return { $0 > a ? $0 : 0 }
        case "scaledtanh": let a = alpha ?? 1, b = beta ?? 1; return { a * tanh(b * $0) }
        case "hardsigmoid": let a = alpha ?? 0.2, b = beta ?? 0.5; return { Swift.min(1, Swift.max(0, a * $0 + b)) }
        case "elu": let a = alpha ?? 1; return { $0 >= 0 ? $0 : a * (exp($0) - 1) }
        case "softsign": return { $0 / (1 + Swift.abs($0)) }
        case "softplus": return { log(1 + exp($0)) }
        default: throw ONNXError.invalidAttribute(field: node.attrField("activations"), reason: "unknown activation '\(name)'")
        }
    }

    static func recurrent(_ node: ONNXNode, _ ins: ONNXInputs, gates G: Int) throws -> [Tensor] {
        let x = try ins.x(0), w = try ins.x(1), r = try ins.x(2)
        let layout = try node.int("layout", 0)
        guard x.dim == 3 else { throw node.fail("X must be 3-D, got shape \(x.shape)") }
        let dirName = try node.string("direction", "forward")
        let dirs: [Bool]   // reverse?
        switch dirName {
        case "forward": dirs = [false]
        case "reverse": dirs = [true]
        case "bidirectional": dirs = [false, true]
        default: throw ONNXError.invalidAttribute(field: node.attrField("direction"), reason: "unknown direction '\(dirName)'")
        }
        let D = dirs.count
        let S = layout == 0 ? x.shape[0] : x.shape[1], Bt = layout == 0 ? x.shape[1] : x.shape[0], I = x.shape[2]
        guard w.dim == 3, w.shape[0] == D, w.shape[2] == I, w.shape[1] % G == 0 else {
            throw node.fail("W must be [\(D), \(G)·hidden, \(I)], got shape \(w.shape)")
        }
        let H = w.shape[1] / G
        if let hs = try node.int("hidden_size"), hs != H { throw node.fail("hidden_size \(hs) differs from W's \(H)") }
        guard r.shape == [D, G * H, H] else { throw node.fail("R must be [\(D), \(G * H), \(H)], got shape \(r.shape)") }
        if try node.int("input_forget", 0) != 0 || node.has("clip") {
            throw ONNXError.unsupportedOperator(op: "\(node.opType) (clip or input_forget)", domain: "", opset: node.opset, node: node.label)
        }
        let b = ins.opt(3), lens = try ins.ints(4), h0 = ins.opt(5)
        let c0 = G == 4 ? ins.opt(6) : nil, p = G == 4 ? ins.opt(7) : nil
        if let b, b.shape != [D, 2 * G * H] { throw node.fail("B must be [\(D), \(2 * G * H)], got shape \(b.shape)") }
        if let h0, h0.shape != (layout == 0 ? [D, Bt, H] : [Bt, D, H]) { throw node.fail("initial_h has shape \(h0.shape)") }
        if let c0, c0.shape != (layout == 0 ? [D, Bt, H] : [Bt, D, H]) { throw node.fail("initial_c has shape \(c0.shape)") }
        if let p, p.shape != [D, 3 * H] { throw node.fail("P must be [\(D), \(3 * H)], got shape \(p.shape)") }
        if let lens { guard lens.count == Bt, lens.allSatisfy({ $0 >= 0 && $0 <= S }) else { throw node.fail("sequence_lens must be \(Bt) lengths ≤ \(S)") } }
        let names = try node.strings("activations") ?? (G == 4 ? ["Sigmoid", "Tanh", "Tanh"] : G == 3 ? ["Sigmoid", "Tanh"] : ["Tanh"])
        let perDir = G == 4 ? 3 : G == 3 ? 2 : 1
        let alphas = try node.floats("activation_alpha") ?? [], betas = try node.floats("activation_beta") ?? []
        guard names.count == perDir * D || names.count == perDir else { throw node.fail("\(names.count) activations for \(D) direction(s)") }
        let acts = try names.enumerated().map { k, n in
            try activation(n, k < alphas.count ? alphas[k] : nil, k < betas.count ? betas[k] : nil, node)
        }
        let lbr = try node.int("linear_before_reset", 0) != 0

        let X = (layout == 0 ? x : x.transpose(0, 1)).toArray(as: Double.self)   // [S, B, I]
        let Wv = w.toArray(as: Double.self), Rv = r.toArray(as: Double.self)
        let Bv = b?.toArray(as: Double.self) ?? [Double](repeating: 0, count: D * 2 * G * H)
        let H0 = (h0.map { layout == 0 ? $0 : $0.transpose(0, 1) })?.toArray(as: Double.self) ?? [Double](repeating: 0, count: D * Bt * H)
        let C0 = (c0.map { layout == 0 ? $0 : $0.transpose(0, 1) })?.toArray(as: Double.self) ?? [Double](repeating: 0, count: D * Bt * H)
        let Pv = p?.toArray(as: Double.self) ?? [Double](repeating: 0, count: D * 3 * H)
        var Y = [Double](repeating: 0, count: S * D * Bt * H)   // [S, D, B, H]
        var Yh = [Double](repeating: 0, count: D * Bt * H), Yc = Yh

        for (d, reverse) in dirs.enumerated() {
            let a = names.count == perDir ? Array(acts[0..<perDir]) : Array(acts[(d * perDir)..<((d + 1) * perDir)])
            let f = a[0], g = a.count > 1 ? a[1] : a[0], hAct = a.count > 2 ? a[2] : a[0]
            for bi in 0..<Bt {
                var h = Array(H0[((d * Bt + bi) * H)..<((d * Bt + bi + 1) * H)])
                var c = Array(C0[((d * Bt + bi) * H)..<((d * Bt + bi + 1) * H)])
                let len = lens?[bi] ?? S
                for step in 0..<len {
                    let tt = reverse ? len - 1 - step : step
                    let xt = X[((tt * Bt + bi) * I)..<((tt * Bt + bi + 1) * I)]
                    // Gate pre-activations: x·Wᵀ + Wb and h·Rᵀ + Rb, per gate row.
                    var xw = [Double](repeating: 0, count: G * H), hr = xw
                    for row in 0..<(G * H) {
                        var s = Bv[d * 2 * G * H + row]
                        let wo = (d * G * H + row) * I
                        for (k, xv) in xt.enumerated() { s += Wv[wo + k] * xv }
                        xw[row] = s
                        var q = Bv[d * 2 * G * H + G * H + row]
                        let ro = (d * G * H + row) * H
                        for k in 0..<H { q += Rv[ro + k] * h[k] }
                        hr[row] = q
                    }
                    var hNew = h
                    switch G {
                    case 1:
                        for k in 0..<H { hNew[k] = f(xw[k] + hr[k]) }
                    case 3:
                        for k in 0..<H {
                            let z = f(xw[k] + hr[k]), rr = f(xw[H + k] + hr[H + k])
                            let hh: Double
                            if lbr {
                                hh = g(xw[2 * H + k] + rr * hr[2 * H + k])
                            } else {
                                // (r ⊙ h)·Rhᵀ + Rbh
                                var q = Bv[d * 2 * G * H + G * H + 2 * H + k]
                                let ro = (d * G * H + 2 * H + k) * H
                                for j in 0..<H {
                                    let rj = f(xw[H + j] + hr[H + j])
                                    q += Rv[ro + j] * rj * h[j]
                                }
                                hh = g(xw[2 * H + k] + q)
                            }
                            hNew[k] = (1 - z) * hh + z * h[k]
                        }
                    default:
                        var cNew = c
                        for k in 0..<H {
                            let pi = Pv[d * 3 * H + k], po = Pv[d * 3 * H + H + k], pf = Pv[d * 3 * H + 2 * H + k]
                            let i = f(xw[k] + hr[k] + pi * c[k])
                            let fg = f(xw[2 * H + k] + hr[2 * H + k] + pf * c[k])
                            let cc = g(xw[3 * H + k] + hr[3 * H + k])
                            cNew[k] = fg * c[k] + i * cc
                            let o = f(xw[H + k] + hr[H + k] + po * cNew[k])
                            hNew[k] = o * hAct(cNew[k])
                        }
                        c = cNew
                    }
                    h = hNew
                    for k in 0..<H { Y[((tt * D + d) * Bt + bi) * H + k] = h[k] }
                }
                for k in 0..<H { Yh[(d * Bt + bi) * H + k] = h[k]; Yc[(d * Bt + bi) * H + k] = c[k] }
            }
        }
        var y = Tensor(Y, shape: [S, D, Bt, H]).to(x.dtype)
        var yh = Tensor(Yh, shape: [D, Bt, H]).to(x.dtype), yc = Tensor(Yc, shape: [D, Bt, H]).to(x.dtype)
        if layout != 0 {
            y = y.permute([2, 0, 1, 3]).contiguous()
            yh = yh.transpose(0, 1).contiguous(); yc = yc.transpose(0, 1).contiguous()
        }
        return G == 4 ? [y, yh, yc] : [y, yh]
    }
}
