// Shared fixtures of the serialization byte-level tests (SerializationArchiveTests,
// SerializationPickleTests, SerializationSafetensorsTests, SerializationFuzzTests): fixture files,
// a seeded RNG, the expected pickle trees and in-memory archives.
// Fixtures: Tests/Fixtures/serialization/, written by scripts/make_serialization_fixtures.py.

import Foundation
import Torch

func fixtureURL(_ name: String) -> URL {
    var url = URL(fileURLWithPath: #filePath)
    while url.lastPathComponent != "Tests" && url.path != "/" {
        url.deleteLastPathComponent()
    }
    return url.appendingPathComponent("Fixtures").appendingPathComponent("serialization").appendingPathComponent(name)
}

func fixtureBytes(_ name: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: fixtureURL(name)))
}

/// Reproducible pseudo-random numbers (SplitMix64).
struct SeededRNG: RandomNumberGenerator {
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

func pid(_ cls: String, _ key: String, _ numel: Int64) -> PickleValue {
    .persistentID(.tuple(["storage", .global(module: "torch", name: cls), .string(key), "cpu", .int(numel)]))
}

func rebuild(_ storage: PickleValue, _ offset: Int64, _ size: [Int64], _ stride: [Int64]) -> PickleValue {
    .reduce(callable: .global(module: "torch._utils", name: "_rebuild_tensor_v2"),
            args: .tuple([storage, .int(offset), .tuple(size.map { .int($0) }), .tuple(stride.map { .int($0) }),
                          false, .orderedDict([])]))
}

/// The state dict written by scripts/make_serialization_fixtures.py (`state_dict_p2.pkl`).
let expectedStateDict: PickleValue = .build(
    object: .orderedDict([
        (key: .string("fc.weight"), value: rebuild(pid("FloatStorage", "0", 6), 0, [2, 3], [3, 1])),
        (key: .string("fc.bias"), value: rebuild(pid("FloatStorage", "1", 2), 0, [2], [1])),
        (key: .string("tied.row"), value: rebuild(pid("FloatStorage", "0", 6), 3, [3], [1])),
        (key: .string("steps"), value: rebuild(pid("LongStorage", "2", 1), 0, [], [])),
    ]),
    state: ["_metadata": .orderedDict([(key: .string(""), value: ["version": 1]), (key: .string("fc"), value: ["version": 1])])])

/// `nested()` of scripts/make_serialization_fixtures.py.
let expectedNested: PickleValue = {
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
func makeTorchStyleArchive(options: ZipWriter.Options = ZipWriter.Options()) throws -> (bytes: [UInt8], records: [(String, [UInt8])]) {
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

func makeSafetensors() throws -> [UInt8] {
    let header = try SafetensorsHeader(layout: [("w", "F32", [2, 2]), ("steps", "I64", []), ("mask", "BOOL", [3]),
                                                ("h", "F16", [0, 4]), ("b", "BF16", [2])],
                                       metadata: ["format": "pt"])
    var file = try header.encoded()
    file += (0..<header.dataSize).map { UInt8(truncatingIfNeeded: $0 &* 31) }
    return file
}
