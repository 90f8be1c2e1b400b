import Torch

extension utils {
    /// Colours for `count` objects when none are given: torchvision's palette, `(i * [2^25-1, 2^15-1, 2^21-1]) % 255`.
    static func colorPalette(_ count: Int) -> [[Double]] {
        let base = [33_554_431, 32_767, 2_097_151]
        return (0..<count).map { i in base.map { Double((i * $0) % 255) } }
    }

    /// Paints each boolean mask (N×H×W or H×W) onto an RGB image (uint8 3×H×W, or float in [0, 1]) in its
    /// colour with opacity `alpha`, pixels covered by more than one mask turning black before blending
    /// (torchvision's `draw_segmentation_masks`). `colors` are RGB triples in 0…255, one per mask or one for
    /// all; nil uses torchvision's palette.
    public static func drawSegmentationMasks(_ image: Tensor, _ masks: Tensor, alpha: Double = 0.8,
                                             colors: [[Double]]? = nil) -> Tensor {
        precondition(image.dtype == .uint8 || image.dtype.isFloatingPoint, "The image dtype must be uint8 or float, got \(image.dtype)")
        precondition(image.dim == 3, "Pass individual images, not batches")
        precondition(image.shape[0] == 3, "Pass an RGB image. Other Image formats are not supported")
        let m = masks.dim == 2 ? masks.unsqueeze(0) : masks
        precondition(m.dim == 3, "masks must be of shape (H, W) or (batch_size, H, W)")
        precondition(m.dtype == .bool, "The masks must be of dtype bool. Got \(m.dtype)")
        precondition(Array(m.shape.suffix(2)) == Array(image.shape.suffix(2)), "The image and the masks must have the same height and width")
        let count = m.shape[0]
        if count == 0 { return image }
        var palette = colors ?? colorPalette(count)
        if palette.count == 1 && count > 1 { palette = [[Double]](repeating: palette[0], count: count) }
        precondition(palette.count >= count,
                     "Number of colors must be equal or larger than the number of objects, but got \(palette.count) < \(count).")
        precondition(palette.allSatisfy { $0.count == 3 }, "colors should be RGB triplets, got \(palette)")
        let scale = image.dtype.isFloatingPoint ? 255.0 : 1
        var planes = PixelPlanes(image, op: "draw_segmentation_masks")
        let n = planes.height * planes.width
        let cover = m.contiguous().toArray(as: Bool.self)
        let f32 = image.dtype != .float64
        func r(_ v: Double) -> Double { f32 ? Double(Float(v)) : v }
        let keep = r(1 - alpha), a = r(alpha)
        for i in 0..<n {
            var painted: [Double]? = nil
            var hits = 0
            for k in 0..<count where cover[k * n + i] {
                hits += 1
                painted = palette[k].map { image.dtype.isFloatingPoint ? r($0 / scale) : $0 }
            }
            for c in 0..<3 {
                let x = planes.data[c * n + i]
                let top = hits > 1 ? 0 : (painted?[c] ?? x)
                let v = r(r(x * keep) + r(top * a))
                planes.data[c * n + i] = image.dtype.isFloatingPoint ? v : v.rounded(.towardZero)
            }
        }
        return planes.tensor(image.dtype)
    }
}
