// torch.save / torch.load: files written by real torch 2.15 (Tests/Fixtures/saveload/, made by
// scripts/fixtures/saveload.py) load with the right dtypes, values, layouts and storage sharing;
// SwiftTorch's files round-trip every dtype and layout and have PyTorch's archive layout; writes
// are atomic; the optimizer state of a PyTorch SGD run resumes in SwiftTorch.

import Foundation
import XCTest
@testable import Torch
#if canImport(Glibc)
import Glibc
#endif

/// Asserts identical dtype, shape and element values (NaN equal to NaN, and the sign of zero kept).
func assertIdentical(_ a: Tensor, _ b: Tensor, _ message: String = "", file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(a.dtype, b.dtype, "dtype \(message)", file: file, line: line)
    XCTAssertEqual(a.shape, b.shape, "shape \(message)", file: file, line: line)
    guard a.dtype == b.dtype, a.shape == b.shape else { return }
    if a.dtype.isFloatingPoint {
        let x = a.toArray(as: Double.self), y = b.toArray(as: Double.self)
        for i in 0..<x.count where !((x[i].isNaN && y[i].isNaN) || (x[i] == y[i] && x[i].sign == y[i].sign)) {
            XCTFail("element \(i): \(x[i]) vs \(y[i]) \(message)", file: file, line: line)
            return
        }
    } else {
        XCTAssertEqual(a.toArray(as: Int64.self), b.toArray(as: Int64.self), message, file: file, line: line)
    }
}

/// A fresh temporary folder, removed at the end of the test.
func makeTemporaryFolder(_ test: XCTestCase) throws -> URL {
    let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("swifttorch-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    test.addTeardownBlock { try? FileManager.default.removeItem(at: url) }
    return url
}

/// The tensor's elements as row-major little-endian bytes, in hex.
func hexBytes(_ t: Tensor) -> String {
    let c = t.contiguous()
    return withExtendedLifetime(c) {
        UnsafeRawBufferPointer(start: c.rawPointer, count: c.numel * c.dtype.itemSize).map { String(format: "%02x", $0) }.joined()
    }
}

let saveLoadFixtures = fixturesURL.appendingPathComponent("saveload")

/// Whether the storage borrows memory (a file mapping) instead of owning an allocation.
func isBorrowed(_ s: Storage) -> Bool {
    guard let owner = Mirror(reflecting: s).children.first(where: { $0.label == "owner" }) else { return false }
    return String(describing: owner.value) != "nil"
}

final class SaveLoadTests: XCTestCase {
    private func fixtureCase(_ name: String) throws -> [String: Any] {
        try XCTUnwrap(loadFixtureCases("saveload").first { $0["name"] as? String == name }, "no fixture case \(name)")
    }

    /// Checks a loaded tensor against a fixture description (values, strides, storage offset).
    private func check(_ t: Tensor, _ d: [String: Any], _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        let expected = fixtureTensor(d)
        XCTAssertEqual(t.dtype, expected.dtype, "dtype of \(what)", file: file, line: line)
        XCTAssertEqual(t.shape, expected.shape, "shape of \(what)", file: file, line: line)
        XCTAssertEqual(hexBytes(t), d["hex"] as? String, "bytes of \(what)", file: file, line: line)
        XCTAssertEqual(t.strides, d["stride"] as? [Int], "strides of \(what)", file: file, line: line)
        XCTAssertEqual(t.storageOffset, d["offset"] as? Int, "storage offset of \(what)", file: file, line: line)
        XCTAssertEqual(t.requiresGrad, d["requires_grad"] as? Bool, "requires_grad of \(what)", file: file, line: line)
    }

    /// Loads a fixture state dict and checks order, values, layouts and shared storages.
    private func checkStateDictFixture(_ name: String) throws {
        let c = try fixtureCase(name)
        let loaded = try torch.load(saveLoadFixtures.appendingPathComponent(c["file"] as! String).path)
        let pairs = try loaded.stateDictPairs()
        let entries = c["entries"] as! [[String: Any]]
        XCTAssertEqual(pairs.map(\.0), entries.map { $0["key"] as! String }, "\(name): key order")
        var byKey: [String: Tensor] = [:]
        for (k, t) in pairs { byKey[k] = t }
        for e in entries {
            let k = e["key"] as! String
            guard let t = byKey[k] else { XCTFail("\(name): missing \(k)"); continue }
            check(t, e["tensor"] as! [String: Any], "\(name)/\(k)")
        }
        let shared = c["shared"] as! [[String]]
        for group in shared {
            let s = byKey[group[0]]!.storage
            for k in group.dropFirst() { XCTAssertTrue(byKey[k]!.storage === s, "\(name): \(k) should share \(group[0])'s storage") }
        }
        let sharedKeys = Set(shared.flatMap { $0 })
        let alone = pairs.filter { !sharedKeys.contains($0.0) }
        XCTAssertEqual(Set(alone.map { ObjectIdentifier($0.1.storage) }).count, alone.count, "\(name): unshared storages must be distinct")
    }

    func testLoadTorchZipFixtureAllDTypes() throws { try checkStateDictFixture("dtypes") }
    func testLoadTorchDeflateShuffledFixture() throws { try checkStateDictFixture("dtypes_deflate") }
    func testLoadTorchBigEndianFixture() throws { try checkStateDictFixture("dtypes_bigendian") }
    func testLoadTorchLegacyFormatFixture() throws { try checkStateDictFixture("dtypes_legacy") }
    func testLoadTorchProtocol4Fixture() throws { try checkStateDictFixture("dtypes_protocol4") }
    func testLoadTorchTiedAndViewsFixture() throws { try checkStateDictFixture("tied") }
    func testLoadTorchTiedLegacyFixture() throws { try checkStateDictFixture("tied_legacy") }
    func testLoadTorchModuleStateDictWithMetadata() throws { try checkStateDictFixture("module_state") }

    func testTiedWeightsStayTiedAndWritable() throws {
        let sd = try torch.load(saveLoadFixtures.appendingPathComponent("tied.pt").path)
        let enc = sd["encoder.weight"]!.tensorValue!, dec = sd["decoder.weight"]!.tensorValue!
        let decT = sd["decoder_t"]!.tensorValue!
        XCTAssertTrue(isBorrowed(enc.storage), "STORED storages are mapped, not copied")
        let before = enc.toArray(as: Float.self)
        enc.add_(1.0)  // writes go to private copy-on-write pages
        XCTAssertEqual(dec.toArray(as: Float.self), before.map { $0 + 1 })
        XCTAssertEqual(decT.t().toArray(as: Float.self), before.map { $0 + 1 })
        // The file itself is unchanged.
        let again = try torch.load(saveLoadFixtures.appendingPathComponent("tied.pt").path)
        XCTAssertEqual(again["encoder.weight"]!.tensorValue!.toArray(as: Float.self), before)
    }

    func testLoadBareTensorFixture() throws {
        let c = try fixtureCase("tensor")
        let v = try torch.load(saveLoadFixtures.appendingPathComponent("tensor.pt").path)
        check(try XCTUnwrap(v.tensorValue), c["tensor"] as! [String: Any], "tensor")
    }

    func testLoadMixedValuesFixture() throws {
        let c = try fixtureCase("misc")
        let v = try torch.load(saveLoadFixtures.appendingPathComponent("misc.pt").path)
        XCTAssertEqual(v["epoch"]?.intValue, 5)
        XCTAssertEqual(v["loss"]?.doubleValue, 0.25)
        XCTAssertEqual(v["name"]?.stringValue, "run-1")
        let flags = try XCTUnwrap(v["flags"]?.arrayValue)
        XCTAssertEqual(flags.count, 3)
        XCTAssertEqual(flags[0].boolValue, true)
        XCTAssertEqual(flags[1].boolValue, false)
        if case .none = flags[2] {} else { XCTFail("flags[2] should be None") }
        XCTAssertEqual(v["shape"]?.arrayValue?.compactMap(\.intValue), [2, 3], "torch.Size becomes a tuple")
        XCTAssertEqual(v["pair"]?[0]?.intValue, 1)
        XCTAssertEqual(v["pair"]?[1]?.doubleValue, 2.5)
        check(try XCTUnwrap(v["int_keys"]?[0]?.tensorValue), c["x"] as! [String: Any], "int_keys[0]")
        XCTAssertEqual(v["int_keys"]?[7]?.stringValue, "seven")
        XCTAssertEqual(v["big"]?.intValue, 1 << 40)
        XCTAssertEqual(v["neg"]?.intValue, -7)
        let param = try XCTUnwrap(v["param"]?.tensorValue, "nn.Parameter loads as a tensor")
        XCTAssertEqual(hexBytes(param), (c["param"] as! [String: Any])["hex"] as? String)
        XCTAssertTrue(param.requiresGrad)
        let rg = try XCTUnwrap(v["rg"]?.tensorValue)
        XCTAssertEqual(hexBytes(rg), (c["rg"] as! [String: Any])["hex"] as? String)
        XCTAssertTrue(rg.requiresGrad)
        XCTAssertEqual(v["nested"]?["a"]?["b"]?[1]?[1]?.intValue, 3)
        XCTAssertThrowsError(try v.stateDictPairs())
    }

    func testPickledModuleIsRefusedNamingTheGlobal() throws {
        XCTAssertThrowsError(try torch.load(saveLoadFixtures.appendingPathComponent("module_pickle.pt").path)) { e in
            let err = e as! SerializationError
            guard case let .disallowedGlobal(module, name, _) = err.underlyingError else {
                return XCTFail("expected disallowedGlobal, got \(err)")
            }
            XCTAssertEqual("\(module).\(name)", "torch.nn.modules.linear.Linear")
            XCTAssertTrue(err.description.contains("torch.nn.modules.linear.Linear"), err.description)
            XCTAssertTrue(err.description.contains("module_pickle.pt"), err.description)
        }
    }

    func testUnsupportedDTypeIsNamed() throws {
        XCTAssertThrowsError(try torch.load(saveLoadFixtures.appendingPathComponent("int8.pt").path)) { e in
            XCTAssertTrue("\(e)".contains("int8"), "\(e)")
        }
    }

    /// PyTorch ran 3 SGD steps (momentum, weight decay, two param groups, a cosine LR schedule) and
    /// saved the optimizer's and the scheduler's state; we load both into optim.SGD and
    /// CosineAnnealingLR and take the 4th step: parameters and learning rates match PyTorch's.
    func testTorchSGDStateResumesInSwift() throws {
        let c = try fixtureCase("optimizer")
        let params = try torch.loadStateDict(saveLoadFixtures.appendingPathComponent(c["params_file"] as! String).path)
        XCTAssertEqual(params.map(\.0), ["p1", "p2", "p3"])
        let ps = params.map { $0.1.clone().requiresGrad_() }
        let groups = [optim.ParamGroup(params: [ps[0], ps[1]]), optim.ParamGroup(params: [ps[2]], options: ["lr": 0.05])]
        let opt = optim.SGD(groups: groups, lr: 0.1, momentum: 0.9, weightDecay: 0.01)
        let sched = optim.lrScheduler.CosineAnnealingLR(opt, tMax: 10, etaMin: 0.001)
        let state = try torch.load(saveLoadFixtures.appendingPathComponent(c["file"] as! String).path)
        let expectedGroups = c["groups"] as! [[String: Any]]
        XCTAssertEqual(state["param_groups"]?.arrayValue?.count, 2)
        XCTAssertEqual(state["param_groups"]?[1]?["lr"]?.doubleValue, expectedGroups[1]["lr"] as? Double)
        XCTAssertEqual(state["param_groups"]?[1]?["params"]?.arrayValue?.compactMap(\.intValue), [2])
        let momentum = c["momentum"] as! [[String: Any]]
        for i in 0..<3 {
            check(try XCTUnwrap(state["state"]?[i]?["momentum_buffer"]?.tensorValue), momentum[i], "momentum_buffer \(i)")
        }
        try opt.loadStateDict(state)
        try sched.loadStateDict(torch.load(saveLoadFixtures.appendingPathComponent(c["scheduler_file"] as! String).path))
        XCTAssertEqual(sched.lastEpoch, 3)
        let grads = c["next_grads"] as! [Any]
        for (p, g) in zip(ps, grads) { p.grad = fixtureTensor(g) }
        opt.step()
        sched.step()
        let lrs = c["next_lrs"] as! [Double]
        for (a, b) in zip(sched.getLastLr(), lrs) { XCTAssertEqual(a, b, accuracy: 1e-15) }
        let expected = c["next_params"] as! [Any]
        for (i, p) in ps.enumerated() { assertClose(p.detach(), fixtureTensor(expected[i]), atol: 1e-6, rtol: 1e-6, "param \(i)") }
    }

    /// The carry-less-multiply CRC-32 used for pieces of 64 bytes or more equals zlib's crc32 (used
    /// for smaller pieces) and a bitwise reference, at any length and alignment (and across update
    /// boundaries).
    func testCRC32FastPathMatchesZlib() {
        func reference(_ b: UnsafeRawBufferPointer) -> UInt32 {
            var c: UInt32 = 0xFFFF_FFFF
            for x in b {
                c ^= UInt32(x)
                for _ in 0..<8 { c = (c & 1) != 0 ? (c >> 1) ^ 0xEDB8_8320 : c >> 1 }
            }
            return ~c
        }
        var rng = SystemRandomNumberGenerator()
        let bytes = (0..<20_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        bytes.withUnsafeBytes { all in
            for (start, length) in [(0, 0), (0, 1), (5, 63), (0, 64), (1, 65), (0, 256), (1, 257), (3, 1000), (7, 4099),
                                    (13, 19_000), (64, 333), (5, 19_990)] {
                let buf = UnsafeRawBufferPointer(rebasing: all[start..<(start + length)])
                var small = CRC32()
                var i = 0
                while i < buf.count {  // pieces under 64 bytes use zlib's crc32
                    small.update(UnsafeRawBufferPointer(rebasing: buf[i..<min(buf.count, i + 50)]))
                    i += 50
                }
                XCTAssertEqual(CRC32.checksum(buf), small.value, "length \(length) at offset \(start)")
                XCTAssertEqual(small.value, reference(buf), "length \(length) at offset \(start)")
                var split = CRC32()
                split.update(UnsafeRawBufferPointer(rebasing: buf[0..<(length / 2)]))
                split.update(UnsafeRawBufferPointer(rebasing: buf[(length / 2)...]))
                XCTAssertEqual(split.value, small.value)
            }
        }
        XCTAssertEqual(CRC32.checksum("123456789"), 0xCBF4_3926)
    }

    // MARK: Round trips

    private func tempPath(_ name: String) throws -> String {
        try makeTemporaryFolder(self).appendingPathComponent(name).path
    }

    /// Every dtype in contiguous, 0-d, empty, transposed, offset and expanded layouts.
    func testRoundTripEveryDTypeAndLayout() throws {
        let path = try tempPath("all.pt")
        var sd: [(String, Tensor)] = []
        for dt in DType.allCases {
            let base = ((torch.arange(0, 24, dtype: .float64) - 7) * 0.75).to(dt).reshape(4, 6)
            sd.append(("\(dt.name).base", base))
            sd.append(("\(dt.name).t", base.t()))
            sd.append(("\(dt.name).offset", base.narrow(0, 1, 2).narrow(1, 3, 3)))
            sd.append(("\(dt.name).strided", base.slice(1, start: 1, end: 6, step: 2)))
            sd.append(("\(dt.name).scalar", torch.full([], 3, dtype: dt)))
            sd.append(("\(dt.name).empty", torch.zeros([0, 5], dtype: dt)))
            sd.append(("\(dt.name).expanded", torch.ones([3], dtype: dt).expand(2, 3)))
        }
        sd.append(("special", torch.tensor([Double.nan, .infinity, -.infinity, -0.0]).float()))
        try torch.save(sd, path)
        let loaded = try torch.loadStateDict(path)
        XCTAssertEqual(loaded.map(\.0), sd.map(\.0))
        for ((k, a), (_, b)) in zip(sd, loaded) {
            assertIdentical(b, a, k)
            XCTAssertEqual(b.strides, a.strides, "strides of \(k)")
            XCTAssertEqual(b.storageOffset, a.storageOffset, "offset of \(k)")
        }
        // Views of one storage share one storage again (written once).
        for dt in DType.allCases {
            let get = { (n: String) in loaded.first { $0.0 == "\(dt.name).\(n)" }!.1 }
            XCTAssertTrue(get("base").storage === get("t").storage)
            XCTAssertTrue(get("base").storage === get("offset").storage)
            XCTAssertFalse(get("base").storage === get("scalar").storage)
        }
        let zip = try ZipReader(path: path)
        let storages = zip.names.filter { $0.hasPrefix("all/data/") }
        XCTAssertEqual(storages.count, DType.allCases.count * 4 + 1, "one record per distinct storage")
    }

    func testRoundTripNestedValues() throws {
        let path = try tempPath("ckpt.pt")
        let w = torch.randn(3, 2)
        let value: StateValue = [
            "epoch": 7, "loss": 0.125, "name": "run", "none": nil, "ok": true,
            "history": [1.5, 2.5, .int(-3)],
            "pair": .tuple([.int(1), .string("x")]),
            "model": StateValue([("fc.weight", w), ("fc.bias", torch.zeros(2))]),
            "tied": .list([.tensor(w), .tensor(w.t())]),
            "byIndex": .dict([(key: .int(0), value: .tensor(torch.ones(1))), (key: .int(5), value: "five")]),
            "big": .int(Int.max), "small": .int(Int.min),
        ]
        try torch.save(value, path)
        let v = try torch.load(path)
        XCTAssertEqual(v.dictValue?.map { $0.key.stringValue ?? "?" },
                       ["epoch", "loss", "name", "none", "ok", "history", "pair", "model", "tied", "byIndex", "big", "small"])
        XCTAssertEqual(v["epoch"]?.intValue, 7)
        XCTAssertEqual(v["loss"]?.doubleValue, 0.125)
        XCTAssertEqual(v["name"]?.stringValue, "run")
        if case .none? = v["none"] {} else { XCTFail("None") }
        XCTAssertEqual(v["ok"]?.boolValue, true)
        XCTAssertEqual(v["history"]?.arrayValue?.compactMap(\.doubleValue), [1.5, 2.5, -3])
        if case .tuple(let t)? = v["pair"] { XCTAssertEqual(t.count, 2) } else { XCTFail("tuple") }
        let model = try XCTUnwrap(v["model"]).stateDictPairs()
        XCTAssertEqual(model.map(\.0), ["fc.weight", "fc.bias"])
        assertIdentical(model[0].1, w)
        XCTAssertTrue(model[0].1.storage === v["tied"]![0]!.tensorValue!.storage, "the same tensor anywhere in the value shares its storage")
        assertIdentical(v["tied"]![1]!.tensorValue!, w.t())
        XCTAssertEqual(v["byIndex"]?[5]?.stringValue, "five")
        XCTAssertEqual(v["big"]?.intValue, Int.max)
        XCTAssertEqual(v["small"]?.intValue, Int.min)
    }

    func testSingleTensorRoundTrip() throws {
        let path = try tempPath("t.pt")
        let x = torch.randn(5, 4, requiresGrad: true)
        try torch.save(x, path)
        let y = try XCTUnwrap(torch.load(path).tensorValue)
        assertIdentical(y, x)
        XCTAssertTrue(y.requiresGrad)
    }

    /// The archive has torch 2.x's records, order, alignment, CRCs and pickle.
    func testSavedArchiveHasPyTorchLayout() throws {
        let path = try tempPath("my.model.pth")
        let w = torch.randn(3, 2)
        try torch.save([("a", w), ("b", w), ("c", torch.arange(4))], path)
        let zip = try ZipReader(path: path)
        XCTAssertEqual(zip.names, ["my.model/data.pkl", "my.model/.format_version", "my.model/.storage_alignment",
                                   "my.model/byteorder", "my.model/data/0", "my.model/data/1", "my.model/version",
                                   "my.model/.data/serialization_id"])
        for e in zip.entries {
            XCTAssertEqual(e.dataOffset % 64, 0, "\(e.name) is 64-byte aligned")
            XCTAssertEqual(e.method, 0)
            XCTAssertNoThrow(try zip.buffer(for: e, verifyCRC: true), e.name)
        }
        XCTAssertEqual(try zip.read(named: "my.model/version"), Array("3\n".utf8))
        XCTAssertEqual(try zip.read(named: "my.model/byteorder"), Array("little".utf8))
        XCTAssertEqual(try zip.read(named: "my.model/.data/serialization_id").count, 40)
        let tree = try Unpickler().load(try zip.read(named: "my.model/data.pkl"))
        guard case let .orderedDict(entries) = tree else { return XCTFail("a state dict is an OrderedDict: \(tree)") }
        XCTAssertEqual(entries.count, 3)
        let expected: PickleValue = .reduce(
            callable: .global(module: "torch._utils", name: "_rebuild_tensor_v2"),
            args: .tuple([.persistentID(.tuple(["storage", .global(module: "torch", name: "FloatStorage"), "0", "cpu", 6])),
                          0, .tuple([3, 2]), .tuple([2, 1]), false, .orderedDict([])]))
        XCTAssertEqual(entries[0].value, expected)
        XCTAssertEqual(entries[1].value, expected, "a tied tensor refers to the same storage key")
        XCTAssertEqual(TorchCheckpointWriter.archiveName(forPath: "/a/b/.pt"), "archive")
        XCTAssertEqual(TorchCheckpointWriter.archiveName(forPath: "noext"), "noext")
    }

    func testSwiftOptimizerStateRoundTripContinuesIdentically() throws {
        let path = try tempPath("opt.pt")
        func run(_ steps: Int, _ opt: optim.Optimizer, _ ps: [Tensor]) {
            for s in 0..<steps {
                opt.zeroGrad()
                let loss = (ps[0].matmul(ps[1]).sum() * Double(s + 1)).pow(2.0)
                loss.backward()
                opt.step()
            }
        }
        _ = torch.manualSeed(11)
        let a = [torch.randn(2, 3, requiresGrad: true), torch.randn(3, 2, requiresGrad: true)]
        let b = a.map { $0.detach().clone().requiresGrad_() }
        let optA = optim.SGD(a, lr: 0.01, momentum: 0.9, nesterov: true)
        run(3, optA, a)
        try torch.save(optA.stateDict(), path)
        try torch.save(a.enumerated().map { ("p\($0.offset)", $0.element) }, path + ".params")
        // "Restart": fresh parameters from the file, fresh optimizer, state from the file.
        let restored = try torch.loadStateDict(path + ".params")
        for (p, (_, saved)) in zip(b, restored) { torch.noGrad { _ = p.copy_(saved) } }
        let optB = optim.SGD(b, lr: 0.01, momentum: 0.9, nesterov: true)
        try optB.loadStateDict(torch.load(path))
        run(2, optA, a)
        run(2, optB, b)
        for (x, y) in zip(a, b) { assertIdentical(y.detach(), x.detach()) }
    }

    /// A legacy stream with a pre-1.0 storage view (`view_metadata`), built by hand.
    func testLegacyStorageViewsAndErrors() throws {
        func legacyFile(view: PickleValue, count: Int64 = 6) throws -> [UInt8] {
            var out: [UInt8] = []
            out += try Pickler.dumps(.bigInt(LegacyCheckpoint.magic))
            out += try Pickler.dumps(1001)
            out += try Pickler.dumps(["protocol_version": 1001, "little_endian": true])
            let pid: PickleValue = .persistentID(.tuple(["storage", .global(module: "torch", name: "FloatStorage"), "140", "cpu", 6, view]))
            out += try Pickler.dumps(.reduce(callable: .global(module: "torch._utils", name: "_rebuild_tensor_v2"),
                                             args: .tuple([pid, 1, .tuple([2]), .tuple([1]), false, .orderedDict([])])))
            out += try Pickler.dumps(["140"])
            withUnsafeBytes(of: count.littleEndian) { out += $0 }
            for f: Float in [0, 1, 2, 3, 4, 5] { withUnsafeBytes(of: f.bitPattern.littleEndian) { out += $0 } }
            return out
        }
        func load(_ bytes: [UInt8]) throws -> StateValue {
            try TorchCheckpoint.load(bytes.withUnsafeBytes { ZipArchiveBytes(copying: $0) })
        }
        XCTAssertEqual(try load(legacyFile(view: .none)).tensorValue?.toArray(as: Float.self), [1, 2])
        // A view starting at element 3 of the root storage, 3 elements long: tensor offset 1 → [4, 5].
        XCTAssertEqual(try load(legacyFile(view: .tuple(["7", 3, 3]))).tensorValue?.toArray(as: Float.self), [4, 5])
        XCTAssertThrowsError(try load(legacyFile(view: .tuple(["7", 5, 3]))), "view outside its storage")
        XCTAssertThrowsError(try load(legacyFile(view: .tuple(["7", 4, 2]))), "tensor outside its view")
        XCTAssertThrowsError(try load(legacyFile(view: .none, count: 5)), "element count differs")
        XCTAssertThrowsError(try load(Array(legacyFile(view: .none).dropLast(1))), "truncated storage")
    }

    func testErrors() throws {
        let folder = try makeTemporaryFolder(self)
        XCTAssertThrowsError(try torch.load(folder.appendingPathComponent("missing.pt").path)) { e in
            guard case .io = e as! SerializationError else { return XCTFail("\(e)") }
        }
        let empty = folder.appendingPathComponent("empty.pt").path
        FileManager.default.createFile(atPath: empty, contents: Data())
        XCTAssertThrowsError(try torch.load(empty))
        let text = folder.appendingPathComponent("text.pt").path
        FileManager.default.createFile(atPath: text, contents: Data("hello".utf8))
        XCTAssertThrowsError(try torch.load(text)) { e in XCTAssertTrue("\(e)".contains("not a PyTorch checkpoint"), "\(e)") }
        XCTAssertThrowsError(try torch.load(saveLoadFixtures.appendingPathComponent("tied.pt").path, mapLocation: .cuda(0)))
        XCTAssertNoThrow(try torch.load(saveLoadFixtures.appendingPathComponent("tied.pt").path, mapLocation: .cpu))
        // Two dtypes over one storage cannot be saved (as in PyTorch).
        let x = torch.zeros(4)
        XCTAssertThrowsError(try torch.save(StateValue([("a", x), ("b", x.view(dtype: .int32))]), folder.appendingPathComponent("bad.pt").path))
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder.appendingPathComponent("bad.pt").path))
    }

    /// A save that fails midway (the file size limit is hit while writing the storages) leaves the
    /// previous checkpoint untouched and no temporary file behind.
    func testFailedSaveLeavesPreviousFileIntact() throws {
        let folder = try makeTemporaryFolder(self)
        let path = folder.appendingPathComponent("model.pt").path
        let small = torch.arange(0, 10, dtype: .float32)
        try torch.save([("w", small)], path)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))

        var old = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &old)
        let oldHandler = signal(SIGXFSZ, SIG_IGN)
        var lim = old
        lim.rlim_cur = 256 * 1024
        setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &lim)
        let big = torch.zeros(1 << 20)  // 4 MB: fails after the first 256 KB
        var thrown: Error?
        do { try torch.save([("w", big)], path) } catch { thrown = error }
        setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &old)
        signal(SIGXFSZ, oldHandler)

        XCTAssertNotNil(thrown, "the save must fail")
        if let e = thrown { XCTAssertTrue("\(e)".contains("write"), "\(e)") }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), before)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), ["model.pt"])
        assertIdentical(try torch.loadStateDict(path)[0].1, small)
    }

    /// Writes files for scripts/interop_check.py (into $SWIFTTORCH_INTEROP_DIR when set) and checks
    /// they reload: a trained nn.Sequential's state dict (model.pt), its SGD state (optimizer.pt),
    /// a checkpoint with both plus the epoch, losses, input, target and output (checkpoint.pt), the
    /// parameters after one more step from that checkpoint (after_step.pt), a state dict of every
    /// dtype with tied weights and views (tensors.pt), a safetensors file, and expected.json with
    /// the exact bytes of every tensor.
    func testInteropExport() throws {
        let dir: URL
        if let d = ProcessInfo.processInfo.environment["SWIFTTORCH_INTEROP_DIR"] {
            dir = URL(fileURLWithPath: d)
        } else {
            dir = try makeTemporaryFolder(self)
        }
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        func file(_ name: String) -> String { dir.appendingPathComponent(name).path }

        _ = torch.manualSeed(0)
        let model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        let x = torch.randn(16, 4)
        let trueW = torch.tensor([[1.0, -2.0, 0.5, 3.0], [0.0, 1.0, -1.0, 2.0]]).float()
        let y = x.matmul(trueW.t()) + 0.5
        let opt = optim.SGD(model.parameters(), lr: 0.02, momentum: 0.9, weightDecay: 1e-4)
        let lossFn = { (a: Tensor, b: Tensor) in (a - b).pow(2.0).mean() }  // MSE
        func step() -> Double {
            opt.zeroGrad()
            let loss = lossFn(model(x), y)
            loss.backward()
            opt.step()
            return loss.item()
        }
        var losses: [StateValue] = []
        for _ in 0..<30 { losses.append(.double(step())) }
        let out = torch.noGrad { model(x) }
        try torch.save(model.stateDict(), file("model.pt"))
        try torch.save(opt.stateDict(), file("optimizer.pt"))
        try torch.save(["epoch": 30, "model_state_dict": StateValue(model.stateDict()), "optimizer_state_dict": opt.stateDict(),
                        "losses": .list(losses), "input": .tensor(x), "target": .tensor(y), "output": .tensor(out)],
                       file("checkpoint.pt"))
        // The exact bytes of the saved model and optimizer tensors (before the parameters move on).
        var expected: [String: Any] = [:]
        func describe(_ t: Tensor) -> [String: Any] {
            ["dtype": t.dtype.name, "shape": t.shape, "stride": t.strides, "offset": t.storageOffset, "hex": hexBytes(t)]
        }
        for (k, t) in model.stateDict() { expected["model/" + k] = describe(t) }
        for (k, v) in opt.stateDict()["state"]?.dictValue ?? [] {
            for (name, buf) in v.dictValue ?? [] {
                if let t = buf.tensorValue { expected["optimizer/\(k.intValue!)/\(name.stringValue!)"] = describe(t) }
            }
        }
        _ = step()  // one more step from the checkpointed state; PyTorch repeats it from the files
        try torch.save(model.stateDict(), file("after_step.pt"))

        let w = model.stateDict()["0.weight"]!
        let sd: [(String, Tensor)] = [
            ("linear.weight", w), ("linear.bias", model.stateDict()["0.bias"]!),
            ("head.weight", w),  // tied to linear.weight
            ("weight_t", w.t()), ("row1", w.select(0, 1)),
            ("steps", torch.tensor(30)), ("mask", w .> 0),
            ("half", w.half()), ("bf16", w.bfloat16()), ("double", w.double()),
            ("i32", torch.arange(5).int()), ("u8", torch.arange(250, 256).byte()), ("scalar", torch.tensor(2.5)),
            ("empty", torch.zeros(0, 2)),
        ]
        try torch.save(sd, file("tensors.pt"))
        try safetensors.saveFile(sd.filter { !["weight_t", "row1", "head.weight"].contains($0.0) }, file("tensors.safetensors"),
                                 metadata: ["format": "pt"])
        for (k, t) in sd + Array(zip(model.stateDict().keys.map { "after_step/" + $0 }, model.stateDict().values)) {
            expected[k] = describe(t)
        }
        let json = try JSONSerialization.data(withJSONObject: ["tensors": expected], options: [.sortedKeys])
        try json.write(to: dir.appendingPathComponent("expected.json"))

        let back = try torch.loadStateDict(file("tensors.pt"))
        for ((k, a), (_, b)) in zip(sd, back) { assertIdentical(b, a, k) }
        XCTAssertTrue(back[0].1.storage === back[2].1.storage)
        let ck = try torch.load(file("checkpoint.pt"))
        assertIdentical(try XCTUnwrap(ck["output"]?.tensorValue), out)
        // Resuming from the checkpoint in Swift gives the same next step as not stopping.
        let resumed = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        try resumed.loadStateDict(XCTUnwrap(ck["model_state_dict"]))
        let opt2 = optim.SGD(resumed.parameters(), lr: 0.02, momentum: 0.9, weightDecay: 1e-4)
        try opt2.loadStateDict(XCTUnwrap(ck["optimizer_state_dict"]))
        opt2.zeroGrad()
        lossFn(resumed(x), y).backward()
        opt2.step()
        for ((k, a), b) in zip(model.stateDict(), resumed.stateDict().values) { assertIdentical(b, a, k) }
    }
}
