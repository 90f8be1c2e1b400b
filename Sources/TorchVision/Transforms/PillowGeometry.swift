#if canImport(Glibc)
import Glibc
#endif
import Torch

/// Rotation, affine and perspective warps of PIL-style pictures done the way Pillow does them, so
/// `Image` inputs get what torchvision gives for PIL images: each output pixel centre is mapped through the
/// inverse transform; a point outside the source takes the fill colour, otherwise the source is sampled
/// nearest (truncating) or bilinearly with edge clamping, bytes truncated.
enum PillowGeometry {
    /// Warps uint8 C×H×W `pixels` to `outWidth`×`outHeight` through `coefficients` (6: affine, 8: perspective).
    static func transform(_ pixels: Tensor, outWidth: Int, outHeight: Int, coefficients a: [Double], bilinear: Bool,
                          fill: [Double]) -> Tensor {
        let planes = PixelPlanes(pixels, op: "Image.transform")
        let (h, w, bands) = (planes.height, planes.width, planes.count)
        var out = PixelPlanes(lead: planes.lead, height: outHeight, width: outWidth)
        let fillColor = (0..<bands).map { fill.count == 1 ? fill[0] : fill[$0] }
        if !bilinear && a.count == 6 && !(a[1] == 0 && a[3] == 0) && fitsFixedPoint(a, outWidth, outHeight) {
            // Pillow's nearest-neighbour affine fast path: 16.16 fixed point, stepped pixel by pixel.
            func fix(_ v: Double) -> Int { Int((v * 65536 + 0.5).rounded(.down)) }
            let (a0, a1, a3, a4) = (fix(a[0]), fix(a[1]), fix(a[3]), fix(a[4]))
            var (rowX, rowY) = (fix(a[2] + a[1] * 0.5 + a[0] * 0.5), fix(a[5] + a[4] * 0.5 + a[3] * 0.5))
            for y in 0..<outHeight {
                var (xx, yy) = (rowX, rowY)
                for x in 0..<outWidth {
                    let (xin, yin) = (xx >> 16, yy >> 16)
                    let inside = xin >= 0 && xin < w && yin >= 0 && yin < h
                    for b in 0..<bands {
                        out.data[b * outHeight * outWidth + y * outWidth + x] = inside ? planes.data[b * h * w + yin * w + xin] : fillColor[b]
                    }
                    xx += a0
                    yy += a3
                }
                rowX += a1
                rowY += a4
            }
            return out.tensor(.uint8)
        }
        for y in 0..<outHeight {
            for x in 0..<outWidth {
                let (px, py) = (Double(x) + 0.5, Double(y) + 0.5)
                var xin = a[0] * px + a[1] * py + a[2], yin = a[3] * px + a[4] * py + a[5]
                if a.count == 8 {
                    let den = a[6] * px + a[7] * py + 1
                    xin /= den
                    yin /= den
                }
                let o = y * outWidth + x
                guard xin >= 0 && xin < Double(w) && yin >= 0 && yin < Double(h) else {
                    for b in 0..<bands { out.data[b * outHeight * outWidth + o] = fillColor[b] }
                    continue
                }
                for b in 0..<bands {
                    let base = b * h * w
                    if !bilinear {
                        out.data[b * outHeight * outWidth + o] = planes.data[base + Int(yin) * w + Int(xin)]
                        continue
                    }
                    let sx = xin - 0.5, sy = yin - 0.5
                    let fx = sx.rounded(.down), fy = sy.rounded(.down)
                    let (dx, dy) = (sx - fx, sy - fy)
                    let (ix, iy) = (Int(fx), Int(fy))
                    let x0 = min(max(ix, 0), w - 1), x1 = min(max(ix + 1, 0), w - 1)
                    let row0 = base + min(max(iy, 0), h - 1) * w
                    let v1 = planes.data[row0 + x0] + (planes.data[row0 + x1] - planes.data[row0 + x0]) * dx
                    var v2 = v1
                    if iy + 1 >= 0 && iy + 1 < h {
                        let row1 = base + (iy + 1) * w
                        v2 = planes.data[row1 + x0] + (planes.data[row1 + x1] - planes.data[row1 + x0]) * dx
                    }
                    out.data[b * outHeight * outWidth + o] = (v1 + (v2 - v1) * dy).rounded(.towardZero)
                }
            }
        }
        return out.tensor(.uint8)
    }

    /// Whether Pillow's fixed-point affine path applies: every corner maps within ±32768.
    private static func fitsFixedPoint(_ a: [Double], _ w: Int, _ h: Int) -> Bool {
        [(0, 0), (w, h), (0, h), (w, 0)].allSatisfy { (x, y) in
            abs(Double(x) * a[0] + Double(y) * a[1] + a[2]) < 32768 && abs(Double(x) * a[3] + Double(y) * a[4] + a[5]) < 32768
        }
    }

    /// Pillow's `Image.rotate(angle, expand:, center:)`: counter-clockwise degrees about `center` (pixels,
    /// default the image centre), exact transposes for multiples of 90 degrees like Pillow.
    static func rotate(_ pixels: Tensor, _ angle: Double, bilinear: Bool, expand: Bool, center: [Int]?, fill: [Double]) -> Tensor {
        let (h, w) = (pixels.shape[1], pixels.shape[2])
        let turned = angle - 360 * (angle / 360).rounded(.down)
        if center == nil {
            if turned == 0 { return pixels }
            if turned == 180 { return pixels.flip(1, 2).contiguous() }
            if (turned == 90 || turned == 270) && (expand || w == h) {
                let t = pixels.transpose(1, 2)
                return (turned == 90 ? t.flip(1) : t.flip(2)).contiguous()
            }
        }
        let (cx, cy) = center.map { (Double($0[0]), Double($0[1])) } ?? (Double(w) / 2, Double(h) / 2)
        let r = -angle * .pi / 180
        func round15(_ v: Double) -> Double { (v * 1e15).rounded() / 1e15 }
        var m = [round15(cos(r)), round15(sin(r)), 0, round15(-sin(r)), round15(cos(r)), 0]
        func apply(_ x: Double, _ y: Double) -> (Double, Double) { (m[0] * x + m[1] * y + m[2], m[3] * x + m[4] * y + m[5]) }
        (m[2], m[5]) = apply(-cx, -cy)
        m[2] += cx
        m[5] += cy
        var (ow, oh) = (w, h)
        if expand {
            let corners = [(0.0, 0.0), (Double(w), 0), (Double(w), Double(h)), (0, Double(h))].map { apply($0.0, $0.1) }
            let xs = corners.map(\.0), ys = corners.map(\.1)
            ow = Int(xs.max()!.rounded(.up) - xs.min()!.rounded(.down))
            oh = Int(ys.max()!.rounded(.up) - ys.min()!.rounded(.down))
            (m[2], m[5]) = apply(-Double(ow - w) / 2, -Double(oh - h) / 2)
        }
        return transform(pixels, outWidth: ow, outHeight: oh, coefficients: m, bilinear: bilinear, fill: fill)
    }
}

extension PillowGeometry {
    /// Pillow's `Image.resize` with BILINEAR or BICUBIC: the antialiased separable filter in 22-bit fixed
    /// point, columns first, each pass rounded back to bytes (which is where Pillow and the float tensor
    /// kernel part by a grey level). `pixels` is uint8 C×H×W.
    static func resize(_ pixels: Tensor, height oh: Int, width ow: Int, cubic: Bool) -> Tensor {
        let precision = 22
        var planes = PixelPlanes(pixels, op: "Image.resize")
        func pass(_ filter: AxisFilter, along horizontal: Bool, outSize: Int) {
            let (h, w) = (planes.height, planes.width)
            let fixed = filter.weight.map { w -> Int in
                let scaled = w * Double(1 << precision)
                return Int(scaled < 0 ? scaled - 0.5 : scaled + 0.5)
            }
            let (nh, nw) = horizontal ? (h, outSize) : (outSize, w)
            var out = PixelPlanes(lead: planes.lead, height: nh, width: nw)
            for p in 0..<planes.count {
                let src = p * h * w, dst = p * nh * nw
                for y in 0..<nh {
                    for x in 0..<nw {
                        let o = horizontal ? x : y
                        var acc = 1 << (precision - 1)
                        for k in 0..<filter.taps {
                            let i = filter.index[o * filter.taps + k]
                            let v = horizontal ? planes.data[src + y * w + i] : planes.data[src + i * w + x]
                            acc += Int(v) * fixed[o * filter.taps + k]
                        }
                        out.data[dst + y * nw + x] = Double(min(max(acc >> precision, 0), 255))
                    }
                }
            }
            planes = out
        }
        if ow != planes.width { pass(.antialiased(planes.width, ow, cubic: cubic), along: true, outSize: ow) }
        if oh != planes.height { pass(.antialiased(planes.height, oh, cubic: cubic), along: false, outSize: oh) }
        return planes.tensor(.uint8)
    }
}
