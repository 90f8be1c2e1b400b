// A small rasteriser for charts: lines, rectangles and a 3×5 pixel font (digits, capitals and a
// few signs; lower case is drawn as capitals), enough for PNG charts without a font library.

import Foundation

/// An RGB pixel buffer with the few drawing operations charts need.
struct Canvas {
    let width: Int, height: Int
    var pixels: [UInt8]

    init(width: Int, height: Int, background: (UInt8, UInt8, UInt8) = (255, 255, 255)) {
        self.width = width
        self.height = height
        pixels = [UInt8](repeating: 0, count: width * height * 3)
        for i in 0..<(width * height) {
            pixels[3 * i] = background.0; pixels[3 * i + 1] = background.1; pixels[3 * i + 2] = background.2
        }
    }

    mutating func set(_ x: Int, _ y: Int, _ c: (UInt8, UInt8, UInt8)) {
        guard x >= 0, y >= 0, x < width, y < height else { return }
        let i = 3 * (y * width + x)
        pixels[i] = c.0; pixels[i + 1] = c.1; pixels[i + 2] = c.2
    }

    mutating func fill(_ x0: Int, _ y0: Int, _ x1: Int, _ y1: Int, _ c: (UInt8, UInt8, UInt8)) {
        for y in Swift.max(0, y0)..<Swift.min(height, y1) {
            for x in Swift.max(0, x0)..<Swift.min(width, x1) { set(x, y, c) }
        }
    }

    /// A line `thickness` pixels wide (a square brush along Bresenham's path).
    mutating func line(_ x0: Double, _ y0: Double, _ x1: Double, _ y1: Double, _ c: (UInt8, UInt8, UInt8), thickness: Int = 1) {
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

    /// Text in the 3×5 font scaled by `scale`; `anchor` 0 left, 0.5 centred, 1 right of `x`.
    mutating func text(_ s: String, x: Int, y: Int, scale: Int = 2, anchor: Double = 0, _ c: (UInt8, UInt8, UInt8) = (0, 0, 0)) {
        let glyphs = s.uppercased().map { PixelFont.glyphs[$0] ?? PixelFont.glyphs["?"]! }
        let advance = 4 * scale
        var cx = x - Int(Double(glyphs.count * advance - scale) * anchor)
        for g in glyphs {
            for row in 0..<5 {
                for col in 0..<3 where g & (1 << (14 - (row * 3 + col))) != 0 {
                    fill(cx + col * scale, y + row * scale, cx + (col + 1) * scale, y + (row + 1) * scale, c)
                }
            }
            cx += advance
        }
    }

    /// The pixels as a uint8 3×H×W tensor.
    func tensor() -> Tensor {
        torch.tensor(pixels.map(Int.init), dtype: .uint8).reshape(height, width, 3).permute(2, 0, 1).contiguous()
    }
}

/// A 3×5 pixel font: each glyph is 15 bits, rows top to bottom, 3 bits a row (high bit left).
enum PixelFont {
    static let glyphs: [Character: UInt16] = {
        let rows: [Character: String] = [
            "0": "111 101 101 101 111", "1": "010 110 010 010 111", "2": "111 001 111 100 111",
            "3": "111 001 111 001 111", "4": "101 101 111 001 001", "5": "111 100 111 001 111",
            "6": "111 100 111 101 111", "7": "111 001 001 001 001", "8": "111 101 111 101 111",
            "9": "111 101 111 001 111", "A": "010 101 111 101 101", "B": "110 101 110 101 110",
            "C": "011 100 100 100 011", "D": "110 101 101 101 110", "E": "111 100 110 100 111",
            "F": "111 100 110 100 100", "G": "011 100 101 101 011", "H": "101 101 111 101 101",
            "I": "111 010 010 010 111", "J": "001 001 001 101 010", "K": "101 101 110 101 101",
            "L": "100 100 100 100 111", "M": "101 111 111 101 101", "N": "110 101 101 101 101",
            "O": "010 101 101 101 010", "P": "110 101 110 100 100", "Q": "010 101 101 110 011",
            "R": "110 101 110 101 101", "S": "011 100 010 001 110", "T": "111 010 010 010 010",
            "U": "101 101 101 101 111", "V": "101 101 101 101 010", "W": "101 101 111 111 101",
            "X": "101 101 010 101 101", "Y": "101 101 010 010 010", "Z": "111 001 010 100 111",
            " ": "000 000 000 000 000", ".": "000 000 000 000 010", ",": "000 000 000 010 100",
            "-": "000 000 111 000 000", "+": "000 010 111 010 000", "/": "001 001 010 100 100",
            "_": "000 000 000 000 111", ":": "000 010 000 010 000", "=": "000 111 000 111 000",
            "(": "010 100 100 100 010", ")": "010 001 001 001 010", "%": "101 001 010 100 101",
            "?": "111 001 010 000 010", "[": "110 100 100 100 110", "]": "011 001 001 001 011",
        ]
        return rows.mapValues { UInt16($0.replacingOccurrences(of: " ", with: ""), radix: 2)! }
    }()
}

/// Parses `#rrggbb` (black otherwise).
func rgb(_ css: String?) -> (UInt8, UInt8, UInt8) {
    guard let css, css.hasPrefix("#"), css.count == 7, let v = UInt32(css.dropFirst(), radix: 16) else { return (0, 0, 0) }
    return (UInt8(v >> 16), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF))
}

extension utils.plot.LineChart {
    /// The chart drawn as a uint8 3×`height`×`width` image (for PNG files and TensorBoard): the
    /// same layout as ``svg()``, with text in a 3×5 pixel font (capitals).
    public func render() -> Tensor {
        let g = ChartGeometry(self)
        var c = Canvas(width: width, height: height)
        let grid: (UInt8, UInt8, UInt8) = (224, 224, 224)
        for t in g.xTicks {
            let x = g.px(t.value)
            c.line(x, Double(g.top), x, Double(g.bottom), grid)
            c.text(t.label, x: Int(x), y: g.bottom + 6, anchor: 0.5)
        }
        for t in g.yTicks {
            let y = g.py(t.value)
            c.line(Double(g.left), y, Double(g.right), y, grid)
            c.text(t.label, x: g.left - 6, y: Int(y) - 5, anchor: 1)
        }
        let black: (UInt8, UInt8, UInt8) = (0, 0, 0)
        c.line(Double(g.left), Double(g.top), Double(g.right), Double(g.top), black)
        c.line(Double(g.left), Double(g.bottom), Double(g.right), Double(g.bottom), black)
        c.line(Double(g.left), Double(g.top), Double(g.left), Double(g.bottom), black)
        c.line(Double(g.right), Double(g.top), Double(g.right), Double(g.bottom), black)
        for s in series {
            let color = rgb(s.color)
            for run in g.points(s) {
                if run.count == 1 { c.fill(Int(run[0].0) - 1, Int(run[0].1) - 1, Int(run[0].0) + 2, Int(run[0].1) + 2, color) }
                for (a, b) in zip(run, run.dropFirst()) { c.line(a.0, a.1, b.0, b.1, color, thickness: 2) }
            }
        }
        if !title.isEmpty { c.text(title, x: width / 2, y: 10, scale: 3, anchor: 0.5) }
        if !xLabel.isEmpty { c.text(xLabel, x: (g.left + g.right) / 2, y: height - 16, anchor: 0.5) }
        if !yLabel.isEmpty {
            // Vertical text: one character a line, centred on the axis.
            let chars = Array(yLabel.prefix((g.bottom - g.top) / 12))
            let y0 = (g.top + g.bottom) / 2 - chars.count * 6
            for (i, ch) in chars.enumerated() { c.text(String(ch), x: 12, y: y0 + i * 12, anchor: 0.5) }
        }
        for (i, s) in series.enumerated() {
            let y = g.top + 10 + i * 16
            c.fill(g.right - 150, y + 3, g.right - 126, y + 6, rgb(s.color))
            c.text(s.label, x: g.right - 120, y: y)
        }
        return c.tensor()
    }
}
