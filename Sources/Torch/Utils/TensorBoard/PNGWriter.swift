// A minimal PNG encoder for TensorBoard images: 8-bit gray/RGB/RGBA, filter 0, and a zlib stream
// from the system zlib's compress2 at its default level (6, as PIL's PNG writer). Torch cannot
// depend on TorchVision's codecs.

import CZlib

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
    // The IDAT data: a zlib stream (header, DEFLATE blocks, Adler-32).
    var zLength = compressBound(uLong(raw.count))
    var z = [UInt8](repeating: 0, count: Int(zLength))
    let status = z.withUnsafeMutableBufferPointer { out in
        raw.withUnsafeBufferPointer { compress2(out.baseAddress, &zLength, $0.baseAddress, uLong($0.count), Z_DEFAULT_COMPRESSION) }
    }
    precondition(status == Z_OK, "encodePNG: zlib compress2 failed with status \(status)")
    z.removeLast(z.count - Int(zLength))
    let ihdr = be32(UInt32(width)) + be32(UInt32(height)) + [8, colorType, 0, 0, 0]
    return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", ihdr) + chunk("IDAT", z) + chunk("IEND", [])
}
