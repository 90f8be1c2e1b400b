// Tests of the byte-level archive layer: CRC-32, DEFLATE, zip reading/writing (PyTorch layout,
// Zip64) and atomic files. Shared fixtures are in SerializationFixtures.swift.

import Foundation
import Torch
import XCTest

private func le16(_ b: [UInt8], _ o: Int) -> Int { Int(b[o]) | Int(b[o + 1]) << 8 }
private func le32(_ b: [UInt8], _ o: Int) -> UInt32 {
    UInt32(b[o]) | UInt32(b[o + 1]) << 8 | UInt32(b[o + 2]) << 16 | UInt32(b[o + 3]) << 24
}
private func le64(_ b: [UInt8], _ o: Int) -> UInt64 { UInt64(le32(b, o)) | UInt64(le32(b, o + 4)) << 32 }

/// Bit-by-bit CRC-32 reference.
private func referenceCRC32(_ bytes: [UInt8]) -> UInt32 {
    var c: UInt32 = 0xFFFF_FFFF
    for b in bytes {
        c ^= UInt32(b)
        for _ in 0..<8 { c = (c & 1) != 0 ? (c >> 1) ^ 0xEDB8_8320 : c >> 1 }
    }
    return ~c
}

final class SerializationArchiveTests: XCTestCase {

    // MARK: CRC-32

    func testCRC32KnownVectors() {
        XCTAssertEqual(CRC32.checksum([UInt8]()), 0)
        XCTAssertEqual(CRC32.checksum("a"), 0xE8B7_BE43)
        XCTAssertEqual(CRC32.checksum("abc"), 0x3524_41C2)
        XCTAssertEqual(CRC32.checksum("123456789"), 0xCBF4_3926)
        XCTAssertEqual(CRC32.checksum("The quick brown fox jumps over the lazy dog"), 0x414F_A339)
        XCTAssertEqual(CRC32.checksum([UInt8](repeating: 0, count: 32)), 0x190A_55AD)
        XCTAssertEqual(CRC32.checksum([UInt8](repeating: 0xFF, count: 32)), 0xFF6C_AB0B)

        // Slice-by-8 agrees with the bit-by-bit definition at every length and alignment,
        // and incremental updates agree with one-shot checksums.
        var rng = SeededRNG(seed: 42)
        let data = (0..<1000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        for start in 0..<9 {
            for len in [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 100, 991 - start] {
                let slice = Array(data[start..<(start + len)])
                XCTAssertEqual(CRC32.checksum(slice), referenceCRC32(slice), "start \(start) len \(len)")
            }
        }
        var c = CRC32()
        c.update(Array(data[0..<333]))
        c.update(Array(data[333..<334]))
        c.update(Array(data[334...]))
        XCTAssertEqual(c.value, CRC32.checksum(data))
        var d = CRC32(continuing: CRC32.checksum(Array(data[0..<500])))
        d.update(contentsOf: data[500...])
        XCTAssertEqual(d.value, CRC32.checksum(data))
    }

    // MARK: Inflate

    func testInflateHandMadeStreams() throws {
        // A stored block: BFINAL=1, BTYPE=00, LEN=5, NLEN=~5, "hello".
        let stored: [UInt8] = [0x01, 0x05, 0x00, 0xFA, 0xFF] + Array("hello".utf8)
        XCTAssertEqual(try Inflate.decompress(stored, maxOutputSize: 100), Array("hello".utf8))
        // The fixed-Huffman stream zlib writes for an empty input.
        XCTAssertEqual(try Inflate.decompress([0x03, 0x00], maxOutputSize: 0), [])

        func assertCorrupt(_ input: [UInt8], max: Int = 100, _ message: String, line: UInt = #line) {
            XCTAssertThrowsError(try Inflate.decompress(input, maxOutputSize: max), message, line: line) { error in
                guard let e = error as? SerializationError else { return XCTFail("not a SerializationError: \(error)", line: line) }
                if case .corruptDeflate = e {} else if case .limitExceeded = e {} else {
                    XCTFail("unexpected error \(e)", line: line)
                }
            }
        }
        assertCorrupt([], "empty input")
        assertCorrupt([0x07], "block type 3")
        assertCorrupt([0x01, 0x05, 0x00, 0xFA, 0xFE] + Array("hello".utf8), "bad NLEN")
        assertCorrupt(Array(stored.dropLast()), "truncated stored block")
        assertCorrupt(stored, max: 4, "output limit")
        // Fixed block: length code 257 with distance 1 before any output.
        assertCorrupt([0x03, 0x02], "distance before start of output")
        assertCorrupt([0x02], "truncated fixed block")

        // The bound is honoured exactly.
        XCTAssertThrowsError(try Inflate.decompress(stored, maxOutputSize: 4)) { error in
            guard case .limitExceeded(_, let limit, _) = error as? SerializationError else { return XCTFail("\(error)") }
            XCTAssertEqual(limit, 4)
        }
        // Decoding into a caller buffer reports bytes written and consumed (trailing bytes ignored).
        var out = [UInt8](repeating: 0, count: 16)
        let (written, consumed) = try (stored + [0xAA, 0xBB]).withUnsafeBytes { input in
            try out.withUnsafeMutableBytes { try Inflate.decompress(input, into: $0) }
        }
        XCTAssertEqual(written, 5)
        XCTAssertEqual(consumed, stored.count)
    }

    // MARK: Zip reading (Python-made DEFLATE archive)

    func testReadPythonDeflateZip() throws {
        let manifestData = try Data(contentsOf: fixtureURL("deflate_manifest.json"))
        let manifest = try JSONSerialization.jsonObject(with: manifestData) as! [String: Any]
        let expected = manifest["entries"] as! [[String: Any]]

        for reader in [try ZipReader(path: fixtureURL("deflate.zip").path),
                       try ZipReader(bytes: try fixtureBytes("deflate.zip")),
                       try ZipReader(data: try Data(contentsOf: fixtureURL("deflate.zip")))] {
            XCTAssertEqual(reader.names, expected.map { $0["name"] as! String })
            for e in expected {
                let name = e["name"] as! String
                let entry = try XCTUnwrap(reader.entry(named: name))
                XCTAssertEqual(Int(entry.method), e["method"] as! Int, name)
                XCTAssertEqual(entry.uncompressedSize, e["size"] as! Int, name)
                XCTAssertEqual(entry.crc32, UInt32(e["crc32"] as! Int), name)
                let bytes = try reader.read(entry, verifyCRC: true)
                XCTAssertEqual(bytes.count, e["size"] as! Int, name)
                XCTAssertEqual(CRC32.checksum(bytes), UInt32(e["crc32"] as! Int), name)
            }
            XCTAssertEqual(try reader.read(named: "archive/hello.txt"), Array("Hello, zip!\n".utf8))
            XCTAssertEqual(try reader.read(named: "archive/stored.bin"), (0..<256).map { UInt8($0) })
            XCTAssertEqual(try reader.read(named: "archive/dir/nested.txt"),
                           Array(String(repeating: "nested ", count: 50).utf8))
            XCTAssertEqual(try reader.read(named: "archive/empty.txt"), [])
            XCTAssertThrowsError(try reader.read(named: "archive/missing")) { error in
                guard case .zipEntryNotFound(let n) = error as? SerializationError else { return XCTFail("\(error)") }
                XCTAssertEqual(n, "archive/missing")
            }
            // Inflate on the raw stream: exact bound works, one byte less throws.
            let lorem = try XCTUnwrap(reader.entry(named: "archive/lorem.txt"))
            let raw = try reader.compressedBuffer(for: lorem)
            let inflated = try raw.withUnsafeBytes { try Inflate.decompress($0, maxOutputSize: lorem.uncompressedSize) }
            XCTAssertEqual(CRC32.checksum(inflated), lorem.crc32)
            XCTAssertThrowsError(try raw.withUnsafeBytes { try Inflate.decompress($0, maxOutputSize: lorem.uncompressedSize - 1) })
        }
    }

    func testZipCRCMismatchDetected() throws {
        var bytes = try fixtureBytes("deflate.zip")
        let reader = try ZipReader(bytes: bytes)
        let entry = try XCTUnwrap(reader.entry(named: "archive/stored.bin"))
        bytes[entry.dataOffset + 10] ^= 0x55
        let damaged = try ZipReader(bytes: bytes)
        XCTAssertNoThrow(try damaged.read(named: "archive/stored.bin"))  // CRC not checked by default
        XCTAssertThrowsError(try damaged.read(named: "archive/stored.bin", verifyCRC: true)) { error in
            guard case .checksumMismatch(let record, let expected, _) = error as? SerializationError else { return XCTFail("\(error)") }
            XCTAssertEqual(record, "archive/stored.bin")
            XCTAssertEqual(expected, entry.crc32)
            XCTAssertTrue("\(error)".contains("archive/stored.bin"))
        }
    }

    // MARK: Zip writing (PyTorch layout)

    func testZipWriterRoundTripAndPyTorchLayout() throws {
        let (bytes, records) = try makeTorchStyleArchive()
        let reader = try ZipReader(bytes: bytes)
        XCTAssertEqual(reader.names, records.map { $0.0 })
        for (name, payload) in records {
            let e = try XCTUnwrap(reader.entry(named: name))
            XCTAssertEqual(try reader.read(e, verifyCRC: true), payload, name)
            XCTAssertEqual(e.method, 0)
            XCTAssertEqual(e.dataOffset % 64, 0, "\(name) data is not 64-byte aligned")
            XCTAssertEqual(e.crc32, CRC32.checksum(payload))

            // Local header: version 0, flags 0x0808 (0x0800 when empty), STORED, zero CRC and sizes.
            let h = e.localHeaderOffset
            XCTAssertEqual(le32(bytes, h), 0x0403_4B50)
            XCTAssertEqual(le16(bytes, h + 4), 0)
            XCTAssertEqual(le16(bytes, h + 6), payload.isEmpty ? 0x0800 : 0x0808, name)
            XCTAssertEqual(le16(bytes, h + 8), 0)
            XCTAssertEqual(le32(bytes, h + 14), 0)
            XCTAssertEqual(le32(bytes, h + 18), 0)
            XCTAssertEqual(le32(bytes, h + 22), 0)
            // The only extra field is "FB" padding of 'Z' bytes up to the aligned data.
            let n = le16(bytes, h + 26), x = le16(bytes, h + 28)
            XCTAssertEqual(bytes[h + 30 + n], 0x46)
            XCTAssertEqual(bytes[h + 31 + n], 0x42)
            let pad = le16(bytes, h + 32 + n)
            XCTAssertEqual(x, 4 + pad)
            XCTAssertTrue(bytes[(h + 34 + n)..<(h + 34 + n + pad)].allSatisfy { $0 == 0x5A })
            XCTAssertLessThan(pad, 64)
            // Data descriptor (16 bytes) after non-empty data.
            if !payload.isEmpty {
                let d = e.dataOffset + payload.count
                XCTAssertEqual(le32(bytes, d), 0x0807_4B50)
                XCTAssertEqual(le32(bytes, d + 4), CRC32.checksum(payload))
                XCTAssertEqual(Int(le32(bytes, d + 8)), payload.count)
                XCTAssertEqual(Int(le32(bytes, d + 12)), payload.count)
            }
        }
        // Records are contiguous: each header follows the previous descriptor.
        for i in 1..<reader.entries.count {
            let prev = reader.entries[i - 1]
            XCTAssertEqual(reader.entries[i].localHeaderOffset,
                           prev.dataOffset + prev.compressedSize + (prev.compressedSize > 0 ? 16 : 0))
        }
        // The archive ends with zip64 EOCD (56 B), zip64 locator (20 B), EOCD (22 B).
        let eocd = bytes.count - 22, loc = eocd - 20, z64 = loc - 56
        XCTAssertEqual(le32(bytes, eocd), 0x0605_4B50)
        XCTAssertEqual(le32(bytes, loc), 0x0706_4B50)
        XCTAssertEqual(le64(bytes, loc + 8), UInt64(z64))
        XCTAssertEqual(le32(bytes, loc + 16), 1)
        XCTAssertEqual(le32(bytes, z64), 0x0606_4B50)
        XCTAssertEqual(le64(bytes, z64 + 4), 44)
        XCTAssertEqual(le16(bytes, z64 + 12), 0x031E)
        XCTAssertEqual(le16(bytes, z64 + 14), 0x002D)
        XCTAssertEqual(le64(bytes, z64 + 24), UInt64(records.count))
        XCTAssertEqual(le64(bytes, z64 + 32), UInt64(records.count))
        let cdSize = le64(bytes, z64 + 40), cdOffset = le64(bytes, z64 + 48)
        XCTAssertEqual(cdOffset + cdSize, UInt64(z64))
        XCTAssertEqual(le16(bytes, eocd + 8), records.count)
        XCTAssertEqual(le16(bytes, eocd + 10), records.count)
        XCTAssertEqual(UInt64(le32(bytes, eocd + 12)), cdSize)
        XCTAssertEqual(UInt64(le32(bytes, eocd + 16)), cdOffset)
        // Central entries: made-by/needed 0, real CRC, no extra field for a small archive.
        var q = Int(cdOffset)
        for (name, payload) in records {
            XCTAssertEqual(le32(bytes, q), 0x0201_4B50)
            XCTAssertEqual(le16(bytes, q + 4), 0)
            XCTAssertEqual(le16(bytes, q + 6), 0)
            XCTAssertEqual(le32(bytes, q + 16), CRC32.checksum(payload))
            XCTAssertEqual(le16(bytes, q + 30), 0, name)
            q += 46 + le16(bytes, q + 28) + le16(bytes, q + 30) + le16(bytes, q + 32)
        }

        // Writing the same entries to a file gives identical bytes, and the mapped reader agrees.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ser-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("model.pt").path
        var fw = try ZipWriter(path: path)
        for (name, payload) in records {
            // Stream in uneven chunks.
            try fw.beginEntry(name: name, size: payload.count)
            var i = 0
            while i < payload.count {
                let j = min(payload.count, i + 1 + i % 37)
                try fw.write(Array(payload[i..<j]))
                i = j
            }
            try fw.endEntry()
        }
        try fw.finish()
        XCTAssertEqual([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), bytes)
        let mapped = try ZipReader(path: path)
        let weight = try mapped.buffer(named: "archive/data/0", verifyCRC: true)
        XCTAssertEqual(Int(bitPattern: weight.bytes.baseAddress) % 64, 0, "mapped STORED data is 64-byte aligned in memory")
        XCTAssertEqual(weight.array, records[4].1)
        XCTAssertEqual(weight.data, Data(records[4].1))
    }

    func testZipWriterMisuseThrows() throws {
        var w = ZipWriter()
        try w.addEntry(name: "a/x", bytes: [1, 2, 3])
        XCTAssertThrowsError(try w.addEntry(name: "a/x", bytes: [1])) // duplicate
        XCTAssertThrowsError(try w.addEntry(name: "", bytes: [1]))
        try w.beginEntry(name: "a/y", size: 2)
        XCTAssertThrowsError(try w.write([1, 2, 3]))                  // more than declared
        try w.write([1])
        XCTAssertThrowsError(try w.endEntry())                       // fewer than declared
        XCTAssertThrowsError(try w.finish())                         // entry still open
        try w.write([2])
        try w.endEntry()
        try w.finish()
        XCTAssertThrowsError(try w.addEntry(name: "a/z", bytes: []))  // finished
        XCTAssertEqual(try ZipReader(bytes: w.archiveBytes).read(named: "a/y"), [1, 2])
    }

    func testZip64FieldsWithLoweredThreshold() throws {
        // With the zip64 threshold lowered to 100, every offset or size >= 100 takes the zip64 path
        // exactly as a >= 4 GiB one would: sentinels in the 32-bit fields, values in extra fields,
        // 24-byte data descriptors.
        let options = ZipWriter.Options(zip64Threshold: 100)
        let (bytes, records) = try makeTorchStyleArchive(options: options)
        let reader = try ZipReader(bytes: bytes)
        XCTAssertEqual(reader.names, records.map { $0.0 })
        for (name, payload) in records {
            let e = try XCTUnwrap(reader.entry(named: name))
            XCTAssertEqual(try reader.read(e, verifyCRC: true), payload, name)
            XCTAssertEqual(e.dataOffset % 64, 0)
            let h = e.localHeaderOffset
            let sizeBig = payload.count >= 100, offsetBig = h >= 100
            let n = le16(bytes, h + 26)
            var x = h + 30 + n
            if sizeBig || offsetBig {
                XCTAssertEqual(le16(bytes, x), 1, "\(name): local zip64 extra first")
                let len = le16(bytes, x + 2)
                XCTAssertEqual(len, (sizeBig ? 16 : 0) + (offsetBig ? 8 : 0))
                var f = x + 4
                if sizeBig {
                    XCTAssertEqual(Int(le64(bytes, f)), payload.count)
                    XCTAssertEqual(Int(le64(bytes, f + 8)), payload.count)
                    f += 16
                }
                if offsetBig { XCTAssertEqual(Int(le64(bytes, f)), h) }
                x += 4 + len
            }
            XCTAssertEqual(le16(bytes, x), 0x4246, "\(name): FB padding extra")
            if !payload.isEmpty {
                let d = e.dataOffset + payload.count
                XCTAssertEqual(le32(bytes, d), 0x0807_4B50)
                if sizeBig || offsetBig {
                    XCTAssertEqual(Int(le64(bytes, d + 8)), payload.count, "\(name): 24-byte descriptor")
                    XCTAssertEqual(Int(le64(bytes, d + 16)), payload.count)
                } else {
                    XCTAssertEqual(Int(le32(bytes, d + 8)), payload.count)
                }
            }
        }
        // Central directory: sentinels and zip64 fields in the order usize, csize, offset.
        let eocd = bytes.count - 22
        XCTAssertEqual(le32(bytes, eocd + 16), 0xFFFF_FFFF, "EOCD central directory offset uses the sentinel")
        let z64 = Int(le64(bytes, eocd - 20 + 8))
        var q = Int(le64(bytes, z64 + 48))
        var sawOffsetOnly = false, sawBoth = false
        for (name, payload) in records {
            let e = try XCTUnwrap(reader.entry(named: name))
            let sizeBig = payload.count >= 100, offsetBig = e.localHeaderOffset >= 100
            XCTAssertEqual(le32(bytes, q + 20), sizeBig ? 0xFFFF_FFFF : UInt32(payload.count))
            XCTAssertEqual(le32(bytes, q + 24), sizeBig ? 0xFFFF_FFFF : UInt32(payload.count))
            XCTAssertEqual(le32(bytes, q + 42), offsetBig ? 0xFFFF_FFFF : UInt32(e.localHeaderOffset))
            let n = le16(bytes, q + 28), x = le16(bytes, q + 30)
            if sizeBig || offsetBig {
                XCTAssertEqual(x, 4 + (sizeBig ? 16 : 0) + (offsetBig ? 8 : 0))
                XCTAssertEqual(le16(bytes, q + 46 + n), 1)
                let last = q + 46 + n + 4 + (sizeBig ? 16 : 0)
                if offsetBig { XCTAssertEqual(Int(le64(bytes, last)), e.localHeaderOffset) }
                if sizeBig && offsetBig { sawBoth = true }
                if !sizeBig && offsetBig { sawOffsetOnly = true }
            } else {
                XCTAssertEqual(x, 0)
            }
            q += 46 + n + x
        }
        XCTAssertTrue(sawBoth)
        XCTAssertTrue(sawOffsetOnly)
    }

    func testZipRejectsBadArchives() {
        XCTAssertThrowsError(try ZipReader(bytes: []))
        XCTAssertThrowsError(try ZipReader(bytes: Array("not a zip file at all, definitely not".utf8)))
        XCTAssertThrowsError(try ZipReader(path: "/nonexistent/dir/file.pt")) { error in
            guard case .io(let path, _, _, _) = error as? SerializationError else { return XCTFail("\(error)") }
            XCTAssertEqual(path, "/nonexistent/dir/file.pt")
        }
        // Central directory offset pointing past the end.
        var w = ZipWriter()
        try? w.addEntry(name: "a/b", bytes: [1, 2, 3])
        try? w.finish()
        var bytes = w.archiveBytes
        let z64 = bytes.count - 22 - 20 - 56
        bytes[z64 + 48] = 0xFF
        XCTAssertThrowsError(try ZipReader(bytes: bytes)) { error in
            XCTAssertTrue("\(error)".contains("central directory"), "\(error)")
        }
    }

    // MARK: Atomic writes

    func testAtomicWriteCommitsOrLeavesTargetUntouched() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ser-atomic-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("ckpt.pt").path

        try ZipWriter.atomicWrite(to: path) { zip in
            try zip.addEntry(name: "ckpt/data.pkl", bytes: try Pickler.dumps(["a": 1]))
            try zip.addEntry(name: "ckpt/version", bytes: Array("3\n".utf8))
        }
        let first = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let r = try ZipReader(path: path)
        XCTAssertEqual(try Unpickler().load(try r.read(named: "ckpt/data.pkl", verifyCRC: true)), ["a": 1])

        struct Boom: Error {}
        XCTAssertThrowsError(try ZipWriter.atomicWrite(to: path) { zip in
            try zip.addEntry(name: "ckpt/data.pkl", bytes: [1, 2, 3])
            throw Boom()
        }) { XCTAssertTrue($0 is Boom) }
        XCTAssertEqual([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), first, "target untouched after a failed write")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), ["ckpt.pt"], "no temporary file left")

        try AtomicFile.write(Array("replaced".utf8), to: path)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "replaced")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), ["ckpt.pt"])
        XCTAssertThrowsError(try AtomicFile.write([1], to: dir.appendingPathComponent("missing/x.pt").path))
    }
}
