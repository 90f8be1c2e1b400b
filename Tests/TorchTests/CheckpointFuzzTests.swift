// Fuzzes the checkpoint readers end to end (torch.load's zip and legacy paths, safetensors): mutated,
// truncated, spliced and re-zipped files must either load correctly or throw — never crash or hang.
// A file that loads is then read in full (every element of every tensor is touched), so a view
// that escaped its storage's bounds check would fault here.
//
// Seeded and reproducible: CHECKPOINT_FUZZ_SEED and CHECKPOINT_FUZZ_ROUNDS override the defaults.

import Foundation
import XCTest
@testable import Torch

private struct FuzzRNG: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {  // splitmix64
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

final class CheckpointFuzzTests: XCTestCase {
    /// Reads every element of every tensor in `v`; returns the number of tensors.
    @discardableResult
    private func touch(_ v: StateValue) -> Int {
        switch v {
        case let .tensor(t):
            if t.numel <= 1 << 20 {
                let values = t.toArray(as: Double.self)
                XCTAssertEqual(values.count, t.numel)
            } else {
                // A huge broadcast view (stride 0) over a small storage is valid, as in PyTorch;
                // read its first and last elements instead of materializing it.
                var last = t.storageOffset
                for (n, s) in zip(t.shape, t.strides) { last += (n - 1) * s }
                _ = t.element(atOffset: t.storageOffset) + t.element(atOffset: last)
            }
            return 1
        case let .list(a), let .tuple(a): return a.reduce(0) { $0 + touch($1) }
        case let .dict(e): return e.reduce(0) { $0 + touch($1.key) + touch($1.value) }
        default: return 0
        }
    }

    /// Rebuilds a zip archive with the same records, with `edit` applied to each record's bytes
    /// (returning nil drops the record).
    private func rezip(_ archive: [UInt8], _ edit: (String, [UInt8]) -> [UInt8]?) throws -> [UInt8] {
        let zip = try ZipReader(bytes: archive)
        var w = ZipWriter()
        for e in zip.entries {
            guard let bytes = edit(e.name, try zip.read(e)) else { continue }
            try w.addEntry(name: e.name, bytes: bytes)
        }
        try w.finish()
        return w.archiveBytes
    }

    private func swiftCheckpoint() throws -> [UInt8] {
        let w = torch.arange(0, 12, dtype: .float32).reshape(3, 4)
        let value: StateValue = [
            "model": StateValue([("a", w), ("b", w.t()), ("c", w.narrow(0, 1, 2)), ("h", w.half()), ("i", torch.arange(5)),
                                 ("s", torch.tensor(true)), ("e", torch.zeros(0, 2))]),
            "epoch": 3, "lr": 0.1, "tags": ["x", nil, .tuple([1, 2])],
        ]
        var enc = TorchCheckpointWriter(topLevelOrderedDict: false)
        let pickle = try enc.pickle(value)
        var zip = ZipWriter()
        try enc.writeArchive(pickle: pickle, name: "ckpt", into: &zip)
        try zip.finish()
        return zip.archiveBytes
    }

    func testFuzzCheckpointAndSafetensorsReaders() throws {
        let env = ProcessInfo.processInfo.environment
        let seed = env["CHECKPOINT_FUZZ_SEED"].flatMap(UInt64.init) ?? 0xC4EC_2026
        let rounds = env["CHECKPOINT_FUZZ_ROUNDS"].flatMap(Int.init) ?? 3000
        var rng = FuzzRNG(seed: seed)

        var zips: [(String, [UInt8])] = [("swift", try swiftCheckpoint())]
        for f in ["dtypes.pt", "dtypes_deflate.pt", "dtypes_bigendian.pt", "tied.pt", "misc.pt", "sgd_state.pt",
                  "module_state.pt", "cosine_state.pt"] {
            zips.append((f, Array(try Data(contentsOf: saveLoadFixtures.appendingPathComponent(f)))))
        }
        var legacy: [(String, [UInt8])] = []
        for f in ["dtypes_legacy.pt", "tied_legacy.pt"] {
            legacy.append((f, Array(try Data(contentsOf: saveLoadFixtures.appendingPathComponent(f)))))
        }
        let st: [(String, [UInt8])] = [
            ("reference.safetensors", Array(try Data(contentsOf: saveLoadFixtures.appendingPathComponent("reference.safetensors")))),
            ("swift.safetensors", try safetensors.save([("w", torch.randn(3, 4)), ("i", torch.arange(6)), ("b", torch.ones([2], dtype: .bool)),
                                                        ("s", torch.tensor(1.5).half())], metadata: ["format": "pt"])),
        ]
        // Every base loads as is.
        for (_, b) in zips + legacy { touch(try TorchCheckpoint.load(b.withUnsafeBytes { ZipArchiveBytes(copying: $0) })) }
        for (_, b) in st { XCTAssertFalse(try safetensors.load(b).isEmpty) }

        let interesting: [UInt64] = [0, 1, 0x7F, 0xFF, 0xFFFF, 0x7FFF_FFFF, 0xFFFF_FFFF, 0x8000_0000_0000_0000, UInt64.max, 1 << 40]
        func mutateBytes(_ input: [UInt8]) -> [UInt8] {
            var b = input
            guard !b.isEmpty else { return b }
            switch Int.random(in: 0..<6, using: &rng) {
            case 0:  // flip a few bits
                for _ in 0..<Int.random(in: 1...8, using: &rng) { b[Int.random(in: 0..<b.count, using: &rng)] ^= UInt8(1 << Int.random(in: 0..<8, using: &rng)) }
            case 1:  // random bytes
                for _ in 0..<Int.random(in: 1...4, using: &rng) { b[Int.random(in: 0..<b.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng) }
            case 2:  // truncate
                b = Array(b.prefix(Int.random(in: 0..<b.count, using: &rng)))
            case 3:  // an interesting integer written over 1, 2, 4 or 8 bytes
                let v = interesting.randomElement(using: &rng)!
                let w = [1, 2, 4, 8].randomElement(using: &rng)!
                let at = Int.random(in: 0..<b.count, using: &rng)
                for k in 0..<w where at + k < b.count { b[at + k] = UInt8(truncatingIfNeeded: v >> (8 * UInt64(k))) }
            case 4:  // delete a range
                let at = Int.random(in: 0..<b.count, using: &rng)
                b.removeSubrange(at..<min(b.count, at + Int.random(in: 1...16, using: &rng)))
            default:  // duplicate a range somewhere else
                let at = Int.random(in: 0..<b.count, using: &rng)
                let chunk = Array(b[at..<min(b.count, at + Int.random(in: 1...32, using: &rng))])
                b.insert(contentsOf: chunk, at: Int.random(in: 0...b.count, using: &rng))
            }
            return b
        }

        var loaded = 0, rejected = 0
        let start = Date()
        for round in 0..<rounds {
            let kind = round % 4
            var input: [UInt8]
            var isSafetensors = false
            switch kind {
            case 0:  // whole-file mutation of a zip checkpoint
                input = mutateBytes(zips.randomElement(using: &rng)!.1)
            case 1:  // mutate data.pkl (or a storage record, or drop a record) inside a valid archive
                let base = zips.randomElement(using: &rng)!.1
                let target = Int.random(in: 0..<10, using: &rng)
                input = try rezip(base) { name, bytes in
                    if name.hasSuffix("data.pkl") && target < 7 { return mutateBytes(bytes) }
                    if name.contains("/data/") && target == 7 { return Array(bytes.dropLast(Int.random(in: 1...8, using: &rng))) }
                    if name.hasSuffix("version") && target == 8 { return mutateBytes(bytes) }
                    if target == 9 && Int.random(in: 0..<4, using: &rng) == 0 { return nil }
                    return bytes
                }
            case 2:
                input = mutateBytes(legacy.randomElement(using: &rng)!.1)
            default:
                input = mutateBytes(st.randomElement(using: &rng)!.1)
                isSafetensors = true
            }
            do {
                if isSafetensors {
                    for (_, t) in try safetensors.load(input) { touch(.tensor(t)) }
                } else {
                    touch(try TorchCheckpoint.load(input.withUnsafeBytes { ZipArchiveBytes(copying: $0) }))
                }
                loaded += 1
            } catch is SerializationError {
                rejected += 1
            }
        }
        let elapsed = Date().timeIntervalSince(start)
        print("checkpoint fuzz (seed \(seed)): \(rounds) files in \(String(format: "%.2f", elapsed)) s; \(loaded) loaded, \(rejected) rejected")
        XCTAssertGreaterThan(rejected, rounds / 4)
        XCTAssertGreaterThan(loaded, 0)
    }
}
