// CRC-32 with the zlib / zip / PNG polynomial (reflected 0xEDB88320), slice-by-8; large buffers use
// CTorchKernels' carry-less-multiply folding where the CPU has it.

import CTorchKernels

private let crc32HasCarrylessMultiply = ct_crc32_clmul_available() != 0

/// The slice-by-8 lookup tables: 8 × 256 entries, table k at `[k * 256 ..< (k + 1) * 256]`.
private let crc32SliceTables: [UInt32] = {
    var t = [UInt32](repeating: 0, count: 8 * 256)
    for i in 0..<256 {
        var c = UInt32(i)
        for _ in 0..<8 { c = (c & 1) != 0 ? (0xEDB8_8320 ^ (c >> 1)) : (c >> 1) }
        t[i] = c
    }
    for i in 0..<256 {
        var c = t[i]
        for k in 1..<8 {
            c = t[Int(c & 0xFF)] ^ (c >> 8)
            t[k * 256 + i] = c
        }
    }
    return t
}()

/// CRC-32 as used by zip, gzip, zlib and PNG (polynomial 0x04C11DB7, reflected, initial value and
/// final XOR 0xFFFFFFFF). `CRC32.checksum("123456789")` is `0xCBF43926`.
///
/// Use `CRC32.checksum(_:)` for a one-shot checksum, or create a value and call
/// `update(_:)` repeatedly to checksum data that arrives in pieces:
///
/// ```swift
/// var crc = CRC32()
/// crc.update(part1)
/// crc.update(part2)
/// let value = crc.value
/// ```
public struct CRC32: Equatable, Sendable {
    /// The checksum of all the bytes passed to `update(_:)` so far.
    public private(set) var value: UInt32

    /// Starts a checksum, optionally continuing from a previous checksum `value`
    /// (the CRC-32 of the bytes already seen).
    public init(continuing value: UInt32 = 0) {
        self.value = value
    }

    /// Adds `buffer`'s bytes to the checksum.
    public mutating func update(_ buffer: UnsafeRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        if buffer.count >= 256 && crc32HasCarrylessMultiply {
            value = ct_crc32_clmul(value, base, buffer.count)  // ~10x faster (PCLMULQDQ folding)
        } else {
            value = CRC32.compute(base, buffer.count, value)
        }
    }

    /// Adds `bytes` to the checksum.
    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// Adds the bytes of any contiguous or non-contiguous byte sequence to the checksum.
    public mutating func update<S: Sequence>(contentsOf bytes: S) where S.Element == UInt8 {
        let done: Void? = bytes.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
        if done != nil { return }
        var chunk = [UInt8]()
        chunk.reserveCapacity(4096)
        for b in bytes {
            chunk.append(b)
            if chunk.count == 4096 { update(chunk); chunk.removeAll(keepingCapacity: true) }
        }
        update(chunk)
    }

    /// The CRC-32 of `buffer`.
    public static func checksum(_ buffer: UnsafeRawBufferPointer) -> UInt32 {
        var c = CRC32()
        c.update(buffer)
        return c.value
    }

    /// The CRC-32 of `bytes`.
    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }

    /// The CRC-32 of the UTF-8 bytes of `string`.
    public static func checksum(_ string: String) -> UInt32 {
        var c = CRC32()
        c.update(contentsOf: string.utf8)
        return c.value
    }

    /// Slice-by-8 kernel: 8 bytes per step with 8 table lookups, then a byte-wise tail.
    private static func compute(_ base: UnsafeRawPointer, _ count: Int, _ initial: UInt32) -> UInt32 {
        crc32SliceTables.withUnsafeBufferPointer { tp -> UInt32 in
            let t = tp.baseAddress!
            var crc = ~initial
            var p = base.assumingMemoryBound(to: UInt8.self)
            var n = count
            // Align to 8 bytes so the wide loads below are aligned.
            while n > 0 && (UInt(bitPattern: p) & 7) != 0 {
                crc = t[Int((crc ^ UInt32(p.pointee)) & 0xFF)] ^ (crc >> 8)
                p += 1
                n -= 1
            }
            while n >= 8 {
                let raw = UnsafeRawPointer(p)
                let lo = UInt32(littleEndian: raw.load(as: UInt32.self)) ^ crc
                let hi = UInt32(littleEndian: raw.load(fromByteOffset: 4, as: UInt32.self))
                crc = t[7 * 256 + Int(lo & 0xFF)]
                    ^ t[6 * 256 + Int((lo >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((lo >> 16) & 0xFF)]
                    ^ t[4 * 256 + Int(lo >> 24)]
                    ^ t[3 * 256 + Int(hi & 0xFF)]
                    ^ t[2 * 256 + Int((hi >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((hi >> 16) & 0xFF)]
                    ^ t[Int(hi >> 24)]
                p += 8
                n -= 8
            }
            while n > 0 {
                crc = t[Int((crc ^ UInt32(p.pointee)) & 0xFF)] ^ (crc >> 8)
                p += 1
                n -= 1
            }
            return ~crc
        }
    }
}
