/// Sorting and order statistics: `sort argsort msort topk kthvalue median nanmedian mode unique
/// uniqueConsecutive searchsorted bucketize bincount histc`.
///
/// NaN orders as the largest value (PyTorch's rule): last in an ascending sort, first in a descending
/// one, and `median` of a row containing NaN is NaN. Ties keep their original order (every sort is stable).

// MARK: - Row kernel

/// What a row kernel extracts from each sorted row.
enum RowSelection {
    /// The whole row, sorted.
    case all
    /// The first `k` of the sorted row (`topk`).
    case first(Int)
    /// The element at sorted position `k` (0-based; `kthvalue`).
    case position(Int)
    /// The lower median; NaN (at the first NaN's index) if the row has one, unless `ignoreNaN`.
    case median(ignoreNaN: Bool)
    /// The most frequent value (smallest on ties) and its last index.
    case mode

    /// The ATen op a selection serves, for error messages.
    var opName: String {
        switch self {
        case .all: return "sort"
        case .first: return "topk"
        case .position: return "kthvalue"
        case .median(let ignoreNaN): return ignoreNaN ? "nanmedian" : "median"
        case .mode: return "mode"
        }
    }

    func outputCount(rowLength n: Int) -> Int {
        switch self {
        case .all: return n
        case .first(let k): return k
        default: return 1
        }
    }
}

/// The element type sort kernels run in (bool as uint8, half types as float32).
private func sortComputeType(_ dt: DType) -> DType {
    switch dt {
    case .bool: return .uint8
    case .float16, .bfloat16: return .float32
    default: return dt
    }
}

/// Runs `selection` along `dim` without autograd: values (self's dtype) and int64 indices with
/// `dim` of size `selection.outputCount` (kept even when it is 1).
func sortAlongDim(_ x: Tensor, _ d: Int, descending: Bool, _ selection: RowSelection) -> (Tensor, Tensor) {
    torch.noGrad {
        switch x.device {
        case .cpu: return hostSortAlongDim(x, d, descending: descending, selection)
        case .cuda: return deviceSortAlongDim(x, d, descending: descending, selection)
        }
    }
}

/// `sortAlongDim` on the CPU: the rows moved to the last dim, sorted or selected by `CPUSorting.selectRows`.
private func hostSortAlongDim(_ x: Tensor, _ d: Int, descending: Bool, _ selection: RowSelection) -> (Tensor, Tensor) {
    let n = x.shape[d]
    let rank = x.dim
    let perm = (0..<rank).filter { $0 != d } + [d]
    let compute = sortComputeType(x.dtype)
    let rowsT = (d == rank - 1 ? x : x.permute(perm)).to(compute).contiguous()
    let outer = perm.dropLast().map { x.shape[$0] }
    let rows = shapeNumel(outer)
    let k = selection.outputCount(rowLength: n)
    let vals = Tensor(uninitializedShape: outer + [k], dtype: compute)
    let idx = Tensor(uninitializedShape: outer + [k], dtype: .int64)
    if rows * k > 0 { CPUSorting.selectRows(rowsT, rows: rows, n: n, descending: descending, selection, values: vals, indices: idx) }
    var v = vals, i = idx
    if d != rank - 1 { v = v.movedim(-1, d).contiguous(); i = i.movedim(-1, d).contiguous() }
    if compute != x.dtype { v = v.to(x.dtype) }
    return (v, i)
}

/// `sortAlongDim` on a CUDA device: one stable sort of every row (`CUDASorting`), then the selection's
/// slice of it; median and mode pick from the sorted rows with one more launch (`CUDAFused.pickSortedRows`).
private func deviceSortAlongDim(_ x: Tensor, _ d: Int, descending: Bool, _ selection: RowSelection) -> (Tensor, Tensor) {
    let n = x.shape[d], last = x.dim - 1
    var start = 0
    var pick: (op: FusedKernelOp, ignoreNaN: Bool)? = nil
    switch selection {
    case .all, .first: break
    case .position(let p): start = p
    case .median(let ignoreNaN): pick = (.medianRows, ignoreNaN)
    case .mode: pick = (.modeRows, false)
    }
    let rows = (d == last ? x : x.movedim(d, last)).contiguous()
    let rowCount = n == 0 ? 0 : rows.numel / n
    var (v, i) = CUDASorting.sortRows(rows, rows: rowCount, length: n, descending: descending)
    let count = selection.outputCount(rowLength: n)
    if let pick {
        let (pv, pi) = CUDAFused.pickSortedRows(pick.op, values: v, positions: i, rows: rowCount, length: n, ignoreNaN: pick.ignoreNaN)
        let shape = Array(rows.shape.dropLast()) + [1]
        v = pv.view(shape); i = pi.view(shape)
    } else if count != n {
        v = v.narrow(last, start, count); i = i.narrow(last, start, count)
    }
    if d != last { v = v.movedim(last, d); i = i.movedim(last, d) }
    return (v.contiguous(), i.contiguous())
}

/// The gradient of an op that picked `indices` along `dim` (sort, topk, kthvalue, median, mode):
/// `g` scattered back into zeros of the input's shape.
func selectionBackward(_ g: Tensor, _ indices: Tensor, dim d: Int, inputShape: [Int], keepdim: Bool) -> Tensor {
    let gi = keepdim ? g : g.unsqueeze(d)
    let ii = keepdim ? indices : indices.unsqueeze(d)
    return torch.zeros(inputShape, dtype: g.dtype, device: g.device).scatter(d, ii, gi)
}

// MARK: - Public sort family

extension Tensor {
    /// Runs a selection along `dim` with autograd. `reduces`: the op removes `dim` unless `keepdim`.
    private func selectAlong(_ dim: Int, descending: Bool, _ selection: RowSelection, op: String, node: String,
                             reduces: Bool, keepdim: Bool) -> (values: Tensor, indices: Tensor) {
        if self.dim == 0 {
            let (v, i) = reshape([1]).selectAlong(0, descending: descending, selection, op: op, node: node,
                                                  reduces: reduces, keepdim: false)
            return (v.reshape([]), i.reshape([]))
        }
        let d = normalizeDim(dim, self.dim, op: op)
        var (v, i) = sortAlongDim(self, d, descending: descending, selection)
        if reduces && !keepdim { v = v.squeeze(d); i = i.squeeze(d) }
        if needsGrad {
            let inShape = shape, ii = i, keep = !reduces || keepdim
            record(node, v, inputs: [self]) { _, g in
                [selectionBackward(g, ii, dim: d, inputShape: inShape, keepdim: keep)]
            }
        }
        return (v, i)
    }

    /// Sorts along `dim`: (sorted values, their original indices). NaN sorts as the largest value.
    ///
    /// ```swift
    /// let (values, indices) = torch.tensor([3.0, 1.0, 2.0]).sort(descending: true)
    /// // values: tensor([3., 2., 1.]), indices: tensor([0, 2, 1])
    /// ```
    public func sort(dim: Int = -1, descending: Bool = false, stable: Bool = false) -> (values: Tensor, indices: Tensor) {
        selectAlong(dim, descending: descending, .all, op: "sort", node: "SortBackward0", reduces: false, keepdim: true)
    }

    /// PyTorch's `sort(stable=True, dim=..., descending=...)` argument order.
    public func sort(stable: Bool, dim: Int = -1, descending: Bool = false) -> (values: Tensor, indices: Tensor) {
        sort(dim: dim, descending: descending, stable: stable)
    }

    /// The indices that sort the tensor along `dim`.
    public func argsort(dim: Int = -1, descending: Bool = false, stable: Bool = false) -> Tensor {
        torch.noGrad { sort(dim: dim, descending: descending, stable: stable).indices }
    }

    /// Sorted along dim 0 (values only).
    public func msort() -> Tensor { sort(dim: 0).values }

    /// The `k` largest (or smallest) elements along `dim` and their indices, sorted.
    public func topk(_ k: Int, dim: Int = -1, largest: Bool = true, sorted: Bool = true) -> (values: Tensor, indices: Tensor) {
        let size = self.dim == 0 ? 1 : shape[normalizeDim(dim, self.dim, op: "topk")]
        precondition(k >= 0 && k <= size, "topk(): selected index k out of range")
        return selectAlong(dim, descending: largest, .first(k), op: "topk", node: "TopkBackward0", reduces: false, keepdim: true)
    }

    /// The `k`-th smallest element (1-based) along `dim` and its index.
    public func kthvalue(_ k: Int, dim: Int = -1, keepdim: Bool = false) -> (values: Tensor, indices: Tensor) {
        let size = self.dim == 0 ? 1 : shape[normalizeDim(dim, self.dim, op: "kthvalue")]
        precondition(k >= 1 && k <= size, "kthvalue(): selected number k out of range for dimension \(dim)")
        return selectAlong(dim, descending: false, .position(k - 1), op: "kthvalue", node: "KthvalueBackward0",
                           reduces: true, keepdim: keepdim)
    }

    /// The lower median along `dim` and its index (NaN if the row has a NaN).
    public func median(dim: Int, keepdim: Bool = false) -> (values: Tensor, indices: Tensor) {
        precondition(self.dim == 0 || shape[normalizeDim(dim, self.dim, op: "median")] > 0,
                     "median(): Expected reduction dim \(dim) to have non-zero size.")
        return selectAlong(dim, descending: false, .median(ignoreNaN: false), op: "median", node: "MedianBackward1",
                           reduces: true, keepdim: keepdim)
    }

    /// The lower median along `dim` ignoring NaNs, and its index.
    public func nanmedian(dim: Int, keepdim: Bool = false) -> (values: Tensor, indices: Tensor) {
        precondition(self.dim == 0 || shape[normalizeDim(dim, self.dim, op: "nanmedian")] > 0,
                     "nanmedian(): Expected reduction dim \(dim) to have non-zero size.")
        return selectAlong(dim, descending: false, .median(ignoreNaN: true), op: "nanmedian", node: "NanmedianBackward1",
                           reduces: true, keepdim: keepdim)
    }

    /// The lower median of all elements (NaN if any element is NaN).
    public func median() -> Tensor { fullMedian(ignoreNaN: false) }

    /// The lower median of all non-NaN elements.
    public func nanmedian() -> Tensor { fullMedian(ignoreNaN: true) }

    private func fullMedian(ignoreNaN: Bool) -> Tensor {
        let op = ignoreNaN ? "nanmedian" : "median"
        precondition(numel > 0, "\(op)() input tensor cannot be empty")
        let flat = torch.noGrad { reshape([numel]) }
        let (v, _) = sortAlongDim(flat, 0, descending: false, .median(ignoreNaN: ignoreNaN))
        let out = v.reshape([])
        if needsGrad {
            // Like PyTorch: the gradient is shared evenly among the elements equal to the result.
            let sx = SavedTensor(self), so = SavedTensor(output: out)
            record(ignoreNaN ? "NanmedianBackward0" : "MedianBackward0", out, inputs: [self]) { node, g in
                let x = sx.unpack(node), o = so.unpack(node)
                let mask = (o.isnan().item() != 0 ? x.isnan() : (x .== o)).to(g.dtype)
                return [mask * (g / mask.sum())]
            }
        }
        return out
    }

    /// The most frequent value along `dim` (the smallest on ties) and the index of its last occurrence.
    public func mode(dim: Int = -1, keepdim: Bool = false) -> (values: Tensor, indices: Tensor) {
        selectAlong(dim, descending: false, .mode, op: "mode", node: "ModeBackward0", reduces: true, keepdim: keepdim)
    }
}

// MARK: - unique

/// `torch.unique`'s results: `inverse` and `counts` are present when requested.
public typealias UniqueResult = (output: Tensor, inverse: Tensor?, counts: Tensor?)

/// Unique values (or slices along `dim`): the first original position of each group, each element's
/// group, and the group sizes. `sortFirst` false gives `unique_consecutive`.
private func uniqueCore(_ x: Tensor, dim: Int?, sortFirst: Bool, op: String) -> (output: Tensor, inverse: Tensor, counts: Tensor) {
    switch x.device {
    case .cpu: return hostUniqueCore(x, dim: dim, sortFirst: sortFirst, op: op)
    case .cuda: return deviceUniqueCore(x, dim: dim, sortFirst: sortFirst, op: op)
    }
}

/// `uniqueCore` on the CPU, from host arrays.
private func hostUniqueCore(_ x: Tensor, dim: Int?, sortFirst: Bool, op: String) -> (output: Tensor, inverse: Tensor, counts: Tensor) {
    torch.noGrad {
        var order: [Int]
        var starts: [Bool]
        let base: Tensor, d: Int, inverseShape: [Int]
        if let dim {
            precondition(x.dim > 0, "\(op): dim \(dim) is out of range for a 0-d tensor")
            d = normalizeDim(dim, x.dim, op: op)
            base = x
            let m = x.shape[d]
            inverseShape = [m]
            let width = m == 0 ? 0 : x.numel / m
            let rows = x.movedim(d, 0).reshape([m, width]).to(.float64).toArray(as: Double.self)
            @inline(__always) func less(_ a: Int, _ b: Int) -> Bool {
                for j in 0..<width {
                    let u = rows[a * width + j], v = rows[b * width + j]
                    if u == v { continue }
                    if u.isNaN || v.isNaN { if u.isNaN && v.isNaN { continue }; return v.isNaN }
                    return u < v
                }
                return a < b
            }
            @inline(__always) func equal(_ a: Int, _ b: Int) -> Bool {
                for j in 0..<width where rows[a * width + j] != rows[b * width + j] { return false }
                return true
            }
            order = Array(0..<m)
            if sortFirst { order.sort(by: less) }
            starts = (0..<m).map { $0 == 0 || !equal(order[$0], order[$0 - 1]) }
        } else {
            d = 0
            base = x.reshape([x.numel])
            inverseShape = x.shape
            let n = base.numel
            var sorted = base
            if sortFirst {
                let (sv, si) = sortAlongDim(base, 0, descending: false, .all)
                sorted = sv
                order = si.toArray(as: Int.self)
            } else {
                order = Array(0..<n)
            }
            starts = [Bool](repeating: true, count: n)
            if n > 1 {
                let differs = (sorted[1...] .!= sorted[..<(n - 1)]).toArray(as: Bool.self)
                for i in 1..<n { starts[i] = differs[i - 1] }
            }
        }
        var first: [Int64] = [], counts: [Int64] = []
        var inverse = [Int64](repeating: 0, count: order.count)
        for (p, o) in order.enumerated() {
            if starts[p] { first.append(Int64(o)); counts.append(0) }
            counts[counts.count - 1] += 1
            inverse[o] = Int64(first.count - 1)
        }
        let output = base.indexSelect(d, Tensor(first, shape: [first.count]))
        return (output, Tensor(inverse, shape: inverseShape), Tensor(counts, shape: [counts.count]))
    }
}

/// `uniqueCore` on a CUDA device, from device ops: a stable sort (for slices along `dim`, one stable sort per
/// column from the last to the first, which orders the slices lexicographically), group starts where a value
/// differs from the one before, group ids as their running sum. Selecting the starts with a mask (one wait
/// for the GPU to size the outputs, as in PyTorch) gives each group's first original position, which picks
/// the output; the ids scattered back through the sort's permutation give the inverse, and the gaps between
/// starts the counts.
private func deviceUniqueCore(_ x: Tensor, dim: Int?, sortFirst: Bool, op: String) -> (output: Tensor, inverse: Tensor, counts: Tensor) {
    torch.noGrad {
        let base: Tensor, d: Int, inverseShape: [Int], order: Tensor, starts: Tensor
        if let dim {
            precondition(x.dim > 0, "\(op): dim \(dim) is out of range for a 0-d tensor")
            d = normalizeDim(dim, x.dim, op: op)
            base = x
            let m = x.shape[d]
            inverseShape = [m]
            let width = m == 0 ? 0 : x.numel / m
            let rows = x.movedim(d, 0).reshape([m, width])
            var perm = torch.arange(0, m, device: x.device)
            if sortFirst && m > 1 {
                for j in stride(from: width - 1, through: 0, by: -1) {
                    let column = rows.select(1, j).indexSelect(0, perm)
                    perm = perm.indexSelect(0, sortAlongDim(column, 0, descending: false, .all).1)
                }
            }
            order = perm
            let sortedRows = rows.indexSelect(0, perm)
            starts = m == 0 ? torch.zeros([0], dtype: .bool, device: x.device)
                : torch.cat([torch.ones([1], dtype: .bool, device: x.device),
                             (sortedRows[1...] .!= sortedRows[..<(m - 1)]).any(dim: 1)])
        } else {
            d = 0
            base = x.reshape([x.numel])
            inverseShape = x.shape
            let n = base.numel
            var sorted = base
            if sortFirst {
                let (sv, si) = sortAlongDim(base, 0, descending: false, .all)
                sorted = sv
                order = si
            } else {
                order = torch.arange(0, n, device: x.device)
            }
            starts = n == 0 ? torch.zeros([0], dtype: .bool, device: x.device)
                : torch.cat([torch.ones([1], dtype: .bool, device: x.device), sorted[1...] .!= sorted[..<(n - 1)]])
        }
        let count = order.numel
        if count == 0 {
            let empty = torch.zeros([0], dtype: .int64, device: x.device)
            return (base.indexSelect(d, empty), torch.zeros(inverseShape, dtype: .int64, device: x.device), empty)
        }
        let group = starts.to(.int64).cumsum(dim: 0) - 1
        let startPositions = torch.arange(0, count, device: x.device)[starts]
        let inverse = torch.zeros([count], dtype: .int64, device: x.device).scatter(0, order, group)
        let ends = torch.cat([startPositions[1...], torch.full([1], Double(count), dtype: .int64, device: x.device)])
        return (base.indexSelect(d, order[starts]), inverse.reshape(inverseShape), ends - startPositions)
    }
}

extension Tensor {
    /// The sorted unique elements (or unique slices along `dim`). Not differentiable.
    ///
    /// ```swift
    /// torch.tensor([2, 1, 2, 3]).unique()   // tensor([1, 2, 3])
    /// let (out, inverse, counts) = torch.unique(x, returnInverse: true, returnCounts: true)
    /// ```
    public func unique(sorted: Bool = true, dim: Int? = nil) -> Tensor {
        uniqueCore(self, dim: dim, sortFirst: true, op: "unique").output
    }

    /// `unique` also returning each element's position in the output (and the counts when asked).
    public func unique(sorted: Bool = true, returnInverse: Bool, returnCounts: Bool = false, dim: Int? = nil) -> UniqueResult {
        let r = uniqueCore(self, dim: dim, sortFirst: true, op: "unique")
        return (r.output, returnInverse ? r.inverse : nil, returnCounts ? r.counts : nil)
    }

    /// `unique` also returning how often each unique element occurs.
    public func unique(sorted: Bool = true, returnCounts: Bool, dim: Int? = nil) -> UniqueResult {
        let r = uniqueCore(self, dim: dim, sortFirst: true, op: "unique")
        return (r.output, nil, returnCounts ? r.counts : nil)
    }

    /// Collapses runs of equal consecutive elements (or slices along `dim`).
    public func uniqueConsecutive(dim: Int? = nil) -> Tensor {
        uniqueCore(self, dim: dim, sortFirst: false, op: "unique_consecutive").output
    }

    /// `uniqueConsecutive` with each element's run index (and the run lengths when asked).
    public func uniqueConsecutive(returnInverse: Bool, returnCounts: Bool = false, dim: Int? = nil) -> UniqueResult {
        let r = uniqueCore(self, dim: dim, sortFirst: false, op: "unique_consecutive")
        return (r.output, returnInverse ? r.inverse : nil, returnCounts ? r.counts : nil)
    }

    /// `uniqueConsecutive` with the run lengths.
    public func uniqueConsecutive(returnCounts: Bool, dim: Int? = nil) -> UniqueResult {
        let r = uniqueCore(self, dim: dim, sortFirst: false, op: "unique_consecutive")
        return (r.output, nil, returnCounts ? r.counts : nil)
    }
}

// MARK: - searchsorted / bucketize

/// PyTorch's message for incompatible searchsorted shapes.
func searchsortedShapeMessage(boundaries: [Int], input: [Int]) -> String {
    "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor \(shapeString(boundaries)) and input value tensor \(shapeString(input))"
}

extension torch {
    /// Where `input`'s values would be inserted into `sortedSequence` (sorted along its last dim) to keep
    /// it sorted: the first such position (`right: false` / `side: "left"`) or the last.
    ///
    /// ```swift
    /// torch.searchsorted(torch.tensor([1, 3, 5, 7]), torch.tensor([3, 6]))   // tensor([1, 3])
    /// ```
    public static func searchsorted(_ sortedSequence: Tensor, _ input: Tensor, outInt32: Bool = false, right: Bool = false,
                                    side: String? = nil, sorter: Tensor? = nil) -> Tensor {
        var useRight = right
        if let side {
            precondition(side == "left" || side == "right", "torch.searchsorted(): side can only be 'left' or 'right' but got \(side)")
            precondition(!(right && side == "left"), "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True")
            useRight = side == "right"
        }
        precondition(sortedSequence.dim >= 1, "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension")
        if sortedSequence.dim > 1 {
            precondition(input.dim == sortedSequence.dim && Array(sortedSequence.shape.dropLast()) == Array(input.shape.dropLast()),
                         searchsortedShapeMessage(boundaries: sortedSequence.shape, input: input.shape))
        }
        return torch.noGrad {
            var seq = sortedSequence
            if let sorter {
                precondition(sorter.shape == seq.shape, "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor \(shapeString(seq.shape)) and got sorter tensor \(shapeString(sorter.shape))")
                seq = seq.gather(-1, sorter)
            }
            let compute = sortComputeType(DType.promote(seq.dtype, input.dtype))
            let s = seq.to(compute).contiguous(), v = input.to(compute).contiguous()
            checkSameDevice(s, v)
            let out: Tensor
            switch s.device {
            case .cpu: out = CPUSorting.searchsorted(s, v, right: useRight)
            case .cuda: s.hostAccessOnDevice()
            }
            return outInt32 ? out.to(.int32) : out
        }
    }

    /// `searchsorted` for one value (a 0-d result).
    public static func searchsorted(_ sortedSequence: Tensor, _ value: Double, outInt32: Bool = false, right: Bool = false,
                                    side: String? = nil, sorter: Tensor? = nil) -> Tensor {
        precondition(sortedSequence.dim == 1, "torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension is 1, but we got boundaries tensor dim(\(sortedSequence.dim)) and input value's dim(0) numel(1)")
        return searchsorted(sortedSequence, Tensor.scalarOperand(value), outInt32: outInt32, right: right, side: side, sorter: sorter)
    }

    /// The bucket of each element of `input` given sorted 1-D `boundaries`: i with
    /// `boundaries[i-1] < x <= boundaries[i]` (`right: false`) or `boundaries[i-1] <= x < boundaries[i]`.
    public static func bucketize(_ input: Tensor, _ boundaries: Tensor, outInt32: Bool = false, right: Bool = false) -> Tensor {
        precondition(boundaries.dim == 1, "boundaries tensor must be 1 dimension, but got dim(\(boundaries.dim))")
        return searchsorted(boundaries, input, outInt32: outInt32, right: right)
    }
}

// MARK: - bincount / histc

extension Tensor {
    /// Counts of each value 0...max in a 1-D non-negative integer tensor (summed `weights` when given).
    /// The result has at least `minlength` entries; int64, or float32/float64 with weights.
    public func bincount(weights: Tensor? = nil, minlength: Int = 0) -> Tensor {
        precondition(minlength >= 0, "minlength should be >= 0")
        precondition(dim == 1 && dtype.isIntegral && dtype != .bool, "bincount only supports 1-d non-negative integral inputs.")
        let vals = toArray(as: Int64.self)
        precondition(vals.allSatisfy { $0 >= 0 }, "bincount only supports 1-d non-negative integral inputs.")
        let size = Swift.max(minlength, Int(vals.max().map { $0 + 1 } ?? 0))
        guard let weights else {
            var counts = [Int64](repeating: 0, count: size)
            for v in vals { counts[Int(v)] += 1 }
            return Tensor(counts, shape: [size])
        }
        precondition(weights.dim == 1 && weights.numel == vals.count, "weights should be 1-d and have the same length as input")
        let w = weights.toArray(as: Double.self)
        var sums = [Double](repeating: 0, count: size)
        for (i, v) in vals.enumerated() { sums[Int(v)] += w[i] }
        return Tensor(sums, shape: [size]).to(weights.dtype == .float32 ? .float32 : .float64)
    }

    /// Histogram of the elements with `bins` equal-width bins over [min, max] (the data's range when
    /// both are equal); values outside are ignored, `max` falls in the last bin.
    public func histc(bins: Int = 100, min: Double = 0, max: Double = 0) -> Tensor {
        precondition(bins > 0, "torch.histc(): bins must be > 0, but got \(bins) for dimension 0")
        precondition(dtype.isFloatingPoint, "\"histogram_cpu\" not implemented for '\(dtype.name.capitalized)'")
        var lo = min, hi = max
        let x = torch.noGrad { to(sortComputeType(dtype)).contiguous() }
        if lo == hi && numel > 0 { lo = x.min().item(); hi = x.max().item() }
        if lo == hi { lo -= 1; hi += 1 }
        precondition(lo < hi, "torch.histc(): max must be larger than min")
        precondition(lo.isFinite && hi.isFinite, "torch.histc(): range of [\(lo), \(hi)] is not finite")
        let counts: [Double]
        switch x.device {
        case .cpu: counts = CPUSorting.histogram(x, bins: bins, lo: lo, hi: hi)
        case .cuda: x.hostAccessOnDevice()
        }
        return Tensor(counts, shape: [bins]).to(dtype)
    }
}

extension torch {
    public static func sort(_ x: Tensor, dim: Int = -1, descending: Bool = false, stable: Bool = false) -> (values: Tensor, indices: Tensor) {
        x.sort(dim: dim, descending: descending, stable: stable)
    }
    public static func argsort(_ x: Tensor, dim: Int = -1, descending: Bool = false, stable: Bool = false) -> Tensor {
        x.argsort(dim: dim, descending: descending, stable: stable)
    }
    public static func msort(_ x: Tensor) -> Tensor { x.msort() }
    public static func topk(_ x: Tensor, _ k: Int, dim: Int = -1, largest: Bool = true, sorted: Bool = true) -> (values: Tensor, indices: Tensor) {
        x.topk(k, dim: dim, largest: largest, sorted: sorted)
    }
    public static func kthvalue(_ x: Tensor, _ k: Int, dim: Int = -1, keepdim: Bool = false) -> (values: Tensor, indices: Tensor) {
        x.kthvalue(k, dim: dim, keepdim: keepdim)
    }
    public static func median(_ x: Tensor) -> Tensor { x.median() }
    public static func median(_ x: Tensor, dim: Int, keepdim: Bool = false) -> (values: Tensor, indices: Tensor) {
        x.median(dim: dim, keepdim: keepdim)
    }
    public static func nanmedian(_ x: Tensor) -> Tensor { x.nanmedian() }
    public static func nanmedian(_ x: Tensor, dim: Int, keepdim: Bool = false) -> (values: Tensor, indices: Tensor) {
        x.nanmedian(dim: dim, keepdim: keepdim)
    }
    public static func mode(_ x: Tensor, dim: Int = -1, keepdim: Bool = false) -> (values: Tensor, indices: Tensor) {
        x.mode(dim: dim, keepdim: keepdim)
    }
    public static func unique(_ x: Tensor, sorted: Bool = true, dim: Int? = nil) -> Tensor { x.unique(sorted: sorted, dim: dim) }
    public static func unique(_ x: Tensor, sorted: Bool = true, returnInverse: Bool, returnCounts: Bool = false, dim: Int? = nil) -> UniqueResult {
        x.unique(sorted: sorted, returnInverse: returnInverse, returnCounts: returnCounts, dim: dim)
    }
    public static func unique(_ x: Tensor, sorted: Bool = true, returnCounts: Bool, dim: Int? = nil) -> UniqueResult {
        x.unique(sorted: sorted, returnCounts: returnCounts, dim: dim)
    }
    public static func uniqueConsecutive(_ x: Tensor, dim: Int? = nil) -> Tensor { x.uniqueConsecutive(dim: dim) }
    public static func uniqueConsecutive(_ x: Tensor, returnInverse: Bool, returnCounts: Bool = false, dim: Int? = nil) -> UniqueResult {
        x.uniqueConsecutive(returnInverse: returnInverse, returnCounts: returnCounts, dim: dim)
    }
    public static func uniqueConsecutive(_ x: Tensor, returnCounts: Bool, dim: Int? = nil) -> UniqueResult {
        x.uniqueConsecutive(returnCounts: returnCounts, dim: dim)
    }
    public static func bincount(_ x: Tensor, weights: Tensor? = nil, minlength: Int = 0) -> Tensor {
        x.bincount(weights: weights, minlength: minlength)
    }
    public static func histc(_ x: Tensor, bins: Int = 100, min: Double = 0, max: Double = 0) -> Tensor {
        x.histc(bins: bins, min: min, max: max)
    }
}
