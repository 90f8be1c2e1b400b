import CTorchKernels

/// The CPU kernels of indexing: advanced-index gather/put, masked fill/select, nonzero, and gather/scatter along a
/// dim; their CUDA twin is `CUDAIndexing`.
enum CPUIndexing {
    /// Per broadcast position of `bShape`: the element offset in `t` selected by the index tensors for dims
    /// `start..<start+k` (bounds-checked).
    static func offsets(_ t: Tensor, start: Int, indices: [Tensor], bShape: [Int], dimLabels: [Int]?,
                        outOfBounds: ((Int64, Int, Int) -> String)?) -> [Int] {
        let nB = shapeNumel(bShape)
        var offs = [Int](repeating: 0, count: nB)
        for (j, idx) in indices.enumerated() {
            precondition(idx.dtype == .int64 || idx.dtype == .int32, indexDTypeMessage)
            let d = start + j, size = t.shape[d], stride = t.strides[d]
            var c = idx.dtype == .int64 ? idx : idx.to(.int64)
            if c.shape != bShape || !c.isContiguous { c = c.expand(bShape).contiguousCopy() }
            let p = c.pointer(Int64.self)
            offs.withUnsafeMutableBufferPointer { o in
                for b in 0..<nB {
                    var v = Int(p[b])
                    if v < 0 { v += size }
                    if v < 0 || v >= size {
                        let label = dimLabels?[j] ?? d
                        preconditionFailure(outOfBounds?(p[b], label, size) ?? indexOutOfBoundsMessage(index: p[b], dim: label, size: size))
                    }
                    o[b] &+= v &* stride
                }
            }
        }
        return offs
    }

    /// out = src[pre, indices, post] as a new contiguous tensor.
    static func gather(_ src: Tensor, _ plan: AdvancedIndexPlan) -> Tensor {
        let out = Tensor(uninitializedShape: plan.resultShape, dtype: src.dtype)
        if out.numel == 0 { return out }
        switch src.dtype.itemSize {
        case 1: gatherBlocks(src, out, plan, UInt8.self)
        case 2: gatherBlocks(src, out, plan, UInt16.self)
        case 4: gatherBlocks(src, out, plan, UInt32.self)
        default: gatherBlocks(src, out, plan, UInt64.self)
        }
        return out
    }

    /// `dst[indices] (+)= values` (see `advancedPut`).
    static func put(_ dst: Tensor, _ plan: AdvancedIndexPlan, _ values: Tensor, accumulate: Bool) {
        let rs = plan.resultShape
        let vs = values.broadcastStrides(to: rs)
        if !accumulate {
            switch dst.dtype.itemSize {
            case 1: putBlocks(dst, plan, values, vs, UInt8.self) { _, n in n }
            case 2: putBlocks(dst, plan, values, vs, UInt16.self) { _, n in n }
            case 4: putBlocks(dst, plan, values, vs, UInt32.self) { _, n in n }
            default: putBlocks(dst, plan, values, vs, UInt64.self) { _, n in n }
            }
            return
        }
        switch dst.dtype {
        case .float32: putBlocks(dst, plan, values, vs, Float.self) { $0 + $1 }
        case .float64: putBlocks(dst, plan, values, vs, Double.self) { $0 + $1 }
        case .int64: putBlocks(dst, plan, values, vs, Int64.self) { $0 &+ $1 }
        case .int32: putBlocks(dst, plan, values, vs, Int32.self) { $0 &+ $1 }
        case .uint8: putBlocks(dst, plan, values, vs, UInt8.self) { $0 &+ $1 }
        case .bool: putBlocks(dst, plan, values, vs, Bool.self) { $0 || $1 }
        case .float16: putBlocks(dst, plan, values, vs, Float16.self) { Float16(Float($0) + Float($1)) }
        case .bfloat16: putBlocks(dst, plan, values, vs, BFloat16.self) { BFloat16($0.float + $1.float) }
        }
    }

    /// Writes `value` where `mask` (bool, broadcastable to dst) is true.
    static func maskedFill(_ dst: Tensor, _ mask: Tensor, _ value: Double) {
        let bits = Tensor(uninitializedShape: [], dtype: dst.dtype)
        fillKernel(bits, value)
        let plan = StridedPlan(shape: dst.shape, dst.strides, mask.broadcastStrides(to: dst.shape),
                               [Int](repeating: 0, count: dst.dim))
        // Branch-free select through bit masks: `q = c ? v : q` compiles to a mispredicted branch on
        // random masks (10x slower).
        func run<E: FixedWidthInteger & UnsignedInteger>(_: E.Type) {
            let v = bits.pointer(E.self).pointee
            let p = dst.pointer(E.self)
            let m = UnsafeRawPointer(mask.pointer(Bool.self)).assumingMemoryBound(to: UInt8.self)
            let (s0, s1, _) = plan.innerStrides
            plan.parallelRows { n, o0, o1, _ in
                let q = p + o0, mm = m + o1
                if s0 == 1 && s1 == 1 {
                    for i in 0..<n { let k = 0 &- E(mm[i]); q[i] = (q[i] & ~k) | (v & k) }
                } else {
                    for i in 0..<n { let k = 0 &- E(mm[i &* s1]); q[i &* s0] = (q[i &* s0] & ~k) | (v & k) }
                }
            }
        }
        switch dst.dtype.itemSize {
        case 1: run(UInt8.self)
        case 2: run(UInt16.self)
        case 4: run(UInt32.self)
        default: run(UInt64.self)
        }
    }

    /// The elements of `x` (broadcast to `shape`) where `mask` is true, as a 1-D tensor.
    static func maskedSelect(_ x: Tensor, _ mask: Tensor, shape: [Int]) -> Tensor {
        let plan = StridedPlan(shape: shape, mask.broadcastStrides(to: shape), x.broadcastStrides(to: shape),
                               [Int](repeating: 0, count: shape.count))
        let m = UnsafePointer(mask.pointer(Bool.self))
        let count = shapeNumel(shape) == 0 ? 0 : countTrue(m, plan)
        let out = tensorWithSlack([count], dtype: x.dtype, slack: 1)
        if count == 0 { return out }
        func run<E>(_: E.Type) {
            let src = UnsafePointer(x.pointer(E.self)), o = out.pointer(E.self)
            let mb = UnsafeRawPointer(m).assumingMemoryBound(to: UInt8.self)
            let (s0, s1, _) = plan.innerStrides
            var k = 0
            plan.forEachRow(0..<plan.rows) { n, o0, o1, _ in
                for i in 0..<n {
                    o[k] = src[o1 &+ i &* s1]
                    k &+= Int(mb[o0 &+ i &* s0])
                }
            }
        }
        switch x.dtype.itemSize {
        case 1: run(UInt8.self)
        case 2: run(UInt16.self)
        case 4: run(UInt32.self)
        default: run(UInt64.self)
        }
        return out
    }

    /// N × rank int64 coordinates of the nonzero elements of `x`, row-major order.
    static func nonzero(_ x: Tensor) -> Tensor {
        let truth = (x.dtype == .bool ? x : torch.noGrad { x.to(.bool) })
        let rank = x.dim
        let n = x.numel
        let m = UnsafePointer(truth.pointer(Bool.self))
        let zeros = [Int](repeating: 0, count: rank)
        let count = n == 0 ? 0 : countTrue(m, StridedPlan(shape: x.shape, truth.strides, zeros, zeros))
        let out = tensorWithSlack([count, rank], dtype: .int64, slack: rank)
        if count == 0 || rank == 0 { return out }
        let o = out.pointer(Int64.self)
        let mb = UnsafeRawPointer(m).assumingMemoryBound(to: UInt8.self)
        // Odometer over x's own (uncoalesced) geometry; every element writes its coordinates to row k and
        // k advances only for nonzero elements (branch-free; the slack row absorbs the last write).
        let shape = x.shape, strides = truth.strides
        let last = rank - 1
        let lastSize = shape[last], lastStride = strides[last]
        var coord = [Int64](repeating: 0, count: rank)
        var off = 0, k = 0
        coord.withUnsafeMutableBufferPointer { c in
            for _ in 0..<(n / lastSize) {
                for i in 0..<lastSize {
                    let row = o + k &* rank
                    for d in 0..<last { row[d] = c[d] }
                    row[last] = Int64(i)
                    k &+= Int(mb[off &+ i &* lastStride])
                }
                var d = last - 1
                while d >= 0 {
                    c[d] += 1
                    off += strides[d]
                    if Int(c[d]) < shape[d] { break }
                    off -= strides[d] * shape[d]
                    c[d] = 0
                    d -= 1
                }
            }
        }
        return out
    }

    /// out[p] = src[…, index[p], …] along `dim` for every position p of `index`.
    static func gather(_ src: Tensor, dim d: Int, index: Tensor) -> Tensor {
        let out = Tensor(uninitializedShape: index.shape, dtype: src.dtype)
        let item = src.dtype.itemSize
        forEachIndexed(index, dim: d, op: "gather", dimSize: src.shape.isEmpty ? 1 : src.shape[d]) { lin, coords, t in
            var off = src.storageOffset
            for k in 0..<coords.count { off += (k == d ? t : coords[k]) * src.strides[k] }
            (out.storage.data + lin * item).copyMemory(from: src.storage.data + off * item, byteCount: item)
        }
        return out
    }

    /// The scatter: `out[…, index[p], …] (+)= s[p]` for every position p of `index`.
    static func scatter(into out: Tensor, dim d: Int, index: Tensor, src s: Tensor, accumulate: Bool) {
        let item = out.dtype.itemSize
        let outStrides = out.strides, srcStrides = s.strides
        forEachIndexed(index, dim: d, op: "scatter", dimSize: out.shape.isEmpty ? 1 : out.shape[d]) { lin, coords, t in
            var off = 0, srcOff = s.storageOffset
            for k in 0..<coords.count {
                off += (k == d ? t : coords[k]) * outStrides[k]
                srcOff += coords[k] * srcStrides[k]   // src is read at the index position's coordinates
            }
            if accumulate {
                switch out.dtype {
                case .float32: out.pointer(Float.self)[off] += s.storage.data.assumingMemoryBound(to: Float.self)[srcOff]
                case .float64: out.pointer(Double.self)[off] += s.storage.data.assumingMemoryBound(to: Double.self)[srcOff]
                case .int64: out.pointer(Int64.self)[off] += s.storage.data.assumingMemoryBound(to: Int64.self)[srcOff]
                case .int32: out.pointer(Int32.self)[off] += s.storage.data.assumingMemoryBound(to: Int32.self)[srcOff]
                default: preconditionFailure("scatter_add: unsupported dtype \(out.dtype)")
                }
            } else {
                (out.storage.data + off * item).copyMemory(from: s.storage.data + srcOff * item, byteCount: item)
            }
        }
    }
}

private func gatherBlocks<E>(_ src: Tensor, _ out: Tensor, _ plan: AdvancedIndexPlan, _: E.Type) {
    let s = UnsafePointer(src.pointer(E.self)), o = out.pointer(E.self)
    let nB = plan.offsets.count, preN = shapeNumel(plan.preShape), postN = shapeNumel(plan.postShape)
    let postPlan = StridedPlan(shape: plan.postShape, contiguousStrides(plan.postShape), plan.postStrides,
                               [Int](repeating: 0, count: plan.postShape.count))
    let (is0, is1, _) = postPlan.innerStrides
    let postRows = postPlan.rows
    let dense = postRows == 1 && is0 == 1 && is1 == 1
    let bytes = postN * MemoryLayout<E>.stride
    plan.offsets.withUnsafeBufferPointer { offs in
        parallelFor(preN * nB, grain: max(1, elementwiseGrain / max(postN, 1))) { lo, hi in
            var p = lo / nB, b = lo % nB
            var preOff = plan.preOffset(p)
            for j in lo..<hi {
                let sb = s + (preOff + offs[b]), ob = o + j * postN
                if postN == 1 {
                    ob.pointee = sb.pointee
                } else if dense {
                    UnsafeMutableRawPointer(ob).copyMemory(from: sb, byteCount: bytes)
                } else {
                    postPlan.forEachRow(0..<postRows) { n, o0, o1, _ in
                        for i in 0..<n { ob[o0 &+ i &* is0] = sb[o1 &+ i &* is1] }
                    }
                }
                b += 1
                if b == nB {
                    b = 0; p += 1
                    if p < preN { preOff = plan.preOffset(p) }
                }
            }
        }
    }
}

@inline(__always)
private func putBlocks<E>(_ dst: Tensor, _ plan: AdvancedIndexPlan, _ values: Tensor, _ vs: [Int], _: E.Type,
                          _ f: (E, E) -> E) {
    let d = dst.pointer(E.self), v = UnsafePointer(values.pointer(E.self))
    let preRank = plan.preShape.count, bRank = plan.bShape.count
    let vPre = Array(vs[..<preRank]), vB = Array(vs[preRank..<(preRank + bRank)]), vPost = Array(vs[(preRank + bRank)...])
    let nB = plan.offsets.count, preN = shapeNumel(plan.preShape), postN = shapeNumel(plan.postShape)
    var vOffB = [Int](repeating: 0, count: nB)
    if vB.contains(where: { $0 != 0 }) { for b in 0..<nB { vOffB[b] = stridedOffset(b, plan.bShape, vB) } }
    let postPlan = StridedPlan(shape: plan.postShape, plan.postStrides, vPost, [Int](repeating: 0, count: plan.postShape.count))
    let (is0, is1, _) = postPlan.innerStrides
    let postRows = postPlan.rows
    let dense = postRows == 1 && is0 == 1 && is1 == 1
    let preShape = plan.preShape, preStrides = plan.preStrides
    plan.offsets.withUnsafeBufferPointer { offs in
        vOffB.withUnsafeBufferPointer { voffs in
            @inline(__always) func block(_ dOff: Int, _ vOff: Int) {
                let db = d + dOff, vb = v + vOff
                if postN == 1 {
                    db.pointee = f(db.pointee, vb.pointee)
                } else if dense {
                    for i in 0..<postN { db[i] = f(db[i], vb[i]) }
                } else {
                    postPlan.forEachRow(0..<postRows) { n, o0, o1, _ in
                        for i in 0..<n { db[o0 &+ i &* is0] = f(db[o0 &+ i &* is0], vb[o1 &+ i &* is1]) }
                    }
                }
            }
            @inline(__always) func pre(_ p: Int, _ body: (Int, Int) -> Void) {
                body(stridedOffset(p, preShape, preStrides), stridedOffset(p, preShape, vPre))
            }
            let threads = Int(ct_get_num_threads())
            let total = preN * nB * postN
            if total <= elementwiseGrain || threads <= 1 {
                for p in 0..<preN { pre(p) { po, pv in for b in 0..<nB { block(po + offs[b], pv + voffs[b]) } } }
            } else if preN >= threads {
                parallelFor(preN, grain: max(1, elementwiseGrain / max(nB * postN, 1))) { lo, hi in
                    for p in lo..<hi { pre(p) { po, pv in for b in 0..<nB { block(po + offs[b], pv + voffs[b]) } } }
                }
            } else {
                // Each worker owns the destination slots whose index offset hashes to it.
                parallelFor(threads, grain: 1) { lo, hi in
                    for w in lo..<hi {
                        for p in 0..<preN {
                            pre(p) { po, pv in
                                for b in 0..<nB where slotOwner(offs[b], threads) == w { block(po + offs[b], pv + voffs[b]) }
                            }
                        }
                    }
                }
            }
        }
    }
}

@inline(__always) private func slotOwner(_ offset: Int, _ workers: Int) -> Int {
    Int(truncatingIfNeeded: (UInt64(bitPattern: Int64(offset)) &* 0x9E37_79B9_7F4A_7C15) >> 33) % workers
}

/// Number of true elements of a bool tensor viewed with `strides` over `plan` (operand 0).
private func countTrue(_ m: UnsafePointer<Bool>, _ plan: StridedPlan) -> Int {
    let (s0, _, _) = plan.innerStrides
    let raw = UnsafeRawPointer(m).assumingMemoryBound(to: UInt8.self)
    var count = 0
    plan.forEachRow(0..<plan.rows) { n, o0, _, _ in
        var c = 0
        if s0 == 1 { for i in 0..<n { c &+= Int(raw[o0 &+ i]) } } else { for i in 0..<n { c &+= Int(raw[o0 &+ i &* s0]) } }
        count += c
    }
    return count
}

/// A contiguous int64/any tensor of `shape` whose storage has `slack` spare elements at the end, so
/// branch-free compaction loops may write one element past the last kept one.
private func tensorWithSlack(_ shape: [Int], dtype: DType, slack: Int) -> Tensor {
    Tensor(storage: Storage(byteCount: (shapeNumel(shape) + slack) * dtype.itemSize), shape: shape,
           strides: contiguousStrides(shape), offset: 0, dtype: dtype)
}

/// Walks every position of `index` (shape S) calling `body(indexPosition, selfOffsetWithoutDim, dimIndex)`.
private func forEachIndexed(_ index: Tensor, dim: Int, op: String, dimSize: Int,
                            _ body: (_ linear: Int, _ coords: [Int], _ target: Int) -> Void) {
    let idx = index.to(.int64).contiguous()
    let p = idx.pointer(Int64.self)
    let shape = idx.shape
    var coords = [Int](repeating: 0, count: shape.count)
    for i in 0..<idx.numel {
        let t = Int(p[i])
        precondition(t >= -dimSize && t < dimSize, "\(op)(): index \(t) is out of bounds for dimension \(dim) with size \(dimSize)")
        body(i, coords, t < 0 ? t + dimSize : t)
        var d = shape.count - 1
        while d >= 0 {
            coords[d] += 1
            if coords[d] < shape[d] { break }
            coords[d] = 0
            d -= 1
        }
    }
}
