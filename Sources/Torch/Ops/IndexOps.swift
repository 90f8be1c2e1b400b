/// Index-based ops: `indexSelect indexAdd(_) indexPut(_) maskedFill(_) maskedSelect nonzero argwhere
/// take torch.where(condition)`, and the advanced-indexing kernels `x[indexTensor]` is built on.
///
/// Kernel model: a tensor `t` whose dims `start..<start+k` are indexed by k int64 tensors broadcast to a
/// shape B. The result has shape `t.shape[..<start] + B + t.shape[(start+k)...]`; each (pre, b) pair
/// addresses one "post" block (the trailing non-indexed dims), copied with memcpy when dense.

// MARK: - Messages

/// PyTorch's message for an index outside a dimension.
func indexOutOfBoundsMessage(index: Int64, dim: Int, size: Int) -> String {
    "index \(index) is out of bounds for dimension \(dim) with size \(size)"
}

/// PyTorch's message when the value of an index assignment doesn't fit the indexed region.
func indexPutShapeMismatchMessage(valueShape: [Int], resultShape: [Int]) -> String {
    "shape mismatch: value tensor of shape \(shapeString(valueShape)) cannot be broadcast to indexing result of shape \(shapeString(resultShape))"
}

/// PyTorch's message when index tensors don't broadcast together.
func indexBroadcastMessage(_ shapes: [[Int]]) -> String {
    "shape mismatch: indexing tensors could not be broadcast together with shapes " + shapes.map(shapeString).joined(separator: ", ")
}

/// PyTorch's message when a boolean mask doesn't match the dims it indexes.
func maskShapeMismatchMessage(mask: [Int], maskDim: Int, indexed: [Int], indexedDim: Int) -> String {
    "The shape of the mask \(shapeString(mask)) at index \(maskDim) does not match the shape of the indexed tensor \(shapeString(indexed)) at index \(indexedDim)"
}

/// PyTorch's message for a non-integer index tensor.
let indexDTypeMessage = "tensors used as indices must be long, int, byte or bool tensors"

/// PyTorch's message for `take` out of range.
func takeOutOfRangeMessage(index: Int64, numel: Int) -> String {
    "out of range: tried to access index \(index) on a tensor of \(numel) elements."
}

// MARK: - Geometry

/// Offset of row-major position `linear` of `shape` with `strides`.
@inline(__always) func stridedOffset(_ linear: Int, _ shape: [Int], _ strides: [Int]) -> Int {
    var rem = linear, off = 0, d = shape.count - 1
    while d >= 0 {
        let s = shape[d]
        off += (rem % s) * strides[d]
        rem /= s
        d -= 1
    }
    return off
}

/// The geometry of indexing dims `start..<start+k` of a tensor with k int64 tensors broadcast to `bShape`.
struct AdvancedIndexPlan {
    let preShape: [Int], preStrides: [Int]
    let bShape: [Int]
    let postShape: [Int], postStrides: [Int]
    /// Per broadcast position: the element offset selected by the index tensors (bounds-checked); empty
    /// when the indexed tensor is on a GPU, whose offsets are `deviceOffsets`.
    let offsets: [Int]
    /// The same offsets as an int64 tensor on the indexed tensor's GPU (bounds-checked by the kernel).
    let deviceOffsets: Tensor?

    var resultShape: [Int] { preShape + bShape + postShape }

    /// `dimLabels[j]` names indexed dim j in messages (defaults to `start + j`).
    init(_ t: Tensor, start: Int, indices: [Tensor], bShape: [Int], dimLabels: [Int]? = nil,
         outOfBounds: ((Int64, Int, Int) -> String)? = nil) {
        let k = indices.count
        precondition(start + k <= t.dim, "index: too many indices for tensor of dimension \(t.dim)")
        preShape = Array(t.shape[..<start]); preStrides = Array(t.strides[..<start])
        postShape = Array(t.shape[(start + k)...]); postStrides = Array(t.strides[(start + k)...])
        self.bShape = bShape
        switch t.device {
        case .cpu:
            for idx in indices where idx.device != .cpu {
                preconditionFailure("indices should be either on cpu or on the same device as the indexed tensor (cpu)")
            }
            offsets = CPUIndexing.offsets(t, start: start, indices: indices, bShape: bShape, dimLabels: dimLabels,
                                          outOfBounds: outOfBounds)
            deviceOffsets = nil
        case .cuda:
            offsets = []
            deviceOffsets = CUDAIndexing.offsets(indices, sizes: Array(t.shape[start..<(start + k)]),
                                                 strides: Array(t.strides[start..<(start + k)]), shape: bShape, device: t.device)
        }
    }

    @inline(__always) func preOffset(_ p: Int) -> Int { stridedOffset(p, preShape, preStrides) }
}

/// out = src[pre, indices, post] as a new contiguous tensor (no autograd).
func advancedGather(_ src: Tensor, _ plan: AdvancedIndexPlan) -> Tensor {
    switch src.device {
    case .cpu: return CPUIndexing.gather(src, plan)
    case .cuda: return CUDAIndexing.gather(src, plan)
    }
}

/// Writes (or adds, when `accumulate`) `values` (already `dst.dtype`, broadcastable to the plan's result
/// shape) into `dst` at the indexed positions. Duplicate indices: the last write wins, additions all land.
/// Parallel only over disjoint destination slots, so results are deterministic.
func advancedPut(_ dst: Tensor, _ plan: AdvancedIndexPlan, _ values: Tensor, accumulate: Bool) {
    let rs = plan.resultShape
    if shapeNumel(rs) == 0 { return }
    precondition(values.dtype == dst.dtype, "index_put_: internal dtype mismatch")
    switch dst.device {
    case .cpu: CPUIndexing.put(dst, plan, values, accumulate: accumulate)
    case .cuda: CUDAIndexing.put(dst, plan, values, accumulate: accumulate)
    }
}

// MARK: - Canonical form of advanced indices

/// Advanced indices in canonical form: `src` (a view of the indexed tensor, dims permuted when the
/// indexed dims were not adjacent) with int64 tensors indexing dims `start..<start+indices.count`.
struct CanonicalIndex {
    var src: Tensor
    var start: Int
    var indices: [Tensor]
    var bShape: [Int]
    /// Original dim of each indexed dim (for messages).
    var dims: [Int]

    func plan(outOfBounds: ((Int64, Int, Int) -> String)? = nil) -> AdvancedIndexPlan {
        AdvancedIndexPlan(src, start: start, indices: indices, bShape: bShape, dimLabels: dims, outOfBounds: outOfBounds)
    }
}

/// Expands boolean masks into their nonzero coordinates, broadcasts the index tensors and, when the
/// indexed dims are not adjacent, moves them to the front (numpy/PyTorch rules). `entries` are
/// (first dim, tensor) pairs in increasing dim order; a k-dim mask covers k dims.
func canonicalizeIndices(_ t: Tensor, _ entries: [(dim: Int, index: Tensor)]) -> CanonicalIndex {
    var dims: [Int] = [], idx: [Tensor] = []
    for (d, e) in entries {
        switch e.dtype {
        case .bool, .uint8:
            let k = e.dim
            precondition(d + k <= t.dim, "too many indices for tensor of dimension \(t.dim)")
            for j in 0..<k where e.shape[j] != t.shape[d + j] {
                preconditionFailure(maskShapeMismatchMessage(mask: e.shape, maskDim: j, indexed: t.shape, indexedDim: d + j))
            }
            let nz = nonzeroCoordinates(e)
            for j in 0..<k { dims.append(d + j); idx.append(nz.select(1, j)) }
        case .int64, .int32:
            precondition(d < t.dim, "too many indices for tensor of dimension \(t.dim)")
            dims.append(d); idx.append(e)
        default:
            preconditionFailure(indexDTypeMessage)
        }
    }
    var bShape = idx.first?.shape ?? []
    for i in idx.dropFirst() where i.shape != bShape {
        let n = max(bShape.count, i.dim)
        for k in 0..<n {
            let a = k < n - bShape.count ? 1 : bShape[k - (n - bShape.count)]
            let b = k < n - i.dim ? 1 : i.shape[k - (n - i.dim)]
            if a != b && a != 1 && b != 1 { preconditionFailure(indexBroadcastMessage(idx.map(\.shape))) }
        }
        bShape = broadcastShapes(bShape, i.shape, op: "index")
    }
    let adjacent = dims.isEmpty || dims.last! - dims.first! == dims.count - 1
    if adjacent {
        return CanonicalIndex(src: t, start: dims.first ?? 0, indices: idx, bShape: bShape, dims: dims)
    }
    let rest = (0..<t.dim).filter { !dims.contains($0) }
    return CanonicalIndex(src: t.permute(dims + rest), start: 0, indices: idx, bShape: bShape, dims: dims)
}

/// Converts PyTorch's list form of indices (`[Tensor?]`, one entry per dim; a k-dim mask covers k dims)
/// into (dim, tensor) entries.
func indexEntries(_ indices: [Tensor?], rank: Int, op: String) -> [(dim: Int, index: Tensor)] {
    var entries: [(dim: Int, index: Tensor)] = []
    var cursor = 0
    for e in indices {
        guard let e else { cursor += 1; continue }
        entries.append((cursor, e))
        if e.dtype == .bool || e.dtype == .uint8 {
            precondition(e.dim > 0, "\(op): 0-dimensional boolean indices are not supported; use a 1-element mask")
            cursor += e.dim
        } else {
            cursor += 1
        }
    }
    precondition(cursor <= rank, "too many indices for tensor of dimension \(rank) (got \(cursor))")
    return entries
}

/// Values prepared for writing into a region of shape `resultShape`: converted to `dtype`, leading
/// size-1 dims beyond the region's rank dropped (as PyTorch's setitem does), broadcast-checked.
func preparedValues(_ values: Tensor, resultShape: [Int], dtype: DType) -> Tensor {
    var v = values
    if v.dim > resultShape.count {
        let extra = v.dim - resultShape.count
        precondition(v.shape[..<extra].allSatisfy { $0 == 1 },
                     indexPutShapeMismatchMessage(valueShape: values.shape, resultShape: resultShape))
        v = torch.noGrad { v.reshape(Array(v.shape[extra...])) }
    }
    let off = resultShape.count - v.dim
    for i in 0..<v.dim where v.shape[i] != 1 && v.shape[i] != resultShape[i + off] {
        preconditionFailure(indexPutShapeMismatchMessage(valueShape: values.shape, resultShape: resultShape))
    }
    return v.dtype == dtype ? v : torch.noGrad { v.to(dtype) }
}

/// The gradient of a value of `shape`/`dtype` broadcast into an indexed region, reduced back to it.
func reduceToValue(_ g: Tensor, shape: [Int], dtype: DType) -> Tensor {
    var r = g
    if shape != g.shape {
        let target = shape.count > g.dim ? Array(shape[(shape.count - g.dim)...]) : shape
        r = r.sumToSize(target)
        if r.shape != shape { r = r.reshape(shape) }
    }
    return dtype.isFloatingPoint && r.dtype != dtype ? r.to(dtype) : r
}

// MARK: - Differentiable index / index_put primitives

extension Tensor {
    /// PyTorch's `aten::index`: advanced indexing with one optional tensor per dim (IndexBackward0).
    func index(_ indices: [Tensor?]) -> Tensor {
        advancedIndex(torch.noGrad { canonicalizeIndices(self, indexEntries(indices, rank: dim, op: "index")) }, base: self)
    }
}

/// Gathers along a canonical index of `base` (`c.src` is `base` or a permuted view of it), recording
/// IndexBackward0 when `base` needs grad.
func advancedIndex(_ c: CanonicalIndex, base: Tensor) -> Tensor {
    let out = advancedGather(c.src, c.plan())
    if base.needsGrad {
        // Re-derive the permuted view with recording so the gradient flows to `base`.
        let src = c.src === base ? base : base.permute(permutationOf(c, baseRank: base.dim))
        let inShape = src.shape, start = c.start
        let list: [Tensor?] = [Tensor?](repeating: nil, count: start) + c.indices.map { Optional($0) }
        record("IndexBackward0", out, inputs: [src],
               saved: { [.tensors("indices", list), .ints("self_sym_sizes", inShape)] }) { _, g in
            [torch.zeros(inShape, dtype: g.dtype, device: g.device).indexPut_(list, g, accumulate: true)]
        }
    }
    return out
}

/// Writes `values` into `t` at `entries` (dims of `t`), in place, without autograd or version bump.
/// Returns true when it took the masked-fill path (one boolean mask and a 0-d value).
@discardableResult
func indexedWrite(_ t: Tensor, _ entries: [(dim: Int, index: Tensor)], _ values: Tensor, accumulate: Bool) -> Bool {
    var v = values
    if v.storage === t.storage { v = v.contiguousCopy() }   // overlapping source: read it first
    if !accumulate, entries.count == 1, v.dim == 0, entries[0].index.dim > 0,
       entries[0].index.dtype == .bool || entries[0].index.dtype == .uint8 {
        let (d, mask) = entries[0]
        let k = mask.dim
        precondition(d + k <= t.dim, "too many indices for tensor of dimension \(t.dim)")
        for j in 0..<k where mask.shape[j] != t.shape[d + j] {
            preconditionFailure(maskShapeMismatchMessage(mask: mask.shape, maskDim: j, indexed: t.shape, indexedDim: d + j))
        }
        var m = mask.dtype == .bool ? mask : mask.to(.bool)
        let trailing = t.dim - d - k
        if trailing > 0 { m = m.reshape(m.shape + [Int](repeating: 1, count: trailing)) }
        maskedFillKernel(t, m, v.item())
        return true
    }
    let c = torch.noGrad { canonicalizeIndices(t, entries) }
    let plan = c.plan()
    let pv = preparedValues(v, resultShape: plan.resultShape, dtype: t.dtype)
    advancedPut(c.src, plan, pv, accumulate: accumulate)
    return false
}

/// The permutation `canonicalizeIndices` applied (identity when the indexed dims were adjacent).
private func permutationOf(_ c: CanonicalIndex, baseRank: Int) -> [Int] {
    let rest = (0..<baseRank).filter { !c.dims.contains($0) }
    return c.dims + rest
}

// MARK: - Public ops

extension Tensor {
    /// Puts `values` into self at `indices` (one optional int64/bool tensor per leading dim), in place.
    /// With `accumulate`, values at repeated indices are summed into self.
    ///
    /// ```swift
    /// let x = torch.zeros(5)
    /// x.indexPut_([torch.tensor([0, 2, 2])], torch.tensor([1.0, 2.0, 3.0]), accumulate: true)
    /// // tensor([1., 0., 5., 0., 0.])
    /// ```
    @discardableResult
    public func indexPut_(_ indices: [Tensor?], _ values: Tensor, accumulate: Bool = false) -> Tensor {
        checkInPlace("index_put_")
        torch.noGrad { _ = indexedWrite(self, indexEntries(indices, rank: dim, op: "index_put_"), values, accumulate: accumulate) }
        storage.bumpVersion()
        if anyNeedsGrad(self, values) {
            let needValues = values._requiresGrad, vShape = values.shape, vType = values.dtype
            rebaseHistory("IndexPutBackward0", inputs: [values]) { _, g in
                let gSelf = accumulate ? g : g.indexPut(indices, torch.zeros([], dtype: g.dtype))
                return [gSelf, needValues ? reduceToValue(g.index(indices), shape: vShape, dtype: vType) : nil]
            }
        }
        return self
    }

    /// `indexPut_` with PyTorch's keyword names.
    @discardableResult
    public func indexPut_(indices: [Tensor?], values: Tensor, accumulate: Bool = false) -> Tensor {
        indexPut_(indices, values, accumulate: accumulate)
    }

    /// Out-of-place `indexPut_`: a copy of self with `values` put at `indices`.
    public func indexPut(_ indices: [Tensor?], _ values: Tensor, accumulate: Bool = false) -> Tensor {
        clone().indexPut_(indices, values, accumulate: accumulate)
    }

    /// `indexPut` with PyTorch's keyword names.
    public func indexPut(indices: [Tensor?], values: Tensor, accumulate: Bool = false) -> Tensor {
        indexPut(indices, values, accumulate: accumulate)
    }

    /// The entries of dim `dim` listed by `index` (a 1-D int64/int32 tensor), e.g. embedding rows.
    ///
    /// ```swift
    /// let table = torch.randn(10, 4)
    /// let rows = table.indexSelect(0, torch.tensor([3, 1, 3]))   // shape [3, 4]
    /// ```
    public func indexSelect(_ dim: Int, _ index: Tensor) -> Tensor {
        precondition(index.dim <= 1, "index_select(): Index is supposed to be a vector")
        precondition(index.dtype == .int64 || index.dtype == .int32, "index_select(): Expected dtype int32/int64 for index")
        let d = normalizeDim(dim, self.dim, op: "index_select")
        if self.dim == 0 {
            precondition(index.numel == 1, "index_select(): Index to scalar can have only 1 value, got \(index.numel) value(s)")
            precondition(index.item() == 0 || index.item() == -1, "index out of range in self")
            return clone()
        }
        let flatIndex = index.dim == 1 ? index : index.reshape([1])
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.index(dims: [d]), [self, flatIndex], { indexSelect(d, flatIndex) }) {
            return r
        }
        let plan = AdvancedIndexPlan(self, start: d, indices: [flatIndex], bShape: [flatIndex.numel]) { _, _, _ in
            "index out of range in self"
        }
        let out = advancedGather(self, plan)
        if needsGrad {
            let inShape = shape
            record("IndexSelectBackward0", out, inputs: [self]) { _, g in
                [torch.zeros(inShape, dtype: g.dtype, device: g.device).indexAdd_(d, flatIndex, g)]
            }
        }
        return out
    }

    /// Adds `alpha * source` into self along `dim` at the positions listed by `index`, in place;
    /// repeated indices accumulate. `source` has self's shape with `dim` of size `index.numel`.
    @discardableResult
    public func indexAdd_(_ dim: Int, _ index: Tensor, _ source: Tensor, alpha: Double = 1) -> Tensor {
        precondition(index.dim <= 1, "index_add_(): Index is supposed to be a vector")
        precondition(index.dtype == .int64 || index.dtype == .int32, "index_add_(): Expected dtype int32/int64 for index")
        precondition(self.dim > 0, "index_add_(): self must have at least one dimension")
        let d = normalizeDim(dim, self.dim, op: "index_add_")
        let n = index.numel
        var src = source
        if src.dim == 0 { src = torch.noGrad { src.reshape([1]) } }
        precondition(src.dim == self.dim, "index_add_(): source and self must have same number of dimensions (got \(src.dim) and \(self.dim))")
        precondition(src.shape[d] == n, "index_add_(): Number of indices (\(n)) should be equal to source.size(dim) (\(src.shape[d]))")
        for i in 0..<self.dim where i != d && src.shape[i] != shape[i] {
            preconditionFailure("index_add_(): source \(shapeString(source.shape)) and self \(shapeString(shape)) must match in every dimension except dim \(d)")
        }
        checkInPlace("index_add_")
        let flatIndex = index.dim == 1 ? index : index.reshape([1])
        let plan = AdvancedIndexPlan(self, start: d, indices: [flatIndex], bShape: [n]) { i, dd, size in
            "index_add_(): index \(i) is out of bounds for dimension \(dd) with size \(size)"
        }
        let scaled = torch.noGrad { alpha == 1 ? src : src * alpha }
        advancedPut(self, plan, scaled.dtype == dtype ? scaled : torch.noGrad { scaled.to(dtype) }, accumulate: true)
        storage.bumpVersion()
        if anyNeedsGrad(self, source) {
            let needSource = source._requiresGrad, srcShape = source.shape
            rebaseHistory("IndexAddBackward0", inputs: [source]) { _, g in
                guard needSource else { return [g, nil] }
                var gs = g.indexSelect(d, flatIndex)
                if alpha != 1 { gs = gs * alpha }
                return [g, gs.reshape(srcShape)]
            }
        }
        return self
    }

    /// Out-of-place `indexAdd_`.
    public func indexAdd(_ dim: Int, _ index: Tensor, _ source: Tensor, alpha: Double = 1) -> Tensor {
        clone().indexAdd_(dim, index, source, alpha: alpha)
    }

    /// `indexAdd` with keyword labels.
    public func indexAdd(dim: Int, index: Tensor, source: Tensor, alpha: Double = 1) -> Tensor {
        indexAdd(dim, index, source, alpha: alpha)
    }

    /// Sets the elements where `mask` (Bool, broadcastable to self) is true to `value`, in place.
    @discardableResult
    public func maskedFill_(_ mask: Tensor, _ value: Double) -> Tensor {
        maskedFillInPlace(mask, value: value, valueTensor: nil)
    }

    /// In-place `maskedFill_` with a 0-d tensor value (differentiable in the value).
    @discardableResult
    public func maskedFill_(_ mask: Tensor, _ value: Tensor) -> Tensor {
        precondition(value.dim == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with \(value.dim) dimension(s).")
        return maskedFillInPlace(mask, value: value.item(), valueTensor: value)
    }

    /// A copy of self with the elements where `mask` is true replaced by `value`.
    ///
    /// ```swift
    /// let scores = torch.randn(2, 3).maskedFill(mask, -Double.infinity)
    /// ```
    public func maskedFill(_ mask: Tensor, _ value: Double) -> Tensor {
        maskedFillOutOfPlace(mask) { $0.maskedFill_(mask, value) }
    }

    /// `maskedFill` with a 0-d tensor value (differentiable in the value).
    public func maskedFill(_ mask: Tensor, _ value: Tensor) -> Tensor {
        maskedFillOutOfPlace(mask) { $0.maskedFill_(mask, value) }
    }

    private func maskedFillOutOfPlace(_ mask: Tensor, _ fill: (Tensor) -> Tensor) -> Tensor {
        let shape = broadcastShapes(self.shape, mask.shape, op: "masked_fill")
        let base = shape == self.shape ? clone() : expand(shape).clone()
        return fill(base)
    }

    private func maskedFillInPlace(_ mask: Tensor, value: Double, valueTensor: Tensor?) -> Tensor {
        precondition(mask.dtype == .bool, "masked_fill_ only supports boolean masks, but got mask with dtype \(mask.dtype.name)")
        let b = broadcastShapes(shape, mask.shape, op: "masked_fill_")
        precondition(b == shape, "masked_fill_: mask of shape \(shapeString(mask.shape)) cannot be broadcast to self of shape \(shapeString(shape))")
        checkInPlace("masked_fill_")
        maskedFillKernel(self, mask, value)
        storage.bumpVersion()
        let valueNeeds = valueTensor?._requiresGrad ?? false
        if GradMode.isEnabled && (_requiresGrad || valueNeeds) {
            let m = mask, hasValueInput = valueTensor != nil, vType = valueTensor?.dtype ?? dtype
            rebaseHistory("MaskedFillBackward0", inputs: valueTensor.map { [$0] } ?? []) { _, g in
                let zero = torch.zeros([], dtype: g.dtype)
                var r: [Tensor?] = [torch.where(m, zero, g)]
                if hasValueInput { r.append(valueNeeds ? torch.where(m, g, zero).sum().to(vType) : nil) }
                return r
            }
        }
        return self
    }

    /// The elements where `mask` (broadcast with self) is true, as a 1-D tensor in row-major order.
    public func maskedSelect(_ mask: Tensor) -> Tensor {
        precondition(mask.dtype == .bool, "masked_select: expected BoolTensor for mask")
        let shape = broadcastShapes(self.shape, mask.shape, op: "masked_select")
        let out = maskedSelectKernel(self, mask, shape: shape)
        if needsGrad {
            let inShape = self.shape, m = mask.shape == shape ? mask : mask.expand(shape)
            record("MaskedSelectBackward0", out, inputs: [self]) { _, g in
                [torch.zeros(shape, dtype: g.dtype, device: g.device).indexPut_([m], g).sumToSize(inShape)]
            }
        }
        return out
    }

    /// Coordinates of the nonzero elements: an N × dim int64 tensor, in row-major order.
    public func nonzero() -> Tensor { nonzeroCoordinates(self) }

    /// With `asTuple`, one 1-D int64 tensor of coordinates per dim (PyTorch's tuple form).
    public func nonzero(asTuple: Bool) -> [Tensor] {
        guard asTuple else { return [nonzero()] }
        let nz = nonzeroCoordinates(dim == 0 ? reshape([1]) : self)
        return (0..<Swift.max(dim, 1)).map { nz.select(1, $0).contiguous() }
    }

    /// PyTorch's `argwhere`: same as `nonzero()`.
    public func argwhere() -> Tensor { nonzero() }

    /// Elements at flat (row-major) positions `index`; the result has `index`'s shape.
    public func take(_ index: Tensor) -> Tensor {
        precondition(index.dtype == .int64 || index.dtype == .int32, "take(): Expected a long tensor for index, but got \(index.dtype.name.capitalized)")
        let n = numel
        let flat = torch.noGrad { reshape([n]) }
        let plan = AdvancedIndexPlan(flat, start: 0, indices: [index], bShape: index.shape) { i, _, _ in
            takeOutOfRangeMessage(index: i, numel: n)
        }
        let out = advancedGather(flat, plan)
        if needsGrad {
            let inShape = shape
            record("TakeBackward0", out, inputs: [self]) { _, g in
                [torch.zeros([n], dtype: g.dtype, device: g.device).indexPut_([index], g, accumulate: true).view(inShape)]
            }
        }
        return out
    }
}

// MARK: - Kernels for masks

/// Writes `value` where `mask` (bool, broadcastable to dst) is true.
func maskedFillKernel(_ dst: Tensor, _ mask: Tensor, _ value: Double) {
    if dst.numel == 0 { return }
    let device = commonDevice(dst, mask)
    if _slowPath(device != dst.device) { preconditionFailure(sameDeviceMessage(dst.device, mask.device)) }
    switch device {
    case .cpu: CPUIndexing.maskedFill(dst, mask, value)
    case .cuda: CUDAIndexing.maskedFill(dst, mask, value)
    }
}

/// The elements of `x` (broadcast to `shape`) where `mask` is true, as a 1-D tensor.
func maskedSelectKernel(_ x: Tensor, _ mask: Tensor, shape: [Int]) -> Tensor {
    checkSameDevice(x, mask)
    switch x.device {
    case .cpu: return CPUIndexing.maskedSelect(x, mask, shape: shape)
    case .cuda:
        return torch.noGrad {
            let c = canonicalizeIndices(x.expand(shape), [(0, mask.expand(shape))])
            return advancedGather(c.src, c.plan())
        }
    }
}

/// N × rank int64 coordinates of the nonzero (true, non-zero, NaN) elements of `x`, row-major order.
func nonzeroCoordinates(_ x: Tensor) -> Tensor {
    switch x.device {
    case .cpu: return CPUIndexing.nonzero(x)
    case .cuda: return CUDAIndexing.nonzero(x)
    }
}

extension torch {
    public static func indexSelect(_ x: Tensor, _ dim: Int, _ index: Tensor) -> Tensor { x.indexSelect(dim, index) }
    public static func indexAdd(_ x: Tensor, _ dim: Int, _ index: Tensor, _ source: Tensor, alpha: Double = 1) -> Tensor {
        x.indexAdd(dim, index, source, alpha: alpha)
    }
    public static func indexPut(_ x: Tensor, _ indices: [Tensor?], _ values: Tensor, accumulate: Bool = false) -> Tensor {
        x.indexPut(indices, values, accumulate: accumulate)
    }
    public static func maskedFill(_ x: Tensor, _ mask: Tensor, _ value: Double) -> Tensor { x.maskedFill(mask, value) }
    public static func maskedFill(_ x: Tensor, _ mask: Tensor, _ value: Tensor) -> Tensor { x.maskedFill(mask, value) }
    public static func maskedSelect(_ x: Tensor, _ mask: Tensor) -> Tensor { x.maskedSelect(mask) }
    public static func nonzero(_ x: Tensor) -> Tensor { x.nonzero() }
    public static func nonzero(_ x: Tensor, asTuple: Bool) -> [Tensor] { x.nonzero(asTuple: asTuple) }
    public static func argwhere(_ x: Tensor) -> Tensor { x.argwhere() }
    public static func take(_ x: Tensor, _ index: Tensor) -> Tensor { x.take(index) }

    /// One-argument `torch.where(condition)`: the coordinates of the true elements, one tensor per dim
    /// (same as `nonzero(asTuple: true)`).
    public static func `where`(_ condition: Tensor) -> [Tensor] { condition.nonzero(asTuple: true) }
}
