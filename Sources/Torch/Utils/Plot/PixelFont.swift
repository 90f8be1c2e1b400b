// The fallback font for raster charts when fontconfig finds no font or FreeType cannot load it: 3×5
// pixel glyphs (digits, capitals and a few signs; lower case is drawn as capitals), scaled up.

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
        return rows.mapValues { UInt16($0.replacing(" ", with: ""), radix: 2)! }
    }()

    /// The pixel size of a glyph cell for a font size in pixels: 12 px text is drawn 2× (glyphs
    /// 6×10), 16 px 3×, as close to the cap height of a real font of that size as whole pixels go.
    static func scale(forSize size: Int) -> Int { Swift.max(1, Int((Double(size) / 6).rounded())) }

    /// `s` in upper case as a coverage mask (0 or 255): glyphs 3×5 cells of `scale(forSize:)`
    /// pixels, one empty cell between them; unknown characters drawn as `?`.
    static func mask(_ s: String, size: Int) -> TextMask {
        let scale = scale(forSize: size)
        let chars = s.uppercased().map { glyphs[$0] ?? glyphs["?"]! }
        let advance = 4 * scale
        let width = Swift.max(0, chars.count * advance - scale)
        var m = TextMask(width: width, height: 5 * scale, originX: 0, baseline: 5 * scale, advance: width, capHeight: 5 * scale)
        for (i, g) in chars.enumerated() {
            for row in 0..<5 {
                for col in 0..<3 where g & (1 << (14 - (row * 3 + col))) != 0 {
                    for y in (row * scale)..<((row + 1) * scale) {
                        for x in (i * advance + col * scale)..<(i * advance + (col + 1) * scale) { m.coverage[y * width + x] = 255 }
                    }
                }
            }
        }
        return m
    }
}
