#if canImport(Glibc)
import Glibc
#endif
import Torch

/// Brightness, contrast, saturation and hue of PIL-style pictures computed the way Pillow's
/// `ImageEnhance` and torchvision's PIL hue code do, so `Image` inputs to `ColorJitter` get what
/// torchvision gives for PIL images. Pixels are uint8 C×H×W tensors (C = 1, 3 or 4).
enum PillowColor {
    /// Pillow's `Image.blend(degenerate, image, alpha)`: `d + alpha * (x - d)` in float32, clipped to
    /// 0…255 and truncated, per byte; alpha bands are left as they are.
    static func blend(_ pixels: Tensor, degenerate: (Int, Int) -> Double, alpha: Double) -> Tensor {
        var planes = PixelPlanes(pixels, op: "ImageEnhance")
        let n = planes.height * planes.width, a = Float(alpha)
        let colourBands = planes.count == 4 ? 3 : planes.count
        for b in 0..<colourBands {
            for i in 0..<n {
                let d = Float(degenerate(b, i)), x = Float(planes.data[b * n + i])
                let v = d + a * (x - d)
                planes.data[b * n + i] = Double(v <= 0 ? 0 : (v >= 255 ? 255 : v.rounded(.towardZero)))
            }
        }
        return planes.tensor(.uint8)
    }

    /// Pillow's luma of each pixel (`Image.convert("L")`), one value per pixel.
    private static func luma(_ pixels: Tensor) -> [Double] {
        let img = Image(tensor: pixels)
        return img.convert(.L).pixels.map(Double.init)
    }

    static func brightness(_ pixels: Tensor, _ factor: Double) -> Tensor {
        blend(pixels, degenerate: { _, _ in 0 }, alpha: factor)
    }

    static func contrast(_ pixels: Tensor, _ factor: Double) -> Tensor {
        let l = luma(pixels)
        let mean = l.isEmpty ? 0 : Double(Int(l.reduce(0, +) / Double(l.count) + 0.5))
        return blend(pixels, degenerate: { _, _ in mean }, alpha: factor)
    }

    static func saturation(_ pixels: Tensor, _ factor: Double) -> Tensor {
        if pixels.shape[0] == 1 { return pixels }
        let l = luma(pixels)
        return blend(pixels, degenerate: { _, i in l[i] }, alpha: factor)
    }

    /// torchvision's PIL `adjust_hue`: to Pillow's 8-bit HSV, add `factor * 255` (as a wrapped byte) to the
    /// hue byte, back to RGB. Grey pictures are returned unchanged.
    static func hue(_ pixels: Tensor, _ factor: Double) -> Tensor {
        if pixels.shape[0] == 1 { return pixels }
        var planes = PixelPlanes(pixels, op: "adjust_hue")
        let n = planes.height * planes.width
        let shift = UInt8(truncatingIfNeeded: Int((factor * 255).rounded(.towardZero)))
        for i in 0..<n {
            let r = UInt8(planes.data[i]), g = UInt8(planes.data[n + i]), b = UInt8(planes.data[2 * n + i])
            var (h, s, v) = rgbToHSV(r, g, b)
            h = h &+ shift
            let (r2, g2, b2) = hsvToRGB(h, s, v)
            planes.data[i] = Double(r2)
            planes.data[n + i] = Double(g2)
            planes.data[2 * n + i] = Double(b2)
            if planes.count == 4 { planes.data[3 * n + i] = 255 }
        }
        return planes.tensor(.uint8)
    }

    /// Pillow's 8-bit RGB → HSV.
    static func rgbToHSV(_ r: UInt8, _ g: UInt8, _ b: UInt8) -> (UInt8, UInt8, UInt8) {
        let maxc = max(r, g, b), minc = min(r, g, b)
        if maxc == minc { return (0, 0, maxc) }
        let cr = Float(maxc - minc)
        let s = cr / Float(maxc)
        let rc = Float(maxc - r) / cr, gc = Float(maxc - g) / cr, bc = Float(maxc - b) / cr
        var h: Float
        if r == maxc { h = bc - gc } else if g == maxc { h = 2 + rc - bc } else { h = 4 + gc - rc }
        h = fmodf(h / 6 + 1, 1)
        func clip8(_ v: Float) -> UInt8 { let i = Int(v); return UInt8(min(max(i, 0), 255)) }
        return (clip8(h * 255), clip8(s * 255), maxc)
    }

    /// Pillow's 8-bit HSV → RGB.
    static func hsvToRGB(_ h: UInt8, _ s: UInt8, _ v: UInt8) -> (UInt8, UInt8, UInt8) {
        if s == 0 { return (v, v, v) }
        let i = Int((Float(h) * 6 / 255).rounded(.down))
        let f = Float(h) * 6 / 255 - Float(i)
        let fs = Float(s) / 255
        func clip8(_ x: Float) -> UInt8 { UInt8(min(max(Int(x.rounded()), 0), 255)) }
        let p = clip8(Float(v) * (1 - fs)), q = clip8(Float(v) * (1 - fs * f)), t = clip8(Float(v) * (1 - fs * (1 - f)))
        switch i % 6 {
        case 0: return (v, t, p)
        case 1: return (q, v, p)
        case 2: return (p, v, t)
        case 3: return (p, q, v)
        case 4: return (t, p, v)
        default: return (v, p, q)
        }
    }
}

extension PillowColor {
    /// Pillow's `ImageEnhance.Sharpness`: blend with `ImageFilter.SMOOTH` (3×3 kernel, centre 5, over 13,
    /// float32 sums rounded to bytes, the border rows and columns copied).
    static func sharpness(_ pixels: Tensor, _ factor: Double) -> Tensor {
        let planes = PixelPlanes(pixels, op: "adjust_sharpness")
        let (h, w) = (planes.height, planes.width)
        var smooth = planes
        let edge = Float(1) / 13, centre = Float(5) / 13
        let colourBands = planes.count == 4 ? 3 : planes.count
        if h > 2 && w > 2 {
            for b in 0..<colourBands {
                let base = b * h * w
                func px(_ y: Int, _ x: Int) -> Float { Float(planes.data[base + y * w + x]) }
                for y in 1..<(h - 1) {
                    for x in 1..<(w - 1) {
                        var ss: Float = 0
                        ss += px(y + 1, x - 1) * edge + px(y + 1, x) * edge + px(y + 1, x + 1) * edge
                        ss += px(y, x - 1) * edge + px(y, x) * centre + px(y, x + 1) * edge
                        ss += px(y - 1, x - 1) * edge + px(y - 1, x) * edge + px(y - 1, x + 1) * edge
                        smooth.data[base + y * w + x] = ss <= 0 ? 0 : (ss >= 255 ? 255 : Double(Int(ss + 0.5)))
                    }
                }
            }
        }
        let n = h * w
        return blend(pixels, degenerate: { b, i in smooth.data[b * n + i] }, alpha: factor)
    }

    /// Pillow's `ImageOps.autocontrast` (no cutoff): each band's darkest value to 0 and brightest to 255
    /// through a lookup table computed in double precision and truncated.
    static func autocontrast(_ pixels: Tensor) -> Tensor {
        var planes = PixelPlanes(pixels, op: "autocontrast")
        let n = planes.height * planes.width
        let colourBands = planes.count == 4 ? 3 : planes.count
        for b in 0..<colourBands {
            let band = planes.data[(b * n)..<((b + 1) * n)]
            guard let lo = band.min(), let hi = band.max(), hi > lo else { continue }
            let scale = 255.0 / (hi - lo), offset = -lo * scale
            for i in (b * n)..<((b + 1) * n) {
                planes.data[i] = Double(min(max(Int(planes.data[i] * scale + offset), 0), 255))
            }
        }
        return planes.tensor(.uint8)
    }
}
