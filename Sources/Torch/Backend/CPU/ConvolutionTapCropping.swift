/// Kernel taps that never touch the input.
///
/// On small planes part of the kernel reads only zero padding: a 3×3 convolution with padding 1 on a 1×1 plane
/// (ResNet-18's last stage on 32×32 images) uses only its centre tap, and one with stride 2 from 2×2 to 1×1 uses
/// four of nine. Those taps contribute nothing to the output or the input gradient, and their weight gradient is
/// zero, yet im2col would copy zeros for them and the GEMM multiply by those zeros: 8/9 of that stage's work.
/// Along each spatial dim the taps that read the input for at least one output position form a contiguous range
/// (the window slides monotonically with the tap index), so the live taps are a sub-box of the kernel and the
/// convolution is exactly one with the cropped kernel and the padding reduced by the cropped front taps.

extension ConvGeometry {
    /// The taps, per spatial dim, that read inside the input for at least one output position; nil when that is
    /// every tap (or none: such a convolution is all padding and runs as it is).
    var liveTaps: [Range<Int>]? {
        var ranges: [Range<Int>] = []
        var cropped = false
        for d in 0..<3 {
            let live = (0..<kernel[d]).filter { k in
                !validRange(offset: k * dilation[d] - padding[d], stride: stride[d], inSize: big[d], outSize: small[d]).isEmpty
            }
            guard let lo = live.first, let hi = live.last else { return nil }
            ranges.append(lo..<(hi + 1))
            cropped = cropped || ranges[d].count < kernel[d]
        }
        return cropped ? ranges : nil
    }

    /// The same convolution with only the taps `taps`: the kernel shrinks to them and the padding loses the
    /// cropped front taps (it may become negative: the first live tap then starts inside the input).
    func cropped(to taps: [Range<Int>]) -> ConvGeometry {
        var g = self
        for d in 0..<3 {
            g.kernel[d] = taps[d].count
            g.padding[d] = padding[d] - taps[d].lowerBound * dilation[d]
        }
        return g
    }
}

/// Copies the taps `taps` of a weight `[rows, kernel]` (rows = Csmall · Cbig/groups) into or out of a cropped weight
/// `[rows, cropped kernel]`; `toCropped == false` writes zeros to the dead taps of `full`.
///
/// Split over the pool by rows: ResNet-18's last stage at 32×32 crops 9.4 MB weights to their centre tap once per
/// convolution and step (`ConvWeightCrop`, shared by the forward and the input gradient) and expands the weight
/// gradient back once, memory-bound passes that ran on one thread (5 % of its 2-thread step, perf).
func copyLiveTaps<T: ConvElement>(_ full: UnsafeMutablePointer<T>, _ cropped: UnsafeMutablePointer<T>, rows: Int,
                                  kernel: [Int], taps: [Range<Int>], toCropped: Bool) {
    let volume = kernel[0] * kernel[1] * kernel[2]
    // The live taps' offsets within one row of `full`, in the cropped kernel's order.
    var offsets: [Int] = []
    for kd in taps[0] { for kh in taps[1] { for kw in taps[2] { offsets.append((kd * kernel[1] + kh) * kernel[2] + kw) } } }
    let live = offsets.count
    offsets.withUnsafeBufferPointer { offsetBuffer in
        let offset = offsetBuffer.baseAddress!
        parallelFor(rows, grain: Swift.max(1, elementwiseGrain / volume)) { lo, hi in
            if toCropped {
                for r in lo..<hi {
                    let src = full + r &* volume, dst = cropped + r &* live
                    for j in 0..<live { dst[j] = src[offset[j]] }
                }
            } else {
                // Zeros, then the live taps, one L1-sized block of rows at a time: one pass over `full`.
                // Zero-filling the whole range first read it back for the scatter from beyond the L2, 3x slower on
                // a 9.4 MB weight (a C model of both loops).
                let blockRows = Swift.max(1, 4096 / volume)
                var first = lo
                while first < hi {
                    let end = Swift.min(hi, first &+ blockRows)
                    (full + first &* volume).update(repeating: 0, count: (end &- first) &* volume)
                    for r in first..<end {
                        let dst = full + r &* volume, src = cropped + r &* live
                        for j in 0..<live { dst[offset[j]] = src[j] }
                    }
                    first = end
                }
            }
        }
    }
}
