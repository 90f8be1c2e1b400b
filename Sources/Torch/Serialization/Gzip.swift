// gzip (RFC 1952) container parsing around zlib's raw inflate (`Inflate`) and CRC-32 (`CRC32`).
//
// A gzip file is one or more members, each: a 10-byte header (1f 8b 08 FLG MTIME XFL OS), optional
// FEXTRA / FNAME / FCOMMENT / FHCRC fields, a DEFLATE stream, and an 8-byte trailer (CRC-32 and
// length mod 2^32 of the member's data). Every field is bounds-checked; trailers are verified.
// The container stays here rather than in zlib's gzip mode (windowBits 31, one member per stream)
// or gzread (a file, no output bound) so that errors name the member, offset and declared values,
// members are concatenated into the caller's buffer, and trailing zero padding is accepted.

/// gzip decompression (`.gz` files), for hostile input: malformed containers throw
/// ``SerializationError/corruptGzip(reason:offset:)``, malformed streams the DEFLATE errors, and
/// output never exceeds the caller's bound.
///
/// ```swift
/// let bytes = try Gzip.decompress(compressed, maxOutputSize: 1 << 30)
/// ```
public enum Gzip {
    /// True when `bytes` starts with the gzip magic number (`1f 8b`).
    public static func hasMagic(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= 2 && bytes[0] == 0x1F && bytes[1] == 0x8B
    }

    /// True when `bytes` starts with the gzip magic number.
    public static func hasMagic(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { hasMagic($0) }
    }

    /// Decompresses every member of a gzip stream and concatenates their data. Zero bytes after
    /// the last member (tape padding) are ignored; anything else must be another member.
    ///
    /// Memory allocated is bounded by `maxOutputSize` and by how far the input could possibly
    /// expand; the trailer's length field is used only as a size hint.
    /// - Throws: ``SerializationError/corruptGzip(reason:offset:)``, the DEFLATE errors of
    ///   ``Inflate``, or ``SerializationError/limitExceeded(what:limit:record:)`` when the data
    ///   would exceed `maxOutputSize`.
    public static func decompress(_ input: UnsafeRawBufferPointer, maxOutputSize: Int) throws -> [UInt8] {
        let bound = max(0, min(maxOutputSize, Inflate.maximumInflatedSize(compressedSize: input.count)))
        func attempt(_ capacity: Int) throws -> [UInt8] {
            try [UInt8](unsafeUninitializedCapacity: capacity) { buf, initialized in
                initialized = 0
                initialized = try decompress(input, into: UnsafeMutableRawBufferPointer(buf))
            }
        }
        // The size hint is exact for single-member data below 4 GiB; otherwise fall back to the bound.
        if let hint = uncompressedSizeHint(input), hint < bound {
            do { return try attempt(hint) } catch SerializationError.limitExceeded {}
        }
        do {
            return try attempt(bound)
        } catch SerializationError.limitExceeded {
            throw SerializationError.limitExceeded(what: "gzip data", limit: maxOutputSize, record: nil)
        }
    }

    /// Decompresses a gzip stream held in an array (see the buffer-pointer variant).
    public static func decompress(_ input: [UInt8], maxOutputSize: Int) throws -> [UInt8] {
        try input.withUnsafeBytes { try decompress($0, maxOutputSize: maxOutputSize) }
    }

    /// Decompresses every member of a gzip stream into `output`, one after the other; returns the
    /// number of bytes written. Each member's CRC-32 and length are verified.
    /// - Throws: as `decompress(_:maxOutputSize:)`; `.limitExceeded` when `output` is too small.
    public static func decompress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws -> Int {
        var pos = 0
        var written = 0
        var member = 0
        repeat {
            let dataStart = try headerEnd(input, at: pos)
            let dst = UnsafeMutableRawBufferPointer(rebasing: output[written...])
            let (n, consumed) = try Inflate.decompress(UnsafeRawBufferPointer(rebasing: input[dataStart...]), into: dst)
            let trailer = dataStart + consumed
            guard trailer + 8 <= input.count else {
                throw SerializationError.corruptGzip(reason: "member \(member) ends without its 8-byte CRC-32/length trailer", offset: trailer)
            }
            let crc = CRC32.checksum(UnsafeRawBufferPointer(rebasing: dst[..<n]))
            let declaredCRC = readLE32(input, trailer)
            guard crc == declaredCRC else {
                throw SerializationError.corruptGzip(reason: "member \(member): CRC-32 of the data is 0x\(hex32(crc)) but the trailer declares 0x\(hex32(declaredCRC))", offset: trailer)
            }
            let declaredSize = readLE32(input, trailer + 4)
            guard UInt32(truncatingIfNeeded: n) == declaredSize else {
                throw SerializationError.corruptGzip(reason: "member \(member): \(n) bytes of data but the trailer declares \(declaredSize) (mod 2^32)", offset: trailer + 4)
            }
            written += n
            pos = trailer + 8
            member += 1
        } while pos < input.count && !input[pos...].allSatisfy({ $0 == 0 })
        return written
    }

    /// The length the last member's trailer declares (the input's final four bytes): the exact
    /// decompressed size of a single-member stream below 4 GiB, a hint otherwise. Nil when the input
    /// is too short to hold a member.
    public static func uncompressedSizeHint(_ input: UnsafeRawBufferPointer) -> Int? {
        input.count >= 18 ? Int(readLE32(input, input.count - 4)) : nil
    }

    /// Parses a member header at `start`; returns the offset of its DEFLATE data.
    static func headerEnd(_ b: UnsafeRawBufferPointer, at start: Int) throws -> Int {
        func need(_ n: Int, at p: Int, _ what: String) throws {
            guard p <= b.count && n <= b.count - p else {
                throw SerializationError.corruptGzip(reason: "truncated header: \(what) needs \(n) bytes but only \(max(0, b.count - p)) remain", offset: p)
            }
        }
        try need(10, at: start, "the fixed header")
        guard b[start] == 0x1F && b[start + 1] == 0x8B else {
            throw SerializationError.corruptGzip(reason: "bad magic number 0x\(hex8(b[start]))\(hex8(b[start + 1])) (expected 0x1f8b)", offset: start)
        }
        guard b[start + 2] == 8 else {
            throw SerializationError.corruptGzip(reason: "unsupported compression method \(b[start + 2]) (only 8, deflate, exists)", offset: start + 2)
        }
        let flags = b[start + 3]
        guard flags & 0xE0 == 0 else {
            throw SerializationError.corruptGzip(reason: "reserved header flag bits set (flags 0x\(hex8(flags)))", offset: start + 3)
        }
        var p = start + 10
        if flags & 0x04 != 0 {   // FEXTRA
            try need(2, at: p, "the extra-field length")
            let len = Int(b[p]) | Int(b[p + 1]) << 8
            try need(len, at: p + 2, "the extra field")
            p += 2 + len
        }
        for (bit, what) in [(UInt8(0x08), "the file name"), (0x10, "the comment")] where flags & bit != 0 {
            guard let end = b[p...].firstIndex(of: 0) else {
                throw SerializationError.corruptGzip(reason: "truncated header: \(what) has no terminating zero byte", offset: p)
            }
            p = end + 1
        }
        if flags & 0x02 != 0 {   // FHCRC
            try need(2, at: p, "the header CRC-16")
            let declared = UInt16(b[p]) | UInt16(b[p + 1]) << 8
            let actual = UInt16(truncatingIfNeeded: CRC32.checksum(UnsafeRawBufferPointer(rebasing: b[start..<p])))
            guard declared == actual else {
                throw SerializationError.corruptGzip(reason: "header CRC-16 is 0x\(String(actual, radix: 16)) but the header declares 0x\(String(declared, radix: 16))", offset: p)
            }
            p += 2
        }
        guard p < b.count else {
            throw SerializationError.corruptGzip(reason: "member has a header but no compressed data", offset: p)
        }
        return p
    }

    private static func readLE32(_ b: UnsafeRawBufferPointer, _ p: Int) -> UInt32 {
        guard p >= 0 && p + 4 <= b.count else { return 0 }
        return UInt32(b[p]) | UInt32(b[p + 1]) << 8 | UInt32(b[p + 2]) << 16 | UInt32(b[p + 3]) << 24
    }

    private static func hex8(_ v: UInt8) -> String {
        let s = String(v, radix: 16)
        return s.count == 1 ? "0" + s : s
    }

    private static func hex32(_ v: UInt32) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: 8 - s.count) + s
    }
}
