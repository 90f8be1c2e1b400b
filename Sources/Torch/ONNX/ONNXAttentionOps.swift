/// Attention (opset 23+): 3-D or 4-D Q/K/V, KV cache (past_key/past_value → present_*), grouped-query heads,
/// boolean or additive masks (padded to the KV length), bottom-right causal masking, sliding windows, softcap,
/// the four qk_matmul_output modes, and fully-masked rows giving 0, as ONNX's reference implementation; and
/// RotaryEmbedding (3-D or 4-D input, position_ids, interleaved pairs, a partial rotary dim).
extension ONNXOps {
    static var attention: [String: ONNXKernel] {
        var t: [String: ONNXKernel] = [:]
        t["Attention"] = { node, ins in
            var q = try ins.x(0), k = try ins.x(1), v = try ins.x(2)
            let mask = ins.opt(3), pastK = ins.opt(4), pastV = ins.opt(5)
            if ins.opt(6) != nil {
                throw ONNXError.unsupportedOperator(op: "Attention (nonpad_kv_seqlen)", domain: "", opset: node.opset, node: node.label)
            }
            guard q.isFloatingPoint, q.dim == k.dim, k.dim == v.dim, q.dim == 3 || q.dim == 4 else {
                throw node.fail("Q \(q.shape), K \(k.shape), V \(v.shape) must all be 3-D or 4-D floating point")
            }
            guard (pastK == nil) == (pastV == nil) else { throw node.fail("past_key and past_value go together") }
            let dtype = q.dtype
            let rank3 = q.dim == 3
            let qHeadsAttr = try node.int("q_num_heads"), kvHeadsAttr = try node.int("kv_num_heads")
            let b = q.shape[0]
            if rank3 {
                guard let qh = qHeadsAttr, let kvh = kvHeadsAttr, qh > 0, kvh > 0,
                      q.shape[2] % qh == 0, k.shape[2] % kvh == 0, v.shape[2] % kvh == 0 else {
                    throw node.fail("3-D inputs need q_num_heads and kv_num_heads dividing the hidden sizes")
                }
                q = q.reshape([b, q.shape[1], qh, q.shape[2] / qh]).permute([0, 2, 1, 3])
                k = k.reshape([b, k.shape[1], kvh, k.shape[2] / kvh]).permute([0, 2, 1, 3])
                v = v.reshape([b, v.shape[1], kvh, v.shape[2] / kvh]).permute([0, 2, 1, 3])
            }
            guard k.shape[0] == b, v.shape[0] == b, q.shape[3] == k.shape[3], k.shape[1] == v.shape[1], k.shape[2] == v.shape[2] else {
                throw node.fail("Q \(q.shape), K \(k.shape), V \(v.shape) disagree")
            }
            var scale = try node.float("scale") ?? 1 / Double(q.shape[3]).squareRoot()
            scale = scale.squareRoot()
            if let pk = pastK, let pv = pastV {
                guard pk.dim == 4, pv.dim == 4, Array(pk.shape[0..<2]) == Array(k.shape[0..<2]), pk.shape[3] == k.shape[3],
                      Array(pv.shape[0..<2]) == Array(v.shape[0..<2]), pv.shape[3] == v.shape[3] else {
                    throw node.fail("past_key \(pk.shape) / past_value \(pv.shape) do not fit K \(k.shape) / V \(v.shape)")
                }
                k = torch.cat([pk, k], dim: 2)
                v = torch.cat([pv, v], dim: 2)
            }
            let presentK = k.contiguous(), presentV = v.contiguous()
            let sq = q.shape[2], skv = k.shape[2]
            let device = q.device
            let negInf = -Double.infinity

            // The additive bias [.., sq, skv].
            var bias = torch.zeros([sq, skv], dtype: dtype, device: device)
            var m: Tensor? = mask
            if let mk = m {
                guard mk.dim >= 1 else { throw node.fail("attn_mask must have rank ≥ 1") }
                let pad = skv - mk.shape[mk.dim - 1]
                guard pad >= 0 else { throw node.fail("attn_mask \(mk.shape) is longer than the KV sequence \(skv)") }
                if pad > 0 {
                    var shape = mk.shape; shape[shape.count - 1] = pad
                    let filler = mk.dtype == .bool ? torch.zeros(shape, dtype: .bool, device: device)
                                                   : torch.full(shape, negInf, dtype: mk.dtype, device: device)
                    m = torch.cat([mk, filler], dim: mk.dim - 1)
                }
                if m!.dtype == .bool {
                    m = torch.where(m!, torch.zeros([], dtype: dtype, device: device), torch.full([], negInf, dtype: dtype, device: device))
                } else {
                    m = m!.to(dtype)
                }
                _ = try broadcastShape(m!.shape, [b, q.shape[1], sq, skv], node)
            }
            let offset = pastK?.shape[2] ?? 0
            let i = torch.arange(sq, dtype: .int64, device: device).reshape([sq, 1])
            let j = torch.arange(skv, dtype: .int64, device: device).reshape([1, skv])
            let diff = i + torch.full([], offset, dtype: .int64, device: device) - j   // query position − key position
            if try node.int("is_causal", 0) != 0 {
                let allowed = diff .>= 0
                bias = (m ?? bias) + torch.where(allowed, torch.zeros([], dtype: dtype, device: device), torch.full([], negInf, dtype: dtype, device: device))
            } else if let m {
                bias = bias + m
            }
            let left = try node.int("left_window_size", -1), right = try node.int("right_window_size", -1)
            if left >= 0 || right >= 0 {
                var allowed = torch.onesLike(diff, dtype: .bool)
                if left >= 0 { allowed = allowed.logicalAnd(diff .<= Double(left)) }
                if right >= 0 { allowed = allowed.logicalAnd(diff .>= Double(-right)) }
                bias = bias + torch.where(allowed, torch.zeros([], dtype: dtype, device: device), torch.full([], negInf, dtype: dtype, device: device))
            }

            // Grouped-query attention: each KV head repeated for its group of query heads.
            let qh = q.shape[1], kvh = k.shape[1]
            if qh != kvh {
                guard qh % kvh == 0 else { throw node.fail("\(qh) query heads are not a multiple of \(kvh) KV heads") }
                k = k.repeatInterleave(qh / kvh, dim: 1)
                v = v.repeatInterleave(qh / kvh, dim: 1)
            }
            var qk = (q * scale).matmul((k * scale).transpose(2, 3))
            if let cap = try node.float("softcap"), cap > 0 { qk = (qk / cap).tanh() * cap }
            var qkOut = qk
            let withBias = qk + bias
            let mode = try node.int("qk_matmul_output_mode", 0)
            if mode == 2 { qkOut = withBias }
            var logits = withBias
            if let sp = try node.int("softmax_precision") {
                guard let d = ONNXTensorCodec.dtype(of: Int32(clamping: sp)), d.isFloatingPoint else {
                    throw ONNXError.unsupportedDataType(field: node.attrField("softmax_precision"), dataType: Int32(clamping: sp))
                }
                logits = logits.to(d)
            } else if dtype == .float16 || dtype == .bfloat16 {
                logits = logits.to(.float32)
            }
            // Softmax with fully masked rows (all −inf) giving 0.
            let rowMax = logits.amax(dim: [logits.dim - 1], keepdim: true)
            let safeMax = torch.where(rowMax.isinf().logicalAnd(rowMax .< 0), torch.zerosLike(rowMax), rowMax)
            let e = (logits - safeMax).exp()
            var s = e.sum(dim: [e.dim - 1], keepdim: true)
            s = torch.where(s .== 0, torch.onesLike(s), s)
            var p = e / s
            let biasMax = bias.amax(dim: [bias.dim - 1], keepdim: true)
            let masked = biasMax.isinf().logicalAnd(biasMax .< 0)
            p = torch.where(masked, torch.zerosLike(p), p)
            if mode == 3 { qkOut = p }
            var y = p.to(dtype).matmul(v)
            if rank3 { y = y.permute([0, 2, 1, 3]).reshape([b, sq, -1]) }
            return [y.contiguous(), presentK, presentV, qkOut.to(dtype).contiguous()]
        }
        t["RotaryEmbedding"] = { node, ins in
            let x0 = try ins.x(0)
            var cosC = try ins.x(1), sinC = try ins.x(2)
            guard x0.isFloatingPoint, x0.dim == 3 || x0.dim == 4 else { throw node.fail("input must be 3-D or 4-D floating point") }
            var x = x0.dim == 4 ? x0.permute([0, 2, 1, 3]) : x0
            let (b, s) = (x.shape[0], x.shape[1])
            if x.dim == 3 {
                guard let h = try node.int("num_heads"), h > 0, x.shape[2] % h == 0 else { throw node.fail("3-D input needs num_heads dividing the hidden size") }
                x = x.reshape([b, s, h, x.shape[2] / h])
            }
            let head = x.shape[3]
            var rd = try node.int("rotary_embedding_dim", 0)
            if rd == 0 { rd = head }
            guard rd > 0, rd <= head, rd % 2 == 0 else { throw node.fail("rotary_embedding_dim \(rd) for head size \(head)") }
            if let pos = ins.opt(3) {
                guard !pos.isFloatingPoint, pos.shape == [b, s] else { throw node.fail("position_ids must be [\(b), \(s)] integers") }
                let p = pos.to(.int64).reshape([-1])
                let n = cosC.shape[0]
                if p.numel > 0 { guard p.min().item() >= 0, p.max().item() < Double(n) else { throw node.fail("position_ids out of range") } }
                cosC = cosC.indexSelect(0, p).reshape([b, s, -1])
                sinC = sinC.indexSelect(0, p).reshape([b, s, -1])
            }
            guard cosC.dim == 3, sinC.dim == 3, cosC.shape == [b, s, rd / 2], sinC.shape == [b, s, rd / 2] else {
                throw node.fail("cos/sin caches \(cosC.shape) / \(sinC.shape) do not fit [\(b), \(s), \(rd / 2)]")
            }
            let c = cosC.unsqueeze(2), sn = sinC.unsqueeze(2)
            let rot = x.narrow(3, 0, rd), rest = x.narrow(3, rd, head - rd)
            let interleaved = try node.int("interleaved", 0) != 0
            let x1: Tensor, x2: Tensor
            if interleaved {
                let pairs = rot.reshape([b, s, x.shape[2], rd / 2, 2])
                x1 = pairs.select(4, 0); x2 = pairs.select(4, 1)
            } else {
                x1 = rot.narrow(3, 0, rd / 2); x2 = rot.narrow(3, rd / 2, rd / 2)
            }
            let real = c * x1 - sn * x2, imag = sn * x1 + c * x2
            let rotated = interleaved ? torch.stack([real, imag], dim: 4).reshape(rot.shape) : torch.cat([real, imag], dim: 3)
            var out = torch.cat([rotated, rest], dim: 3)
            if x0.dim == 3 { out = out.reshape(x0.shape) } else { out = out.permute([0, 2, 1, 3]) }
            return [out.to(x0.dtype).contiguous()]
        }
        return t
    }
}
