extension utils.plot {
    /// Sample images in a grid with optional captions (predicted/true labels), as SVG or as a
    /// uint8 image tensor — matplotlib's `subplots` + `imshow` for a batch.
    ///
    /// ```swift
    /// let grid = utils.plot.ImageGrid(images, captions: labels.map { "\($0)" }, nrow: 8, scale: 3)
    /// try grid.saveSVG("samples.svg")
    /// let pixels = grid.render()                     // uint8 [3, H, W]
    /// ```
    public struct ImageGrid {
        /// uint8 N×C×H×W pixels (1 or 3 channels).
        let pixels: [UInt8]
        let n: Int, channels: Int, h: Int, w: Int
        public let captions: [String]
        public let nrow: Int
        public let scale: Int
        let padding = 4

        /// - Parameters:
        ///   - images: N×C×H×W or N×H×W; floats are taken in [0, 1] (clipped), uint8 as they are;
        ///     1 or 3 channels.
        ///   - captions: one per image (or none).
        ///   - nrow: images per row.
        ///   - scale: each pixel drawn as `scale`×`scale`.
        public init(_ images: Tensor, captions: [String] = [], nrow: Int = 8, scale: Int = 2) {
            let x = images.dim == 3 ? images.unsqueeze(1) : images
            precondition(x.dim == 4 && [1, 3].contains(x.size(1)),
                         "ImageGrid: expected N×C×H×W (C 1 or 3) or N×H×W images, got shape \(images.shape)")
            precondition(captions.isEmpty || captions.count == x.size(0),
                         "ImageGrid: \(captions.count) captions for \(x.size(0)) images")
            precondition(nrow > 0 && scale > 0, "ImageGrid: nrow and scale must be positive (got \(nrow), \(scale))")
            let f = x.dtype == .uint8 ? x.detach().float() : (x.detach().float() * 255).clamp(min: 0, max: 255)
            pixels = f.contiguous().toArray(as: Float.self).map { UInt8($0.isNaN ? 0 : $0) }
            (n, channels, h, w) = (x.size(0), x.size(1), x.size(2), x.size(3))
            self.captions = captions
            self.nrow = nrow
            self.scale = scale
        }

        var columns: Int { Swift.min(nrow, Swift.max(n, 1)) }
        var rows: Int { (n + columns - 1) / columns }
        var captionHeight: Int { captions.isEmpty ? 0 : 16 }
        /// Wide enough for the images and their captions (8 px a character, or the rendered width
        /// where the font draws a caption wider, as "mmmm").
        var cellWidth: Int {
            Swift.max(w * scale, captions.map { Swift.max($0.count * 8, ChartText.width($0, size: 12)) }.max() ?? 0) + padding
        }
        var cellHeight: Int { h * scale + captionHeight + padding }
        /// The grid's size in pixels.
        public var size: (width: Int, height: Int) { (columns * cellWidth + padding, rows * cellHeight + padding) }

        func color(_ i: Int, _ y: Int, _ x: Int) -> (UInt8, UInt8, UInt8) {
            func at(_ ch: Int) -> UInt8 { pixels[((i * channels + ch) * h + y) * w + x] }
            return channels == 1 ? (at(0), at(0), at(0)) : (at(0), at(1), at(2))
        }

        /// The grid as a uint8 3×H×W image, captions anti-aliased in the system's sans font.
        public func render() -> Tensor {
            var c = Canvas(width: size.width, height: size.height)
            for i in 0..<n {
                let ox = padding + (i % columns) * cellWidth, oy = padding + (i / columns) * cellHeight
                for y in 0..<h {
                    for x in 0..<w {
                        c.fill(ox + x * scale, oy + y * scale, ox + (x + 1) * scale, oy + (y + 1) * scale, color(i, y, x))
                    }
                }
                if !captions.isEmpty { c.text(captions[i], x: ox, y: oy + h * scale + 13) }
            }
            return c.tensor()
        }

        /// The grid as SVG: each image an embedded PNG drawn pixelated, captions as text.
        public func svg() -> String {
            let (W, H) = size
            var out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(W)\" height=\"\(H)\" font-family=\"sans-serif\" font-size=\"12\">\n"
            out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
            for i in 0..<n {
                let ox = padding + (i % columns) * cellWidth, oy = padding + (i / columns) * cellHeight
                var rgbBytes: [UInt8] = []
                rgbBytes.reserveCapacity(h * w * 3)
                for y in 0..<h { for x in 0..<w { let p = color(i, y, x); rgbBytes += [p.0, p.1, p.2] } }
                let png = Data(encodePNG(pixels: rgbBytes, width: w, height: h, channels: 3)).base64EncodedString()
                out += "<image x=\"\(ox)\" y=\"\(oy)\" width=\"\(w * scale)\" height=\"\(h * scale)\" style=\"image-rendering:pixelated\" href=\"data:image/png;base64,\(png)\"/>\n"
                if !captions.isEmpty {
                    out += "<text x=\"\(ox)\" y=\"\(oy + h * scale + 13)\">\(xml(captions[i]))</text>\n"
                }
            }
            return out + "</svg>\n"
        }

        /// Writes ``svg()`` to `path` atomically.
        public func saveSVG(_ path: String) throws { try AtomicFile.write(Array(svg().utf8), to: path) }
    }
}
