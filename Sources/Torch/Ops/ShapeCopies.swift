/// Shape ops that copy: repeat tile flip roll tril triu diag diagEmbed trace repeatInterleave and
/// torch.meshgrid, plus the `diagonal` view they build on.

// MARK: - Messages (separate so tests can check them)

/// PyTorch's message for a repeat count list shorter than the tensor's rank or giving a negative size.
func repeatErrorMessage(shape: [Int], repeats: [Int]) -> String? {
    if repeats.count < shape.count {
        return "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"
    }
    let padded = [Int](repeating: 1, count: repeats.count - shape.count) + shape
    let out = zip(padded, repeats).map { $0 * $1 }
    if let bad = out.first(where: { $0 < 0 }) {
        return "Trying to create tensor with negative dimension \(bad): \(shapeString(out))"
    }
    return nil
}

/// PyTorch's message for a dim listed twice (flip, roll).
func duplicateDimErrorMessage(_ dims: [Int]) -> String? {
    var seen = Set<Int>()
    for d in dims where !seen.insert(d).inserted { return "dim \(d) appears multiple times in the list of dims" }
    return nil
}

/// PyTorch's message when `roll`'s shifts and dims don't pair up, or nil.
func rollErrorMessage(shifts: [Int], dims: [Int]) -> String? {
    if shifts.isEmpty { return "`shifts` required" }
    if dims.isEmpty && shifts.count == 1 { return nil }
    if shifts.count != dims.count { return "shifts and dimensions must align. shifts: \(shifts.count), dims:\(dims.count)" }
    return nil
}

/// Size of the diagonal `offset` of a `rows × cols` plane.
func diagonalLength(rows: Int, cols: Int, offset: Int) -> Int {
    offset >= 0 ? Swift.max(Swift.min(rows, cols - offset), 0) : Swift.max(Swift.min(rows + offset, cols), 0)
}

/// The view geometry of `diagonal(offset, d1, d2)` (dims already normalised and distinct).
private func diagonalGeometry(shape: [Int], strides: [Int], storageOffset: Int, offset: Int, d1: Int, d2: Int)
    -> (shape: [Int], strides: [Int], offset: Int) {
    let n = diagonalLength(rows: shape[d1], cols: shape[d2], offset: offset)
    var off = storageOffset
    if n > 0 { off += offset >= 0 ? offset * strides[d2] : -offset * strides[d1] }
    var ns: [Int] = [], st: [Int] = []
    for i in 0..<shape.count where i != d1 && i != d2 { ns.append(shape[i]); st.append(strides[i]) }
    ns.append(n)
    st.append(strides[d1] + strides[d2])
    return (ns, st, off)
}

/// Copies the geometry `(shape, strides, offset)` of `x`'s storage into a new contiguous tensor.
private func copyGeometry(_ x: Tensor, shape: [Int], strides: [Int], offset: Int) -> Tensor {
    let src = Tensor(storage: x.storage, shape: shape, strides: strides, offset: offset, dtype: x.dtype)
    return src.contiguousCopy()
}

extension Tensor {
    // MARK: - repeat / tile / repeatInterleave

    /// Repeats the tensor along each dim (`sizes` may have more entries than dims: leading dims are added).
    ///
    /// ```swift
    /// torch.tensor([1, 2]).repeat(2, 2)   // [[1, 2, 1, 2], [1, 2, 1, 2]]
    /// ```
    public func `repeat`(_ sizes: Int...) -> Tensor { self.repeat(sizes) }

    /// `repeat` with the counts as an array.
    public func `repeat`(_ sizes: [Int]) -> Tensor {
        if let msg = repeatErrorMessage(shape: shape, repeats: sizes) { preconditionFailure(msg) }
        let lead = sizes.count - dim
        let padShape = [Int](repeating: 1, count: lead) + shape
        let padStrides = [Int](repeating: 0, count: lead) + strides
        // Output viewed as [r0, s0, r1, s1, ...] is the input broadcast over the r dims.
        var wide: [Int] = [], wideStrides: [Int] = []
        for i in 0..<sizes.count {
            wide.append(sizes[i]); wide.append(padShape[i])
            wideStrides.append(0); wideStrides.append(padStrides[i])
        }
        let outShape = zip(padShape, sizes).map { $0 * $1 }
        let out = Tensor(uninitializedShape: outShape, dtype: dtype)
        if out.numel > 0 {
            let src = Tensor(storage: storage, shape: wide, strides: wideStrides, offset: storageOffset, dtype: dtype)
            copyKernel(from: src, into: Tensor(storage: out.storage, shape: wide, strides: contiguousStrides(wide), offset: 0, dtype: dtype))
        }
        if needsGrad {
            let inShape = shape
            let repeated = (0..<sizes.count).filter { sizes[$0] != 1 }.map { 2 * $0 }
            record("RepeatBackward0", out, inputs: [self]) { _, g in
                if repeated.isEmpty { return [g.reshape(inShape)] }
                return [g.reshape(wide).sum(dim: repeated).reshape(inShape)]
            }
        }
        return out
    }

    /// PyTorch's `tile`: like `repeat`, but fewer counts than dims repeat the trailing dims.
    public func tile(_ dims: Int...) -> Tensor { tile(dims) }

    /// `tile` with the counts as an array.
    public func tile(_ dims: [Int]) -> Tensor {
        let counts = dims.count < dim ? [Int](repeating: 1, count: dim - dims.count) + dims : dims
        return self.repeat(counts)
    }

    /// Repeats each element `repeats` times along `dim` (the flattened tensor when `dim` is nil).
    ///
    /// ```swift
    /// torch.tensor([1, 2]).repeatInterleave(2)   // [1, 1, 2, 2]
    /// ```
    public func repeatInterleave(_ repeats: Int, dim: Int? = nil) -> Tensor {
        precondition(repeats >= 0, "Repeats must be non-negative")
        let input = dim == nil ? flatten() : self
        let d = normalizeDim(dim ?? 0, input.dim, op: "repeat_interleave")
        if input.dim == 0 { return input.expand([repeats]).contiguous() }
        var target = input.shape
        target.insert(repeats, at: d + 1)
        return input.unsqueeze(d + 1).expand(target).contiguous().flatten(startDim: d, endDim: d + 1)
    }

    // MARK: - flip / roll

    /// Reverses the order of elements along `dims`.
    ///
    /// ```swift
    /// torch.arange(3).flip([0])   // [2, 1, 0]
    /// ```
    public func flip(_ dims: [Int]) -> Tensor {
        let ds = dims.map { normalizeDim($0, dim, op: "flip") }
        if let msg = duplicateDimErrorMessage(ds) { preconditionFailure(msg) }
        var st = strides, off = storageOffset
        for d in ds where shape[d] > 0 {
            off += (shape[d] - 1) * strides[d]
            st[d] = -strides[d]
        }
        let out = copyGeometry(self, shape: shape, strides: st, offset: off)
        if needsGrad { record("FlipBackward0", out, inputs: [self]) { _, g in [g.flip(ds)] } }
        return out
    }

    /// `flip` with the dims as variadic arguments: `x.flip(0, 1)`.
    public func flip(_ dims: Int...) -> Tensor { flip(dims) }
    /// `flip` with PyTorch's keyword: `x.flip(dims: [0])`.
    public func flip(dims: [Int]) -> Tensor { flip(dims) }
    /// Flips the last dim (PyTorch's `fliplr` flips dim 1).
    public func fliplr() -> Tensor {
        precondition(dim >= 2, "Input must be >= 2-d.")
        return flip([1])
    }
    /// Flips dim 0.
    public func flipud() -> Tensor {
        precondition(dim >= 1, "Input must be >= 1-d.")
        return flip([0])
    }

    /// Rotates elements along `dims` by `shifts` (elements leaving one end come back at the other);
    /// with no dims, rolls the flattened tensor and restores the shape.
    ///
    /// ```swift
    /// torch.arange(4).roll(shifts: 1)   // [3, 0, 1, 2]
    /// ```
    public func roll(shifts: [Int], dims: [Int] = []) -> Tensor {
        if let msg = rollErrorMessage(shifts: shifts, dims: dims) { preconditionFailure(msg) }
        let ds = dims.map { normalizeDim($0, dim, op: "roll") }
        var out: Tensor
        if ds.isEmpty {
            let flat = contiguousCopy()
            let rolled = rollForward(Tensor(storage: flat.storage, shape: [numel], strides: [1], offset: 0, dtype: dtype), shifts[0], 0)
            out = Tensor(storage: rolled.storage, shape: shape, strides: contiguousStrides(shape), offset: 0, dtype: dtype)
        } else {
            out = self
            for (s, d) in zip(shifts, ds) { out = rollForward(out, s, d) }
            if out === self { out = contiguousCopy() }
        }
        if needsGrad {
            let back = shifts.map { -$0 }
            record("RollBackward0", out, inputs: [self]) { _, g in [g.roll(shifts: back, dims: ds)] }
        }
        return out
    }

    /// Rolls by one shift along one dim (or the flattened tensor when `dims` is nil).
    public func roll(shifts: Int, dims: Int? = nil) -> Tensor { roll(shifts: [shifts], dims: dims.map { [$0] } ?? []) }
    /// `roll` with the shift given positionally: `x.roll(1, dims: 0)`.
    public func roll(_ shifts: Int, dims: Int? = nil) -> Tensor { roll(shifts: shifts, dims: dims) }

    // MARK: - tril / triu

    /// The lower triangle of the last two dims (elements with `col - row <= diagonal`); the rest is zero.
    ///
    /// ```swift
    /// torch.ones(3, 3).tril(diagonal: -1)   // ones strictly below the main diagonal
    /// ```
    public func tril(diagonal: Int = 0) -> Tensor { triangle(diagonal, lower: true) }
    /// The upper triangle of the last two dims (elements with `col - row >= diagonal`); the rest is zero.
    public func triu(diagonal: Int = 0) -> Tensor { triangle(diagonal, lower: false) }
    /// `tril` with the diagonal positional: `x.tril(-1)`.
    public func tril(_ diagonal: Int) -> Tensor { triangle(diagonal, lower: true) }
    /// `triu` with the diagonal positional: `x.triu(1)`.
    public func triu(_ diagonal: Int) -> Tensor { triangle(diagonal, lower: false) }

    private func triangle(_ k: Int, lower: Bool) -> Tensor {
        precondition(dim >= 2, "\(lower ? "tril" : "triu"): input tensor must have at least 2 dimensions")
        let out = contiguousCopy()
        switch out.device {
        case .cpu: CPUElementwise.zeroTriangle(out, diagonal: k, lower: lower)
        case .cuda: out.hostAccessOnDevice()
        }
        if needsGrad {
            record(lower ? "TrilBackward0" : "TriuBackward0", out, inputs: [self]) { _, g in [g.triangle(k, lower: lower)] }
        }
        return out
    }

    // MARK: - diagonal / diag / diagEmbed / trace

    /// The diagonal `offset` of the planes spanned by `dim1` and `dim2`, as a view whose last dim
    /// runs along the diagonal (positive offsets are above the main diagonal).
    ///
    /// ```swift
    /// torch.arange(9).view(3, 3).diagonal()            // [0, 4, 8]
    /// torch.arange(9).view(3, 3).diagonal(offset: 1)   // [1, 5]
    /// ```
    public func diagonal(offset: Int = 0, dim1: Int = 0, dim2: Int = 1) -> Tensor {
        let d1 = normalizeDim(dim1, dim, op: "diagonal"), d2 = normalizeDim(dim2, dim, op: "diagonal")
        precondition(d1 != d2, "diagonal dimensions cannot be identical \(dim1), \(dim2)")
        let geo = diagonalGeometry(shape: shape, strides: strides, storageOffset: storageOffset, offset: offset, d1: d1, d2: d2)
        let inShape = shape
        return viewOp("DiagonalBackward0", shape: geo.shape, strides: geo.strides, offset: geo.offset, backward: { g in
            embedGradient(g, into: inShape) { $0.diagonal(offset: offset, dim1: d1, dim2: d2) }
        })
    }

    /// For a 1-D tensor, the square matrix with it on diagonal `diagonal`; for a 2-D tensor, a copy of
    /// that diagonal as a 1-D tensor.
    ///
    /// ```swift
    /// torch.tensor([1, 2]).diag()              // [[1, 0], [0, 2]]
    /// torch.eye(3).diag(diagonal: 1)           // [0, 0]
    /// ```
    public func diag(diagonal k: Int = 0) -> Tensor {
        switch dim {
        case 1:
            return diagEmbed(offset: k, dim1: 0, dim2: 1)
        case 2:
            let geo = diagonalGeometry(shape: shape, strides: strides, storageOffset: storageOffset, offset: k, d1: 0, d2: 1)
            let out = copyGeometry(self, shape: geo.shape, strides: geo.strides, offset: geo.offset)
            if needsGrad {
                let inShape = shape
                record("DiagonalBackward0", out, inputs: [self]) { _, g in
                    [embedGradient(g, into: inShape) { $0.diagonal(offset: k) }]
                }
            }
            return out
        default:
            preconditionFailure("diag(): Supports 1D or 2D tensors. Got \(dim)D")
        }
    }

    /// `diag` with the diagonal positional: `x.diag(1)`.
    public func diag(_ k: Int) -> Tensor { diag(diagonal: k) }

    /// Puts the last dim of this tensor on diagonal `offset` of the planes `(dim1, dim2)` of a new,
    /// otherwise zero tensor with one more dim.
    ///
    /// ```swift
    /// torch.ones(2, 3).diagEmbed().shape   // [2, 3, 3]
    /// ```
    public func diagEmbed(offset: Int = 0, dim1: Int = -2, dim2: Int = -1) -> Tensor {
        precondition(dim >= 1, "diag_embed: expected a tensor with at least 1 dimension")
        let r = dim + 1
        let d1 = normalizeDim(dim1, r, op: "diag_embed"), d2 = normalizeDim(dim2, r, op: "diag_embed")
        precondition(d1 != d2, "diagonal dimensions cannot be identical \(dim1), \(dim2)")
        let n = shape[dim - 1] + Swift.abs(offset)
        var outShape = Array(shape.dropLast())
        let (lo, hi) = (Swift.min(d1, d2), Swift.max(d1, d2))
        outShape.insert(n, at: lo)
        outShape.insert(n, at: hi)
        let out = torch.zeros(outShape, dtype: dtype)
        if numel > 0 {
            let geo = diagonalGeometry(shape: outShape, strides: out.strides, storageOffset: 0, offset: offset, d1: d1, d2: d2)
            copyKernel(from: self, into: Tensor(storage: out.storage, shape: geo.shape, strides: geo.strides, offset: geo.offset, dtype: dtype))
        }
        if needsGrad {
            record("DiagEmbedBackward0", out, inputs: [self]) { _, g in [g.diagonal(offset: offset, dim1: d1, dim2: d2)] }
        }
        return out
    }

    /// Sum of the main diagonal of a matrix (integer inputs give int64).
    public func trace() -> Tensor {
        precondition(dim == 2, "trace: expected a matrix, but got tensor with dim \(dim)")
        precondition(dtype != .bool, "\"trace\" not implemented for 'Bool'")
        let geo = diagonalGeometry(shape: shape, strides: strides, storageOffset: storageOffset, offset: 0, d1: 0, d2: 1)
        let diag = Tensor(storage: storage, shape: geo.shape, strides: geo.strides, offset: geo.offset, dtype: dtype)
        let out = sumForward(diag, ReductionPlan(geo.shape, dims: nil, keepdim: false, op: "trace"), dtype: nil)
        if needsGrad {
            let inShape = shape, k = geo.shape[0]
            record("TraceBackward0", out, inputs: [self]) { _, g in
                [embedGradient(g.expand([k]), into: inShape) { $0.diagonal() }]
            }
        }
        return out
    }
}

/// Rotates `x` by `shift` along `d` into a new contiguous tensor (no autograd).
private func rollForward(_ x: Tensor, _ shift: Int, _ d: Int) -> Tensor {
    let out = Tensor(uninitializedShape: x.shape, dtype: x.dtype)
    let n = x.shape[d]
    if out.numel == 0 { return out }
    let s = ((shift % n) + n) % n
    if s == 0 { copyKernel(from: x, into: out); return out }
    // out[s..<n] = x[0..<n-s], out[0..<s] = x[n-s..<n]
    func part(_ srcStart: Int, _ dstStart: Int, _ len: Int) {
        var sh = x.shape
        sh[d] = len
        let src = Tensor(storage: x.storage, shape: sh, strides: x.strides, offset: x.storageOffset + srcStart * x.strides[d], dtype: x.dtype)
        let dst = Tensor(storage: out.storage, shape: sh, strides: out.strides, offset: dstStart * out.strides[d], dtype: x.dtype)
        copyKernel(from: src, into: dst)
    }
    part(0, s, n - s)
    part(n - s, 0, s)
    return out
}

extension torch {
    /// Coordinate grids from 0-d or 1-D tensors: output `i` varies along dim `i` ("ij", matrix
    /// indexing) or, with "xy" (Cartesian indexing), the first two dims are swapped. The grids are
    /// broadcast views of the inputs.
    ///
    /// ```swift
    /// let (xs, ys) = (torch.arange(3), torch.arange(2))
    /// let g = torch.meshgrid([xs, ys], indexing: "xy")   // two tensors of shape [2, 3]
    /// ```
    public static func meshgrid(_ tensors: [Tensor], indexing: String = "ij") -> [Tensor] {
        precondition(!tensors.isEmpty, "meshgrid expects a non-empty TensorList")
        for i in 0..<(tensors.count - 1) {
            precondition(tensors[i].dtype == tensors[i + 1].dtype, "meshgrid expects all tensors to have the same dtype")
        }
        precondition(indexing == "ij" || indexing == "xy",
                     "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: \(indexing)")
        for t in tensors {
            precondition(t.dim <= 1, "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got a tensor of shape \(shapeString(t.shape))")
        }
        let n = tensors.count
        // Output dim of input i: "xy" swaps the first two.
        let position = (0..<n).map { i in indexing == "xy" && n >= 2 && i < 2 ? 1 - i : i }
        var shape = [Int](repeating: 1, count: n)
        for i in 0..<n { shape[position[i]] = tensors[i].numel }
        return (0..<n).map { i in
            var v = [Int](repeating: 1, count: n)
            v[position[i]] = -1
            return tensors[i].reshape(v).expand(shape)
        }
    }

    /// `meshgrid` with the tensors as variadic arguments.
    public static func meshgrid(_ tensors: Tensor..., indexing: String = "ij") -> [Tensor] {
        meshgrid(tensors, indexing: indexing)
    }

    public static func tile(_ x: Tensor, _ dims: [Int]) -> Tensor { x.tile(dims) }
    public static func flip(_ x: Tensor, _ dims: [Int]) -> Tensor { x.flip(dims) }
    public static func flip(_ x: Tensor, dims: [Int]) -> Tensor { x.flip(dims) }
    public static func fliplr(_ x: Tensor) -> Tensor { x.fliplr() }
    public static func flipud(_ x: Tensor) -> Tensor { x.flipud() }
    public static func roll(_ x: Tensor, shifts: [Int], dims: [Int] = []) -> Tensor { x.roll(shifts: shifts, dims: dims) }
    public static func roll(_ x: Tensor, shifts: Int, dims: Int? = nil) -> Tensor { x.roll(shifts: shifts, dims: dims) }
    public static func roll(_ x: Tensor, _ shifts: Int, dims: Int? = nil) -> Tensor { x.roll(shifts: shifts, dims: dims) }
    public static func tril(_ x: Tensor, diagonal: Int = 0) -> Tensor { x.tril(diagonal: diagonal) }
    public static func triu(_ x: Tensor, diagonal: Int = 0) -> Tensor { x.triu(diagonal: diagonal) }
    public static func tril(_ x: Tensor, _ diagonal: Int) -> Tensor { x.tril(diagonal: diagonal) }
    public static func triu(_ x: Tensor, _ diagonal: Int) -> Tensor { x.triu(diagonal: diagonal) }
    public static func diag(_ x: Tensor, diagonal: Int = 0) -> Tensor { x.diag(diagonal: diagonal) }
    public static func diag(_ x: Tensor, _ diagonal: Int) -> Tensor { x.diag(diagonal: diagonal) }
    public static func diagonal(_ x: Tensor, offset: Int = 0, dim1: Int = 0, dim2: Int = 1) -> Tensor {
        x.diagonal(offset: offset, dim1: dim1, dim2: dim2)
    }
    public static func diagEmbed(_ x: Tensor, offset: Int = 0, dim1: Int = -2, dim2: Int = -1) -> Tensor {
        x.diagEmbed(offset: offset, dim1: dim1, dim2: dim2)
    }
    public static func trace(_ x: Tensor) -> Tensor { x.trace() }
    public static func repeatInterleave(_ x: Tensor, _ repeats: Int, dim: Int? = nil) -> Tensor {
        x.repeatInterleave(repeats, dim: dim)
    }
}
