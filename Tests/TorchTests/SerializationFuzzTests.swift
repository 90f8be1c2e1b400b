// A seeded fuzz test over all the byte-level parsers (zip, DEFLATE, pickle, safetensors): every
// mutated or truncated input must parse or throw, never crash. Shared fixtures are in
// SerializationFixtures.swift.

import Foundation
import Torch
import XCTest

final class SerializationFuzzTests: XCTestCase {

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
