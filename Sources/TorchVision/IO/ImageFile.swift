import CImageCodecs
import Torch

extension Image {
    /// Reads a PNG or JPEG file as PIL's `Image.open(path)` followed by loading does: palette images
    /// become RGB (RGBA when they have transparency), 16-bit samples keep their high byte, grey
    /// with alpha becomes RGBA (this type has no LA mode), JPEGs are L or RGB.
    ///
    /// - Throws: ``ImageError`` naming the file.
    public static func open(_ path: String) throws -> Image {
        try decoded(io.readFile(path), source: "'\(path)'")
    }

    /// Decodes PNG or JPEG bytes, like ``open(_:)``.
    public init(decoding bytes: [UInt8]) throws {
        self = try Image.decoded(Tensor(bytes, shape: [bytes.count], dtype: .uint8), source: "image data")
    }

    static func decoded(_ data: Tensor, source: String) throws -> Image {
        let d = try io.decodeRaw(data, mode: Int32(IC_MODE_IMAGE), modeName: "image", source: source)
        defer { d.free() }
        guard let mode = Mode(bands: d.channels), d.raw.bit_depth == 8 else {
            throw ImageError.decode(source: source, format: "image",
                                    message: "decoded to \(d.channels) channels of \(d.raw.bit_depth) bits, which is no L, RGB or RGBA image")
        }
        let count = d.width * d.height * d.channels
        return Image(width: d.width, height: d.height, mode: mode,
                     pixels: Array(UnsafeBufferPointer(start: d.raw.pixels, count: count)))
    }

    /// Writes the image as PNG or JPEG, chosen by the extension of `path` (`.png`, `.jpg`, `.jpeg`), like
    /// PIL's `save`. `quality` applies to JPEG (PIL's default 75); RGBA cannot be saved as JPEG.
    public func save(_ path: String, quality: Int = 75, compressionLevel: Int = 6) throws {
        let ext = path.split(separator: "/").last.flatMap { name in
            name.contains("." as Character) ? name.split(separator: ".").last.map { $0.lowercased() } : nil
        }
        let encoded: Tensor
        switch ext {
        case "png":
            precondition((0...9).contains(compressionLevel), "Image.save: compressionLevel must be between 0 and 9, got \(compressionLevel)")
            encoded = try pixels.withUnsafeBytes {
                try io.encodePNG($0, channels: mode.bands, height: height, width: width, compressionLevel: compressionLevel)
            }
        case "jpg", "jpeg":
            precondition((1...100).contains(quality), "Image.save: quality must be between 1 and 100, got \(quality)")
            guard mode != .RGBA else { throw ImageError.unsupportedImageMode(path: path, format: "JPEG", mode: mode.rawValue) }
            encoded = try pixels.withUnsafeBytes {
                try io.encodeJPEG($0, channels: mode.bands, height: height, width: width, quality: quality)
            }
        default:
            throw ImageError.unknownExtension(path: path)
        }
        try io.writeFile(path, encoded)
    }
}
