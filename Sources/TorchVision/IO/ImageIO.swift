#if canImport(Glibc)
import Glibc
#endif
import CImageCodecs
import Torch

extension io {
    /// How `readImage` / `decodeImage` lay out the channels (torchvision's `ImageReadMode`).
    public enum ImageReadMode: String, CaseIterable, CustomStringConvertible {
        /// The file's own channels. A palette PNG gives its palette indices (1 channel), as in torchvision.
        case unchanged = "UNCHANGED"
        /// One grey channel (libpng's/libjpeg's own RGB → grey conversion).
        case gray = "GRAY"
        /// Grey and alpha (PNG only).
        case grayAlpha = "GRAY_ALPHA"
        /// Red, green, blue.
        case RGB = "RGB"
        /// Red, green, blue, alpha (PNG only).
        case RGBA = "RGB_ALPHA"

        public var description: String { "ImageReadMode.\(rawValue)" }

        var code: Int32 {
            switch self {
            case .unchanged: return Int32(IC_MODE_UNCHANGED)
            case .gray: return Int32(IC_MODE_GRAY)
            case .grayAlpha: return Int32(IC_MODE_GRAY_ALPHA)
            case .RGB: return Int32(IC_MODE_RGB)
            case .RGBA: return Int32(IC_MODE_RGB_ALPHA)
            }
        }
    }

    /// Decoders refuse images of more pixels than this before allocating them (PIL's decompression-bomb
    /// limit, 2 × 89,478,485). Raise it to read larger images.
    public static var maxImagePixels = 178_956_970

    /// The versions of the image libraries linked in, e.g. `libpng 1.6.39, libjpeg-turbo 2.1.5 (libjpeg API 62)`.
    public static var imageLibraries: String { String(cString: ic_library_versions()) }

    // MARK: Files

    /// The bytes of a file as a 1-D uint8 tensor (torchvision's `read_file`).
    public static func readFile(_ path: String) throws -> Tensor {
        do {
            return try FileBytes.read(path, limit: Int.max)
        } catch let datasets.DatasetError.io(path, operation, message) {
            throw ImageError.io(path: path, operation: operation, message: message)
        }
    }

    /// Writes the bytes of a 1-D uint8 tensor to a file, atomically (torchvision's `write_file`).
    public static func writeFile(_ filename: String, _ data: Tensor) throws {
        precondition(data.dtype == .uint8 && data.dim == 1,
                     "io.writeFile: expected a 1-D uint8 tensor, got \(data.dtype) with shape \(data.shape)")
        let bytes = data.contiguous()
        do {
            try AtomicFile.write(to: filename) { fd in
                try bytes.withRawBytes { raw in
                    var done = 0
                    while done < raw.count {
                        let n = Glibc.write(fd, raw.baseAddress! + done, raw.count - done)
                        if n < 0 {
                            if errno == EINTR { continue }
                            let code = errno
                            throw ImageError.io(path: filename, operation: "write", message: String(cString: strerror(code)))
                        }
                        done += n
                    }
                }
            }
        } catch let SerializationError.io(path, operation, _, message) {
            throw ImageError.io(path: path, operation: operation, message: message)
        }
    }

    // MARK: Reading

    /// Reads a PNG or JPEG file into a uint8 C×H×W tensor (torchvision's `read_image`).
    ///
    /// As in torchvision, the result is a channels-first view (strides `[1, W·C, C]`) of the decoded
    /// H×W×C pixels. A 16-bit PNG gives an int32 tensor holding the 16-bit values (0...65535):
    /// torchvision 0.29 returns `torch.uint16` there, a dtype SwiftTorch does not have.
    ///
    /// ```swift
    /// let img = try io.readImage("photo.jpg", mode: .RGB)   // uint8 [3, H, W]
    /// ```
    /// - Throws: ``ImageError`` naming the file for a missing file, an unknown format or a decoder error.
    public static func readImage(_ path: String, mode: ImageReadMode = .unchanged) throws -> Tensor {
        try decode(readFile(path), mode: mode, source: "'\(path)'")
    }

    /// Decodes PNG or JPEG bytes (a 1-D uint8 tensor) into a C×H×W tensor, choosing the decoder by
    /// the file signature (torchvision's `decode_image`).
    public static func decodeImage(_ input: Tensor, mode: ImageReadMode = .unchanged) throws -> Tensor {
        try decode(input, mode: mode, source: "image data")
    }

    /// Decodes PNG or JPEG bytes into a C×H×W tensor.
    public static func decodeImage(_ bytes: [UInt8], mode: ImageReadMode = .unchanged) throws -> Tensor {
        try decodeImage(Tensor(bytes, shape: [bytes.count], dtype: .uint8), mode: mode)
    }

    /// Decodes PNG bytes into a C×H×W tensor (torchvision's `decode_png`): 1, 2, 4, 8 and 16 bits,
    /// grey, grey+alpha, RGB, RGBA and palette, interlaced or not.
    public static func decodePNG(_ input: Tensor, mode: ImageReadMode = .unchanged) throws -> Tensor {
        try decode(input, mode: mode, source: "image data", format: .png)
    }

    /// Decodes JPEG bytes (baseline or progressive, grey or colour) into a uint8 C×H×W tensor
    /// (torchvision's `decode_jpeg`). EXIF orientation is ignored, as torchvision does by default.
    public static func decodeJPEG(_ input: Tensor, mode: ImageReadMode = .unchanged) throws -> Tensor {
        try decode(input, mode: mode, source: "image data", format: .jpeg)
    }

    // MARK: Writing

    /// Encodes a uint8 C×H×W image (1 to 4 channels) as PNG bytes, a 1-D uint8 tensor (torchvision's
    /// `encode_png`). `compressionLevel` is zlib's, 0 (none) to 9 (smallest).
    public static func encodePNG(_ input: Tensor, compressionLevel: Int = 6) throws -> Tensor {
        precondition((0...9).contains(compressionLevel),
                     "io.encodePNG: compressionLevel must be between 0 and 9, got \(compressionLevel)")
        let (hwc, c, h, w) = interleaved(input, op: "io.encodePNG", channels: 1...4)
        return try encodePNG(hwc, channels: c, height: h, width: w, compressionLevel: compressionLevel)
    }

    /// Encodes a uint8 C×H×W image (1 or 3 channels) as JPEG bytes, a 1-D uint8 tensor (torchvision's
    /// `encode_jpeg`). `quality` runs from 1 to 100.
    public static func encodeJPEG(_ input: Tensor, quality: Int = 75) throws -> Tensor {
        precondition((1...100).contains(quality), "io.encodeJPEG: quality must be between 1 and 100, got \(quality)")
        let (hwc, c, h, w) = interleaved(input, op: "io.encodeJPEG", channels: [1, 3])
        return try encodeJPEG(hwc, channels: c, height: h, width: w, quality: quality)
    }

    /// Writes a uint8 C×H×W image as a PNG file (torchvision's `write_png`).
    public static func writePNG(_ input: Tensor, _ filename: String, compressionLevel: Int = 6) throws {
        try writeFile(filename, encodePNG(input, compressionLevel: compressionLevel))
    }

    /// Writes a uint8 C×H×W image as a JPEG file (torchvision's `write_jpeg`).
    public static func writeJPEG(_ input: Tensor, _ filename: String, quality: Int = 75) throws {
        try writeFile(filename, encodeJPEG(input, quality: quality))
    }
}

// MARK: - Implementation

extension io {
    enum Format: String {
        case png = "PNG"
        case jpeg = "JPEG"

        /// The format whose signature `bytes` start with.
        static func detect(_ bytes: UnsafeRawBufferPointer) -> Format? {
            if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
            if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
            return nil
        }

        /// The name of a recognised format this module cannot read, for the error message.
        static func other(_ bytes: UnsafeRawBufferPointer) -> String? {
            let signatures: [(String, [UInt8])] = [
                ("GIF", Array("GIF8".utf8)), ("WebP", Array("RIFF".utf8)), ("BMP", Array("BM".utf8)),
                ("TIFF", [0x49, 0x49, 0x2A, 0x00]), ("TIFF", [0x4D, 0x4D, 0x00, 0x2A]),
            ]
            return signatures.first { bytes.starts(with: $0.1) }?.0
        }
    }

    /// A decoded image still in the C library's interleaved buffer.
    struct Decoded {
        var raw: ic_decoded
        var width: Int { Int(raw.width) }
        var height: Int { Int(raw.height) }
        var channels: Int { Int(raw.channels) }
        func free() { ic_free(raw.pixels) }
    }

    /// Runs the decoder chosen by signature (or `format`) over `input`'s bytes.
    static func decodeRaw(_ input: Tensor, mode: Int32, modeName: String, source: String,
                          format: Format? = nil) throws -> Decoded {
        precondition(input.dtype == .uint8 && input.dim == 1,
                     "io.decodeImage: expected a 1-D uint8 tensor of file bytes, got \(input.dtype) with shape \(input.shape)")
        let bytes = input.contiguous()
        return try bytes.withRawBytes { raw in
            guard raw.count > 0 else {
                throw ImageError.decode(source: source, format: format?.rawValue ?? "image", message: "the data is empty")
            }
            let detected = Format.detect(raw)
            guard let fmt = format ?? detected else {
                throw ImageError.unsupportedFormat(source: source, detected: Format.other(raw))
            }
            if fmt == .jpeg && mode != Int32(IC_MODE_UNCHANGED) && mode != Int32(IC_MODE_GRAY)
                && mode != Int32(IC_MODE_RGB) && mode != Int32(IC_MODE_IMAGE) {
                throw ImageError.unsupportedMode(source: source, format: "JPEG", mode: modeName)
            }
            var out = ic_decoded()
            let base = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let limit = UInt64(max(0, maxImagePixels))
            let status = fmt == .png ? ic_png_decode(base, raw.count, mode, limit, &out)
                                     : ic_jpeg_decode(base, raw.count, mode, limit, &out)
            guard status == 0 else {
                let message = withUnsafeBytes(of: out.message) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                let library = fmt == .png ? "libpng" : "libjpeg"
                throw ImageError.decode(source: source, format: fmt.rawValue, message: "\(library): \(message)")
            }
            return Decoded(raw: out)
        }
    }

    /// Decodes into a C×H×W tensor: uint8, or int32 for 16-bit PNG samples. Like torchvision's, the
    /// result is a channels-first view (`permute(2, 0, 1)`) of the decoded H×W×C pixels.
    static func decode(_ input: Tensor, mode: ImageReadMode, source: String, format: Format? = nil) throws -> Tensor {
        let d = try decodeRaw(input, mode: mode.code, modeName: mode.description, source: source, format: format)
        defer { d.free() }
        let count = d.width * d.height * d.channels
        let hwc: Tensor
        if d.raw.bit_depth == 16 {
            hwc = torch.empty([d.height, d.width, d.channels], dtype: .int32)
            let dst = (hwc.storage.data + hwc.storageOffset * 4).assumingMemoryBound(to: Int32.self)
            let src = UnsafeRawPointer(d.raw.pixels!).assumingMemoryBound(to: UInt16.self)
            for i in 0..<count { dst[i] = Int32(src[i]) }
        } else {
            hwc = torch.empty([d.height, d.width, d.channels], dtype: .uint8)
            (hwc.storage.data + hwc.storageOffset).copyMemory(from: d.raw.pixels!, byteCount: count)
        }
        return hwc.permute(2, 0, 1)
    }

    /// Encodes interleaved 8-bit pixels as PNG.
    static func encodePNG(_ hwc: UnsafeRawBufferPointer, channels c: Int, height h: Int, width w: Int,
                          compressionLevel: Int) throws -> Tensor {
        guard hwc.count > 0 else { throw ImageError.encode(format: "PNG", message: "the image is empty") }
        return try encoded("PNG") { out in
            ic_png_encode(hwc.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt32(w), UInt32(h), Int32(c),
                          Int32(compressionLevel), out)
        }
    }

    /// Encodes interleaved 8-bit pixels as JPEG.
    static func encodeJPEG(_ hwc: UnsafeRawBufferPointer, channels c: Int, height h: Int, width w: Int,
                           quality: Int) throws -> Tensor {
        guard hwc.count > 0 else { throw ImageError.encode(format: "JPEG", message: "the image is empty") }
        return try encoded("JPEG") { out in
            ic_jpeg_encode(hwc.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt32(w), UInt32(h), Int32(c),
                           Int32(quality), out)
        }
    }

    /// Encodes an H×W×C tensor's bytes.
    static func encodePNG(_ hwc: Tensor, channels c: Int, height h: Int, width w: Int, compressionLevel: Int) throws -> Tensor {
        try hwc.withRawBytes { try encodePNG($0, channels: c, height: h, width: w, compressionLevel: compressionLevel) }
    }

    static func encodeJPEG(_ hwc: Tensor, channels c: Int, height h: Int, width w: Int, quality: Int) throws -> Tensor {
        try hwc.withRawBytes { try encodeJPEG($0, channels: c, height: h, width: w, quality: quality) }
    }

    /// A contiguous H×W×C copy of a uint8 C×H×W (or H×W) image, after checking its shape.
    static func interleaved(_ input: Tensor, op: String, channels allowed: some Collection<Int>)
        -> (Tensor, Int, Int, Int) {
        precondition(input.dtype == .uint8, "\(op): expected a uint8 tensor, got \(input.dtype)")
        precondition(input.dim == 3 || input.dim == 2, "\(op): expected a C×H×W tensor, got shape \(input.shape)")
        let chw = input.dim == 2 ? input.unsqueeze(0) : input
        let (c, h, w) = (chw.shape[0], chw.shape[1], chw.shape[2])
        precondition(allowed.contains(c), "\(op): expected \(Array(allowed)) channels, got \(c) in shape \(input.shape)")
        precondition(h > 0 && w > 0, "\(op): the image is empty (shape \(input.shape))")
        return (chw.permute(1, 2, 0).contiguous(), c, h, w)
    }

    /// Runs an encoder and copies its buffer into a 1-D uint8 tensor.
    static func encoded(_ format: String, _ body: (UnsafeMutablePointer<ic_encoded>) -> Int32) throws -> Tensor {
        var out = ic_encoded()
        let status = body(&out)
        defer { ic_free(out.data) }
        guard status == 0 else {
            let message = withUnsafeBytes(of: out.message) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            throw ImageError.encode(format: format, message: message)
        }
        let t = torch.empty([out.size], dtype: .uint8)
        (t.storage.data + t.storageOffset).copyMemory(from: out.data, byteCount: out.size)
        return t
    }
}
