// The zlib-backed DEFLATE, gzip and PNG paths (issue 36): round trips through zlib's own compressor
// (the TensorBoard PNG writer's compress2), zlib's errors turned into typed SerializationErrors with
// clear messages, output bounds honoured exactly, and a seeded fuzz over mutated streams and
// containers that must decode or throw, never crash or write past the bound.

import Foundation
import XCTest
@testable import Torch

private struct ZlibFuzzRNG: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {  // splitmix64
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A raw DEFLATE stream of `payload` made by zlib (through the PNG writer: one gray row whose
/// scanline is a filter byte 0 followed by the payload), and the bytes it inflates to.
private func zlibDeflate(_ payload: [UInt8]) -> (stream: [UInt8], plain: [UInt8]) {
    let png = encodePNG(pixels: payload, width: payload.count, height: 1, channels: 1)
    let idatLength = Int(png[33]) << 24 | Int(png[34]) << 16 | Int(png[35]) << 8 | Int(png[36])
    let zlibStream = Array(png[41..<(41 + idatLength)])
    XCTAssertEqual(zlibStream[0] & 0x0F, 8, "zlib header: deflate")
    XCTAssertEqual((Int(zlibStream[0]) << 8 | Int(zlibStream[1])) % 31, 0, "zlib header check bits")
    // Drop the 2-byte zlib header and the 4-byte Adler-32 trailer.
    return (Array(zlibStream[2..<(zlibStream.count - 4)]), [0] + payload)
}

/// A single-member gzip file around `deflate`, whose data is `plain`.
private func gzipMember(_ deflate: [UInt8], plain: [UInt8], name: String? = nil) -> [UInt8] {
    var g: [UInt8] = [0x1F, 0x8B, 8, name == nil ? 0 : 0x08, 0, 0, 0, 0, 0, 3]
    if let name = name { g += Array(name.utf8) + [0] }
    g += deflate
    let crc = CRC32.checksum(plain)
    for k in 0..<4 { g.append(UInt8(truncatingIfNeeded: crc >> (8 * UInt32(k)))) }
    for k in 0..<4 { g.append(UInt8(truncatingIfNeeded: UInt32(truncatingIfNeeded: plain.count) >> (8 * UInt32(k)))) }
    return g
}

private func errorText(_ body: () throws -> Any) -> String {
    do { _ = try body(); return "no error" } catch { return "\(error)" }
}

final class ZlibInflateGzipTests: XCTestCase {
    /// Text-like and random payloads inflate back exactly, with the exact bound and into a caller buffer.
    func testInflateRoundTripsZlibStreams() throws {
        var rng = ZlibFuzzRNG(state: 36)
        let text = Array(String(repeating: "the quick brown fox jumps over the lazy dog. ", count: 2000).utf8)
        let random = (0..<70_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        for payload in [[UInt8(7)], text, random, [UInt8](repeating: 0, count: 300_000)] {
            let (stream, plain) = zlibDeflate(payload)
            XCTAssertEqual(try Inflate.decompress(stream, maxOutputSize: plain.count), plain)
            XCTAssertEqual(try Inflate.decompress(stream, maxOutputSize: 1 << 30), plain)
            XCTAssertThrowsError(try Inflate.decompress(stream, maxOutputSize: plain.count - 1)) { error in
                guard case .limitExceeded(let what, let limit, _) = error as? SerializationError else { return XCTFail("\(error)") }
                XCTAssertEqual(what, "inflated size")
                XCTAssertEqual(limit, plain.count - 1)
            }
            // Into a buffer: trailing bytes are not consumed.
            var out = [UInt8](repeating: 0, count: plain.count + 10)
            let (written, consumed) = try (stream + [1, 2, 3]).withUnsafeBytes { input in
                try out.withUnsafeMutableBytes { try Inflate.decompress(input, into: $0) }
            }
            XCTAssertEqual(written, plain.count)
            XCTAssertEqual(consumed, stream.count)
            XCTAssertEqual(Array(out[..<written]), plain)
        }
    }

    /// zlib's Z_DATA_ERROR and a stream cut short become `.corruptDeflate` with zlib's reason.
    func testInflateErrorsAreTypedAndClear() {
        let (stream, plain) = zlibDeflate(Array(String(repeating: "abcdefgh", count: 500).utf8))
        func deflateError(_ input: [UInt8]) -> (reason: String, offset: Int)? {
            do {
                _ = try Inflate.decompress(input, maxOutputSize: 1 << 20)
                return nil
            } catch let SerializationError.corruptDeflate(reason, offset) {
                return (reason, offset)
            } catch {
                XCTFail("not a corruptDeflate error: \(error)")
                return nil
            }
        }
        let cut = deflateError(Array(stream.prefix(stream.count / 2)))
        XCTAssertEqual(cut?.reason, "unexpected end of compressed data")
        XCTAssertEqual(cut?.offset, stream.count / 2)
        XCTAssertEqual(deflateError([0x07])?.reason, "invalid block type")
        XCTAssertEqual(deflateError([0x03, 0x02])?.reason, "invalid distance too far back")
        XCTAssertEqual(deflateError([0x01, 0x05, 0x00, 0xFA, 0xFE] + Array("hello".utf8))?.reason, "invalid stored block lengths")
        XCTAssertEqual(deflateError([])?.reason, "empty input (no block header)")
        let message = errorText { try Inflate.decompress([0x07], maxOutputSize: 10) }
        XCTAssertTrue(message.contains("corrupt DEFLATE stream: invalid block type at compressed byte offset"), message)
        XCTAssertEqual(try Inflate.decompress(stream, maxOutputSize: plain.count), plain)
    }

    /// Multi-member gzip with a file name, decompressed in one buffer; trailer checks still apply.
    func testGzipOverZlib() throws {
        let a = zlibDeflate(Array("first member ".utf8)), b = zlibDeflate(Array(repeating: 42, count: 5000))
        let two = gzipMember(a.stream, plain: a.plain, name: "x.idx") + gzipMember(b.stream, plain: b.plain) + [0, 0, 0, 0]
        XCTAssertEqual(try Gzip.decompress(two, maxOutputSize: 1 << 20), a.plain + b.plain)
        XCTAssertTrue(errorText { try Gzip.decompress(two, maxOutputSize: 100) }.contains("limit"))
        var badCRC = gzipMember(b.stream, plain: b.plain)
        badCRC[badCRC.count - 8] ^= 1
        XCTAssertTrue(errorText { try Gzip.decompress(badCRC, maxOutputSize: 1 << 20) }.contains("CRC-32 of the data"))
        let cut = gzipMember(b.stream, plain: b.plain).prefix(20)
        let message = errorText { try Gzip.decompress(Array(cut), maxOutputSize: 1 << 20) }
        XCTAssertTrue(message.contains("unexpected end of compressed data"), message)
    }

    /// The TensorBoard PNG writer compresses with zlib: smooth images shrink, and IDAT inflates
    /// back to the filtered scanlines with a correct Adler-32.
    func testPNGWriterCompressesWithZlib() throws {
        let w = 64, h = 48
        var pixels = [UInt8](repeating: 0, count: w * h * 3)
        for y in 0..<h { for x in 0..<w { for c in 0..<3 { pixels[(y * w + x) * 3 + c] = UInt8((x / 4 + y / 4 + 40 * c) & 0xFF) } } }
        let png = encodePNG(pixels: pixels, width: w, height: h, channels: 3)
        XCTAssertLessThan(png.count, pixels.count / 4, "a smooth image compresses")
        let idatLength = Int(png[33]) << 24 | Int(png[34]) << 16 | Int(png[35]) << 8 | Int(png[36])
        XCTAssertEqual(Array(png[37..<41]), Array("IDAT".utf8))
        let z = Array(png[41..<(41 + idatLength)])
        let raw = try Inflate.decompress(Array(z[2...]), maxOutputSize: (w * 3 + 1) * h)
        var expected: [UInt8] = []
        for y in 0..<h { expected += [0] + pixels[(y * w * 3)..<((y + 1) * w * 3)] }
        XCTAssertEqual(raw, expected)
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in raw { a = (a + UInt32(byte)) % 65521; b = (b + a) % 65521 }
        let adler = z.suffix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        XCTAssertEqual(adler, b << 16 | a)
        let iend = png.suffix(12)
        XCTAssertEqual(Array(iend.prefix(8)), [0, 0, 0, 0] + Array("IEND".utf8))
    }

    /// A zip entry whose DEFLATE data inflates to more, or fewer, bytes than the central directory
    /// declares is rejected as a corrupt archive, before any large allocation for an impossible size.
    func testZipDeflateSizeChecks() throws {
        let (stream, plain) = zlibDeflate(Array(repeating: 9, count: 10_000))
        func archive(declaring size: UInt32) -> [UInt8] {
            func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
            func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * UInt32($0))) } }
            let name = Array("a/b".utf8), crc = CRC32.checksum(plain)
            let local = le32(0x0403_4B50) + le16(20) + le16(0) + le16(8) + le16(0) + le16(0) + le32(crc)
                + le32(UInt32(stream.count)) + le32(size) + le16(name.count) + le16(0) + name + stream
            let central = le32(0x0201_4B50) + le16(20) + le16(20) + le16(0) + le16(8) + le16(0) + le16(0) + le32(crc)
                + le32(UInt32(stream.count)) + le32(size) + le16(name.count) + le16(0) + le16(0) + le16(0) + le16(0)
                + le32(0) + le32(0) + name
            let end = le32(0x0605_4B50) + le16(0) + le16(0) + le16(1) + le16(1) + le32(UInt32(central.count))
                + le32(UInt32(local.count)) + le16(0)
            return local + central + end
        }
        XCTAssertEqual(try ZipReader(bytes: archive(declaring: UInt32(plain.count))).read(named: "a/b", verifyCRC: true), plain)
        let over = errorText { try ZipReader(bytes: archive(declaring: UInt32(plain.count - 1))).read(named: "a/b") }
        XCTAssertTrue(over.contains("inflates to more than the declared"), over)
        let under = errorText { try ZipReader(bytes: archive(declaring: UInt32(plain.count + 1))).read(named: "a/b") }
        XCTAssertTrue(under.contains("central directory declares"), under)
        let impossible = errorText { try ZipReader(bytes: archive(declaring: 0xFFFF_FFF0)).read(named: "a/b") }
        XCTAssertTrue(impossible.contains("is impossible for"), impossible)
    }

    /// Mutated DEFLATE streams and gzip files decode or throw a SerializationError; output stays
    /// within the bound. Seeded: ZLIB_FUZZ_SEED and ZLIB_FUZZ_ROUNDS override the defaults.
    func testFuzzInflateAndGzip() {
        let env = ProcessInfo.processInfo.environment
        var rng = ZlibFuzzRNG(state: env["ZLIB_FUZZ_SEED"].flatMap(UInt64.init) ?? 0x2_1136)
        let rounds = env["ZLIB_FUZZ_ROUNDS"].flatMap(Int.init) ?? 4000
        let text = zlibDeflate(Array(String(repeating: "tensor checkpoint gzip inflate ", count: 300).utf8))
        let noise = zlibDeflate((0..<3000).map { _ in UInt8.random(in: 0...255, using: &rng) })
        let bases = [text, noise]
        var decoded = 0, rejected = 0
        for round in 0..<rounds {
            let base = bases[round % 2]
            var b = round % 4 < 2 ? base.stream : gzipMember(base.stream, plain: base.plain)
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: for _ in 0..<Int.random(in: 1...6, using: &rng) { b[Int.random(in: 0..<b.count, using: &rng)] ^= UInt8(1 << Int.random(in: 0..<8, using: &rng)) }
            case 1: b = Array(b.prefix(Int.random(in: 0..<b.count, using: &rng)))
            case 2: b[Int.random(in: 0..<b.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            default:
                let at = Int.random(in: 0..<b.count, using: &rng)
                b.removeSubrange(at..<min(b.count, at + Int.random(in: 1...20, using: &rng)))
            }
            let bound = Int.random(in: 0...(base.plain.count * 2), using: &rng)
            do {
                let out = round % 4 < 2 ? try Inflate.decompress(b, maxOutputSize: bound) : try Gzip.decompress(b, maxOutputSize: bound)
                XCTAssertLessThanOrEqual(out.count, bound)
                decoded += 1
            } catch is SerializationError {
                rejected += 1
            } catch {
                XCTFail("round \(round): not a SerializationError: \(error)")
            }
        }
        XCTAssertEqual(decoded + rejected, rounds)
        XCTAssertGreaterThan(rejected, rounds / 4)
    }
}
