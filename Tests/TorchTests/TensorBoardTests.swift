import Foundation
import XCTest
@testable import Torch

/// A protobuf field as the test reader decodes it: varints, fixed 64/32-bit words, or bytes.
private enum PBValue {
    case varint(UInt64), fixed64(UInt64), fixed32(UInt32), bytes([UInt8])
    var bytes: [UInt8] { if case .bytes(let b) = self { return b }; return [] }
    var int: Int { if case .varint(let v) = self { return Int(Int64(bitPattern: v)) }; return 0 }
    var double: Double { if case .fixed64(let v) = self { return Double(bitPattern: v) }; return .nan }
    var float: Float { if case .fixed32(let v) = self { return Float(bitPattern: v) }; return .nan }
    var string: String { String(decoding: bytes, as: UTF8.self) }
    var message: [(Int, PBValue)] { parseProto(bytes) }
}

private func parseProto(_ b: [UInt8]) -> [(Int, PBValue)] {
    var i = 0, out: [(Int, PBValue)] = []
    func varint() -> UInt64 {
        var v: UInt64 = 0, shift: UInt64 = 0
        while true { let c = b[i]; i += 1; v |= UInt64(c & 0x7F) << shift; if c < 0x80 { return v }; shift += 7 }
    }
    func le(_ n: Int) -> UInt64 { var v: UInt64 = 0; for k in 0..<n { v |= UInt64(b[i + k]) << (8 * UInt64(k)) }; i += n; return v }
    while i < b.count {
        let key = varint()
        switch key & 7 {
        case 0: out.append((Int(key >> 3), .varint(varint())))
        case 1: out.append((Int(key >> 3), .fixed64(le(8))))
        case 5: out.append((Int(key >> 3), .fixed32(UInt32(le(4)))))
        case 2: let n = Int(varint()); out.append((Int(key >> 3), .bytes(Array(b[i..<(i + n)])))); i += n
        default: XCTFail("wire type \(key & 7)"); return out
        }
    }
    return out
}

private extension Array where Element == (Int, PBValue) {
    subscript(field f: Int) -> PBValue? { first { $0.0 == f }?.1 }
}

/// Reads a TFRecord file, checking both masked CRC-32Cs of every record.
private func readRecords(_ path: String, file: StaticString = #filePath, line: UInt = #line) throws -> [[UInt8]] {
    let d = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    var i = 0, out: [[UInt8]] = []
    func u32(_ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(d[at + $1]) << (8 * UInt32($1)) } }
    while i < d.count {
        let lenBytes = Array(d[i..<(i + 8)])
        let n = Int((0..<8).reduce(UInt64(0)) { $0 | UInt64(lenBytes[$1]) << (8 * UInt64($1)) })
        XCTAssertEqual(u32(i + 8), CRC32C.masked(lenBytes), "length CRC", file: file, line: line)
        let data = Array(d[(i + 12)..<(i + 12 + n)])
        XCTAssertEqual(u32(i + 12 + n), CRC32C.masked(data), "data CRC", file: file, line: line)
        out.append(data)
        i += 16 + n
    }
    return out
}

/// The Summary.Value of an event, with the event's step.
private func summaryValue(_ event: [UInt8]) -> (step: Int, value: [(Int, PBValue)])? {
    let e = parseProto(event)
    guard let s = e[field: 5] else { return nil }
    return (e[field: 2]?.int ?? 0, s.message[field: 1]!.message)
}

final class TensorBoardTests: XCTestCase {
    func testCRC32CAndRecordFraming() {
        XCTAssertEqual(CRC32C.checksum(Array("123456789".utf8)), 0xE306_9283)
        // docs/formats.md §3.1's test vector: the file_version event at wall time 1700000000.
        var e = ProtoWriter()
        e.double(1, 1_700_000_000)
        e.string(3, "brain.Event:2")
        let r = tfRecord(e.bytes)
        XCTAssertEqual(Array(r.prefix(12)), [0x18, 0, 0, 0, 0, 0, 0, 0, 0xa3, 0x7f, 0x4b, 0x22])
        XCTAssertEqual(Array(r.suffix(4)), [0xec, 0xed, 0x8f, 0x9d])
    }

    func testScalarsTextAndImagesReadBack() throws {
        // SWIFTTORCH_TB_KEEP=<folder> keeps the run for scripts/check_tensorboard.py.
        let keep = ProcessInfo.processInfo.environment["SWIFTTORCH_TB_KEEP"]
        let dir = try keep ?? makeTemporaryFolder(self).appendingPathComponent("run1").path
        let writer = try SummaryWriter(logDir: dir)
        for step in 0..<3 { writer.addScalar("Loss/train", 1.0 / Double(step + 1), step) }
        writer.addScalar("Loss/test", torch.tensor(0.25), 7)
        writer.addScalar("Acc/int", 42, 8)
        writer.addScalar("Acc/float", Float(0.5), 8)
        writer.addText("notes", "hello *world*", 1)
        let img = torch.linspace(0, 1, steps: 12).reshape([1, 3, 4])     // CHW, one channel → RGB
        writer.addImage("img", img, 2)
        writer.addImages("batch", torch.zeros(10, 3, 2, 2, dtype: .uint8) + 200, 3)
        writer.addHistogram("hist", torch.tensor((0..<200).map { sin(Double($0) * 0.7) * 3 + Double($0 % 5) }), 4)
        writer.addScalars("run/loss", ["train": 1.5, "test": 2.5], 4)
        writer.addHparams(["lr": 0.1, "bsize": 32, "optimizer": "sgd"], ["hparam/accuracy": 0.93], runName: "hp")
        try writer.flush()
        // Flushed records are readable while the writer is still open.
        let records = try readRecords(writer.eventFilePath)
        XCTAssertEqual(parseProto(records[0])[field: 3]?.string, "brain.Event:2")
        XCTAssertTrue((writer.eventFilePath as NSString).lastPathComponent.hasPrefix("events.out.tfevents."))
        let values = records.dropFirst().compactMap(summaryValue)
        let scalars = values.filter { $0.value[field: 2] != nil }
        XCTAssertEqual(values.count, 10)
        XCTAssertEqual(scalars.map { $0.value[field: 1]!.string }, ["Loss/train", "Loss/train", "Loss/train", "Loss/test", "Acc/int", "Acc/float"])
        XCTAssertEqual(scalars.map { $0.step }, [0, 1, 2, 7, 8, 8])
        XCTAssertEqual(scalars.map { $0.value[field: 2]!.float }, [1, 0.5, Float(1.0 / 3.0), 0.25, 42, 0.5])
        let text = try XCTUnwrap(values.first { $0.value[field: 1]!.string == "notes/text_summary" })
        let tensor = text.value[field: 8]!.message
        XCTAssertEqual(tensor[field: 1]?.int, 7)
        XCTAssertEqual(tensor[field: 8]?.string, "hello *world*")
        XCTAssertEqual(text.value[field: 9]!.message[field: 1]!.message[field: 1]?.string, "text")
        let image = try XCTUnwrap(values.first { $0.value[field: 1]!.string == "img" }).value[field: 4]!.message
        XCTAssertEqual(image[field: 1]?.int, 3)   // height
        XCTAssertEqual(image[field: 2]?.int, 4)   // width
        XCTAssertEqual(image[field: 3]?.int, 3)   // RGB
        let png = image[field: 4]!.bytes
        XCTAssertEqual(Array(png.prefix(8)), [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        // The IDAT chunk (after the signature, IHDR and its own length and type) holds a zlib stream: a
        // 2-byte header, then DEFLATE. Its first scanline is filter byte 0, pixel (0, 0) and pixel (0, 1),
        // which is 1/11 of the linspace → 23 (truncated), repeated over R, G, B.
        let scanlines = try Inflate.decompress(Array(png[(33 + 8 + 2)...]), maxOutputSize: 3 * (1 + 4 * 3))
        XCTAssertEqual(scanlines.count, 3 * (1 + 4 * 3))
        XCTAssertEqual(Array(scanlines[0..<7]), [0, 0, 0, 0, 23, 23, 23])
        let grid = try XCTUnwrap(values.first { $0.value[field: 1]!.string == "batch" }).value[field: 4]!.message
        XCTAssertEqual(grid[field: 1]?.int, 4)    // two rows of 2-pixel images
        XCTAssertEqual(grid[field: 2]?.int, 16)   // eight columns
        try writer.close()
    }

    func testAddScalarsWritesSubfolders() throws {
        let dir = try makeTemporaryFolder(self).appendingPathComponent("run2").path
        let writer = try SummaryWriter(logDir: dir)
        writer.addScalars("run/loss", ["train": 1.5, "test": 2.5], 4)
        try writer.close()
        // Logging after close() starts a new file, as PyTorch does.
        let first = writer.eventFilePath
        writer.addScalar("after", 1, 9)
        try writer.close()
        XCTAssertNotEqual(writer.eventFilePath, first)
        XCTAssertEqual(summaryValue(try readRecords(writer.eventFilePath)[1])?.step, 9)
        for (key, v) in [("train", 1.5), ("test", 2.5)] {
            let sub = (dir as NSString).appendingPathComponent("run_loss_\(key)")
            let files = try FileManager.default.contentsOfDirectory(atPath: sub)
            XCTAssertEqual(files.count, 1)
            let records = try readRecords((sub as NSString).appendingPathComponent(files[0]))
            let s = try XCTUnwrap(summaryValue(records[1]))
            XCTAssertEqual(s.step, 4)
            XCTAssertEqual(s.value[field: 1]?.string, "run/loss")
            XCTAssertEqual(s.value[field: 2]?.float, Float(v))
        }
    }

    func testHparamsWritePluginSummaries() throws {
        let dir = try makeTemporaryFolder(self).appendingPathComponent("run4").path
        let writer = try SummaryWriter(logDir: dir)
        writer.addHparams(["lr": 0.1, "optimizer": "sgd"], ["hparam/accuracy": 0.93], runName: "trial")
        try writer.close()
        let sub = (dir as NSString).appendingPathComponent("trial")
        let file = try XCTUnwrap(FileManager.default.contentsOfDirectory(atPath: sub).first)
        let values = try readRecords((sub as NSString).appendingPathComponent(file)).dropFirst().compactMap(summaryValue)
        XCTAssertEqual(values.map { $0.value[field: 1]!.string },
                       ["_hparams_/experiment", "_hparams_/session_start_info", "_hparams_/session_end_info", "hparam/accuracy"])
        let plugin = values[0].value[field: 9]!.message[field: 1]!.message
        XCTAssertEqual(plugin[field: 1]?.string, "hparams")
        let experiment = plugin[field: 2]!.message[field: 2]!.message
        let infos = experiment.filter { $0.0 == 4 }.map { $0.1.message }
        XCTAssertEqual(infos.map { $0[field: 1]!.string }, ["lr", "optimizer"])
        XCTAssertEqual(infos.map { $0[field: 4]!.int }, [3, 1])   // FLOAT64, STRING
        let start = values[1].value[field: 9]!.message[field: 1]!.message[field: 2]!.message[field: 3]!.message
        let lr = start.filter { $0.0 == 1 }.map { $0.1.message }.first { $0[field: 1]?.string == "lr" }!
        XCTAssertEqual(lr[field: 2]!.message[field: 2]?.double, 0.1)
        XCTAssertEqual(values[3].value[field: 2]?.float, Float(0.93))
    }

    func testHistogramMatchesPyTorch() throws {
        // Expected values from torch.utils.tensorboard.summary.histogram(tag, values, "auto").
        let v = (0..<200).map { sin(Double($0) * 0.7) * 3 + Double($0 % 5) }
        let h = HistogramSummary(v)
        XCTAssertEqual(h.bucket, [0, 14, 22, 23, 28, 26, 28, 25, 17, 17])
        let limits = [-2.9620250046017076, -1.8553526717299698, -0.7486803388582319, 0.3579919940135059, 1.4646643268852437,
                      2.5713366597569816, 3.6780089926287194, 4.784681325500458, 5.891353658372195, 6.9980259912439315]
        for (a, b) in zip(h.bucketLimit, limits) { XCTAssertEqual(a, b, accuracy: 1e-12) }
        XCTAssertEqual(h.num, 200)
        XCTAssertEqual(h.sum, 403.45177778628994, accuracy: 1e-9)
        XCTAssertEqual(h.sumSquares, 2131.751940862757, accuracy: 1e-9)
        // Zero IQR: numpy 2 takes half the sqrt width; empty bins inside stay, empty ends are trimmed.
        let w = HistogramSummary([Double](repeating: 0, count: 60) + [5.0, 5.5, 9.0])
        XCTAssertEqual(w.bucket, [0, 60, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1])
        XCTAssertEqual(w.bucketLimit.first, 0); XCTAssertEqual(w.bucketLimit.last, 9); XCTAssertEqual(w.bucketLimit.count, 17)
        // A constant: one bin [c - 0.5, c + 0.5].
        let c = HistogramSummary([0.5, 0.5, 0.5])
        XCTAssertEqual(c.bucketLimit, [0, 1]); XCTAssertEqual(c.bucket, [0, 3])

        let dir = try makeTemporaryFolder(self).appendingPathComponent("run3").path
        let writer = try SummaryWriter(logDir: dir)
        writer.addHistogram("weights", torch.tensor(v), 5)
        try writer.close()
        let s = try XCTUnwrap(summaryValue(try readRecords(writer.eventFilePath)[1]))
        let histo = s.value[field: 5]!.message
        XCTAssertEqual(histo[field: 3]?.double, 200)
        XCTAssertEqual(histo[field: 7]!.bytes.count, 10 * 8)   // packed doubles
    }

    func testDefaultLogDirLikePyTorch() throws {
        let cwd = FileManager.default.currentDirectoryPath
        let tmp = try makeTemporaryFolder(self)
        FileManager.default.changeCurrentDirectoryPath(tmp.path)
        defer { FileManager.default.changeCurrentDirectoryPath(cwd) }
        let writer = try SummaryWriter(comment: "_lr0.1")
        try writer.close()
        let name = (writer.logDir as NSString).lastPathComponent
        XCTAssertTrue(writer.logDir.hasPrefix("runs/"))
        XCTAssertTrue(name.hasSuffix("_" + hostName() + "_lr0.1"), name)
        // "Nov25_05-40-12": month abbreviation, day, time.
        XCTAssertNotNil(name.range(of: #"^[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_"#, options: .regularExpression), name)
        XCTAssertTrue(FileManager.default.fileExists(atPath: tmp.appendingPathComponent(writer.eventFilePath).path))
    }
}
