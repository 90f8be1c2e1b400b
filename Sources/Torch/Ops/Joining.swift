/// Joining and splitting along a dim: `torch.cat`, `torch.stack`, `torch.hstack`, `torch.vstack`,
/// and the view-returning `split`, `chunk`, `unbind` (with their `torch.*` twins).

// MARK: - Messages and size rules (separate so tests can check them)

/// PyTorch's legacy rule: a 1-D tensor with zero elements is skipped by `cat` whatever the other shapes.
@inline(__always) func catSkipsTensor(_ shape: [Int]) -> Bool { shape.count == 1 && shape[0] == 0 }

/// The message PyTorch gives when tensor `index` of a `cat` does not fit the first valid tensor
/// outside `dim`, or nil when it fits.
func catShapeErrorMessage(first: [Int], _ other: [Int], dim: Int, index: Int) -> String? {
    if first.count != other.count {
        return "Tensors must have same number of dimensions: got \(first.count) and \(other.count)"
    }
    for d in 0..<first.count where d != dim && first[d] != other[d] {
        return "Sizes of tensors must match except in dimension \(dim). Expected size \(first[d]) but got size \(other[d]) for tensor number \(index) in the list."
    }
    return nil
}

/// The message PyTorch gives when the tensors given to `stack` differ in shape, or nil.
func stackShapeErrorMessage(_ shapes: [[Int]]) -> String? {
    guard let first = shapes.first else { return "stack expects a non-empty TensorList" }
    for (i, s) in shapes.enumerated() where s != first {
        return "stack expects each tensor to be equal size, but got \(shapeString(first)) at entry 0 and \(shapeString(s)) at entry \(i)"
    }
    return nil
}

/// The piece sizes of `split(splitSize)` over a dim of `dimSize` (PyTorch's rule: at least one piece,
/// the last one shorter). Stops with PyTorch's messages on a bad `splitSize`.
func splitSizes(dimSize: Int, splitSize: Int) -> [Int] {
    precondition(splitSize >= 0, "split expects split_size be non-negative, but got split_size=\(splitSize)")
    precondition(splitSize > 0 || dimSize == 0,
                 "split_size can only be 0 if dimension size is 0, but got dimension size of \(dimSize)")
    if splitSize == 0 { return [0] }
    let count = Swift.max((dimSize + splitSize - 1) / splitSize, 1)
    var sizes = [Int](repeating: splitSize, count: count)
    sizes[count - 1] = splitSize - (splitSize * count - dimSize)
    return sizes
}

/// The piece sizes of `chunk(chunks)` over a dim of `dimSize`: pieces of `ceil(dimSize / chunks)`,
/// so fewer than `chunks` pieces may come back (PyTorch's rule).
func chunkSizes(dimSize: Int, chunks: Int) -> [Int] {
    precondition(chunks > 0, "chunk expects `chunks` to be greater than 0, got: \(chunks)")
    let splitSize = (dimSize + chunks - 1) / chunks
    if splitSize == 0 && dimSize == 0 { return [Int](repeating: 0, count: chunks) }
    return splitSizes(dimSize: dimSize, splitSize: splitSize)
}

/// The message of `split(_ sizes:)` when the sizes are negative or don't add up, or nil.
func splitWithSizesErrorMessage(_ sizes: [Int], dimSize: Int, dim: Int) -> String? {
    if sizes.contains(where: { $0 < 0 }) {
        return "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=\(shapeString(sizes))"
    }
    let total = sizes.reduce(0, +)
    if total != dimSize {
        return "split_with_sizes expects split_sizes to sum exactly to \(dimSize) (input tensor's size at dimension \(dim)), but got split_sizes=\(shapeString(sizes))"
    }
    return nil
}

// MARK: - cat / stack

extension torch {
    /// Concatenates tensors along an existing dim (PyTorch's `torch.cat`).
    ///
    /// Inputs are promoted to a common dtype; all sizes must match except along `dim`. As in
    /// PyTorch, 1-D tensors with zero elements are skipped whatever their shape.
    ///
    /// ```swift
    /// let a = torch.ones(2, 3), b = torch.zeros(2, 1)
    /// let c = torch.cat([a, b], dim: 1)      // shape [2, 4]
    /// ```
    public static func cat(_ tensors: [Tensor], dim: Int = 0) -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.cat(dim: dim), tensors, { cat(tensors, dim: dim) }) { return r }
        precondition(!tensors.isEmpty, "torch.cat(): expected a non-empty list of Tensors")
        for (i, t) in tensors.enumerated() {
            precondition(t.dim > 0, "zero-dimensional tensor (at position \(i)) cannot be concatenated")
        }
        let outType = resultType(tensors)
        let device = sharedDevice(tensors)
        let shapes = tensors.map(\.shape)
        let out: Tensor
        let d: Int
        if let valid = shapes.firstIndex(where: { !catSkipsTensor($0) }) {
            let first = shapes[valid]
            d = normalizeDim(dim, first.count, op: "cat")
            var total = 0
            for (i, s) in shapes.enumerated() where !catSkipsTensor(s) {
                if let msg = catShapeErrorMessage(first: first, s, dim: d, index: i) { preconditionFailure(msg) }
                total += s[d]
            }
            var outShape = first
            outShape[d] = total
            out = Tensor(uninitializedShape: outShape, dtype: outType, device: device)
            let outStrides = out.strides
            var offset = 0
            for t in tensors where !catSkipsTensor(t.shape) {
                let n = t.shape[d]
                if n > 0 && t.numel > 0 {
                    var s = outShape
                    s[d] = n
                    let dst = Tensor(storage: out.storage, shape: s, strides: outStrides,
                                     offset: offset * outStrides[d], dtype: outType)
                    copyKernel(from: t, into: dst)
                }
                offset += n
            }
        } else {
            d = 0
            out = Tensor(uninitializedShape: [0], dtype: outType, device: device)
        }
        if anyNeedsGrad(tensors) {
            let sizes = shapes.map { catSkipsTensor($0) ? -1 : $0[d] }
            let types = tensors.map(\.dtype), needs = tensors.map(\._requiresGrad)
            record("CatBackward0", out, inputs: tensors, saved: { [.int("dim", dim)] }) { _, g in
                var grads: [Tensor?] = []
                grads.reserveCapacity(sizes.count)
                var offset = 0
                for i in 0..<sizes.count {
                    if sizes[i] < 0 {
                        grads.append(needs[i] ? torch.zeros([0], dtype: types[i], device: device) : nil)
                        continue
                    }
                    grads.append(needs[i] ? g.narrow(d, offset, sizes[i]).to(types[i]) : nil)
                    offset += sizes[i]
                }
                return grads
            }
        }
        return out
    }

    /// PyTorch's `torch.concat` / `torch.concatenate`: `cat`.
    public static func concat(_ tensors: [Tensor], dim: Int = 0) -> Tensor { cat(tensors, dim: dim) }
    public static func concatenate(_ tensors: [Tensor], dim: Int = 0) -> Tensor { cat(tensors, dim: dim) }

    /// Stacks equally shaped tensors along a new dim `dim` (PyTorch's `torch.stack`).
    ///
    /// ```swift
    /// let s = torch.stack([torch.zeros(3), torch.ones(3)], dim: 1)   // shape [3, 2]
    /// ```
    public static func stack(_ tensors: [Tensor], dim: Int = 0) -> Tensor {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.op(.stack(dim: dim), tensors, { stack(tensors, dim: dim) }) { return r }
        if let msg = stackShapeErrorMessage(tensors.map(\.shape)) { preconditionFailure(msg) }
        let inShape = tensors[0].shape
        let d = normalizeDim(dim, inShape.count + 1, op: "stack")
        let outType = resultType(tensors)
        var outShape = inShape
        outShape.insert(tensors.count, at: d)
        let out = Tensor(uninitializedShape: outShape, dtype: outType, device: sharedDevice(tensors))
        var st = out.strides
        let step = st.remove(at: d)
        if out.numel > 0 {
            for (i, t) in tensors.enumerated() {
                copyKernel(from: t, into: Tensor(storage: out.storage, shape: inShape, strides: st, offset: i * step, dtype: outType))
            }
        }
        if anyNeedsGrad(tensors) {
            let types = tensors.map(\.dtype), needs = tensors.map(\._requiresGrad)
            record("StackBackward0", out, inputs: tensors, saved: { [.int("dim", dim)] }) { _, g in
                (0..<types.count).map { i in needs[i] ? g.select(d, i).to(types[i]) : nil }
            }
        }
        return out
    }

    /// Concatenates horizontally: along dim 0 for 1-D inputs, else dim 1 (0-d inputs count as 1-D).
    public static func hstack(_ tensors: [Tensor]) -> Tensor {
        precondition(!tensors.isEmpty, "hstack expects a non-empty TensorList")
        let ts = tensors.map(atLeast1d)
        return cat(ts, dim: ts[0].dim == 1 ? 0 : 1)
    }

    /// Concatenates vertically (along dim 0) after making every input at least 2-D (`[n]` → `[1, n]`).
    public static func vstack(_ tensors: [Tensor]) -> Tensor {
        precondition(!tensors.isEmpty, "vstack expects a non-empty TensorList")
        return cat(tensors.map(atLeast2d), dim: 0)
    }

    public static func split(_ x: Tensor, _ splitSize: Int, dim: Int = 0) -> [Tensor] { x.split(splitSize, dim: dim) }
    public static func split(_ x: Tensor, _ sizes: [Int], dim: Int = 0) -> [Tensor] { x.split(sizes, dim: dim) }
    public static func chunk(_ x: Tensor, _ chunks: Int, dim: Int = 0) -> [Tensor] { x.chunk(chunks, dim: dim) }
    public static func unbind(_ x: Tensor, dim: Int = 0) -> [Tensor] { x.unbind(dim: dim) }
}

/// The one device of `tensors` (cat and stack take no mixed devices, as in PyTorch).
private func sharedDevice(_ tensors: [Tensor]) -> Device {
    let device = tensors[0].device
    for t in tensors.dropFirst() where t.device != device { preconditionFailure(sameDeviceMessage(device, t.device)) }
    return device
}

/// `[]` → `[1]`, others unchanged (PyTorch's atleast_1d).
private func atLeast1d(_ t: Tensor) -> Tensor { t.dim == 0 ? t.reshape([1]) : t }
/// `[]` → `[1, 1]`, `[n]` → `[1, n]`, others unchanged (PyTorch's atleast_2d).
private func atLeast2d(_ t: Tensor) -> Tensor {
    switch t.dim {
    case 0: return t.reshape([1, 1])
    case 1: return t.unsqueeze(0)
    default: return t
    }
}

// MARK: - split / chunk / unbind

extension Tensor {
    /// Splits into views of `splitSize` along `dim` (the last one shorter when the size doesn't divide).
    ///
    /// ```swift
    /// let parts = torch.arange(5).split(2)   // sizes [2, 2, 1]
    /// ```
    public func split(_ splitSize: Int, dim: Int = 0) -> [Tensor] {
        precondition(self.dim != 0, "split expects at least a 1-dimensional tensor")
        let d = normalizeDim(dim, self.dim, op: "split")
        return splitViews(splitSizes(dimSize: shape[d], splitSize: splitSize), d, name: "SplitBackward0")
    }

    /// Splits into views with the given sizes along `dim` (they must add up to the dim's size).
    public func split(_ sizes: [Int], dim: Int = 0) -> [Tensor] {
        precondition(self.dim != 0, "split expects at least a 1-dimensional tensor")
        let d = normalizeDim(dim, self.dim, op: "split_with_sizes")
        if let msg = splitWithSizesErrorMessage(sizes, dimSize: shape[d], dim: d) { preconditionFailure(msg) }
        return splitViews(sizes, d, name: "SplitWithSizesBackward0")
    }

    /// PyTorch's `split_with_sizes`.
    public func splitWithSizes(_ sizes: [Int], dim: Int = 0) -> [Tensor] { split(sizes, dim: dim) }

    /// Splits into at most `chunks` views of `ceil(size / chunks)` along `dim`.
    ///
    /// ```swift
    /// torch.arange(6).chunk(4).map(\.shape)   // [[2], [2], [2]] — only three chunks, as in PyTorch
    /// ```
    public func chunk(_ chunks: Int, dim: Int = 0) -> [Tensor] {
        precondition(self.dim > 0, "chunk expects at least a 1-dimensional tensor")
        let d = normalizeDim(dim, self.dim, op: "chunk")
        let sizes = chunkSizes(dimSize: shape[d], chunks: chunks)
        // An empty dim goes through split_with_sizes in PyTorch (to keep the number of chunks).
        return splitViews(sizes, d, name: shape[d] == 0 ? "SplitWithSizesBackward0" : "SplitBackward0")
    }

    /// The slices along `dim` as views, removing that dim.
    ///
    /// ```swift
    /// let rows = torch.eye(3).unbind()   // three tensors of shape [3]
    /// ```
    public func unbind(dim: Int = 0) -> [Tensor] {
        precondition(self.dim > 0, "Dimension specified as \(dim) but tensor has no dimensions")
        let d = normalizeDim(dim, self.dim, op: "unbind")
        if _slowPath(ONNXTrace.isOn), shape[d] > 0, let r = ONNXTrace.ops(.unbind(dim: d), [self], { unbind(dim: dim) }) { return r }
        var ns = shape, st = strides
        ns.remove(at: d)
        let step = st.remove(at: d)
        let outs = (0..<shape[d]).map { makeView(shape: ns, strides: st, offset: storageOffset + $0 * step) }
        if needsGrad && !outs.isEmpty {
            recordMulti("UnbindBackward0", outs, inputs: [self]) { _, grads in
                let like = grads.first { $0 != nil }!!
                return [torch.stack(grads.map { $0 ?? torch.zeros(ns, dtype: like.dtype, device: like.device) }, dim: d)]
            }
        }
        return outs
    }

    /// Views of consecutive pieces of `sizes` along `d`, sharing one backward node.
    private func splitViews(_ sizes: [Int], _ d: Int, name: String) -> [Tensor] {
        if _slowPath(ONNXTrace.isOn), let r = ONNXTrace.ops(.split(sizes: sizes, dim: d), [self], { splitViews(sizes, d, name: name) }) { return r }
        var outs: [Tensor] = []
        outs.reserveCapacity(sizes.count)
        var start = 0
        for n in sizes {
            var s = shape
            s[d] = n
            outs.append(makeView(shape: s, strides: strides, offset: storageOffset + (n > 0 ? start * strides[d] : 0)))
            start += n
        }
        if needsGrad {
            let inShape = shape
            recordMulti(name, outs, inputs: [self]) { _, grads in
                let like = grads.first { $0 != nil }!!
                let parts = zip(grads, sizes).map { g, n -> Tensor in
                    if let g { return g }
                    var s = inShape
                    s[d] = n
                    return torch.zeros(s, dtype: like.dtype, device: like.device)
                }
                return [torch.cat(parts, dim: d)]
            }
        }
        return outs
    }
}
