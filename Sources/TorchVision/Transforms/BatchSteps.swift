import Torch

// Batched runs of pipelines that contain per-sample random transforms.
//
// A dataset that stacks a batch before transforming it (`BatchedDataset`, e.g. MNIST in a
// `DataLoader`) can only do so when the result equals transforming each sample on its own and
// stacking. For random transforms that holds when every sample's parameters are drawn in the order
// the per-sample pipeline draws them — sample 0's crop box, then sample 0's flip, then sample 1's
// crop box, … — and the parameters depend only on the image size, not its content. `Compose` then
// draws all samples' parameters first and applies each transform once to the whole batch; crops
// and flips that follow each other become one copy per sample (`SampleWindow`).

/// What one sample reads from its input for an h×w output: output pixel (y, x) is input pixel
/// (top + (flipV ? h-1-y : y), left + (flipH ? w-1-x : x)) — a crop, optionally mirrored.
struct SampleWindow: Equatable {
    var top = 0, left = 0
    var flipH = false, flipV = false

    /// The window that reads `next` (a window of size `nextSize` taken from this window's output
    /// of size `size`) straight from this window's input.
    func then(_ next: SampleWindow, size: (h: Int, w: Int), nextSize: (h: Int, w: Int)) -> SampleWindow {
        func axis(_ start: Int, _ flipped: Bool, _ extent: Int, _ nextStart: Int, _ nextFlipped: Bool, _ nextExtent: Int) -> (Int, Bool) {
            flipped ? (start + extent - nextStart - nextExtent, !nextFlipped) : (start + nextStart, nextFlipped)
        }
        let rows = axis(self.top, self.flipV, size.h, next.top, next.flipV, nextSize.h)
        let columns = axis(self.left, self.flipH, size.w, next.left, next.flipH, nextSize.w)
        return SampleWindow(top: rows.0, left: columns.0, flipH: columns.1, flipV: rows.1)
    }

    /// Constant padding a window may read into without it being materialised: the input is seen as
    /// padded by `top` rows and `left` columns (and as far as the windows reach on the other sides)
    /// of `fill`.
    struct Padding {
        var top: Int, left: Int, fill: Double
    }

    /// `batch` ([B, …, H, W]) with sample b read through `windows[b]` into an `height`×`width` output,
    /// from the input as it is or as seen through `padding`.
    static func copy(_ batch: Tensor, _ windows: [SampleWindow], height: Int, width: Int, padding: Padding? = nil) -> Tensor {
        precondition(batch.dim >= 3 && windows.count == batch.shape[0],
                     "SampleWindow.copy: expected \(windows.count) samples of shape (..., H, W), got \(batch.shape)")
        let x = batch.contiguous()
        let (n, h, w) = (x.shape[0], x.shape[x.dim - 2], x.shape[x.dim - 1])
        let planes = n == 0 || h == 0 || w == 0 ? 0 : x.numel / (n * h * w)
        if padding == nil {
            for win in windows {
                precondition(win.top >= 0 && win.left >= 0 && win.top + height <= h && win.left + width <= w,
                             "SampleWindow.copy: window \(win) of \(height)×\(width) outside a \(h)×\(w) image")
            }
        }
        var shape = x.shape
        shape[x.dim - 2] = height
        shape[x.dim - 1] = width
        if x.device != .cpu { return copyOnDevice(x, windows, height: height, width: width, padding: padding) }
        let out = torch.empty(shape, dtype: x.dtype)
        if out.numel == 0 { return out }
        let pad = padding ?? Padding(top: 0, left: 0, fill: 0)
        // The fill value in the tensor's own element type.
        let fillElement = torch.full([1], pad.fill, dtype: x.dtype)
        // Elements are moved, never converted: a copy by element size serves every dtype.
        func run<T>(_: T.Type) {
            let src = (x.storage.data + x.storageOffset * x.elementSize).assumingMemoryBound(to: T.self)
            let dst = (out.storage.data + out.storageOffset * out.elementSize).assumingMemoryBound(to: T.self)
            let fill = (fillElement.storage.data + fillElement.storageOffset * x.elementSize).assumingMemoryBound(to: T.self).pointee
            for b in 0..<n {
                let win = windows[b]
                let left = win.left - pad.left
                for c in 0..<planes {
                    let plane = b * planes + c
                    for y in 0..<height {
                        let sy = win.top + (win.flipV ? height - 1 - y : y) - pad.top
                        let d = dst + (plane * height + y) * width
                        guard sy >= 0 && sy < h else {
                            d.update(repeating: fill, count: width)
                            continue
                        }
                        let s = src + (plane * h + sy) * w
                        // Output columns k0..<k1 read the image (column left + k, or left + width - 1 - k
                        // mirrored); the others are padding.
                        let k0 = win.flipH ? max(0, left + width - w) : max(0, -left)
                        let k1 = win.flipH ? min(width, left + width) : min(width, w - left)
                        if k0 > 0 { d.update(repeating: fill, count: min(k0, width)) }
                        if k1 < width { (d + max(k1, 0)).update(repeating: fill, count: width - max(k1, 0)) }
                        guard k0 < k1 else { continue }
                        if win.flipH {
                            let row = s + left + width - 1
                            for k in k0..<k1 { d[k] = row[-k] }
                        } else {
                            (d + k0).update(from: s + left + k0, count: k1 - k0)
                        }
                    }
                }
            }
        }
        switch x.elementSize {
        case 1: run(UInt8.self)
        case 2: run(UInt16.self)
        case 4: run(UInt32.self)
        default:
            precondition(x.elementSize == 8, "SampleWindow.copy: unsupported element size \(x.elementSize)")
            run(UInt64.self)
        }
        return out
    }
}

extension SampleWindow {
    /// `copy` for a batch on a GPU, from tensor ops that run there: the batch padded once (when a window reads
    /// padding), then each sample's window as a view, mirrored with `flip`, copied into its slot of the output.
    static func copyOnDevice(_ x: Tensor, _ windows: [SampleWindow], height: Int, width: Int, padding: Padding?) -> Tensor {
        let hd = x.dim - 2, wd = x.dim - 1
        let (h, w) = (x.shape[hd], x.shape[wd])
        var source = x, top = 0, left = 0
        if let padding {
            // Enough padding on every side for the farthest window.
            let below = windows.map { $0.top - padding.top + height - h }.max() ?? 0
            let right = windows.map { $0.left - padding.left + width - w }.max() ?? 0
            let (pt, pl) = (Swift.max(padding.top, 0), Swift.max(padding.left, 0))
            var shape = x.shape
            shape[hd] += pt + Swift.max(below, 0)
            shape[wd] += pl + Swift.max(right, 0)
            source = torch.full(shape, padding.fill, dtype: x.dtype, device: x.device)
            _ = source.narrow(hd, pt, h).narrow(wd, pl, w).copy_(x)
            (top, left) = (pt - padding.top, pl - padding.left)
        }
        var shape = x.shape
        shape[hd] = height
        shape[wd] = width
        let out = torch.empty(shape, dtype: x.dtype, device: x.device)
        for (b, win) in windows.enumerated() {
            var v = source.select(0, b).narrow(hd - 1, top + win.top, height).narrow(wd - 1, left + win.left, width)
            let flips: [Int] = (win.flipV ? [hd - 1] : []) + (win.flipH ? [wd - 1] : [])
            if !flips.isEmpty { v = v.flip(flips) }
            _ = out.select(0, b).copy_(v)
        }
        return out
    }
}

/// One transform's part in a batched run: `drawNext()` draws one sample's random parameters
/// (called for each sample in turn, and per sample for each step in pipeline order), then
/// `apply(_:)` transforms the stacked batch with every sample's parameters.
class BatchStep {
    /// The shape of one sample after this step.
    let outputShape: [Int]

    init(outputShape: [Int]) { self.outputShape = outputShape }

    /// Draws the next sample's parameters (nothing for a deterministic step).
    func drawNext() {}

    /// Transforms the whole batch.
    func apply(_ batch: Tensor) -> Tensor { fatalError("BatchStep.apply: abstract") }
}

/// A deterministic step: the same function for every sample.
final class MapStep: BatchStep {
    private let body: (Tensor) -> Tensor

    init(outputShape: [Int], _ body: @escaping (Tensor) -> Tensor) {
        self.body = body
        super.init(outputShape: outputShape)
    }

    override func apply(_ batch: Tensor) -> Tensor { body(batch) }
}

/// A step that reads each sample through its own window (after an optional batch-wide `prepare`,
/// such as RandomCrop's reflect padding, or through constant `padding` that is never materialised):
/// crops and flips.
final class WindowStep: BatchStep {
    /// Applied to the whole batch before the windows are read (nil: nothing).
    let prepare: ((Tensor) -> Tensor)?
    /// Constant padding the windows read through.
    let padding: SampleWindow.Padding?
    /// The (height, width) of the prepared input and of the output.
    let inputSize: (h: Int, w: Int), size: (h: Int, w: Int)
    private let draw: () -> SampleWindow
    /// The windows drawn so far, one per sample.
    private(set) var windows: [SampleWindow] = []

    init(sampleShape: [Int], prepared: (h: Int, w: Int), size: (h: Int, w: Int),
         prepare: ((Tensor) -> Tensor)? = nil, padding: SampleWindow.Padding? = nil, draw: @escaping () -> SampleWindow) {
        self.padding = padding
        var shape = sampleShape
        shape[shape.count - 2] = size.h
        shape[shape.count - 1] = size.w
        self.prepare = prepare
        self.inputSize = prepared
        self.size = size
        self.draw = draw
        super.init(outputShape: shape)
    }

    override func drawNext() { windows.append(draw()) }

    override func apply(_ batch: Tensor) -> Tensor {
        SampleWindow.copy(prepare?(batch) ?? batch, windows, height: size.h, width: size.w, padding: padding)
    }

    /// Whether `next` can be read through this step's windows (it pads nothing itself).
    func fuses(with next: WindowStep) -> Bool { next.prepare == nil && next.padding == nil }

    /// This step followed by `next` as one step.
    func fused(with next: WindowStep) -> WindowStep {
        precondition(fuses(with: next) && next.windows.count == windows.count, "WindowStep.fused: incompatible steps")
        let step = WindowStep(sampleShape: outputShape, prepared: inputSize, size: next.size, prepare: prepare,
                              padding: padding) { SampleWindow() }
        step.windows = zip(windows, next.windows).map { $0.then($1, size: size, nextSize: next.size) }
        return step
    }
}

/// A transform that can take part in a batched run with per-sample parameters.
protocol BatchSteppable {
    /// The step for samples of `sampleShape` (without the batch dimension); nil when this input
    /// cannot be handled batch-wise (the caller then transforms sample by sample).
    func batchStep(sampleShape: [Int]) -> BatchStep?
}

enum BatchRun {
    /// `transforms` on a stacked batch, each sample drawing its own random parameters in the
    /// per-sample order; nil (having drawn nothing) when one of them is not `BatchSteppable`.
    static func apply(_ parts: ArraySlice<any transforms.Transform>, to batch: Tensor) -> Tensor? {
        guard batch.dim >= 1 else { return nil }
        var steps: [BatchStep] = []
        var shape = Array(batch.shape.dropFirst())
        for t in parts {
            guard let step = (t as? BatchSteppable)?.batchStep(sampleShape: shape) else { return nil }
            steps.append(step)
            shape = step.outputShape
        }
        for _ in 0..<batch.shape[0] {
            for step in steps { step.drawNext() }
        }
        var x = batch
        var k = 0
        while k < steps.count {
            guard var window = steps[k] as? WindowStep else {
                x = steps[k].apply(x)
                k += 1
                continue
            }
            k += 1
            while k < steps.count, let next = steps[k] as? WindowStep, window.fuses(with: next) {
                window = window.fused(with: next)
                k += 1
            }
            x = window.apply(x)
        }
        return x
    }
}
