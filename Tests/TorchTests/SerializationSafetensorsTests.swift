// Tests of safetensors headers: the reference vectors of docs/formats.md, round trips and
// validation. Shared fixtures are in SerializationFixtures.swift.

import Foundation
import Torch
import XCTest

final class SerializationSafetensorsTests: XCTestCase {

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

        // docs/formats.md's example file.
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
}
