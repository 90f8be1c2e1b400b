// A raw DEFLATE (RFC 1951) decompressor written for hostile input.
//
// - Every bit read is checked against the end of the input (truncation → thrown error).
// - Output never exceeds the caller's bound (→ thrown `.limitExceeded`).
// - Over-subscribed or incomplete Huffman codes, invalid symbols, distances reaching before the
//   start of the output, bad stored-block lengths: all thrown as `.corruptDeflate`.
// - Memory: the output buffer (bounded) plus ~5 KiB of tables, allocated once per call.
//
// Huffman decoding uses a 9-bit direct lookup table for short codes and a canonical
// (count/symbol) walk for the longer ones, as in zlib's `puff` reference decoder.

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
        let scratch = UnsafeMutablePointer<UInt16>.allocate(capacity: DeflateHuffmanTable.slotsPerTable * 3)
        defer { scratch.deallocate() }
        var oneByte: UInt8 = 0
        return try withUnsafeMutablePointer(to: &oneByte) { dummy in
            let outBase = output.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? dummy
            var decoder = InflateDecoder(
                src: inBase.assumingMemoryBound(to: UInt8.self), srcCount: input.count,
                dst: outBase, dstCap: output.count, scratch: scratch)
            try decoder.run()
            return (decoder.out, decoder.consumedBytes)
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

// MARK: - Huffman tables

/// A canonical Huffman decoding table living in caller-provided scratch memory.
struct DeflateHuffmanTable {
    static let fastBits = 9
    static let fastSize = 1 << fastBits
    static let maxSymbols = 288
    /// fast table + 16 counts + symbols
    static let slotsPerTable = fastSize + 16 + maxSymbols

    /// `fast[bits & 511]` = symbol << 4 | code length, or 0 when the code is longer than 9 bits
    /// (or the bit pattern is unused).
    let fast: UnsafeMutablePointer<UInt16>
    /// `counts[len]` = number of codes of length `len` (index 0 unused).
    let counts: UnsafeMutablePointer<UInt16>
    /// Symbols ordered by (code length, symbol value): the canonical order.
    let symbols: UnsafeMutablePointer<UInt16>

    init(memory: UnsafeMutablePointer<UInt16>) {
        fast = memory
        counts = memory + DeflateHuffmanTable.fastSize
        symbols = memory + DeflateHuffmanTable.fastSize + 16
    }

    enum Kind { case codeLengths, literalLengths, distances }

    /// Builds the table from per-symbol code lengths (0 = unused). Applies zlib's rules:
    /// over-subscribed sets are invalid; incomplete sets are invalid except a lone code of length 1
    /// (literal/length and distance sets) or a set with no codes at all.
    /// - Returns: `false` when the set of lengths is invalid.
    func build(lengths: UnsafePointer<UInt8>, count n: Int, kind: Kind) -> Bool {
        for i in 0..<16 { counts[i] = 0 }
        for i in 0..<n { counts[Int(lengths[i])] &+= 1 }
        counts[0] = 0
        var maxLen = 0
        for len in 1..<16 where counts[len] != 0 { maxLen = len }
        for i in 0..<DeflateHuffmanTable.fastSize { fast[i] = 0 }
        if maxLen == 0 { return true }  // no codes: any decode attempt fails later
        var left = 1
        for len in 1..<16 {
            left <<= 1
            left -= Int(counts[len])
            if left < 0 { return false }  // over-subscribed
        }
        if left > 0 && (kind == .codeLengths || maxLen != 1) { return false }  // incomplete

        // Offsets of each length's first symbol in `symbols`.
        var offs = (UInt16(0), UInt16(0), UInt16(0), UInt16(0), UInt16(0), UInt16(0), UInt16(0), UInt16(0),
                    UInt16(0), UInt16(0), UInt16(0), UInt16(0), UInt16(0), UInt16(0), UInt16(0), UInt16(0))
        withUnsafeMutableBytes(of: &offs) { raw in
            let o = raw.bindMemory(to: UInt16.self)
            o[1] = 0
            for len in 1..<15 { o[len + 1] = o[len] &+ counts[len] }
            for sym in 0..<n {
                let len = Int(lengths[sym])
                if len != 0 {
                    symbols[Int(o[len])] = UInt16(sym)
                    o[len] &+= 1
                }
            }
        }
        // Fill the fast table: walk symbols in canonical order, assigning consecutive codes.
        var code = 0
        var index = 0
        for len in 1...15 {
            let c = Int(counts[len])
            if len <= DeflateHuffmanTable.fastBits {
                for k in 0..<c {
                    let sym = Int(symbols[index + k])
                    let codeValue = code + k
                    // Reverse the `len`-bit code: DEFLATE sends Huffman codes MSB first.
                    var rev = 0
                    var v = codeValue
                    for _ in 0..<len { rev = (rev << 1) | (v & 1); v >>= 1 }
                    let entry = UInt16(truncatingIfNeeded: (sym << 4) | len)
                    var slot = rev
                    while slot < DeflateHuffmanTable.fastSize {
                        fast[slot] = entry
                        slot += 1 << len
                    }
                }
            }
            index += c
            code = (code + c) << 1
        }
        return true
    }
}

// MARK: - Decoder

private let lengthBase: [UInt16] = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                    35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
private let lengthExtra: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
                                    3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
private let distBase: [UInt16] = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193,
                                  257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
                                  8193, 12289, 16385, 24577]
private let distExtra: [UInt8] = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6,
                                  7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]
private let codeLengthOrder: [Int] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]

struct InflateDecoder {
    let src: UnsafePointer<UInt8>
    let srcCount: Int
    var pos = 0
    var bitBuf: UInt64 = 0
    var bitCount = 0
    let dst: UnsafeMutablePointer<UInt8>
    let dstCap: Int
    var out = 0
    let lit: DeflateHuffmanTable
    let dist: DeflateHuffmanTable
    let clen: DeflateHuffmanTable

    init(src: UnsafePointer<UInt8>, srcCount: Int, dst: UnsafeMutablePointer<UInt8>, dstCap: Int,
         scratch: UnsafeMutablePointer<UInt16>) {
        self.src = src
        self.srcCount = srcCount
        self.dst = dst
        self.dstCap = dstCap
        lit = DeflateHuffmanTable(memory: scratch)
        dist = DeflateHuffmanTable(memory: scratch + DeflateHuffmanTable.slotsPerTable)
        clen = DeflateHuffmanTable(memory: scratch + 2 * DeflateHuffmanTable.slotsPerTable)
    }

    /// Input bytes consumed so far (whole bytes still buffered in `bitBuf` are not counted).
    var consumedBytes: Int { pos - bitCount / 8 }

    func corrupt(_ reason: String) -> SerializationError {
        .corruptDeflate(reason: reason, offset: consumedBytes)
    }

    func truncated() -> SerializationError {
        .corruptDeflate(reason: "unexpected end of compressed data", offset: srcCount)
    }

    func overflow() -> SerializationError {
        .limitExceeded(what: "inflated size", limit: dstCap, record: nil)
    }

    @inline(__always)
    mutating func refill() {
        if bitCount >= 32 { return }
        if pos + 8 <= srcCount {
            let w = UInt64(littleEndian: UnsafeRawPointer(src + pos).loadUnaligned(as: UInt64.self))
            bitBuf |= w << UInt64(bitCount)
            let bytes = (63 - bitCount) >> 3
            pos += bytes
            bitCount += bytes << 3
        } else {
            while bitCount <= 56 && pos < srcCount {
                bitBuf |= UInt64(src[pos]) << UInt64(bitCount)
                pos += 1
                bitCount += 8
            }
        }
    }

    /// Reads `n` (0...32) bits, least significant first.
    @inline(__always)
    mutating func bits(_ n: Int) throws -> Int {
        if n == 0 { return 0 }
        refill()
        if bitCount < n { throw truncated() }
        let v = Int(truncatingIfNeeded: bitBuf & ((1 << UInt64(n)) - 1))
        bitBuf >>= UInt64(n)
        bitCount -= n
        return v
    }

    @inline(__always)
    mutating func decode(_ t: DeflateHuffmanTable) throws -> Int {
        refill()
        let entry = Int(t.fast[Int(truncatingIfNeeded: bitBuf) & (DeflateHuffmanTable.fastSize - 1)])
        if entry != 0 {
            let len = entry & 15
            if len > bitCount { throw truncated() }
            bitBuf >>= UInt64(len)
            bitCount -= len
            return entry >> 4
        }
        return try decodeSlow(t)
    }

    /// Canonical decode, one bit at a time (codes longer than the fast table, or unused patterns).
    mutating func decodeSlow(_ t: DeflateHuffmanTable) throws -> Int {
        var code = 0, first = 0, index = 0
        var b = bitBuf
        for len in 1...15 {
            if len > bitCount { throw truncated() }
            code |= Int(b & 1)
            b >>= 1
            let count = Int(t.counts[len])
            if code - count < first {
                bitBuf >>= UInt64(len)
                bitCount -= len
                return Int(t.symbols[index + (code - first)])
            }
            index += count
            first += count
            first <<= 1
            code <<= 1
        }
        throw corrupt("invalid Huffman code")
    }

    mutating func run() throws {
        var final = false
        while !final {
            final = try bits(1) == 1
            let type = try bits(2)
            switch type {
            case 0: try storedBlock()
            case 1:
                buildFixedTables()
                try codesBlock()
            case 2:
                try buildDynamicTables()
                try codesBlock()
            default:
                throw corrupt("invalid block type 3")
            }
        }
    }

    mutating func storedBlock() throws {
        // Drop the bits up to the byte boundary, then give back the whole buffered bytes.
        let drop = bitCount & 7
        bitBuf >>= UInt64(drop)
        bitCount -= drop
        pos -= bitCount >> 3
        bitBuf = 0
        bitCount = 0
        guard pos + 4 <= srcCount else { throw truncated() }
        let len = Int(src[pos]) | Int(src[pos + 1]) << 8
        let nlen = Int(src[pos + 2]) | Int(src[pos + 3]) << 8
        guard len == (~nlen & 0xFFFF) else {
            throw corrupt("stored block length \(len) does not match its complement \(nlen)")
        }
        pos += 4
        guard len <= srcCount - pos else { throw truncated() }
        guard len <= dstCap - out else { throw overflow() }
        if len > 0 {
            (dst + out).update(from: src + pos, count: len)
        }
        pos += len
        out += len
    }

    func buildFixedTables() {
        var lengths = [UInt8](repeating: 0, count: 288)
        for i in 0..<144 { lengths[i] = 8 }
        for i in 144..<256 { lengths[i] = 9 }
        for i in 256..<280 { lengths[i] = 7 }
        for i in 280..<288 { lengths[i] = 8 }
        lengths.withUnsafeBufferPointer { _ = lit.build(lengths: $0.baseAddress!, count: 288, kind: .literalLengths) }
        let d = [UInt8](repeating: 5, count: 32)
        d.withUnsafeBufferPointer { _ = dist.build(lengths: $0.baseAddress!, count: 32, kind: .distances) }
    }

    mutating func buildDynamicTables() throws {
        let nlen = try bits(5) + 257
        let ndist = try bits(5) + 1
        let ncode = try bits(4) + 4
        guard nlen <= 286 else { throw corrupt("too many literal/length codes (\(nlen))") }
        guard ndist <= 30 else { throw corrupt("too many distance codes (\(ndist))") }
        var lengths = [UInt8](repeating: 0, count: 320)
        for i in 0..<ncode { lengths[codeLengthOrder[i]] = UInt8(try bits(3)) }
        let okCodes = lengths.withUnsafeBufferPointer { clen.build(lengths: $0.baseAddress!, count: 19, kind: .codeLengths) }
        guard okCodes else { throw corrupt("invalid code-length code set") }
        for i in 0..<19 { lengths[i] = 0 }

        var index = 0
        let total = nlen + ndist
        while index < total {
            let sym = try decode(clen)
            if sym < 16 {
                lengths[index] = UInt8(sym)
                index += 1
                continue
            }
            var value: UInt8 = 0
            var repeatCount: Int
            switch sym {
            case 16:
                guard index > 0 else { throw corrupt("repeat code with no previous length") }
                value = lengths[index - 1]
                repeatCount = 3 + (try bits(2))
            case 17:
                repeatCount = 3 + (try bits(3))
            case 18:
                repeatCount = 11 + (try bits(7))
            default:
                throw corrupt("invalid code-length symbol \(sym)")
            }
            guard index + repeatCount <= total else { throw corrupt("code-length repeat runs past the end of the code lengths") }
            for _ in 0..<repeatCount {
                lengths[index] = value
                index += 1
            }
        }
        guard lengths[256] != 0 else { throw corrupt("missing end-of-block code") }
        let okLit = lengths.withUnsafeBufferPointer { lit.build(lengths: $0.baseAddress!, count: nlen, kind: .literalLengths) }
        guard okLit else { throw corrupt("invalid literal/length code set") }
        let okDist = lengths.withUnsafeBufferPointer { dist.build(lengths: $0.baseAddress! + nlen, count: ndist, kind: .distances) }
        guard okDist else { throw corrupt("invalid distance code set") }
    }

    /// Takes `n` bits that are known to be buffered.
    @inline(__always)
    mutating func takeBits(_ n: Int) -> Int {
        let v = Int(truncatingIfNeeded: bitBuf) & ((1 << n) - 1)
        bitBuf >>= UInt64(n)
        bitCount -= n
        return v
    }

    mutating func codesBlock() throws {
        // Raw pointers to the base/extra tables: no global-access or bounds checks in the loop.
        try lengthBase.withUnsafeBufferPointer { lBase in
            try lengthExtra.withUnsafeBufferPointer { lExtra in
                try distBase.withUnsafeBufferPointer { dBase in
                    try distExtra.withUnsafeBufferPointer { dExtra in
                        try codesLoop(lBase, lExtra, dBase, dExtra)
                    }
                }
            }
        }
    }

    mutating func codesLoop(_ lBase: UnsafeBufferPointer<UInt16>, _ lExtra: UnsafeBufferPointer<UInt8>,
                            _ dBase: UnsafeBufferPointer<UInt16>, _ dExtra: UnsafeBufferPointer<UInt8>) throws {
        while true {
            let sym = try decode(lit)
            if sym < 256 {
                guard out < dstCap else { throw overflow() }
                dst[out] = UInt8(truncatingIfNeeded: sym)
                out += 1
                continue
            }
            if sym == 256 { return }
            let li = sym - 257
            guard li < 29 else { throw corrupt("invalid literal/length symbol \(sym)") }
            let le = Int(lExtra[li])
            if bitCount < le {
                refill()
                if bitCount < le { throw truncated() }
            }
            let length = Int(lBase[li]) + takeBits(le)
            let ds = try decode(dist)
            guard ds < 30 else { throw corrupt("invalid distance symbol \(ds)") }
            let de = Int(dExtra[ds])
            if bitCount < de {
                refill()
                if bitCount < de { throw truncated() }
            }
            let distance = Int(dBase[ds]) + takeBits(de)
            guard distance <= out else {
                throw corrupt("distance \(distance) reaches before the start of the output (\(out) bytes written)")
            }
            guard length <= dstCap - out else { throw overflow() }
            let from = dst + (out - distance)
            let to = dst + out
            if distance >= length && length > 32 {
                to.update(from: from, count: length)
            } else {
                for i in 0..<length { to[i] = from[i] }
            }
            out += length
        }
    }
}
