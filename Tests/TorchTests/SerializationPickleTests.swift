// Tests of the pickle layer: Python-made pickles of every protocol, PyTorch-style state dicts,
// round trips, the Pickler's byte-exact torch encoding, the allow-list, malformed input and legacy
// back-to-back pickles. Shared fixtures are in SerializationFixtures.swift.

import Foundation
import Torch
import XCTest

final class SerializationPickleTests: XCTestCase {

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
        // One-entry state dict, opcode by opcode (docs/formats.md §1.3 with globals memoized).
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
}
