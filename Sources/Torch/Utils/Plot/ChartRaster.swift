// A small rasteriser for charts: lines, rectangles and text (anti-aliased with the system's sans
// font through FreeType, ChartFont.swift; a 3×5 pixel font without one), enough for PNG charts.

typealias RGB = (UInt8, UInt8, UInt8)

/// An RGB pixel buffer with the few drawing operations charts need.
struct Canvas {
    let width: Int, height: Int
    var pixels: [UInt8]

    /// Where a text's `y` lies: on its baseline, or in the middle of its capitals (centred on a point).
    enum TextAlignment { case baseline, middle }

    init(width: Int, height: Int, background: RGB = (255, 255, 255)) {
        self.width = width
        self.height = height
        pixels = [UInt8](repeating: 0, count: width * height * 3)
        for i in 0..<(width * height) {
            pixels[3 * i] = background.0; pixels[3 * i + 1] = background.1; pixels[3 * i + 2] = background.2
        }
    }

    mutating func set(_ x: Int, _ y: Int, _ c: RGB) {
        guard x >= 0, y >= 0, x < width, y < height else { return }
        let i = 3 * (y * width + x)
        pixels[i] = c.0; pixels[i + 1] = c.1; pixels[i + 2] = c.2
    }

    /// Mixes `c` into the pixel with weight `alpha`/255.
    mutating func blend(_ x: Int, _ y: Int, _ c: RGB, alpha: UInt8) {
        guard alpha > 0, x >= 0, y >= 0, x < width, y < height else { return }
        if alpha == 255 { set(x, y, c); return }
        let i = 3 * (y * width + x), a = Int(alpha)
        func mix(_ old: UInt8, _ new: UInt8) -> UInt8 { UInt8((Int(old) * (255 - a) + Int(new) * a + 127) / 255) }
        pixels[i] = mix(pixels[i], c.0); pixels[i + 1] = mix(pixels[i + 1], c.1); pixels[i + 2] = mix(pixels[i + 2], c.2)
    }

    mutating func fill(_ x0: Int, _ y0: Int, _ x1: Int, _ y1: Int, _ c: RGB) {
        for y in Swift.max(0, y0)..<Swift.max(0, Swift.min(height, y1)) {
            for x in Swift.max(0, x0)..<Swift.max(0, Swift.min(width, x1)) { set(x, y, c) }
        }
    }

    /// A line `thickness` pixels wide (a square brush along Bresenham's path).
    mutating func line(_ x0: Double, _ y0: Double, _ x1: Double, _ y1: Double, _ c: RGB, thickness: Int = 1) {
        var x = Int(x0.rounded()), y = Int(y0.rounded())
        let xe = Int(x1.rounded()), ye = Int(y1.rounded())
        let dx = abs(xe - x), dy = -abs(ye - y), sx = x < xe ? 1 : -1, sy = y < ye ? 1 : -1
        var err = dx + dy
        let lo = -(thickness - 1) / 2, hi = thickness / 2
        while true {
            for oy in lo...hi { for ox in lo...hi { set(x + ox, y + oy, c) } }
            if x == xe && y == ye { break }
            let e2 = 2 * err
            if e2 >= dy { err += dy; x += sx }
            if e2 <= dx { err += dx; y += sy }
        }
    }

    /// Text of `size` pixels to the em (as SVG's font-size). `anchor` places it along its own
    /// direction: 0 starts at the point, 0.5 centres on it, 1 ends at it (SVG's text-anchor start,
    /// middle, end). `rotated` draws it reading upwards (SVG's rotate(-90)), `x` then being the
    /// baseline's (or the capitals' middle's) column.
    mutating func text(_ s: String, x: Int, y: Int, size: Int = 12, anchor: Double = 0, align: TextAlignment = .baseline,
                       rotated: Bool = false, _ c: RGB = (0, 0, 0)) {
        guard !s.isEmpty else { return }
        let m = ChartText.mask(s, size: size)
        let along = Int((Double(m.advance) * anchor).rounded())
        let shift = align == .middle ? (m.capHeight + 1) / 2 : 0
        for my in 0..<m.height {
            for mx in 0..<m.width {
                let a = m.coverage[my * m.width + mx]
                if a == 0 { continue }
                let u = mx - m.originX - along, v = my - m.baseline
                if rotated {
                    blend(x + shift + v, y - u, c, alpha: a)
                } else {
                    blend(x + u, y + shift + v, c, alpha: a)
                }
            }
        }
    }

    /// The pixels as a uint8 3×H×W tensor.
    func tensor() -> Tensor {
        torch.tensor(pixels.map(Int.init), dtype: .uint8).reshape(height, width, 3).permute(2, 0, 1).contiguous()
    }
}

/// Parses `#rrggbb` (black otherwise).
func rgb(_ css: String?) -> RGB {
    guard let css, css.hasPrefix("#"), css.count == 7, let v = UInt32(css.dropFirst(), radix: 16) else { return (0, 0, 0) }
    return (UInt8(v >> 16), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF))
}

extension utils.plot.LineChart {
    /// How much larger than at the default 640×400 a raster chart's text, margins and lines are:
    /// in proportion to the chart, never smaller than at 640×400.
    var rasterScale: Double { Swift.max(1, Swift.min(Double(width) / 640, Double(height) / 400)) }

    /// The chart drawn as a uint8 3×`height`×`width` image (for PNG files and TensorBoard): the
    /// layout of ``svg()``, text anti-aliased in the system's sans font (DejaVu Sans where
    /// installed), scaled up with charts larger than 640×400.
    public func render() -> Tensor {
        let g = ChartGeometry(self, scale: rasterScale)
        let d = g.d, font = g.d(12)
        var c = Canvas(width: width, height: height)
        let grid: RGB = (224, 224, 224), black: RGB = (0, 0, 0)
        let thin = Swift.max(1, Int(g.scale.rounded()))
        for t in g.xTicks {
            let x = g.px(t.value)
            c.line(x, Double(g.top), x, Double(g.bottom), grid, thickness: thin)
            c.text(t.label, x: Int(x.rounded()), y: g.bottom + d(16), size: font, anchor: 0.5)
        }
        for t in g.yTicks {
            let y = g.py(t.value)
            c.line(Double(g.left), y, Double(g.right), y, grid, thickness: thin)
            c.text(t.label, x: g.left - d(6), y: Int(y.rounded()), size: font, anchor: 1, align: .middle)
        }
        c.line(Double(g.left), Double(g.top), Double(g.right), Double(g.top), black, thickness: thin)
        c.line(Double(g.left), Double(g.bottom), Double(g.right), Double(g.bottom), black, thickness: thin)
        c.line(Double(g.left), Double(g.top), Double(g.left), Double(g.bottom), black, thickness: thin)
        c.line(Double(g.right), Double(g.top), Double(g.right), Double(g.bottom), black, thickness: thin)
        for s in series {
            let color = rgb(s.color)
            for run in g.points(s) {
                if run.count == 1 {
                    let (x, y) = (Int(run[0].0.rounded()), Int(run[0].1.rounded()))
                    c.fill(x - thin, y - thin, x + thin + 1, y + thin + 1, color)
                }
                for (a, b) in zip(run, run.dropFirst()) { c.line(a.0, a.1, b.0, b.1, color, thickness: 2 * thin) }
            }
        }
        if !title.isEmpty { c.text(title, x: width / 2, y: d(22), size: d(16), anchor: 0.5) }
        if !xLabel.isEmpty { c.text(xLabel, x: (g.left + g.right) / 2, y: height - d(10), size: font, anchor: 0.5) }
        if !yLabel.isEmpty { c.text(yLabel, x: d(16), y: (g.top + g.bottom) / 2, size: font, anchor: 0.5, rotated: true) }
        for (i, s) in series.enumerated() {
            let y = g.top + d(16) + i * d(18)
            c.line(Double(g.right - d(150)), Double(y - d(4)), Double(g.right - d(126)), Double(y - d(4)), rgb(s.color), thickness: 2 * thin)
            c.text(s.label, x: g.right - d(120), y: y, size: font)
        }
        return c.tensor()
    }
}
