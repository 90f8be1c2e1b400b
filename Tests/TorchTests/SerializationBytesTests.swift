// Tests of the byte-level serialization layer: CRC-32, DEFLATE, zip reading/writing, pickle,
// safetensors headers, atomic files, and a seeded fuzz test over all the parsers.
// Fixtures: Tests/Fixtures/serialization/, written by scripts/make_serialization_fixtures.py.

import Foundation
import Torch
import XCTest

// MARK: - Helpers

private func fixtureURL(_ name: String) -> URL {
    var url = URL(fileURLWithPath: #filePath)
    while url.lastPathComponent != "Tests" && url.path != "/" {
        url.deleteLastPathComponent()
    }
    return url.appendingPathComponent("Fixtures").appendingPathComponent("serialization").appendingPathComponent(name)
}

private func fixtureBytes(_ name: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: fixtureURL(name)))
}

private func le16(_ b: [UInt8], _ o: Int) -> Int { Int(b[o]) | Int(b[o + 1]) << 8 }
private func le32(_ b: [UInt8], _ o: Int) -> UInt32 {
    UInt32(b[o]) | UInt32(b[o + 1]) << 8 | UInt32(b[o + 2]) << 16 | UInt32(b[o + 3]) << 24
}
private func le64(_ b: [UInt8], _ o: Int) -> UInt64 { UInt64(le32(b, o)) | UInt64(le32(b, o + 4)) << 32 }

/// Reproducible pseudo-random numbers (SplitMix64).
private struct SeededRNG: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Bit-by-bit CRC-32 reference.
private func referenceCRC32(_ bytes: [UInt8]) -> UInt32 {
    var c: UInt32 = 0xFFFF_FFFF
    for b in bytes {
        c ^= UInt32(b)
        for _ in 0..<8 { c = (c & 1) != 0 ? (c >> 1) ^ 0xEDB8_8320 : c >> 1 }
    }
    return ~c
}

private func pid(_ cls: String, _ key: String, _ numel: Int64) -> PickleValue {
    .persistentID(.tuple(["storage", .global(module: "torch", name: cls), .string(key), "cpu", .int(numel)]))
}

private func rebuild(_ storage: PickleValue, _ offset: Int64, _ size: [Int64], _ stride: [Int64]) -> PickleValue {
    .reduce(callable: .global(module: "torch._utils", name: "_rebuild_tensor_v2"),
            args: .tuple([storage, .int(offset), .tuple(size.map { .int($0) }), .tuple(stride.map { .int($0) }),
                          false, .orderedDict([])]))
}

/// The state dict written by scripts/make_serialization_fixtures.py (`state_dict_p2.pkl`).
private let expectedStateDict: PickleValue = .build(
    object: .orderedDict([
        (key: .string("fc.weight"), value: rebuild(pid("FloatStorage", "0", 6), 0, [2, 3], [3, 1])),
        (key: .string("fc.bias"), value: rebuild(pid("FloatStorage", "1", 2), 0, [2], [1])),
        (key: .string("tied.row"), value: rebuild(pid("FloatStorage", "0", 6), 3, [3], [1])),
        (key: .string("steps"), value: rebuild(pid("LongStorage", "2", 1), 0, [], [])),
    ]),
    state: ["_metadata": .orderedDict([(key: .string(""), value: ["version": 1]), (key: .string("fc"), value: ["version": 1])])])

/// `nested()` of scripts/make_serialization_fixtures.py.
private let expectedNested: PickleValue = {
    let shared: PickleValue = [1, 2, 3]
    return .dict([
        (key: .string("ints"), value: [0, 1, 255, 256, 65535, 65536, -1, -256, 2_147_483_647, -2_147_483_648, 2_147_483_648,
                              .int(Int64.max), .int(Int64.min),
                              .bigInt([0, 0, 0, 0, 0, 0, 0, 0, 1]),
                              .bigInt([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 240]),
                              .bigInt([203, 68, 66, 113, 118, 78, 182, 66, 157, 2])]),
        (key: .string("floats"), value: [0.0, -0.0, 1.5, -2.25, 1e300, .float(.leastNonzeroMagnitude), .float(.infinity), .float(-.infinity)]),
        (key: .string("strings"), value: ["", "hello", "h\u{e9}llo \u{2713} \u{1F680}", "line\nbreak\\ 'q' \"dq\"",
                                 .string(String(repeating: "x", count: 300))]),
        (key: .string("consts"), value: [true, false, .none]),
        (key: .string("tuples"), value: [.tuple([]), .tuple([1]), .tuple([1, 2]), .tuple([1, 2, 3]), .tuple([1, 2, 3, 4, 5])]),
        (key: .string("nested"), value: ["a": ["b": ["c": [1, [2, [3, .tuple([4, ["d": .none]])]]]]]]),
        (key: 7, value: "int key"),
        (key: .tuple([1, "x"]), value: "tuple key"),
        (key: .string("bytes"), value: .bytes([0x00, 0xFF, 0x61, 0x62, 0x63, 0x0A])),
        (key: .string("empty"), value: ["list": [], "dict": .dict([]), "tuple": .tuple([])]),
        (key: .string("shared"), value: [shared, shared]),
        (key: .string("set"), value: .set([1, 2, 3])),
        (key: .string("odict"), value: .orderedDict([(key: .string("z"), value: 1), (key: .string("y"), value: 2)])),
        (key: .string("long_list"), value: .list((0..<1500).map { .int(Int64($0)) })),
    ])
}()

/// A torch.save-style archive built with ZipWriter (in memory).
private func makeTorchStyleArchive(options: ZipWriter.Options = ZipWriter.Options()) throws -> (bytes: [UInt8], records: [(String, [UInt8])]) {
    var rng = SeededRNG(seed: 7)
    let pickle = try Pickler.dumps(expectedStateDict)
    let records: [(String, [UInt8])] = [
        ("archive/data.pkl", pickle),
        ("archive/.format_version", Array("1".utf8)),
        ("archive/.storage_alignment", Array("64".utf8)),
        ("archive/byteorder", Array("little".utf8)),
        ("archive/data/0", (0..<24).map { _ in UInt8.random(in: 0...255, using: &rng) }),
        ("archive/data/1", (0..<8).map { _ in UInt8.random(in: 0...255, using: &rng) }),
        ("archive/data/2", (0..<8).map { _ in UInt8.random(in: 0...255, using: &rng) }),
        ("archive/empty", []),
        ("archive/data/big", (0..<1000).map { _ in UInt8.random(in: 0...255, using: &rng) }),
        ("archive/version", Array("3\n".utf8)),
        ("archive/.data/serialization_id", Array("1234567890123456789000000000000000000042".utf8)),
    ]
    var w = ZipWriter(options: options)
    for (name, bytes) in records { try w.addEntry(name: name, bytes: bytes) }
    try w.finish()
    return (w.archiveBytes, records)
}

private func makeSafetensors() throws -> [UInt8] {
    let header = try SafetensorsHeader(layout: [("w", "F32", [2, 2]), ("steps", "I64", []), ("mask", "BOOL", [3]),
                                                ("h", "F16", [0, 4]), ("b", "BF16", [2])],
                                       metadata: ["format": "pt"])
    var file = try header.encoded()
    file += (0..<header.dataSize).map { UInt8(truncatingIfNeeded: $0 &* 31) }
    return file
}

// MARK: - Tests

final class SerializationBytesTests: XCTestCase {

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

    // MARK: Pickle

    func testUnpicklePythonProtocols() throws {
        for name in ["nested_p0.pkl", "nested_p2.pkl", "nested_p4.pkl"] {
            let value = try Unpickler().load(try fixtureBytes(name))
            XCTAssertEqual(value, expectedNested, name)
            // -0.0 keeps its sign.
            let floats = try XCTUnwrap(value["floats"]?.elements)
            XCTAssertEqual(floats[1].doubleValue?.sign, .minus, name)
            XCTAssertEqual(value["ints"]?.elements?[14].description, "-1267650600228229401496703205376")
            XCTAssertEqual(value["ints"]?.elements?[15].description, "12345678901234567890123")
        }
    }

    func testUnpickleTorchStyleStateDict() throws {
        let value = try Unpickler().load(try fixtureBytes("state_dict_p2.pkl"))
        XCTAssertEqual(value, expectedStateDict)
        // The pieces a tensor loader needs are reachable through the public accessors.
        guard case let .build(object, state) = value, let entries = object.dictEntries else { return XCTFail("\(value)") }
        XCTAssertEqual(entries.map { $0.key.stringValue }, ["fc.weight", "fc.bias", "tied.row", "steps"])
        guard case let .reduce(fn, args) = entries[0].value else { return XCTFail() }
        XCTAssertTrue(fn.isGlobal("torch._utils", "_rebuild_tensor_v2"))
        guard case let .persistentID(p) = args.elements?[0], let fields = p.elements else { return XCTFail() }
        XCTAssertEqual(fields[1].globalName, "torch.FloatStorage")
        XCTAssertEqual(fields[2].stringValue, "0")
        XCTAssertEqual(fields[4].intValue, 6)
        XCTAssertEqual(state["_metadata"]?["fc"]?["version"]?.intValue, 1)
    }

    func testPickleRoundTrip() throws {
        for value in [expectedNested, expectedStateDict, .none, 0, -1, .int(Int64.min), .bigInt([0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0]),
                      .string(String(repeating: "é", count: 70_000)), .bytes([]), .frozenSet([1]),
                      .newObject(cls: .global(module: "torch.nn.parameter", name: "Parameter"), args: .tuple([1])),
                      .list((0..<2345).map { .int(Int64($0)) }),
                      .dict((0..<1001).map { (key: .int(Int64($0)), value: .string("v\($0)")) })] as [PickleValue] {
            let bytes = try Pickler.dumps(value)
            XCTAssertEqual(Array(bytes.prefix(2)), [0x80, 0x02])
            XCTAssertEqual(bytes.last, 0x2E)
            var allowed = Unpickler.defaultAllowedGlobals
            allowed.insert("builtins.frozenset")
            XCTAssertEqual(try Unpickler(allowedGlobals: allowed).load(bytes), value)
        }
        // Huge integers print in hexadecimal instead of a quadratic decimal conversion.
        XCTAssertTrue(PickleValue.bigInt([UInt8](repeating: 0xAB, count: 1100) + [0x01]).description.hasPrefix("0x1abab"))
        XCTAssertEqual(PickleValue.bigInt([0, 0, 0, 0, 0, 0, 0, 0, 1]).description, "18446744073709551616")
        // The Python-made state dict and ours decode to the same value.
        let ours = try Pickler.dumps(expectedStateDict)
        XCTAssertEqual(try Unpickler().load(ours), try Unpickler().load(try fixtureBytes("state_dict_p2.pkl")))
        // Globals are written once and re-referenced with BINGET.
        let text = String(decoding: ours, as: UTF8.self)
        XCTAssertEqual(text.components(separatedBy: "collections\nOrderedDict\n").count - 1, 1)
        XCTAssertEqual(text.components(separatedBy: "torch._utils\n_rebuild_tensor_v2\n").count - 1, 1)
    }

    func testPicklerBytesMatchTorchEncoding() throws {
        // One-entry state dict, opcode by opcode (FORMATS.md §1.3 with globals memoized).
        let sd: PickleValue = .orderedDict([(key: .string("w"), value: rebuild(pid("FloatStorage", "0", 6), 0, [2, 3], [3, 1]))])
        func s(_ t: String) -> [UInt8] { Array(t.utf8) }
        func u(_ t: String) -> [UInt8] { [0x58, UInt8(t.utf8.count), 0, 0, 0] + s(t) }
        var expected: [UInt8] = [0x80, 0x02]
        expected += [0x63] + s("collections\nOrderedDict\n") + [0x71, 0x00, 0x29, 0x52]
        expected += u("w")
        expected += [0x63] + s("torch._utils\n_rebuild_tensor_v2\n") + [0x71, 0x01]
        expected += [0x28]
        expected += [0x28] + u("storage") + [0x63] + s("torch\nFloatStorage\n") + [0x71, 0x02] + u("0") + u("cpu") + [0x4B, 0x06, 0x74]
        expected += [0x51, 0x4B, 0x00, 0x4B, 0x02, 0x4B, 0x03, 0x86, 0x4B, 0x03, 0x4B, 0x01, 0x86, 0x89]
        expected += [0x68, 0x00, 0x29, 0x52]
        expected += [0x74, 0x52, 0x73, 0x2E]
        XCTAssertEqual(try Pickler.dumps(sd), expected)

        // Integers as Python encodes them.
        func ints(_ v: Int64) throws -> [UInt8] { Array(try Pickler.dumps(.int(v)).dropFirst(2).dropLast()) }
        XCTAssertEqual(try ints(255), [0x4B, 0xFF])
        XCTAssertEqual(try ints(256), [0x4D, 0x00, 0x01])
        XCTAssertEqual(try ints(65536), [0x4A, 0x00, 0x00, 0x01, 0x00])
        XCTAssertEqual(try ints(-1), [0x4A, 0xFF, 0xFF, 0xFF, 0xFF])
        XCTAssertEqual(try ints(1 << 31), [0x8A, 0x05, 0x00, 0x00, 0x00, 0x80, 0x00])
        XCTAssertEqual(try ints(Int64.min), [0x8A, 0x08, 0, 0, 0, 0, 0, 0, 0, 0x80])
        // bytes → _codecs.encode(latin1 text, "latin1"), as Python's protocol 2 pickler writes it.
        XCTAssertEqual(try Pickler.dumps(.bytes([0x00, 0xFF, 0x61, 0x62, 0x63, 0x0A])),
                       [0x80, 0x02, 0x63] + s("_codecs\nencode\n") + [0x71, 0x00]
                       + [0x58, 7, 0, 0, 0, 0x00, 0xC3, 0xBF, 0x61, 0x62, 0x63, 0x0A] + u("latin1") + [0x86, 0x52, 0x2E])
        // Floats are big-endian BINFLOAT.
        XCTAssertEqual(try Pickler.dumps(1.5), [0x80, 0x02, 0x47, 0x3F, 0xF8, 0, 0, 0, 0, 0, 0, 0x2E])
    }

    func testDisallowedGlobalsAreRefused() throws {
        func s(_ t: String) -> [UInt8] { Array(t.utf8) }
        // pickle.dumps(os.system("ls")) crafted by hand: GLOBAL os.system, ('ls',), REDUCE.
        let viaGlobal: [UInt8] = [0x80, 0x02, 0x63] + s("os\nsystem\n") + [0x71, 0x00, 0x58, 2, 0, 0, 0] + s("ls")
            + [0x85, 0x52, 0x2E]
        // The same with STACK_GLOBAL (protocol 4).
        let viaStackGlobal: [UInt8] = [0x80, 0x04, 0x8C, 2] + s("os") + [0x8C, 6] + s("system") + [0x93, 0x8C, 2] + s("ls")
            + [0x85, 0x52, 0x2E]
        // posix.system via INST (protocol 0).
        let viaInst: [UInt8] = s("(Vls\niposix\nsystem\n.")
        for (bytes, module) in [(viaGlobal, "os"), (viaStackGlobal, "os"), (viaInst, "posix")] {
            for allowed in [Unpickler.defaultAllowedGlobals, Unpickler.defaultAllowedGlobals.union(["os.system", "posix.system"])] {
                XCTAssertThrowsError(try Unpickler(allowedGlobals: allowed).load(bytes)) { error in
                    guard case let .disallowedGlobal(m, n, _) = error as? SerializationError else { return XCTFail("\(error)") }
                    XCTAssertEqual(m, module)
                    XCTAssertEqual(n, "system")
                    XCTAssertTrue("\(error)".contains("\(module).system"), "\(error)")
                }
            }
        }
        // Not in the default list, accepted once the caller allows it.
        let custom: [UInt8] = [0x80, 0x02, 0x63] + s("mypkg.layers\nThing\n") + [0x29, 0x52, 0x2E]
        XCTAssertThrowsError(try Unpickler().load(custom)) { XCTAssertTrue("\($0)".contains("mypkg.layers.Thing")) }
        XCTAssertEqual(try Unpickler(allowedGlobals: ["mypkg.layers.Thing"]).load(custom),
                       .reduce(callable: .global(module: "mypkg.layers", name: "Thing"), args: .tuple([])))
        // eval is not allowed either.
        XCTAssertThrowsError(try Unpickler().load([0x80, 0x02, 0x63] + s("builtins\neval\n") + [0x2E]))
        XCTAssertThrowsError(try Unpickler().load([0x80, 0x02, 0x63] + s("__builtin__\neval\n") + [0x2E]))
    }

    func testMalformedPicklesThrow() {
        func s(_ t: String) -> [UInt8] { Array(t.utf8) }
        let cases: [(String, [UInt8])] = [
            ("empty", []),
            ("no STOP", [0x80, 0x02, 0x4E]),
            ("stack underflow", [0x80, 0x02, 0x2E]),
            ("APPEND on empty", [0x80, 0x02, 0x61, 0x2E]),
            ("memo miss", [0x80, 0x02, 0x68, 0x05, 0x2E]),
            ("SETITEMS without MARK", [0x80, 0x02, 0x7D, 0x75, 0x2E]),
            ("APPEND to a dict", [0x80, 0x02, 0x7D, 0x4E, 0x61, 0x2E]),
            ("BINUNICODE longer than input", [0x80, 0x02, 0x58, 0xFF, 0xFF, 0xFF, 0x7F, 0x61, 0x2E]),
            ("BINUNICODE8 huge", [0x80, 0x04, 0x8D] + [UInt8](repeating: 0xFF, count: 8) + [0x2E]),
            ("invalid UTF-8", [0x80, 0x02, 0x58, 0x02, 0, 0, 0, 0xC3, 0x28, 0x2E]),
            ("unknown opcode", [0x80, 0x02, 0xFF, 0x2E]),
            ("EXT1", [0x80, 0x02, 0x82, 0x01, 0x2E]),
            ("protocol 6", [0x80, 0x06, 0x4E, 0x2E]),
            ("REDUCE on a non-global", [0x80, 0x02, 0x4E, 0x29, 0x52, 0x2E]),
            ("self-containing list", [0x80, 0x02, 0x5D, 0x71, 0x00, 0x68, 0x00, 0x61, 0x2E]),
            ("odd DICT", s("(I1\nd.")),
            ("unquoted STRING", s("Sabc\n.")),
            ("LONG4 negative", [0x80, 0x02, 0x8B, 0xFF, 0xFF, 0xFF, 0xFF, 0x2E]),
        ]
        for (label, bytes) in cases {
            XCTAssertThrowsError(try Unpickler().load(bytes), label) { error in
                XCTAssertTrue(error is SerializationError, "\(label): \(error)")
            }
        }
        // 100,000 nested TUPLE1s: refused by the depth limit, no stack overflow.
        let deep: [UInt8] = [0x80, 0x02, 0x4E] + [UInt8](repeating: 0x85, count: 100_000) + [0x2E]
        XCTAssertThrowsError(try Unpickler().load(deep)) { error in
            guard case .pickleLimitExceeded(let what, _, _) = error as? SerializationError else { return XCTFail("\(error)") }
            XCTAssertTrue(what.contains("depth"))
        }
        // Exponential sharing: t = (t, t) 60 times would be 2^60 values; refused by the value limit.
        var dag: [UInt8] = [0x80, 0x02, 0x4E]
        for _ in 0..<60 { dag += [0x32, 0x86] }  // DUP, TUPLE2
        dag.append(0x2E)
        XCTAssertThrowsError(try Unpickler().load(dag)) { error in
            guard case .pickleLimitExceeded = error as? SerializationError else { return XCTFail("\(error)") }
        }
        // Tighter caller limits apply.
        XCTAssertThrowsError(try Unpickler(limits: .init(maxMemoEntries: 1)).load([0x80, 0x02, 0x4E, 0x71, 0, 0x71, 1, 0x2E]))
        XCTAssertThrowsError(try Unpickler(limits: .init(maxObjects: 3)).load([0x80, 0x02, 0x4E, 0x4E, 0x4E, 0x4E, 0x2E]))
        XCTAssertThrowsError(try Unpickler(limits: .init(maxStackDepth: 2)).load([0x80, 0x02, 0x4E, 0x32, 0x32, 0x2E])) { error in
            guard case .pickleLimitExceeded(let what, 2, _) = error as? SerializationError else { return XCTFail("\(error)") }
            XCTAssertTrue(what.contains("stack"))
        }
        XCTAssertThrowsError(try Unpickler(limits: .init(maxStackDepth: 2)).load([0x80, 0x02, 0x28, 0x28, 0x28, 0x2E]))
    }

    func testLegacyBackToBackPickles() throws {
        // torch's pre-1.6 format starts with magic number, protocol version, sys_info pickles.
        let magic: [UInt8] = [0x80, 0x02, 0x8A, 0x0A, 0x6C, 0xFC, 0x9C, 0x46, 0xF9, 0x20, 0x6A, 0xA8, 0x50, 0x19, 0x2E]
        let version: [UInt8] = [0x80, 0x02, 0x4D, 0xE9, 0x03, 0x2E]
        let stream = magic + version
        try stream.withUnsafeBytes { buf in
            let (m, end1) = try Unpickler().load(buf, startingAt: 0)
            XCTAssertEqual(m.description, "119547037146038801333356")
            XCTAssertEqual(end1, magic.count)
            let (v, end2) = try Unpickler().load(buf, startingAt: end1)
            XCTAssertEqual(v, 1001)
            XCTAssertEqual(end2, stream.count)
        }
    }

    // MARK: safetensors

    func testSafetensorsReferenceVectors() throws {
        // safetensors' own test_serialization: {"attn.0": F32 [1, 2, 3]}.
        let h = try SafetensorsHeader(layout: [("attn.0", "F32", [1, 2, 3])])
        let expectedJSON = #"{"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}}"#
        XCTAssertEqual(try h.encoded(), [64, 0, 0, 0, 0, 0, 0, 0] + Array(expectedJSON.utf8))
        // test_empty, with and without metadata.
        XCTAssertEqual(try SafetensorsHeader(layout: []).encoded(), [8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32])
        XCTAssertEqual(try SafetensorsHeader(layout: [], metadata: ["framework": "pt"]).encoded(),
                       [40, 0, 0, 0, 0, 0, 0, 0] + Array(#"{"__metadata__":{"framework":"pt"}}"#.utf8) + [32, 32, 32, 32, 32])
        // test_serialization_forced_alignement: padded with 7 spaces.
        let h2 = try SafetensorsHeader(layout: [("attn0", "F32", [1, 1, 2, 3])])
        XCTAssertEqual(try h2.encoded().prefix(8), [72, 0, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(try h2.encoded().suffix(7), [32, 32, 32, 32, 32, 32, 32])

        // FORMATS.md's example file.
        let json = #"{"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"steps":{"dtype":"I64","shape":[],"data_offsets":[16,24]}}"#
        var file: [UInt8] = [0x98, 0, 0, 0, 0, 0, 0, 0] + Array(json.utf8) + [UInt8](repeating: 0x20, count: 6)
        file += [UInt8](repeating: 7, count: 24)
        let parsed = try SafetensorsHeader.parse(file)
        XCTAssertEqual(parsed.headerSize, 0x98)
        XCTAssertEqual(parsed.dataStart, 8 + 0x98)
        XCTAssertEqual(parsed.metadata, ["format": "pt"])
        XCTAssertEqual(parsed.tensors.map { $0.name }, ["w", "steps"])
        XCTAssertEqual(parsed.tensor(named: "steps")?.shape, [])
        XCTAssertEqual(parsed.tensor(named: "steps")?.dataOffsets, 16..<24)
        // The reference writer's order for it: descending dtype (I64 before F32), so "steps" first.
        let built = try SafetensorsHeader(layout: [("w", "F32", [2, 2]), ("steps", "I64", [])], metadata: ["format": "pt"])
        XCTAssertEqual(built.tensors.map { $0.name }, ["steps", "w"])
        XCTAssertEqual(built.tensors.map { $0.dataOffsets }, [0..<8, 8..<24])
        // Prefix-only parsing with an explicit file size.
        XCTAssertEqual(try SafetensorsHeader.parse(Array(file.prefix(8 + 0x98)), fileSize: file.count), parsed)
    }

    func testSafetensorsRoundTripAndValidation() throws {
        let file = try makeSafetensors()
        let h = try SafetensorsHeader.parse(file)
        XCTAssertEqual(h.tensors.map { $0.name }, ["steps", "w", "b", "h", "mask"])
        XCTAssertEqual(h.dataStart % 8, 0)
        for t in h.tensors {
            let bytesPer = SafetensorsHeader.bitSize(of: t.dtype)! / 8
            XCTAssertEqual((h.dataStart + t.dataOffsets.lowerBound) % bytesPer, 0, "\(t.name) aligned")
        }
        XCTAssertEqual(try SafetensorsHeader.parse(Data(file)), h)
        XCTAssertEqual(SafetensorsHeader.bitSize(of: "F4"), 4)

        func header(_ json: String, data: Int) -> [UInt8] {
            var n = UInt64(json.utf8.count)
            var out: [UInt8] = []
            for _ in 0..<8 { out.append(UInt8(n & 0xFF)); n >>= 8 }
            return out + Array(json.utf8) + [UInt8](repeating: 0, count: data)
        }
        let bad: [(String, [UInt8])] = [
            ("too small", [1, 2, 3]),
            ("N too large", [0x01, 0xE1, 0xF5, 0x05, 0, 0, 0, 0]),
            ("N past end", [100, 0, 0, 0, 0, 0, 0, 0, 0x7B, 0x7D]),
            ("not JSON", header("{nope}", data: 0)),
            ("not an object", header("[]", data: 0)),
            ("trailing garbage", header("{}x", data: 0)),
            ("duplicate key", header(#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#, data: 1)),
            ("unknown dtype", header(#"{"a":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}}"#, data: 16)),
            ("missing shape", header(#"{"a":{"dtype":"U8","data_offsets":[0,1]}}"#, data: 1)),
            ("negative dim", header(#"{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}"#, data: 1)),
            ("float dim", header(#"{"a":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}}"#, data: 1)),
            ("3 offsets", header(#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}}"#, data: 1)),
            ("gap", header(#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}"#, data: 2)),
            ("overlap", header(#"{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}"#, data: 3)),
            ("wrong size", header(#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}"#, data: 4)),
            ("size overflow", header(#"{"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}}"#, data: 0)),
            ("file too long", header(#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#, data: 2)),
            ("file too short", header(#"{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}"#, data: 3)),
            ("metadata not strings", header(#"{"__metadata__":{"a":1}}"#, data: 0)),
            ("F4 odd count", header(#"{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,1]}}"#, data: 1)),
            ("lone surrogate", header(#"{"\ud800":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#, data: 1)),
            ("invalid UTF-8", [2, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFE]),
        ]
        for (label, bytes) in bad {
            XCTAssertThrowsError(try SafetensorsHeader.parse(bytes), label) { error in
                guard case .invalidSafetensors = error as? SerializationError else { return XCTFail("\(label): \(error)") }
            }
        }
        // Accepted: any key order, unknown fields ignored, escapes, zero-size tensors, metadata null.
        let ok = header(#" {"b":{"dtype":"U8","shape":[0],"data_offsets":[2,2], "x": [true, null, 1.5e3]},"\u00e9\n":{"dtype":"I16","shape":[1],"data_offsets":[0,2]},"__metadata__":null} "#, data: 2)
        let parsed = try SafetensorsHeader.parse(ok)
        XCTAssertEqual(parsed.tensors.map { $0.name }, ["\u{e9}\n", "b"])
        XCTAssertNil(parsed.metadata)
        // Names with characters that need escaping round-trip.
        let odd = try SafetensorsHeader(layout: [("q\"\\\u{1}é", "U8", [1])])
        var oddFile = try odd.encoded()
        oddFile.append(9)
        XCTAssertEqual(try SafetensorsHeader.parse(oddFile).tensors.first?.name, "q\"\\\u{1}é")
        XCTAssertThrowsError(try SafetensorsHeader(layout: [("a", "U8", [1]), ("a", "U8", [1])]))
        XCTAssertThrowsError(try SafetensorsHeader(layout: [("a", "X9", [1])]))
    }

    // MARK: Fuzzing

    /// Mutates or truncates valid zip, DEFLATE, pickle and safetensors inputs thousands of times
    /// (reproducible seed) and requires every parse to either succeed or throw — never crash.
    func testFuzzParsersNeverCrash() throws {
        #if DEBUG
        let defaultIterations = 500
        #else
        let defaultIterations = 6000
        #endif
        // SERIALIZATION_FUZZ_ITERATIONS / SERIALIZATION_FUZZ_SEED run longer or different campaigns.
        let env = ProcessInfo.processInfo.environment
        let iterations = env["SERIALIZATION_FUZZ_ITERATIONS"].flatMap(Int.init) ?? defaultIterations
        let seed = env["SERIALIZATION_FUZZ_SEED"].flatMap(UInt64.init) ?? 0x5EED_2024

        let torchZip = try makeTorchStyleArchive().bytes
        let torchZip64 = try makeTorchStyleArchive(options: .init(zip64Threshold: 100)).bytes
        let pythonZip = try fixtureBytes("deflate.zip")
        let pythonReader = try ZipReader(bytes: pythonZip)
        let deflateStreams = try ["archive/hello.txt", "archive/lorem.txt", "archive/random.bin", "archive/dir/nested.txt"]
            .map { try pythonReader.compressedBuffer(for: pythonReader.entry(named: $0)!).array }
        let pickles = try ["nested_p0.pkl", "nested_p2.pkl", "nested_p4.pkl", "state_dict_p2.pkl"].map(fixtureBytes)
            + [try Pickler.dumps(expectedStateDict)]
        let safetensors = try makeSafetensors()

        var rng = SeededRNG(seed: seed)
        let interesting: [UInt64] = [0, 1, 0x7F, 0x80, 0xFF, 0xFFFF, 0x7FFF_FFFF, 0xFFFF_FFFF, 0x1_0000_0000,
                                     0x7FFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 46, 64]
        func mutate(_ input: [UInt8]) -> [UInt8] {
            var b = input
            let rounds = 1 + Int(rng.next() % 3)
            for _ in 0..<rounds {
                if b.isEmpty { b = [UInt8(truncatingIfNeeded: rng.next())]; continue }
                let at = Int(rng.next() % UInt64(b.count))
                switch rng.next() % 7 {
                case 0:  // flip a few bits
                    for _ in 0..<(1 + Int(rng.next() % 4)) {
                        let i = Int(rng.next() % UInt64(b.count))
                        b[i] ^= UInt8(1 << (rng.next() % 8))
                    }
                case 1:  // random bytes
                    for i in at..<min(b.count, at + 1 + Int(rng.next() % 8)) { b[i] = UInt8(truncatingIfNeeded: rng.next()) }
                case 2:  // truncate
                    b.removeSubrange(at...)
                case 3:  // delete a range
                    b.removeSubrange(at..<min(b.count, at + 1 + Int(rng.next() % 64)))
                case 4:  // insert random bytes
                    b.insert(contentsOf: (0..<(1 + Int(rng.next() % 16))).map { _ in UInt8(truncatingIfNeeded: rng.next()) }, at: at)
                case 5:  // overwrite a 2/4/8-byte field with an interesting value
                    let v = interesting[Int(rng.next() % UInt64(interesting.count))]
                    let width = [2, 4, 8][Int(rng.next() % 3)]
                    for k in 0..<width where at + k < b.count { b[at + k] = UInt8(truncatingIfNeeded: v >> (8 * UInt64(k))) }
                default:  // duplicate a chunk
                    let len = min(b.count - at, 1 + Int(rng.next() % 32))
                    let chunk = Array(b[at..<(at + len)])
                    b.insert(contentsOf: chunk, at: Int(rng.next() % UInt64(b.count)))
                }
            }
            return b
        }

        var outcomes = (ok: 0, thrown: 0)
        func record(_ body: () throws -> Void) {
            do { try body(); outcomes.ok += 1 } catch is SerializationError { outcomes.thrown += 1 } catch {
                XCTFail("non-SerializationError thrown: \(error)")
            }
        }
        let start = Date()
        for i in 0..<iterations {
            let zipSource = [torchZip, torchZip64, pythonZip][i % 3]
            let zip = mutate(zipSource)
            record {
                let r = try ZipReader(bytes: zip)
                for e in r.entries {
                    do { _ = try r.read(e, verifyCRC: i % 2 == 0) } catch is SerializationError {}
                }
            }
            let stream = mutate(deflateStreams[i % deflateStreams.count])
            record { _ = try Inflate.decompress(stream, maxOutputSize: 1 << 18) }
            let pickle = mutate(pickles[i % pickles.count])
            record { _ = try Unpickler().load(pickle).description }
            let st = mutate(safetensors)
            record { _ = try SafetensorsHeader.parse(st) }
        }
        let elapsed = Date().timeIntervalSince(start)
        print("fuzz (seed \(seed)): \(iterations) rounds x 4 parsers in \(String(format: "%.2f", elapsed)) s; \(outcomes.ok) parsed, \(outcomes.thrown) rejected")
        XCTAssertGreaterThan(outcomes.thrown, 0)
        XCTAssertGreaterThan(outcomes.ok, 0)
    }
}
