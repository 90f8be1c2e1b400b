// safetensors: files written by the reference implementation (Python `safetensors`, fixture
// Tests/Fixtures/saveload/reference.safetensors) load bit-identically; SwiftTorch's writer produces
// the reference writer's exact bytes; round trips of every dtype and layout; lazy safeOpen.

import Foundation
import XCTest
@testable import Torch

/// A tensor from a fixture description's exact bytes ("hex").
func tensorFromHex(_ d: [String: Any]) -> Tensor {
    let shape = d["shape"] as! [Int]
    let dtype = DType.allCases.first { $0.name == (d["dtype"] as! String) }!
    let hex = Array((d["hex"] as! String).utf8)
    let t = Tensor(uninitializedShape: shape, dtype: dtype)
    func nibble(_ c: UInt8) -> UInt8 { c <= 57 ? c - 48 : c - 87 }
    let p = t.storage.data.assumingMemoryBound(to: UInt8.self)
    for i in 0..<(hex.count / 2) { p[i] = nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]) }
    return t
}

final class SafetensorsTests: XCTestCase {
    private func fixture() throws -> [String: Any] {
        try XCTUnwrap(loadFixtureCases("saveload").first { $0["name"] as? String == "safetensors" })
    }

    func testLoadReferenceFile() throws {
        let c = try fixture()
        let path = saveLoadFixtures.appendingPathComponent(c["file"] as! String).path
        let loaded = try safetensors.loadFile(path)
        let entries = c["entries"] as! [[String: Any]]
        XCTAssertEqual(loaded.map(\.0), entries.map { $0["key"] as! String }.sorted(), "sorted by name, like safe_open.keys()")
        for e in entries {
            let k = e["key"] as! String
            let d = e["tensor"] as! [String: Any]
            let t = try XCTUnwrap(loaded.first { $0.0 == k }?.1)
            XCTAssertEqual(t.dtype.name, d["dtype"] as? String, k)
            XCTAssertEqual(t.shape, d["shape"] as? [Int], k)
            XCTAssertEqual(hexBytes(t), d["hex"] as? String, k)
            XCTAssertTrue(t.isContiguous)
        }
        let f = try safetensors.safeOpen(path)
        XCTAssertEqual(f.metadata(), c["metadata"] as? [String: String])
        XCTAssertEqual(f.keys(), loaded.map(\.0))
        let meta2 = try safetensors.safeOpen(saveLoadFixtures.appendingPathComponent(c["metadata_file"] as! String).path)
        XCTAssertEqual(meta2.metadata(), c["metadata2"] as? [String: String])
        let noMeta = try safetensors.safeOpen(saveLoadFixtures.appendingPathComponent(c["no_metadata_file"] as! String).path)
        XCTAssertNil(noMeta.metadata())
        XCTAssertEqual(try noMeta.getTensor("only").toArray(as: Float.self), [0, 1, 2])
        XCTAssertThrowsError(try noMeta.getTensor("missing")) { e in XCTAssertTrue("\(e)".contains("missing"), "\(e)") }
    }

    /// Our writer's bytes equal the reference writer's for the same tensors and metadata.
    func testWriterMatchesReferenceBytes() throws {
        let c = try fixture()
        let entries = c["entries"] as! [[String: Any]]
        let tensors = entries.map { ($0["key"] as! String, tensorFromHex($0["tensor"] as! [String: Any])) }
        let ours = try safetensors.save(tensors, metadata: c["metadata"] as? [String: String])
        let reference = try Data(contentsOf: saveLoadFixtures.appendingPathComponent(c["file"] as! String))
        XCTAssertEqual(ours, Array(reference))
        let path = try makeTemporaryFolder(self).appendingPathComponent("w.safetensors").path
        try safetensors.saveFile(tensors, path, metadata: c["metadata"] as? [String: String])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), reference)
    }

    func testRoundTripEveryDTypeAndLayout() throws {
        let path = try makeTemporaryFolder(self).appendingPathComponent("all.safetensors").path
        var tensors: [(String, Tensor)] = []
        for dt in DType.allCases {
            let base = ((torch.arange(0, 12, dtype: .float64) - 5) * 1.25).to(dt).reshape(3, 4)
            tensors.append(("\(dt.name)", base))
            tensors.append(("\(dt.name).t", base.t()))
            tensors.append(("\(dt.name).slice", base.narrow(1, 1, 2)))
            tensors.append(("\(dt.name).scalar", torch.full([], 2, dtype: dt)))
            tensors.append(("\(dt.name).empty", torch.zeros([2, 0], dtype: dt)))
        }
        try safetensors.saveFile(tensors, path)
        let loaded = try safetensors.loadFile(path)
        XCTAssertEqual(loaded.count, tensors.count)
        for (k, t) in tensors {
            let u = try XCTUnwrap(loaded.first { $0.0 == k }?.1, k)
            assertIdentical(u, t, k)
            XCTAssertTrue(u.isContiguous || u.numel == 0, k)
        }
        // Loaded tensors are writable (private copy-on-write mapping); the file does not change.
        let f = try safetensors.safeOpen(path)
        let w = try f.getTensor("float32")
        w.add_(1.0)
        assertIdentical(try safetensors.loadFile(path).first { $0.0 == "float32" }!.1, tensors[tensors.firstIndex { $0.0 == "float32" }!].1)
    }

    func testInvalidInputsThrow() throws {
        let t = torch.ones(2)
        XCTAssertThrowsError(try safetensors.save([("a", t), ("a", t)]), "duplicate name")
        XCTAssertThrowsError(try safetensors.save([("__metadata__", t)]), "reserved name")
        let good = try safetensors.save([("a", t)])
        XCTAssertThrowsError(try safetensors.load(Array(good.dropLast())), "truncated data")
        XCTAssertThrowsError(try safetensors.load(good + [0]), "trailing byte")
        XCTAssertThrowsError(try safetensors.load(Array(good.prefix(7))), "no header length")
        var huge = good
        huge[7] = 0x7F
        XCTAssertThrowsError(try safetensors.load(huge), "header length over the limit")
        // A dtype SwiftTorch does not have.
        let i16 = try SafetensorsHeader(layout: [("s", "I16", [2])]).encoded() + [1, 0, 2, 0]
        XCTAssertThrowsError(try safetensors.load(i16)) { e in XCTAssertTrue("\(e)".contains("I16"), "\(e)") }
        let folder = try makeTemporaryFolder(self)
        XCTAssertThrowsError(try safetensors.loadFile(folder.appendingPathComponent("none.safetensors").path))
        // Bool bytes other than 0/1 read as true (as in PyTorch), never as an invalid Swift Bool.
        let bools = try SafetensorsHeader(layout: [("b", "BOOL", [3])]).encoded() + [0, 5, 1]
        XCTAssertEqual(try safetensors.load(bools)[0].1.toArray(as: Int64.self), [0, 1, 1])
    }

    func testSavedSafetensorsConvertsToCheckpointAndBack() throws {
        let folder = try makeTemporaryFolder(self)
        let sd: [(String, Tensor)] = [("fc.weight", torch.randn(4, 3)), ("fc.bias", torch.randn(4)),
                                      ("bn.num_batches_tracked", torch.tensor(12))]
        try safetensors.saveFile(sd, folder.appendingPathComponent("m.safetensors").path, metadata: ["format": "pt"])
        let back = try safetensors.loadFile(folder.appendingPathComponent("m.safetensors").path)
        try torch.save(back, folder.appendingPathComponent("m.pth").path)
        let again = try torch.loadStateDict(folder.appendingPathComponent("m.pth").path)
        for (k, t) in sd { assertIdentical(again.first { $0.0 == k }!.1, t, k) }
    }
}
