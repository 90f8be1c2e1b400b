import CTorchKernels

/// The CPU pooling kernels (`CPUPooling`, whose CUDA twin is `CUDAPooling`) over up to three spatial dims (1-D and 2-D pooling are 3-D pooling with leading sizes 1):
/// max pooling with saved argmax indices, average pooling with PyTorch's divisor rules, and their backward
/// passes. Work is split over the (N·C) planes, each plane independent, so the backward scatter needs no locks.
///
/// The inner loops read each axis's window table (first input index inside the window, number of window
/// elements inside the input) through raw pointers: no array bounds checks or copies per output element,
/// which made the earlier array-based loop ~10× slower than the memory traffic allows.

enum CPUPooling {
    /// Max pooling of contiguous `x` into `out` (planes × output plane), indices into `indices` when given, each
    /// output row clamped to `clamp` as it is written.
    static func maxForward(_ x: Tensor, into out: Tensor, indices: Tensor?, planes: Int, _ g: PoolGeometry,
                           clamp: (lo: Double, hi: Double)?) {
        func run<T: FloatElement>(_: T.Type) {
            maxPoolForwardKernel(UnsafePointer(x.pointer(T.self)), out.pointer(T.self), indices?.pointer(Int64.self), planes: planes,
                                 g, clamp: clamp.map { (T($0.lo), T($0.hi)) })
        }
        withPoolElement(x.dtype, "max_pool") { run($0) }
    }

    /// Max pooling's backward: `gy` (contiguous, output-shaped) scattered to the saved max positions of `out`.
    static func maxBackward(_ gy: Tensor, indices: Tensor, into out: Tensor, planes: Int, inPlane: Int, outPlane: Int) {
        func run<T: FloatElement>(_: T.Type) {
            maxPoolBackwardKernel(UnsafePointer(gy.pointer(T.self)), UnsafePointer(indices.pointer(Int64.self)), out.pointer(T.self),
                                  planes: planes, inPlane: inPlane, outPlane: outPlane)
        }
        withPoolElement(gy.dtype, "max_pool_backward") { run($0) }
    }

    /// The adjoint of `maxBackward`: contiguous `x` (input-shaped) read at the saved max positions into `out`.
    static func maxGather(_ x: Tensor, indices: Tensor, into out: Tensor, planes: Int, inPlane: Int, outPlane: Int) {
        func run<T: FloatElement>(_: T.Type) {
            let xp = x.pointer(T.self), op = out.pointer(T.self), ip = indices.pointer(Int64.self)
            parallelFor(planes, grain: Swift.max(1, elementwiseGrain / Swift.max(outPlane, 1))) { lo, hi in
                for p in lo..<hi {
                    for o in 0..<outPlane { op[p * outPlane + o] = xp[p * inPlane + Int(ip[p * outPlane + o])] }
                }
            }
        }
        withPoolElement(x.dtype, "max_pool_gather") { run($0) }
    }

    /// Average pooling of contiguous `x` into `out`.
    static func averageForward(_ x: Tensor, into out: Tensor, planes: Int, _ g: PoolGeometry, countIncludePad: Bool,
                               divisorOverride: Int?) {
        func run<T: FloatElement>(_: T.Type) {
            avgPoolForwardKernel(UnsafePointer(x.pointer(T.self)), out.pointer(T.self), planes: planes, g,
                                 countIncludePad: countIncludePad, divisorOverride: divisorOverride)
        }
        withPoolElement(x.dtype, "avg_pool") { run($0) }
    }

    /// The gradient of average pooling: `gy` (contiguous, output-shaped) spread into `gx` (input-shaped).
    static func averageBackward(_ gy: Tensor, into gx: Tensor, planes: Int, _ g: PoolGeometry, countIncludePad: Bool,
                                divisorOverride: Int?) {
        func run<T: FloatElement>(_: T.Type) {
            avgPoolBackwardKernel(UnsafePointer(gy.pointer(T.self)), gx.pointer(T.self), planes: planes, g,
                                  countIncludePad: countIncludePad, divisorOverride: divisorOverride)
        }
        withPoolElement(gy.dtype, "avg_pool_backward") { run($0) }
    }
}

/// Runs `body` with the element type of a floating `dtype`.
private func withPoolElement(_ dtype: DType, _ op: String, _ body: (any FloatElement.Type) -> Void) {
    switch dtype {
    case .float32: body(Float.self)
    case .float64: body(Double.self)
    default: preconditionFailure("\"\(op)\" not implemented for '\(dtype.name.capitalized)'")
    }
}

/// The window of each output position along one dim: the first input index, the step between window elements,
/// and the range of window elements that fall inside the input.
struct PoolAxis {
    /// First input index of output `o`'s window (may be negative: padding).
    var start: [Int]
    /// Window elements `j` with `start + j·step` inside the input.
    var valid: [Range<Int>]
    /// The step between window elements (the dilation).
    var step: Int
    /// Average pooling's pool size with padding counted (clipped at input + padding), per output.
    var paddedCount: [Int]
    /// The window parameters when every window has `kernel` elements every `stride` (nil for adaptive windows).
    var fixed: (kernel: Int, stride: Int, padding: Int)?

    /// A fixed window of `kernel` elements every `stride`, starting `padding` before the input.
    init(input: Int, output: Int, kernel: Int, stride: Int, padding: Int, dilation: Int) {
        step = dilation
        fixed = (kernel, stride, padding)
        start = (0..<output).map { $0 * stride - padding }
        valid = start.map { s in
            let lo = s >= 0 ? 0 : (-s + dilation - 1) / dilation
            let hi = Swift.min(kernel, s >= input ? 0 : (input - 1 - s) / dilation + 1)
            return lo..<Swift.max(lo, hi)
        }
        paddedCount = start.map { s in Swift.min(s + kernel, input + padding) - s }
    }

    /// Adaptive windows: output `o` covers `[⌊o·in/out⌋, ⌈(o+1)·in/out⌉)`.
    init(adaptiveInput input: Int, output: Int) {
        step = 1
        start = (0..<output).map { $0 * input / output }
        valid = (0..<output).map { o in 0..<(((o + 1) * input + output - 1) / output - o * input / output) }
        paddedCount = valid.map { $0.count }
    }
}

/// Three axes (D, H, W) and the plane sizes.
struct PoolGeometry {
    var axes: [PoolAxis]
    var input: [Int]
    var output: [Int]
    var inPlane: Int { input[0] * input[1] * input[2] }
    var outPlane: Int { output[0] * output[1] * output[2] }
}

/// One axis's window table as the inner loops read it: output `o`'s window elements inside the input are the
/// input indices `first[o] + j·step` for `j < count[o]`; `padded[o]` is the pool size with padding counted.
private struct WindowTable {
    let first: UnsafePointer<Int>
    let count: UnsafePointer<Int>
    let padded: UnsafePointer<Int>
    let step: Int
}

/// Runs `body` with the three axes' window tables, laid out in one temporary buffer.
private func withWindowTables<R>(_ g: PoolGeometry, _ body: (WindowTable, WindowTable, WindowTable) -> R) -> R {
    let total = g.output.reduce(0, +) * 3
    return withUnsafeTemporaryAllocation(of: Int.self, capacity: Swift.max(total, 1)) { buffer in
        var tables: [WindowTable] = []
        var cursor = buffer.baseAddress!
        for (axis, n) in zip(g.axes, g.output) {
            let first = cursor, count = cursor + n, padded = cursor + 2 * n
            for o in 0..<n {
                first[o] = axis.start[o] + axis.valid[o].lowerBound * axis.step
                count[o] = axis.valid[o].count
                padded[o] = axis.paddedCount[o]
            }
            tables.append(WindowTable(first: first, count: count, padded: padded, step: axis.step))
            cursor += 3 * n
        }
        return body(tables[0], tables[1], tables[2])
    }
}

/// Planes per parallel chunk so that a chunk touches about `elementwiseGrain` input elements.
private func planeGrain(_ g: PoolGeometry) -> Int { Swift.max(1, elementwiseGrain / Swift.max(g.inPlane, 1)) }

/// Calls `body(outIndex, od, oh, ow)` for each output position of a plane, in order.
@inline(__always)
private func forEachOutput(_ g: PoolGeometry, _ body: (_ o: Int, _ od: Int, _ oh: Int, _ ow: Int) -> Void) {
    let (outD, outH, outW) = (g.output[0], g.output[1], g.output[2])
    var o = 0
    for od in 0..<outD {
        for oh in 0..<outH {
            for ow in 0..<outW {
                body(o, od, oh, ow)
                o += 1
            }
        }
    }
}

/// Calls `body(offset)` with the in-plane offset of each window element of output (od, oh, ow) that lies inside
/// the input, in PyTorch's scan order (depth, then rows, then columns).
@inline(__always)
private func forEachWindowElement(_ d: WindowTable, _ h: WindowTable, _ w: WindowTable, height: Int, width: Int,
                                  _ od: Int, _ oh: Int, _ ow: Int, _ body: (Int) -> Void) {
    let (countD, countH, countW) = (d.count[od], h.count[oh], w.count[ow])
    let (firstH, firstW) = (h.first[oh], w.first[ow])
    for jd in 0..<countD {
        let id = d.first[od] + jd * d.step
        for jh in 0..<countH {
            let rowBase = (id * height + firstH + jh * h.step) * width + firstW
            for jw in 0..<countW { body(rowBase + jw * w.step) }
        }
    }
}

/// Runs `body(plane, outputOffset, rowBase, rows)` for every output row (od, oh) of planes `planes`, with `rowBase`
/// holding the offsets of the window's `rows` input rows (see `windowRowOffsets`) and `outputOffset` the row's
/// first output element.
@inline(__always)
private func forEachOutputRow(planes: Range<Int>, _ d: WindowTable, _ h: WindowTable, _ g: PoolGeometry, maxRows: Int,
                              _ body: (_ plane: Int, _ outputOffset: Int, _ rowBase: UnsafeMutablePointer<Int64>, _ rows: Int) -> Void) {
    let (height, width, outPlane) = (g.input[1], g.input[2], g.outPlane)
    let (outD, outH, outW) = (g.output[0], g.output[1], g.output[2])
    withUnsafeTemporaryAllocation(of: Int64.self, capacity: maxRows) { rowBase in
        for p in planes {
            var o = p * outPlane
            for od in 0..<outD {
                for oh in 0..<outH {
                    body(p, o, rowBase.baseAddress!, windowRowOffsets(d, h, od, oh, height: height, width: width, into: rowBase.baseAddress!))
                    o += outW
                }
            }
        }
    }
}

/// Writes the in-plane offsets of column 0 of output (od, oh)'s window rows into `rowBase`, in scan order
/// (depth, then rows); returns how many there are.
@inline(__always)
private func windowRowOffsets(_ d: WindowTable, _ h: WindowTable, _ od: Int, _ oh: Int, height: Int, width: Int,
                              into rowBase: UnsafeMutablePointer<Int64>) -> Int {
    var rows = 0
    for jd in 0..<d.count[od] {
        let id = d.first[od] + jd * d.step
        for jh in 0..<h.count[oh] {
            rowBase[rows] = Int64((id * height + h.first[oh] + jh * h.step) * width)
            rows += 1
        }
    }
    return rows
}

/// Max pooling of `planes` planes: writes each window's maximum (NaN wins, like PyTorch) and, when `indices` is
/// given, its flat index in the input plane. The rows of outputs run in CTorchKernels (`ct_maxpool_row_*`), whose
/// branch-free selects the Swift loop could not be made to compile to. Without indices (inference) a fixed-window
/// pooling takes the values-only rows (`ct_maxpool_values_row_*`): column maxima, then window maxima.
///
/// `clamp` (values only) clamps each row of outputs while it is in cache: max pooling after a ReLU, ReLU6 or
/// Hardtanh in one pass (a non-decreasing clamp commutes with the maximum, NaN included, so it runs on the
/// pooled outputs instead of every input).
func maxPoolForwardKernel<T: FloatElement>(_ x: UnsafePointer<T>, _ y: UnsafeMutablePointer<T>, _ indices: UnsafeMutablePointer<Int64>?,
                                           planes: Int, _ g: PoolGeometry, clamp: (lo: T, hi: T)? = nil) {
    precondition(clamp == nil || indices == nil, "max_pool: a fused clamp computes values only")
    let (width, inPlane, outPlane, outW) = (g.input[2], g.inPlane, g.outPlane, g.output[2])
    let maxRows = Swift.max(1, g.axes[0].valid.map(\.count).max() ?? 0) * Swift.max(1, g.axes[1].valid.map(\.count).max() ?? 0)
    if indices == nil, let fixed = g.axes[2].fixed {
        let dilation = g.axes[2].step
        let colmaxCount = Swift.max(fixed.padding + width, (outW - 1) * fixed.stride + (fixed.kernel - 1) * dilation + 1, 1)
        withWindowTables(g) { d, h, _ in
            parallelFor(planes, grain: planeGrain(g)) { lo, hi in
                withUnsafeTemporaryAllocation(of: T.self, capacity: colmaxCount) { colmax in
                    forEachOutputRow(planes: lo..<hi, d, h, g, maxRows: maxRows) { p, o, rowBase, rows in
                        maxPoolValuesRow(x + p * inPlane, rowBase, rows, width: width, fixed, dilation: dilation, outW, colmax, y + o)
                        if let clamp { clampRow(y + o, outW, clamp) }
                    }
                }
            }
        }
        return
    }
    // Adaptive windows without indices (rare) still run the indexed rows, into scratch.
    let scratch = indices == nil ? UnsafeMutablePointer<Int64>.allocate(capacity: Swift.max(planes * outPlane, 1)) : nil
    defer {
        scratch?.deallocate()
        if let clamp { clampRow(y, planes * outPlane, clamp) }
    }
    let indices = indices ?? scratch!
    withWindowTables(g) { d, h, w in
        // Rows of non-overlapping full 2-wide windows (2×2 stride 2 pooling) take the four-at-a-time kernel.
        let pairs = T.self == Float.self && w.step == 1 && inPlane < Int(Int32.max) && outW > 0
            && (0..<outW).allSatisfy { w.count[$0] == 2 && w.first[$0] == w.first[0] + 2 * $0 }
        // The W table as the C kernel's int64_t (the same layout as Int on 64-bit platforms).
        w.first.withMemoryRebound(to: Int64.self, capacity: outW) { first in
            w.count.withMemoryRebound(to: Int64.self, capacity: outW) { count in
                parallelFor(planes, grain: planeGrain(g)) { lo, hi in
                    forEachOutputRow(planes: lo..<hi, d, h, g, maxRows: maxRows) { p, o, rowBase, rows in
                        if pairs && rows == 2 {
                            let i0 = Int(rowBase[0]) + w.first[0], i1 = Int(rowBase[1]) + w.first[0]
                            let xp = UnsafeRawPointer(x + p * inPlane).assumingMemoryBound(to: Float.self)
                            ct_maxpool_row2x2_f32(xp + i0, xp + i1, Int64(i0), Int64(i1), Int64(outW),
                                                  UnsafeMutableRawPointer(y + o).assumingMemoryBound(to: Float.self), indices + o)
                        } else {
                            maxPoolRow(x + p * inPlane, rowBase, rows, first, count, step: w.step, outW, y + o, indices + o)
                        }
                    }
                }
            }
        }
    }
}

/// Clamps `count` values in place (`clampElement`, as the Hardtanh kernel; NaN stays NaN).
@inline(__always)
private func clampRow<T: FloatElement>(_ y: UnsafeMutablePointer<T>, _ count: Int, _ clamp: (lo: T, hi: T)) {
    for i in 0..<count { y[i] = clampElement(y[i], clamp.lo, clamp.hi) }
}

/// One output row of values-only max pooling through CTorchKernels, for float32 and float64.
@inline(__always)
private func maxPoolValuesRow<T: FloatElement>(_ x: UnsafePointer<T>, _ rowBase: UnsafePointer<Int64>, _ rows: Int, width: Int,
                                               _ fixed: (kernel: Int, stride: Int, padding: Int), dilation: Int, _ outW: Int,
                                               _ colmax: UnsafeMutableBufferPointer<T>, _ y: UnsafeMutablePointer<T>) {
    if T.self == Float.self {
        ct_maxpool_values_row_f32(UnsafeRawPointer(x).assumingMemoryBound(to: Float.self), rowBase, Int64(rows), Int64(width),
                                  Int64(fixed.padding), Int64(fixed.stride), Int64(dilation), Int64(fixed.kernel), Int64(outW),
                                  UnsafeMutableRawPointer(colmax.baseAddress!).assumingMemoryBound(to: Float.self), Int64(colmax.count),
                                  UnsafeMutableRawPointer(y).assumingMemoryBound(to: Float.self))
    } else {
        precondition(T.self == Double.self, "max_pool: no kernel for \(T.self)")
        ct_maxpool_values_row_f64(UnsafeRawPointer(x).assumingMemoryBound(to: Double.self), rowBase, Int64(rows), Int64(width),
                                  Int64(fixed.padding), Int64(fixed.stride), Int64(dilation), Int64(fixed.kernel), Int64(outW),
                                  UnsafeMutableRawPointer(colmax.baseAddress!).assumingMemoryBound(to: Double.self), Int64(colmax.count),
                                  UnsafeMutableRawPointer(y).assumingMemoryBound(to: Double.self))
    }
}

/// One output row of max pooling through CTorchKernels, for float32 and float64.
@inline(__always)
private func maxPoolRow<T: FloatElement>(_ x: UnsafePointer<T>, _ rowBase: UnsafePointer<Int64>, _ rows: Int,
                                         _ first: UnsafePointer<Int64>, _ count: UnsafePointer<Int64>, step: Int, _ outW: Int,
                                         _ y: UnsafeMutablePointer<T>, _ indices: UnsafeMutablePointer<Int64>) {
    if T.self == Float.self {
        ct_maxpool_row_f32(UnsafeRawPointer(x).assumingMemoryBound(to: Float.self), rowBase, Int64(rows), first, count,
                           Int64(step), Int64(outW), UnsafeMutableRawPointer(y).assumingMemoryBound(to: Float.self), indices)
    } else {
        precondition(T.self == Double.self, "max_pool: no kernel for \(T.self)")
        ct_maxpool_row_f64(UnsafeRawPointer(x).assumingMemoryBound(to: Double.self), rowBase, Int64(rows), first, count,
                           Int64(step), Int64(outW), UnsafeMutableRawPointer(y).assumingMemoryBound(to: Double.self), indices)
    }
}

/// Scatters `gy` into `gx` (zeroed here) at the saved max indices.
func maxPoolBackwardKernel<T: FloatElement>(_ gy: UnsafePointer<T>, _ indices: UnsafePointer<Int64>, _ gx: UnsafeMutablePointer<T>,
                                            planes: Int, inPlane: Int, outPlane: Int) {
    parallelFor(planes, grain: Swift.max(1, elementwiseGrain / Swift.max(inPlane, 1))) { lo, hi in
        for p in lo..<hi {
            let gxp = gx + p * inPlane, gyp = gy + p * outPlane, ip = indices + p * outPlane
            // Zeroed plane by plane, so the scatter finds it in the L1 (zeroing the whole chunk first sent MBs to
            // memory and back).
            gxp.update(repeating: 0, count: inPlane)
            for o in 0..<outPlane { gxp[Int(ip[o])] += gyp[o] }
        }
    }
}

/// The divisor of each output of an average pooling: `divisorOverride`, the window size with padding
/// (`countIncludePad`), or the number of input elements in the window.
@inline(__always)
private func averageDivisor(_ d: WindowTable, _ h: WindowTable, _ w: WindowTable, _ od: Int, _ oh: Int, _ ow: Int,
                            countIncludePad: Bool, divisorOverride: Int?) -> Int {
    if let divisorOverride { return divisorOverride }
    if countIncludePad { return d.padded[od] * h.padded[oh] * w.padded[ow] }
    return d.count[od] * h.count[oh] * w.count[ow]
}

/// Average pooling of `planes` planes (PyTorch's divisor rules; an empty window gives 0).
func avgPoolForwardKernel<T: FloatElement>(_ x: UnsafePointer<T>, _ y: UnsafeMutablePointer<T>, planes: Int, _ g: PoolGeometry,
                                           countIncludePad: Bool, divisorOverride: Int?) {
    let (height, width, inPlane, outPlane) = (g.input[1], g.input[2], g.inPlane, g.outPlane)
    withWindowTables(g) { d, h, w in
        parallelFor(planes, grain: planeGrain(g)) { lo, hi in
            for p in lo..<hi {
                let xp = x + p * inPlane, yp = y + p * outPlane
                forEachOutput(g) { o, od, oh, ow in
                    guard d.count[od] > 0, h.count[oh] > 0, w.count[ow] > 0 else { yp[o] = 0; return }
                    var sum: T = 0
                    forEachWindowElement(d, h, w, height: height, width: width, od, oh, ow) { sum += xp[$0] }
                    yp[o] = sum / T(averageDivisor(d, h, w, od, oh, ow, countIncludePad: countIncludePad, divisorOverride: divisorOverride))
                }
            }
        }
    }
}

/// Spreads each output gradient over its window (divided like the forward) into `gx` (zeroed here).
func avgPoolBackwardKernel<T: FloatElement>(_ gy: UnsafePointer<T>, _ gx: UnsafeMutablePointer<T>, planes: Int, _ g: PoolGeometry,
                                            countIncludePad: Bool, divisorOverride: Int?) {
    let (height, width, inPlane, outPlane) = (g.input[1], g.input[2], g.inPlane, g.outPlane)
    withWindowTables(g) { d, h, w in
        parallelFor(planes, grain: planeGrain(g)) { lo, hi in
            (gx + lo * inPlane).update(repeating: 0, count: (hi - lo) * inPlane)
            for p in lo..<hi {
                let gxp = gx + p * inPlane, gyp = gy + p * outPlane
                forEachOutput(g) { o, od, oh, ow in
                    let v = gyp[o] / T(averageDivisor(d, h, w, od, oh, ow, countIncludePad: countIncludePad, divisorOverride: divisorOverride))
                    forEachWindowElement(d, h, w, height: height, width: width, od, oh, ow) { gxp[$0] += v }
                }
            }
        }
    }
}
