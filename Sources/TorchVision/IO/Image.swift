import Torch

/// An 8-bit raster image, the counterpart of a PIL `Image` for the transforms that take PIL images in
/// torchvision: `width`×`height` pixels of `mode.bands` bytes each, stored row by row (H×W×C, "HWC").
///
/// ```swift
/// let img = try Image.open("photo.jpg")          // mode .RGB
/// let grey = img.convert(.L)                      // PIL's luma rule
/// let x = grey.tensor()                           // uint8 1×H×W
/// try grey.save("grey.png")
/// ```
public struct Image: Equatable, CustomStringConvertible {
    /// PIL's image modes for 8-bit pixels.
    public enum Mode: String, CaseIterable, CustomStringConvertible {
        /// One grey ("luminance") byte per pixel.
        case L
        /// Red, green, blue.
        case RGB
        /// Red, green, blue, alpha.
        case RGBA

        /// The number of bytes per pixel (PIL's `len(img.getbands())`).
        public var bands: Int {
            switch self {
            case .L: return 1
            case .RGB: return 3
            case .RGBA: return 4
            }
        }

        /// The mode whose pixels have `bands` bytes, or nil for a count PIL has no 8-bit mode for here.
        public init?(bands: Int) {
            switch bands {
            case 1: self = .L
            case 3: self = .RGB
            case 4: self = .RGBA
            default: return nil
            }
        }

        public var description: String { rawValue }
    }

    /// Pixels per row.
    public let width: Int
    /// Number of rows.
    public let height: Int
    /// How each pixel's bytes are interpreted.
    public let mode: Mode
    /// `height * width * mode.bands` bytes, row-major, channels interleaved.
    public var pixels: [UInt8]

    /// `(width, height)`, in PIL's order.
    public var size: (width: Int, height: Int) { (width, height) }

    /// An image over `pixels` (H×W×C, `height * width * mode.bands` bytes).
    public init(width: Int, height: Int, mode: Mode, pixels: [UInt8]) {
        precondition(width >= 0 && height >= 0, "Image: width and height must be non-negative, got \(width)×\(height)")
        precondition(pixels.count == width * height * mode.bands,
                     "Image: a \(width)×\(height) \(mode) image needs \(width * height * mode.bands) bytes, got \(pixels.count)")
        self.width = width
        self.height = height
        self.mode = mode
        self.pixels = pixels
    }

    /// A `width`×`height` image of one colour (`color` has `mode.bands` values, or one value used for every band).
    public init(mode: Mode, size: (width: Int, height: Int), color: [UInt8] = [0]) {
        precondition(color.count == 1 || color.count == mode.bands,
                     "Image: a \(mode) colour needs 1 or \(mode.bands) values, got \(color.count)")
        let pixel = color.count == 1 ? [UInt8](repeating: color[0], count: mode.bands) : color
        var bytes = [UInt8]()
        bytes.reserveCapacity(size.width * size.height * mode.bands)
        for _ in 0..<(size.width * size.height) { bytes += pixel }
        self.init(width: size.width, height: size.height, mode: mode, pixels: bytes)
    }

    /// The image held by a uint8 tensor of shape C×H×W (C = 1, 3 or 4 → L, RGB, RGBA) or H×W (L).
    public init(tensor: Tensor) {
        precondition(tensor.dtype == .uint8, "Image(tensor:): expected a uint8 tensor, got \(tensor.dtype)")
        precondition(tensor.dim == 2 || tensor.dim == 3,
                     "Image(tensor:): expected a C×H×W or H×W tensor, got shape \(tensor.shape)")
        let chw = tensor.dim == 2 ? tensor.unsqueeze(0) : tensor
        let (c, h, w) = (chw.shape[0], chw.shape[1], chw.shape[2])
        guard let mode = Mode(bands: c) else {
            preconditionFailure("Image(tensor:): expected 1, 3 or 4 channels (L, RGB, RGBA), got \(c) in shape \(tensor.shape)")
        }
        let hwc = chw.permute(1, 2, 0).contiguous()
        let src = (hwc.storage.data + hwc.storageOffset).assumingMemoryBound(to: UInt8.self)
        self.init(width: w, height: h, mode: mode, pixels: Array(UnsafeBufferPointer(start: src, count: h * w * c)))
    }

    /// The pixels as a uint8 C×H×W tensor (what `torchvision.transforms.PILToTensor` returns).
    public func tensor() -> Tensor {
        let c = mode.bands
        let out = torch.empty([c, height, width], dtype: .uint8)
        let dst = (out.storage.data + out.storageOffset).assumingMemoryBound(to: UInt8.self)
        let plane = width * height
        pixels.withUnsafeBufferPointer { src in
            if c == 1 {
                if plane > 0 { dst.update(from: src.baseAddress!, count: plane) }
                return
            }
            for p in 0..<plane {
                for k in 0..<c { dst[k * plane + p] = src[p * c + k] }
            }
        }
        return out
    }

    /// The image in another mode, by PIL's rules: to `L` by ITU-R 601-2 luma,
    /// `L = R * 299/1000 + G * 587/1000 + B * 114/1000` in PIL's rounded fixed point
    /// (`(R*19595 + G*38470 + B*7471 + 0x8000) >> 16`, alpha ignored); grey to colour repeats the
    /// value; adding alpha makes it 255; dropping alpha discards it.
    public func convert(_ mode: Mode) -> Image {
        if mode == self.mode { return self }
        let n = width * height
        let (ci, co) = (self.mode.bands, mode.bands)
        var out = [UInt8](repeating: 255, count: n * co)
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for p in 0..<n {
                    let s = p * ci, d = p * co
                    if co == 1 {
                        let r = UInt32(src[s]), g = UInt32(src[s + 1]), b = UInt32(src[s + 2])
                        dst[d] = UInt8((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16)
                    } else if ci == 1 {
                        dst[d] = src[s]; dst[d + 1] = src[s]; dst[d + 2] = src[s]
                    } else {
                        dst[d] = src[s]; dst[d + 1] = src[s + 1]; dst[d + 2] = src[s + 2]
                    }
                }
            }
        }
        return Image(width: width, height: height, mode: mode, pixels: out)
    }

    /// The bytes of the pixel at column `x`, row `y` (PIL's `getpixel((x, y))`).
    public func getpixel(_ x: Int, _ y: Int) -> [UInt8] {
        precondition(x >= 0 && x < width && y >= 0 && y < height,
                     "Image.getpixel: (\(x), \(y)) is outside the \(width)×\(height) image")
        let s = (y * width + x) * mode.bands
        return Array(pixels[s..<(s + mode.bands)])
    }

    public static func == (a: Image, b: Image) -> Bool {
        a.width == b.width && a.height == b.height && a.mode == b.mode && a.pixels == b.pixels
    }

    /// PIL's repr, without the object address: `<Image mode=RGB size=640x480>`.
    public var description: String { "<Image mode=\(mode) size=\(width)x\(height)>" }
}
