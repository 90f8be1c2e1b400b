/// PyTorch indexing: `x[0]`, `x[-1]`, `x[1..<3]`, `x[1...2]`, `x[0..., 2]`, `x[.ellipsis, 0]`,
/// `x[.newAxis]`, `x[.slice(0, nil, 2)]`, `x[mask]`, `x[indexTensor]`, and assignment to all of them.
///
/// Basic indices (integers, ranges, slices, `.ellipsis`, `.newAxis`) give views that share storage;
/// tensor indices (int64/int32 positions, Bool masks) give copies, following numpy's advanced-indexing
/// rules as PyTorch does: integers are applied first as `select`, then the index tensors are
/// broadcast together; their result dims replace the indexed dims in place when those are adjacent,
/// and go first otherwise.
///
/// ```swift
/// let x = torch.arange(12).reshape(3, 4)
/// x[0]                      // tensor([0, 1, 2, 3])          (view)
/// x[0..., 2]                // tensor([ 2,  6, 10])          (view)
/// x[.ellipsis, .newAxis]    // shape [3, 4, 1]
/// x[x .> 5]                 // tensor([ 6,  7,  8,  9, 10, 11])
/// x[torch.tensor([2, 0])]   // rows 2 and 0                  (copy)
/// x[x .> 5] = 0             // assignment, in place
/// ```
public enum TensorIndex {
    /// One position of a dim (negative counts from the end); removes the dim.
    case index(Int)
    /// Python's `start:end:step` (nil = open end; negative positions count from the end; step > 0).
    case slice(_ start: Int? = nil, _ end: Int? = nil, _ step: Int = 1)
    /// Python's `...`: as many full slices as needed.
    case ellipsis
    /// Python's `None`: inserts a size-1 dim.
    case newAxis
    /// An int64/int32 tensor of positions, or a Bool mask.
    case tensor(Tensor)

    /// Python's bare `:` (the whole dim).
    public static var all: TensorIndex { .slice(nil, nil, 1) }
}

/// A value usable inside `x[...]`: Int, ranges (`1..<3`, `1...2`, `0...`, `..<3`, `...2`), Tensor,
/// Swift arrays of integers or Bools (like Python lists), and `TensorIndex` cases.
public protocol TensorIndexConvertible {
    var tensorIndex: TensorIndex { get }
}

extension TensorIndex: TensorIndexConvertible {
    public var tensorIndex: TensorIndex { self }
}

// Lets `.ellipsis`, `.newAxis`, `.all` and `.slice(...)` be written directly inside `x[...]`.
extension TensorIndexConvertible where Self == TensorIndex {
    /// Python's `...`.
    @_disfavoredOverload public static var ellipsis: TensorIndex { TensorIndex.ellipsis }
    /// Python's `None`.
    @_disfavoredOverload public static var newAxis: TensorIndex { TensorIndex.newAxis }
    /// Python's bare `:`.
    @_disfavoredOverload public static var all: TensorIndex { TensorIndex.slice(nil, nil, 1) }
    /// Python's `start:end:step`.
    @_disfavoredOverload public static func slice(_ start: Int? = nil, _ end: Int? = nil, _ step: Int = 1) -> TensorIndex {
        TensorIndex.slice(start, end, step)
    }
}
extension Int: TensorIndexConvertible {
    public var tensorIndex: TensorIndex { .index(self) }
}
extension Int64: TensorIndexConvertible {
    public var tensorIndex: TensorIndex { .index(Int(self)) }
}
extension Int32: TensorIndexConvertible {
    public var tensorIndex: TensorIndex { .index(Int(self)) }
}
extension Range: TensorIndexConvertible where Bound == Int {
    public var tensorIndex: TensorIndex { .slice(lowerBound, upperBound, 1) }
}
extension ClosedRange: TensorIndexConvertible where Bound == Int {
    /// `a...b` includes `b`; `a...(-1)` runs to the end.
    public var tensorIndex: TensorIndex { .slice(lowerBound, upperBound == -1 ? nil : upperBound + 1, 1) }
}
extension PartialRangeFrom: TensorIndexConvertible where Bound == Int {
    public var tensorIndex: TensorIndex { .slice(lowerBound, nil, 1) }
}
extension PartialRangeUpTo: TensorIndexConvertible where Bound == Int {
    public var tensorIndex: TensorIndex { .slice(nil, upperBound, 1) }
}
extension PartialRangeThrough: TensorIndexConvertible where Bound == Int {
    public var tensorIndex: TensorIndex { .slice(nil, upperBound == -1 ? nil : upperBound + 1, 1) }
}
extension Tensor: TensorIndexConvertible {
    public var tensorIndex: TensorIndex { .tensor(self) }
}
extension Array: TensorIndexConvertible where Element: TensorLiteral {
    /// A Swift array acts like a Python list index: `x[[0, 2]]`, `x[[true, false, true]]`.
    public var tensorIndex: TensorIndex { .tensor(torch.tensor(self)) }
}

// MARK: - Subscripts

extension Tensor {
    /// Indexes like PyTorch; see `TensorIndex`. Assigning a tensor broadcasts it into the indexed region.
    public subscript(_ indices: TensorIndexConvertible...) -> Tensor {
        get { getIndexed(indices.map(\.tensorIndex)) }
        set { setIndexed(indices.map(\.tensorIndex), newValue) }
    }

    /// Reads one element as a Double (`let v: Double = x[0, 1]`) or assigns a number to the indexed
    /// region (`x[0] = 1.5`, `g[h .< 0] = 0`).
    @_disfavoredOverload
    public subscript(_ indices: TensorIndexConvertible...) -> Double {
        get { getIndexed(indices.map(\.tensorIndex)).item() }
        set { setIndexed(indices.map(\.tensorIndex), torch.full([], newValue, dtype: dtype), valueIsNumber: true) }
    }

    /// Indexing with a list built at run time: `x[indices: [0, TensorIndex.ellipsis]]`.
    public subscript(indices indices: [TensorIndexConvertible]) -> Tensor {
        get { getIndexed(indices.map(\.tensorIndex)) }
        set { setIndexed(indices.map(\.tensorIndex), newValue) }
    }
}

// MARK: - Resolution

/// A resolved index expression: the view left by the basic indices and the tensor indices to apply to
/// it, as (first dim of the view, tensor) pairs (a k-dim Bool mask covers k dims).
struct ResolvedIndex {
    var view: Tensor
    var entries: [(dim: Int, index: Tensor)]
}

/// Python's clamping of slice bounds for a positive step.
func clampSlice(_ start: Int?, _ end: Int?, size: Int) -> (Int, Int) {
    var s = start ?? 0, e = end ?? size
    if s < 0 { s += size }
    if e < 0 { e += size }
    s = Swift.min(Swift.max(s, 0), size)
    e = Swift.min(Swift.max(e, 0), size)
    return (s, Swift.max(e, s))
}

/// PyTorch's message for more indices than dims.
func tooManyIndicesMessage(rank: Int) -> String { "too many indices for tensor of dimension \(rank)" }

extension Tensor {
    /// Applies the basic indices as views (recorded when grad mode is on) and collects the tensor indices.
    func resolveIndices(_ items: [TensorIndex]) -> ResolvedIndex {
        var specified = 0, ellipses = 0
        for it in items {
            switch it {
            case .index, .slice: specified += 1
            case .ellipsis: ellipses += 1
            case .newAxis: break
            case .tensor(let t): specified += (t.dtype == .bool || t.dtype == .uint8) ? t.dim : 1
            }
        }
        precondition(ellipses <= 1, "an index can only have a single ellipsis ('...')")
        precondition(specified <= dim, tooManyIndicesMessage(rank: dim))
        var result = self, d = 0, realDim = 0
        var entries: [(dim: Int, index: Tensor)] = []
        func selectChecked(_ i: Int) {
            let size = result.shape[d]
            precondition(i >= -size && i < size, indexOutOfBoundsMessage(index: Int64(i), dim: realDim, size: size))
            result = result.select(d, i)
            realDim += 1
        }
        for it in items {
            switch it {
            case .index(let i):
                selectChecked(i)
            case .slice(let s, let e, let step):
                precondition(step > 0, "step must be greater than zero")
                let (a, b) = clampSlice(s, e, size: result.shape[d])
                // Like PyTorch, full slices are skipped unless they are the whole expression.
                if !(a == 0 && b == result.shape[d] && step == 1) || items.count == 1 {
                    result = result.slice(d, start: a, end: b, step: step)
                }
                d += 1; realDim += 1
            case .ellipsis:
                d += dim - specified; realDim += dim - specified
            case .newAxis:
                result = result.unsqueeze(d)
                d += 1
            case .tensor(let t):
                switch t.dtype {
                case .int64, .int32:
                    if t.dim == 0 { selectChecked(t.item(as: Int.self)) } else {
                        entries.append((d, t)); d += 1; realDim += 1
                    }
                case .bool, .uint8:
                    if t.dim == 0 {
                        result = result.unsqueeze(d)
                        entries.append((d, torch.zeros([t.item() != 0 ? 1 : 0], dtype: .int64)))
                        d += 1
                    } else {
                        entries.append((d, t)); d += t.dim; realDim += t.dim
                    }
                default:
                    preconditionFailure(indexDTypeMessage)
                }
            }
        }
        return ResolvedIndex(view: result, entries: entries)
    }

    /// `self[items]`: a view for basic indices, a copy (IndexBackward0) with tensor indices.
    func getIndexed(_ items: [TensorIndex]) -> Tensor {
        let r = resolveIndices(items)
        if r.entries.isEmpty {
            if r.view === self { return viewOp("AliasBackward0", shape: shape, strides: strides, offset: storageOffset, backward: { $0 }) }
            return r.view
        }
        // The basic indices recorded themselves as views (select, slice, unsqueeze); the tensor indices as one op.
        if _slowPath(ONNXTrace.isOn),
           let out = ONNXTrace.op(.index(dims: r.entries.map(\.dim)), [r.view] + r.entries.map(\.index), { advancedIndexed(r) }) {
            return out
        }
        return advancedIndexed(r)
    }

    /// The copy that `r`'s tensor indices pick from its view.
    private func advancedIndexed(_ r: ResolvedIndex) -> Tensor {
        if let out = leadingMaskSelect(r) { return out }
        let c = torch.noGrad { canonicalizeIndices(r.view, r.entries) }
        return advancedIndex(c, base: r.view)
    }

    /// `view[mask]` with one Bool mask over the leading dims: a single compaction pass instead of
    /// nonzero + gather. Nil when the expression has another shape.
    private func leadingMaskSelect(_ r: ResolvedIndex) -> Tensor? {
        guard r.entries.count == 1, r.entries[0].dim == 0 else { return nil }
        let mask = r.entries[0].index, view = r.view
        let k = mask.dim
        guard mask.dtype == .bool, k >= 1, k <= view.dim, Array(view.shape[..<k]) == mask.shape else { return nil }
        let post = Array(view.shape[k...])
        let postN = shapeNumel(post)
        guard postN > 0 else { return nil }
        let flat = torch.noGrad { () -> Tensor in
            let m = post.isEmpty ? mask : mask.reshape(mask.shape + [Int](repeating: 1, count: post.count)).expand(view.shape)
            return maskedSelectKernel(view, m, shape: view.shape)
        }
        let shape = [flat.numel / postN] + post
        let out = Tensor(storage: flat.storage, shape: shape, strides: contiguousStrides(shape), offset: 0, dtype: flat.dtype)
        if view.needsGrad {
            let inShape = view.shape
            record("IndexBackward0", out, inputs: [view]) { _, g in
                [torch.zeros(inShape, dtype: g.dtype, device: g.device).indexPut_([mask], g, accumulate: true)]
            }
        }
        return out
    }

    /// `self[items] = value`, in place: a copy into the view for basic indices, an index_put_ for tensor
    /// indices. The autograd node is named like PyTorch's: CopySlices when basic indices made a view,
    /// else IndexPutBackward0 (MaskedFillBackward0 for `x[mask] = number`).
    func setIndexed(_ items: [TensorIndex], _ value: Tensor, valueIsNumber: Bool = false) {
        let r = torch.noGrad { resolveIndices(items) }
        let name: String
        if r.entries.isEmpty {
            checkInPlace("copy_")
            var v = preparedValues(value, resultShape: r.view.shape, dtype: dtype)
            if v.storage === storage { v = v.contiguousCopy() }
            copyKernel(from: v, into: r.view)
            name = "CopySlices"
        } else {
            checkInPlace("index_put_")
            let masked = torch.noGrad { indexedWrite(r.view, r.entries, value, accumulate: false) }
            name = r.view !== self ? "CopySlices" : (masked && valueIsNumber ? "MaskedFillBackward0" : "IndexPutBackward0")
        }
        storage.bumpVersion()
        if anyNeedsGrad(self, value) {
            let needValue = value._requiresGrad, vShape = value.shape, vType = value.dtype
            rebaseHistory(name, inputs: [value]) { _, g in
                let gSelf = g.clone()
                gSelf.setIndexed(items, torch.zeros([], dtype: g.dtype))
                return [gSelf, needValue ? reduceToValue(g.getIndexed(items), shape: vShape, dtype: vType) : nil]
            }
        }
    }
}
