/// Ops that return views sharing storage: view reshape flatten unflatten squeeze unsqueeze transpose
/// t permute expand expandAs narrow select asStrided, with their backward formulas.

/// Infers a single -1 in a requested shape, stopping with PyTorch's messages when invalid.
func inferShape(_ requested: [Int], numel: Int, op: String) -> [Int] {
    var shape = requested
    var inferIndex: Int? = nil
    var known = 1
    for (i, s) in requested.enumerated() {
        if s == -1 {
            precondition(inferIndex == nil, "\(op): only one dimension can be inferred")
            inferIndex = i
        } else {
            precondition(s >= 0, "\(op): invalid shape dimension \(s)")
            known *= s
        }
    }
    if let i = inferIndex {
        precondition(known != 0 && numel % known == 0, "\(op): shape '\(shapeString(requested))' is invalid for input of size \(numel)")
        shape[i] = numel / known
    } else {
        precondition(known == numel, "\(op): shape '\(shapeString(requested))' is invalid for input of size \(numel)")
    }
    return shape
}

/// Strides that view `oldShape`/`oldStrides` as `newShape` without copying, or nil (PyTorch's computeStride).
func viewStrides(oldShape: [Int], oldStrides: [Int], newShape: [Int]) -> [Int]? {
    if oldShape.isEmpty { return [Int](repeating: 1, count: newShape.count) }
    let numel = shapeNumel(oldShape)
    if numel == 0 { return oldShape == newShape ? oldStrides : contiguousStrides(newShape) }
    var newStrides = [Int](repeating: 0, count: newShape.count)
    var viewD = newShape.count - 1
    var chunkBaseStride = oldStrides[oldStrides.count - 1]
    var tensorNumel = 1
    var viewNumel = 1
    var tensorD = oldShape.count - 1
    while tensorD >= 0 {
        tensorNumel *= oldShape[tensorD]
        if tensorD == 0 || (oldShape[tensorD - 1] != 1 && oldStrides[tensorD - 1] != tensorNumel * chunkBaseStride) {
            while viewD >= 0 && (viewNumel < tensorNumel || newShape[viewD] == 1) {
                newStrides[viewD] = viewNumel * chunkBaseStride
                viewNumel *= newShape[viewD]
                viewD -= 1
            }
            if viewNumel != tensorNumel { return nil }
            if tensorD > 0 {
                chunkBaseStride = oldStrides[tensorD - 1]
                tensorNumel = 1
                viewNumel = 1
            }
        }
        tensorD -= 1
    }
    if viewD != -1 { return nil }
    return newStrides
}

extension Tensor {
    /// A view with a new shape (one dim may be -1). Stops if the strides don't allow a view.
    public func view(_ shape: Int...) -> Tensor { view(shape) }

    /// A view with a new shape given as an array.
    public func view(_ shape: [Int]) -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.reshape(shape), [self], { view(shape) }) { return r }
        let newShape = inferShape(shape, numel: numel, op: "view")
        guard let st = viewStrides(oldShape: self.shape, oldStrides: strides, newShape: newShape) else {
            preconditionFailure("view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
        }
        return viewOp("ViewBackward0", shape: newShape, strides: st, offset: storageOffset, saved: sizesAttribute)
    }

    /// `self_sym_sizes`: the input's shape, PyTorch's only saved attribute of a view/reshape/expand.
    private var sizesAttribute: () -> [SavedAttribute] {
        let inShape = shape
        return { [.ints("self_sym_sizes", inShape)] }
    }

    /// Reinterprets as `dtype` of the same element size (no conversion).
    public func view(dtype: DType) -> Tensor {
        precondition(dtype.itemSize == self.dtype.itemSize, "view(dtype): only dtypes of the same element size are supported (\(self.dtype) → \(dtype))")
        let t = Tensor(storage: storage, shape: shape, strides: strides, offset: storageOffset, dtype: dtype)
        t.viewBase = viewBase ?? self
        return t
    }

    /// Same data with a new shape: a view when possible, else a copy.
    public func reshape(_ shape: Int...) -> Tensor { reshape(shape) }

    /// `reshape` with the shape as an array.
    public func reshape(_ shape: [Int]) -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.reshape(shape), [self], { reshape(shape) }) { return r }
        let newShape = inferShape(shape, numel: numel, op: "reshape")
        if newShape == self.shape {
            return viewOp("ViewBackward0", shape: newShape, strides: strides, offset: storageOffset, saved: sizesAttribute)
        }
        if let st = viewStrides(oldShape: self.shape, oldStrides: strides, newShape: newShape) {
            return viewOp("ViewBackward0", shape: newShape, strides: st, offset: storageOffset, saved: sizesAttribute)
        }
        return clone().view(newShape)
    }

    /// Reshapes like `other`.
    public func viewAs(_ other: Tensor) -> Tensor { view(other.shape) }
    public func reshapeAs(_ other: Tensor) -> Tensor { reshape(other.shape) }

    /// Flattens dims `startDim...endDim` into one.
    public func flatten(startDim: Int = 0, endDim: Int = -1) -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.flatten(start: startDim, end: endDim), [self], { flatten(startDim: startDim, endDim: endDim) }) { return r }
        if dim == 0 { return reshape([1]) }
        let s = normalizeDim(startDim, dim, op: "flatten"), e = normalizeDim(endDim, dim, op: "flatten")
        precondition(s <= e, "flatten() has invalid args: start_dim cannot come after end_dim")
        if s == e { return self }
        var newShape = Array(shape[..<s])
        newShape.append(shape[s...e].reduce(1, *))
        newShape.append(contentsOf: shape[(e + 1)...])
        return reshape(newShape)
    }

    /// Splits dim `d` into `sizes`.
    public func unflatten(_ d: Int, _ sizes: [Int]) -> Tensor {
        let dd = normalizeDim(d, dim, op: "unflatten")
        let inner = inferShape(sizes, numel: shape[dd], op: "unflatten")
        var newShape = Array(shape[..<dd])
        newShape.append(contentsOf: inner)
        newShape.append(contentsOf: shape[(dd + 1)...])
        return view(newShape)
    }

    /// Removes all size-1 dims.
    public func squeeze() -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.squeeze(nil), [self], { squeeze() }) { return r }
        var ns: [Int] = [], st: [Int] = []
        for (s, t) in zip(shape, strides) where s != 1 { ns.append(s); st.append(t) }
        return viewOp("SqueezeBackward0", shape: ns, strides: st, offset: storageOffset, saved: sizesAttribute)
    }

    /// Removes dim `d` if its size is 1.
    public func squeeze(_ d: Int) -> Tensor { squeeze(dim: [d]) }

    /// Removes the listed dims that have size 1.
    public func squeeze(dim dims: [Int]) -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.squeeze(dims), [self], { squeeze(dim: dims) }) { return r }
        if dim == 0 { return viewOp("SqueezeBackward1", shape: [], strides: [], offset: storageOffset, saved: squeezeAttributes(dims)) }
        let ds = Set(dims.map { normalizeDim($0, dim, op: "squeeze") })
        var ns: [Int] = [], st: [Int] = []
        for i in 0..<dim where !(ds.contains(i) && shape[i] == 1) { ns.append(shape[i]); st.append(strides[i]) }
        return viewOp("SqueezeBackward1", shape: ns, strides: st, offset: storageOffset, saved: squeezeAttributes(dims))
    }

    private func squeezeAttributes(_ dims: [Int]) -> () -> [SavedAttribute] {
        let inShape = shape
        return { [dims.count == 1 ? .int("dim", dims[0]) : .ints("dim", dims), .ints("self_sym_sizes", inShape)] }
    }

    /// Inserts a size-1 dim at `d`.
    public func unsqueeze(_ d: Int) -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.unsqueeze(d), [self], { unsqueeze(d) }) { return r }
        let dd = normalizeDim(d, dim + 1, op: "unsqueeze")
        var ns = shape, st = strides
        let newStride = dd < dim ? shape[dd] * strides[dd] : 1
        ns.insert(1, at: dd)
        st.insert(newStride, at: dd)
        return viewOp("UnsqueezeBackward0", shape: ns, strides: st, offset: storageOffset, saved: { [.int("dim", d)] })
    }

    /// Swaps two dims.
    public func transpose(_ d0: Int, _ d1: Int) -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.transpose(d0, d1), [self], { transpose(d0, d1) }) { return r }
        if dim == 0 {
            return viewOp("TransposeBackward0", shape: [], strides: [], offset: storageOffset, saved: { [.int("dim0", d0), .int("dim1", d1)] })
        }
        let a = normalizeDim(d0, dim, op: "transpose"), b = normalizeDim(d1, dim, op: "transpose")
        var ns = shape, st = strides
        ns.swapAt(a, b); st.swapAt(a, b)
        return viewOp("TransposeBackward0", shape: ns, strides: st, offset: storageOffset,
                      saved: { [.int("dim0", d0), .int("dim1", d1)] }) { g in g.transpose(a, b) }
    }

    /// PyTorch's `swapaxes`/`swapdims`.
    public func swapaxes(_ d0: Int, _ d1: Int) -> Tensor { transpose(d0, d1) }

    /// Transpose of a ≤ 2-D tensor.
    public func t() -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.t, [self], { t() }) { return r }
        precondition(dim <= 2, "t() expects a tensor with <= 2 dimensions, but self is \(dim)D")
        if dim < 2 { return viewOp("TBackward0", shape: shape, strides: strides, offset: storageOffset) }
        return viewOp("TBackward0", shape: [shape[1], shape[0]], strides: [strides[1], strides[0]], offset: storageOffset, backward: { g in g.t() })
    }

    /// PyTorch's `.T` (reverses all dims) and `.mT` (swaps the last two).
    public var T: Tensor { permute(Array((0..<dim).reversed())) }
    public var mT: Tensor { transpose(-2, -1) }

    /// Reorders dims.
    public func permute(_ dims: Int...) -> Tensor { permute(dims) }

    /// Reorders dims given as an array.
    public func permute(_ dims: [Int]) -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.permute(dims), [self], { permute(dims) }) { return r }
        precondition(dims.count == dim, "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = \(dim) is not equal to len(dims) = \(dims.count)")
        let ds = dims.map { normalizeDim($0, dim, op: "permute") }
        precondition(Set(ds).count == ds.count, "permute(): duplicate dims are not allowed.")
        var inverse = [Int](repeating: 0, count: ds.count)
        for (i, d) in ds.enumerated() { inverse[d] = i }
        return viewOp("PermuteBackward0", shape: ds.map { shape[$0] }, strides: ds.map { strides[$0] }, offset: storageOffset,
                      saved: { [.ints("dims", dims)] }) { g in g.permute(inverse) }
    }

    /// Moves dims to new positions.
    public func movedim(_ source: Int, _ destination: Int) -> Tensor {
        let s = normalizeDim(source, dim, op: "movedim"), d = normalizeDim(destination, dim, op: "movedim")
        var order = Array(0..<dim)
        order.remove(at: s)
        order.insert(s, at: d)
        return permute(order)
    }

    /// Broadcasts size-1 dims to `sizes` (-1 keeps a size) without copying.
    public func expand(_ sizes: Int...) -> Tensor { expand(sizes) }

    /// `expand` with sizes as an array.
    public func expand(_ sizes: [Int]) -> Tensor {
        precondition(sizes.count >= dim, "expand: the number of sizes provided (\(sizes.count)) must be greater or equal to the number of dimensions in the tensor (\(dim))")
        let off = sizes.count - dim
        var ns = [Int](repeating: 0, count: sizes.count), st = [Int](repeating: 0, count: sizes.count)
        for i in 0..<sizes.count {
            if i < off {
                precondition(sizes[i] >= 0, "expand: -1 is not allowed in a leading, non-existing dimension")
                ns[i] = sizes[i]; st[i] = 0
            } else {
                let cur = shape[i - off]
                let want = sizes[i] == -1 ? cur : sizes[i]
                if cur == want { ns[i] = cur; st[i] = strides[i - off] } else {
                    precondition(cur == 1, "expand: The expanded size of the tensor (\(want)) must match the existing size (\(cur)) at non-singleton dimension \(i).  Target sizes: \(shapeString(sizes)).  Tensor sizes: \(shapeString(shape))")
                    ns[i] = want; st[i] = 0
                }
            }
        }
        let inShape = shape
        return viewOp("ExpandBackward0", shape: ns, strides: st, offset: storageOffset,
                      saved: { [.ints("self_sym_sizes", inShape)] }) { g in g.sumToSize(inShape) }
    }

    /// Expands to `other`'s shape.
    public func expandAs(_ other: Tensor) -> Tensor { expand(other.shape) }

    /// The slice `start..<start+length` of dim `d`.
    public func narrow(_ d: Int, _ start: Int, _ length: Int) -> Tensor {
        let dd = normalizeDim(d, dim, op: "narrow")
        let s = start < 0 ? start + shape[dd] : start
        precondition(s >= 0 && length >= 0 && s + length <= shape[dd],
                     "narrow: start (\(start)) + length (\(length)) exceeds dimension size (\(shape[dd])).")
        return slice(dd, start: s, end: s + length, step: 1)
    }

    /// Elements `start, start+step, ... < end` of dim `d` (bounds already clamped and normalised).
    func slice(_ d: Int, start: Int, end: Int, step: Int) -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.slice(dim: d, start: start, end: end, step: step), [self], { slice(d, start: start, end: end, step: step) }) { return r }
        precondition(step > 0, "slice: step must be greater than zero")
        var ns = shape, st = strides
        ns[d] = end > start ? (end - start + step - 1) / step : 0
        st[d] = strides[d] * step
        let inShape = shape
        // PyTorch keeps `end` as written (9223372036854775807 for `x[1...]`); here it is already clamped.
        return viewOp("SliceBackward0", shape: ns, strides: st, offset: storageOffset + start * strides[d],
                      saved: { [.int("dim", d), .int("end", end), .ints("self_sym_sizes", inShape), .int("start", start),
                                .int("step", step)] }) { g in
            embedGradient(g, into: inShape) { $0.slice(d, start: start, end: end, step: step) }
        }
    }

    /// Index `i` of dim `d`, removing that dim.
    public func select(_ d: Int, _ i: Int) -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.select(dim: d, index: i), [self], { select(d, i) }) { return r }
        let dd = normalizeDim(d, dim, op: "select")
        precondition(dim > 0, "select() cannot be applied to a 0-dim tensor.")
        let ii = i < 0 ? i + shape[dd] : i
        precondition(ii >= 0 && ii < shape[dd], "select(): index \(i) out of range for tensor of size \(shapeString(shape)) at dimension \(d)")
        var ns = shape, st = strides
        ns.remove(at: dd); st.remove(at: dd)
        let inShape = shape
        return viewOp("SelectBackward0", shape: ns, strides: st, offset: storageOffset + ii * strides[dd],
                      saved: { [.int("dim", d), .int("index", i), .ints("self_sym_sizes", inShape)] }) { g in
            embedGradient(g, into: inShape) { $0.select(dd, ii) }
        }
    }

    /// A view with explicit geometry (advanced; no bounds beyond the storage are allowed).
    public func asStrided(_ size: [Int], _ stride: [Int], storageOffset off: Int? = nil) -> Tensor {
        precondition(size.count == stride.count, "as_strided: mismatch in length of strides and shape")
        let o = off ?? storageOffset
        var maxOff = o
        for (s, t) in zip(size, stride) where s > 0 { maxOff += (s - 1) * t }
        precondition(shapeNumel(size) == 0 || (maxOff + 1) * dtype.itemSize <= storage.byteCount,
                     "as_strided: setStorage: sizes \(shapeString(size)), strides \(shapeString(stride)), storage offset \(o) out of bounds for storage of size \(storage.byteCount / dtype.itemSize)")
        let inShape = shape, contiguousInput = isContiguous, base = storageOffset
        return viewOp("AsStridedBackward0", shape: size, strides: stride, offset: o, backward: { g in
            precondition(contiguousInput, "as_strided backward: only supported for contiguous inputs")
            return embedGradient(g, into: inShape) { $0.asStrided(size, stride, storageOffset: $0.storageOffset + o - base) }
        })
    }

    /// Makes a view; when recording, `backward(g)` maps the view's gradient to the input's.
    /// `saved` lists the node's PyTorch `_saved_` attributes (see `record`); it is an autoclosure so
    /// that views made without recording do not allocate its context.
    func viewOp(_ name: String, shape ns: [Int], strides st: [Int], offset: Int,
                saved: @autoclosure () -> (() -> [SavedAttribute])? = nil, backward: ((Tensor) -> Tensor)? = nil) -> Tensor {
        let out = makeView(shape: ns, strides: st, offset: offset)
        if needsGrad {
            let inShape = shape
            let bw = backward ?? { g in g.reshape(inShape) }
            record(name, out, inputs: [self], saved: saved()) { _, g in [bw(g)] }
        }
        return out
    }
}

/// A zero tensor of `shape` with `g` written into the region `region(zeros)` selects — the
/// backward of select/slice/narrow. Differentiable in `g` (its backward applies `region`).
func embedGradient(_ g: Tensor, into shape: [Int], region: @escaping (Tensor) -> Tensor) -> Tensor {
    let z = torch.zeros(shape, dtype: g.dtype, device: g.device)
    torch.noGrad { _ = region(z).copy_(g) }
    if g.needsGrad {
        record("EmbedBackward0", z, inputs: [g]) { _, gg in [region(gg)] }
    }
    return z
}

extension torch {
    public static func reshape(_ x: Tensor, _ shape: [Int]) -> Tensor { x.reshape(shape) }
    public static func flatten(_ x: Tensor, startDim: Int = 0, endDim: Int = -1) -> Tensor { x.flatten(startDim: startDim, endDim: endDim) }
    public static func squeeze(_ x: Tensor) -> Tensor { x.squeeze() }
    public static func squeeze(_ x: Tensor, _ d: Int) -> Tensor { x.squeeze(d) }
    public static func unsqueeze(_ x: Tensor, _ d: Int) -> Tensor { x.unsqueeze(d) }
    public static func transpose(_ x: Tensor, _ d0: Int, _ d1: Int) -> Tensor { x.transpose(d0, d1) }
    public static func t(_ x: Tensor) -> Tensor { x.t() }
    public static func permute(_ x: Tensor, _ dims: [Int]) -> Tensor { x.permute(dims) }
    public static func narrow(_ x: Tensor, _ d: Int, _ start: Int, _ length: Int) -> Tensor { x.narrow(d, start, length) }
    public static func select(_ x: Tensor, _ d: Int, _ i: Int) -> Tensor { x.select(d, i) }
    public static func movedim(_ x: Tensor, _ s: Int, _ d: Int) -> Tensor { x.movedim(s, d) }
}
