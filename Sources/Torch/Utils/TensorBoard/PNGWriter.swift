// A minimal PNG encoder for TensorBoard images: 8-bit gray/RGB/RGBA, filter 0, and a zlib stream of
// stored (uncompressed) deflate blocks. Torch cannot depend on TorchVision's codecs.

/// PNG bytes of `pixels` (row-major, `channels` interleaved bytes a pixel; 1, 2, 3 or 4 channels).
func encodePNG(pixels: [UInt8], width: Int, height: Int, channels: Int) -> [UInt8] {
    precondition(pixels.count == width * height * channels, "encodePNG: \(pixels.count) bytes for \(width)x\(height)x\(channels)")
    let colorType: UInt8
    switch channels {
    case 1: colorType = 0
    case 2: colorType = 4
    case 3: colorType = 2
    case 4: colorType = 6
    default: preconditionFailure("encodePNG: expected 1, 2, 3 or 4 channels but got \(channels)")
    }
    func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        return be32(UInt32(data.count)) + body + be32(CRC32.checksum(body))
    }
    // Raw scanlines, each prefixed with filter type 0.
    let stride = width * channels
    var raw = [UInt8]()
    raw.reserveCapacity((stride + 1) * height)
    for y in 0..<height {
        raw.append(0)
        raw += pixels[(y * stride)..<((y + 1) * stride)]
    }
    // zlib: header 78 01, stored blocks of at most 65535 bytes, Adler-32.
    var z: [UInt8] = [0x78, 0x01]
    var offset = 0
    repeat {
        let n = Swift.min(65535, raw.count - offset)
        let last = offset + n == raw.count
        z.append(last ? 1 : 0)
        z += [UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8((~n >> 8) & 0xFF)]
        z += raw[offset..<(offset + n)]
        offset += n
    } while offset < raw.count
    var a: UInt32 = 1, b: UInt32 = 0
    for byte in raw { a = (a + UInt32(byte)) % 65521; b = (b + a) % 65521 }
    z += be32(b << 16 | a)
    let ihdr = be32(UInt32(width)) + be32(UInt32(height)) + [8, colorType, 0, 0, 0]
    return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", ihdr) + chunk("IDAT", z) + chunk("IEND", [])
}
