// Raw DEFLATE (RFC 1951) decompression through the system zlib (`inflate` with windowBits -15),
// for hostile input:
//
// - Output never exceeds the caller's buffer (→ thrown `.limitExceeded`); zlib itself allocates
//   only its ~7 KiB state and a 32 KiB window, freed before returning.
// - Input that ends before the final block (→ `.corruptDeflate`, "unexpected end").
// - zlib's Z_DATA_ERROR (invalid block type, bad code lengths, distance too far back, bad stored
//   block lengths, …) → `.corruptDeflate` with zlib's message and the input offset reached.
// - Buffers of 4 GiB or more are fed to zlib (whose counts are 32-bit) in pieces.

import CZlib

/// Raw DEFLATE decompression (RFC 1951: stored, fixed-Huffman and dynamic-Huffman blocks),
/// as used inside zip entries with compression method 8.
///
/// The decoder is safe on any input: it never reads outside the input, never writes more than the
/// caller's bound, and reports every malformation as a thrown ``SerializationError``.
public enum Inflate {
    /// The most bytes a DEFLATE stream of `compressedSize` bytes can expand to
    /// (1032:1 plus a small margin), saturating at `Int.max`.
    public static func maximumInflatedSize(compressedSize: Int) -> Int {
        let (m, o1) = max(0, compressedSize).multipliedReportingOverflow(by: 1032)
        if o1 { return Int.max }
        let (s, o2) = m.addingReportingOverflow(1024)
        return o2 ? Int.max : s
    }

    /// Decompresses a raw DEFLATE stream into `output`.
    ///
    /// - Parameters:
    ///   - input: the compressed bytes. Bytes after the final block are ignored.
    ///   - output: where the decompressed bytes go; its size is the output bound.
    /// - Returns: the number of bytes written to `output`, and the number of input bytes consumed
    ///   (up to and including the byte holding the last bit of the final block).
    /// - Throws: ``SerializationError/corruptDeflate(reason:offset:)`` for malformed or truncated
    ///   input, ``SerializationError/limitExceeded(what:limit:record:)`` when the output would not
    ///   fit in `output`.
    public static func decompress(
        _ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer
    ) throws -> (written: Int, consumed: Int) {
        guard let inBase = input.baseAddress, input.count > 0 else {
            throw SerializationError.corruptDeflate(reason: "empty input (no block header)", offset: 0)
        }
        var stream = z_stream()
        let initialized = inflateInit2_(&stream, -MAX_WBITS, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        guard initialized == Z_OK else { throw zlibFailure(initialized, stream, operation: "inflateInit2") }
        defer { inflateEnd(&stream) }

        var oneByte: UInt8 = 0   // zlib wants a non-null output pointer even for an empty output
        return try withUnsafeMutablePointer(to: &oneByte) { dummy in
            stream.next_in = UnsafeMutablePointer(mutating: inBase.assumingMemoryBound(to: Bytef.self))
            stream.next_out = output.baseAddress?.assumingMemoryBound(to: Bytef.self) ?? dummy
            var inLeft = input.count      // not yet handed to zlib
            var outLeft = output.count
            func consumed() -> Int { input.count - inLeft - Int(stream.avail_in) }
            while true {
                let moreIn = min(inLeft, Int(UInt32.max - stream.avail_in))
                stream.avail_in += UInt32(moreIn)
                inLeft -= moreIn
                let moreOut = min(outLeft, Int(UInt32.max - stream.avail_out))
                stream.avail_out += UInt32(moreOut)
                outLeft -= moreOut
                // Z_FINISH when zlib holds all of both buffers: it then skips its window copy.
                let flush = inLeft == 0 && outLeft == 0 ? Z_FINISH : Z_NO_FLUSH
                let status = inflate(&stream, flush)
                switch status {
                case Z_STREAM_END:
                    return (output.count - outLeft - Int(stream.avail_out), consumed())
                case Z_OK where flush == Z_NO_FLUSH:
                    continue
                case Z_OK, Z_BUF_ERROR:
                    // Stopped short of the end of the stream: either buffer ran out.
                    if stream.avail_out == 0 && outLeft == 0 {
                        throw SerializationError.limitExceeded(what: "inflated size", limit: output.count, record: nil)
                    }
                    if stream.avail_in == 0 && inLeft == 0 {
                        throw SerializationError.corruptDeflate(reason: "unexpected end of compressed data", offset: input.count)
                    }
                    if status == Z_OK { continue }
                    throw SerializationError.corruptDeflate(reason: "zlib inflate made no progress", offset: consumed())
                case Z_DATA_ERROR, Z_NEED_DICT:
                    throw SerializationError.corruptDeflate(reason: zlibMessage(stream) ?? "invalid data", offset: consumed())
                default:
                    throw zlibFailure(status, stream, operation: "inflate")
                }
            }
        }
    }

    /// Decompresses a raw DEFLATE stream into a new array of at most `maxOutputSize` bytes.
    ///
    /// Memory allocated up front is bounded by both `maxOutputSize` and
    /// ``maximumInflatedSize(compressedSize:)`` of the input, so a hostile size claim cannot make
    /// this allocate more than the input could possibly expand to.
    /// - Throws: as ``decompress(_:into:)``.
    public static func decompress(_ input: UnsafeRawBufferPointer, maxOutputSize: Int) throws -> [UInt8] {
        let cap = max(0, min(maxOutputSize, maximumInflatedSize(compressedSize: input.count)))
        return try [UInt8](unsafeUninitializedCapacity: cap) { buf, initialized in
            initialized = 0
            let (written, _) = try decompress(input, into: UnsafeMutableRawBufferPointer(buf))
            initialized = written
        }
    }

    /// Decompresses a raw DEFLATE stream held in an array. See `decompress(_:maxOutputSize:)`.
    public static func decompress(_ input: [UInt8], maxOutputSize: Int) throws -> [UInt8] {
        try input.withUnsafeBytes { try decompress($0, maxOutputSize: maxOutputSize) }
    }
}

/// zlib's message for the last error of `stream`, if it set one.
func zlibMessage(_ stream: z_stream) -> String? {
    stream.msg.map { String(cString: $0) }
}

/// An error for a zlib status that is not about the data: out of memory, a version mismatch, an
/// internal inconsistency.
func zlibFailure(_ status: Int32, _ stream: z_stream, operation: String) -> SerializationError {
    let code = status == Z_MEM_ERROR ? ENOMEM : EINVAL
    let name: String
    switch status {
    case Z_MEM_ERROR: name = "out of memory"
    case Z_VERSION_ERROR: name = "incompatible zlib version \(String(cString: zlibVersion()))"
    case Z_STREAM_ERROR: name = "inconsistent stream state"
    default: name = "status \(status)"
    }
    let detail = zlibMessage(stream).map { ": \($0)" } ?? ""
    return .io(path: "<zlib>", operation: operation, code: code, message: name + detail)
}
