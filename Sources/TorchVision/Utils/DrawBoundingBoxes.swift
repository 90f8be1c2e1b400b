import Torch

extension utils {
    /// Draws axis-aligned boxes (`boxes`: N×4 `(xmin, ymin, xmax, ymax)` in pixels, inclusive, truncated
    /// to integers) on a 1- or 3-channel image (uint8, or float in [0, 1]) as outlines `width` pixels wide,
    /// inside the box, optionally filled with the box colour at opacity 100/255, like torchvision's
    /// `draw_bounding_boxes` (which draws with Pillow). Returns a 3-channel image of the input dtype.
    /// `colors`: RGB triples in 0…255, one per box or one for all; nil uses torchvision's palette.
    /// Text labels are not supported (torchvision renders them with Pillow's fonts).
    public static func drawBoundingBoxes(_ image: Tensor, _ boxes: Tensor, colors: [[Double]]? = nil, fill: Bool = false,
                                         width: Int = 1) -> Tensor {
        precondition(image.dtype == .uint8 || image.dtype.isFloatingPoint, "The image dtype must be uint8 or float, got \(image.dtype)")
        precondition(image.dim == 3, "Pass individual images, not batches")
        precondition(image.shape[0] == 1 || image.shape[0] == 3, "Only grayscale and RGB images are supported")
        precondition(boxes.dim == 2 && boxes.shape[1] == 4, "draw_bounding_boxes: boxes must be of shape (N, 4), got \(boxes.shape)")
        let b = boxes.to(.float64).contiguous().toArray(as: Double.self)
        let count = boxes.shape[0]
        for k in 0..<count {
            precondition(b[4 * k] <= b[4 * k + 2] && b[4 * k + 1] <= b[4 * k + 3],
                         "Boxes need to be in (xmin, ymin, xmax, ymax) format. Use torchvision.ops.box_convert to convert them")
        }
        if count == 0 { return image }
        var palette = colors ?? colorPalette(count)
        if palette.count == 1 && count > 1 { palette = [[Double]](repeating: palette[0], count: count) }
        precondition(palette.count >= count,
                     "Number of colors must be equal or larger than the number of objects, but got \(palette.count) < \(count).")
        var rgb = image.shape[0] == 1 ? image.expand(3, image.shape[1], image.shape[2]) : image
        if image.dtype.isFloatingPoint { rgb = transforms.functional.convertImageDtype(rgb, .uint8) }
        var planes = PixelPlanes(rgb, op: "draw_bounding_boxes")
        let (h, w) = (planes.height, planes.width)
        // Pillow's `(a + 128 + ((a + 128) >> 8)) >> 8` division by 255.
        func div255(_ a: Int) -> Int { let t = a + 128; return ((t >> 8) + t) >> 8 }
        func put(_ x: Int, _ y: Int, _ color: [Double], alpha: Int) {
            guard x >= 0 && x < w && y >= 0 && y < h else { return }
            for c in 0..<3 {
                let i = c * h * w + y * w + x
                planes.data[i] = alpha == 255 ? color[c]
                    : Double(div255(Int(planes.data[i]) * (255 - alpha) + Int(color[c]) * alpha))
            }
        }
        for k in 0..<count {
            let (x0, y0, x1, y1) = (Int(b[4 * k]), Int(b[4 * k + 1]), Int(b[4 * k + 2]), Int(b[4 * k + 3]))
            let color = palette[k]
            if fill {
                for y in stride(from: max(y0, 0), to: min(y1 + 1, h), by: 1) {
                    for x in stride(from: max(x0, 0), to: min(x1 + 1, w), by: 1) { put(x, y, color, alpha: 100) }
                }
            }
            if width > 0 {
                for i in 0..<width {
                    for x in x0...x1 { put(x, y0 + i, color, alpha: 255); put(x, y1 - i, color, alpha: 255) }
                    // Pillow draws the sides as lines from y0 + width to y1 - width + 1, both ends included,
                    // in whichever direction that runs (so thick outlines on small boxes overshoot).
                    let (ya, yb) = (y0 + width, y1 - width + 1)
                    for y in min(ya, yb)...max(ya, yb) { put(x0 + i, y, color, alpha: 255); put(x1 - i, y, color, alpha: 255) }
                }
            }
        }
        let out = planes.tensor(.uint8)
        return image.dtype.isFloatingPoint ? transforms.functional.convertImageDtype(out, image.dtype) : out
    }
}
