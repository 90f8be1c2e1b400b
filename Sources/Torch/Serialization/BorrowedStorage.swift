// Storages over file bytes: tensors loaded from a checkpoint or a safetensors file point straight
// into the file's (private, copy-on-write) memory mapping when the bytes are suitably aligned,
// and get a copy otherwise (or when the bytes must be byte-swapped).

extension Storage {
    /// A storage holding `byteCount` bytes that start at `bytes`, kept alive by `owner`.
    ///
    /// The memory is borrowed without copying when it is writable memory owned by `owner` (a
    /// private memory mapping or a heap buffer), `swapElementsOfSize` is nil and the address is a
    /// multiple of `alignment`; otherwise the bytes are copied into a new allocation (and each
    /// element of `swapElementsOfSize` bytes reversed, for big-endian files).
    ///
    /// With `booleans`, bytes other than 0 and 1 (which Swift's `Bool` cannot hold) become 1, as
    /// PyTorch reads any nonzero byte as true.
    static func fromFileBytes(_ bytes: UnsafeRawPointer, byteCount: Int, owner: AnyObject, alignment: Int,
                              swapElementsOfSize swapSize: Int? = nil, booleans: Bool = false) -> Storage {
        let u8 = bytes.assumingMemoryBound(to: UInt8.self)
        let badBooleans = booleans && (0..<byteCount).contains { u8[$0] > 1 }
        if swapSize == nil || swapSize == 1, !badBooleans, Int(bitPattern: bytes) % max(alignment, 1) == 0 {
            return Storage(borrowing: UnsafeMutableRawPointer(mutating: bytes), byteCount: byteCount, owner: owner)
        }
        let s = Storage(byteCount: byteCount)
        if byteCount > 0 { s.data.copyMemory(from: bytes, byteCount: byteCount) }
        if let w = swapSize, w > 1 { byteSwapElements(s.data, count: byteCount / w, width: w) }
        if badBooleans {
            let q = s.data.assumingMemoryBound(to: UInt8.self)
            for i in 0..<byteCount where q[i] > 1 { q[i] = 1 }
        }
        return s
    }
}

/// Reverses the bytes of each of `count` elements of `width` bytes (2, 4 or 8) in place.
func byteSwapElements(_ p: UnsafeMutableRawPointer, count: Int, width: Int) {
    switch width {
    case 2:
        let q = p.assumingMemoryBound(to: UInt16.self)
        for i in 0..<count { q[i] = q[i].byteSwapped }
    case 4:
        let q = p.assumingMemoryBound(to: UInt32.self)
        for i in 0..<count { q[i] = q[i].byteSwapped }
    case 8:
        let q = p.assumingMemoryBound(to: UInt64.self)
        for i in 0..<count { q[i] = q[i].byteSwapped }
    default:
        let b = p.assumingMemoryBound(to: UInt8.self)
        for i in 0..<count {
            var lo = i * width, hi = lo + width - 1
            while lo < hi { b.swapAt(lo, hi); lo += 1; hi -= 1 }
        }
    }
}

private extension UnsafeMutablePointer where Pointee == UInt8 {
    func swapAt(_ i: Int, _ j: Int) {
        let t = self[i]
        self[i] = self[j]
        self[j] = t
    }
}
