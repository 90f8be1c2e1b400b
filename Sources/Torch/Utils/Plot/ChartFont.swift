// Chart text for raster output: a sans font found by fontconfig ("DejaVu Sans", else the system's
// "sans-serif"), loaded once by FreeType and rendered anti-aliased; the 3×5 pixel font
// (PixelFont.swift) when there is no font file or FreeType cannot load it.

import CFreeType

/// A line of text as 8-bit coverage, with where its pen starts and its baseline lies.
struct TextMask {
    let width: Int, height: Int
    /// Row-major coverage, 0 (none) to 255 (full ink).
    var coverage: [UInt8]
    /// The column where the pen starts: ink may reach left of it (negative side bearings).
    let originX: Int
    /// The baseline's row: ascenders above it, descenders below.
    let baseline: Int
    /// The pen's travel (advance widths plus kerning): the width used for anchoring.
    let advance: Int
    /// The height of capitals above the baseline, for centring text on a point.
    let capHeight: Int

    init(width: Int, height: Int, originX: Int, baseline: Int, advance: Int, capHeight: Int) {
        self.width = width
        self.height = height
        coverage = [UInt8](repeating: 0, count: width * height)
        self.originX = originX
        self.baseline = baseline
        self.advance = advance
        self.capHeight = capHeight
    }
}

/// Renders chart text with the system font, or the pixel font without one.
enum ChartText {
    private static let lock = PosixLock()
    nonisolated(unsafe) private static var pixelFontForced = false

    /// Draw with the built-in pixel font even when a system font was found (for tests).
    static var forcePixelFont: Bool {
        get { lock.lock(); defer { lock.unlock() }; return pixelFontForced }
        set { lock.lock(); defer { lock.unlock() }; pixelFontForced = newValue }
    }

    /// The font raster text uses now: nil means the pixel font.
    static var font: FreeTypeFont? { forcePixelFont ? nil : FreeTypeFont.shared }

    /// `s` at `size` pixels to the em (as SVG's font-size).
    static func mask(_ s: String, size: Int) -> TextMask {
        font?.mask(s, size: size) ?? PixelFont.mask(s, size: size)
    }

    /// The advance width of `s` in pixels.
    static func width(_ s: String, size: Int) -> Int {
        if let font { return font.width(s, size: size) }
        return PixelFont.mask(s, size: size).advance
    }
}

/// A FreeType face for one font file. FreeType faces are not thread-safe: every use holds `lock`.
final class FreeTypeFont: @unchecked Sendable {
    /// The sans font fontconfig finds, loaded on first use (Swift runs a static's initialiser
    /// once, thread-safely); nil, after a note on stderr, when there is none.
    static let shared: FreeTypeFont? = {
        if let path = findSansFont(), let font = FreeTypeFont(path: path.file, index: path.index) { return font }
        writeStandardError("""
            SwiftTorch plot: no usable font found by fontconfig, so PNG charts use a built-in 3×5 pixel \
            font (capitals only). Install a sans font for real text, e.g. `apt-get install fonts-dejavu-core`.

            """)
        return nil
    }()

    /// fontconfig's best match for "DejaVu Sans", falling back to its "sans-serif" alias
    /// (fontconfig substitutes another sans family when DejaVu is missing).
    static func findSansFont() -> (file: String, index: Int32)? {
        guard let config = FcInitLoadConfigAndFonts() else { return nil }
        defer { FcConfigDestroy(config) }
        for name in ["DejaVu Sans", "sans-serif"] {
            guard let pattern = name.withCString({ FcNameParse(UnsafeRawPointer($0).assumingMemoryBound(to: FcChar8.self)) }) else { continue }
            defer { FcPatternDestroy(pattern) }
            FcConfigSubstitute(config, pattern, FcMatchPattern)
            FcDefaultSubstitute(pattern)
            var result = FcResultNoMatch
            guard let match = FcFontMatch(config, pattern, &result) else { continue }
            defer { FcPatternDestroy(match) }
            var file: UnsafeMutablePointer<FcChar8>?
            guard FcPatternGetString(match, "file", 0, &file) == FcResultMatch, let file else { continue }
            var index: Int32 = 0
            if FcPatternGetInteger(match, "index", 0, &index) != FcResultMatch { index = 0 }
            let path = String(cString: file)
            if FileManager.default.isReadableFile(atPath: path) { return (path, index) }
        }
        return nil
    }

    private struct Glyph {
        let bitmap: [UInt8]
        let width: Int, rows: Int
        /// Bitmap position from the pen: left edge, top edge above the baseline.
        let left: Int, top: Int
        let advance: Int
        let index: UInt32
    }

    private struct Metrics { let ascender: Int, descender: Int, capHeight: Int }

    private let lock = PosixLock()
    private var library: FT_Library?
    private let face: FT_Face
    private let hasKerning: Bool
    private var currentSize = 0
    private var glyphs: [Int: [UnicodeScalar: Glyph]] = [:]
    private var metrics: [Int: Metrics] = [:]

    /// `FT_LOAD_RENDER | FT_LOAD_TARGET_LIGHT`: anti-aliased 8-bit coverage, light (vertical only)
    /// hinting, which keeps the font's shapes and spacing. (The C macros are not imported.)
    private static let loadFlags = Int32(1 << 2) | Int32(1 << 16)

    init?(path: String, index: Int32 = 0) {
        var lib: FT_Library?
        guard FT_Init_FreeType(&lib) == 0, let lib else { return nil }
        var f: FT_Face?
        guard FT_New_Face(lib, path, FT_Long(index), &f) == 0, let f else { FT_Done_FreeType(lib); return nil }
        // A font that cannot be scaled to 12 px or has no Latin letters is no use for charts.
        guard FT_Set_Pixel_Sizes(f, 0, 12) == 0, FT_Get_Char_Index(f, 0x48) != 0 else {
            FT_Done_Face(f)
            FT_Done_FreeType(lib)
            return nil
        }
        library = lib
        face = f
        currentSize = 12
        hasKerning = f.pointee.face_flags & FT_Long(1 << 6) != 0  // FT_FACE_FLAG_KERNING
    }

    deinit {
        FT_Done_Face(face)
        FT_Done_FreeType(library)
    }

    private func setSize(_ size: Int) -> Bool {
        if size == currentSize { return true }
        guard FT_Set_Pixel_Sizes(face, 0, FT_UInt(Swift.max(1, size))) == 0 else { return false }
        currentSize = size
        return true
    }

    /// The glyph of `c` at `size` (lock held), rendered once and cached.
    private func glyph(_ c: UnicodeScalar, size: Int) -> Glyph? {
        if let g = glyphs[size]?[c] { return g }
        guard setSize(size), FT_Load_Char(face, FT_ULong(c.value), Self.loadFlags) == 0 else { return nil }
        let slot = face.pointee.glyph!.pointee
        let bm = slot.bitmap
        let w = Int(bm.width), rows = Int(bm.rows), pitch = Int(bm.pitch)
        var pixels = [UInt8](repeating: 0, count: w * rows)
        if let buffer = bm.buffer, w > 0, rows > 0 {
            let gray = bm.pixel_mode == UInt8(FT_PIXEL_MODE_GRAY.rawValue)
            let mono = bm.pixel_mode == UInt8(FT_PIXEL_MODE_MONO.rawValue)
            for y in 0..<rows {
                // A negative pitch means rows bottom-up.
                let row = buffer + (pitch >= 0 ? y * pitch : (rows - 1 - y) * -pitch)
                for x in 0..<w {
                    if gray {
                        pixels[y * w + x] = row[x]
                    } else if mono {
                        pixels[y * w + x] = row[x >> 3] & (0x80 >> (x & 7)) != 0 ? 255 : 0
                    }
                }
            }
        }
        let g = Glyph(bitmap: pixels, width: w, rows: rows, left: Int(slot.bitmap_left), top: Int(slot.bitmap_top),
                      advance: Int((slot.advance.x + 32) >> 6), index: FT_Get_Char_Index(face, FT_ULong(c.value)))
        glyphs[size, default: [:]][c] = g
        return g
    }

    /// Line metrics at `size` (lock held): the face's ascender and descender, the height of "H".
    private func lineMetrics(size: Int) -> Metrics {
        if let m = metrics[size] { return m }
        _ = setSize(size)
        let sm = face.pointee.size.pointee.metrics
        let cap = glyph("H", size: size)?.top ?? (size * 3 / 4)
        let m = Metrics(ascender: Int((sm.ascender + 63) >> 6), descender: Int((-sm.descender + 63) >> 6), capHeight: cap)
        metrics[size] = m
        return m
    }

    /// The glyphs of `s` with their pen positions (lock held).
    private func layout(_ s: String, size: Int) -> (glyphs: [(Glyph, Int)], advance: Int) {
        var pen = 0
        var out: [(Glyph, Int)] = []
        var previous: UInt32 = 0
        for c in s.unicodeScalars {
            guard let g = glyph(c, size: size) else { continue }
            if hasKerning, previous != 0, g.index != 0 {
                var delta = FT_Vector()
                if FT_Get_Kerning(face, previous, g.index, UInt32(FT_KERNING_DEFAULT.rawValue), &delta) == 0 {
                    pen += Int((delta.x + 32) >> 6)
                }
            }
            out.append((g, pen))
            pen += g.advance
            previous = g.index
        }
        return (out, pen)
    }

    func width(_ s: String, size: Int) -> Int {
        lock.lock(); defer { lock.unlock() }
        return layout(s, size: size).advance
    }

    func mask(_ s: String, size: Int) -> TextMask {
        lock.lock(); defer { lock.unlock() }
        let m = lineMetrics(size: size)
        let (placed, advance) = layout(s, size: size)
        // The box: the pen's travel and the face's line height, widened for ink beyond them.
        var x0 = 0, x1 = advance, top = m.ascender, bottom = m.descender
        for (g, pen) in placed where g.width > 0 {
            x0 = Swift.min(x0, pen + g.left)
            x1 = Swift.max(x1, pen + g.left + g.width)
            top = Swift.max(top, g.top)
            bottom = Swift.max(bottom, g.rows - g.top)
        }
        var mask = TextMask(width: x1 - x0, height: top + bottom, originX: -x0, baseline: top, advance: advance, capHeight: m.capHeight)
        for (g, pen) in placed {
            let ox = pen + g.left - x0, oy = top - g.top
            for y in 0..<g.rows {
                for x in 0..<g.width {
                    let v = g.bitmap[y * g.width + x]
                    if v == 0 { continue }
                    let i = (oy + y) * mask.width + ox + x
                    mask.coverage[i] = UInt8(Swift.min(255, Int(mask.coverage[i]) + Int(v)))
                }
            }
        }
        return mask
    }
}
