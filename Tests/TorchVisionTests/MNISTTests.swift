import XCTest
import Foundation
@testable import TorchVision
@testable import Torch

private let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures")
private let tinyRoot = fixtures.appendingPathComponent("mnist_tiny").path
private let realRoot = "/usr/share/datasets/fashion-mnist"

private func fixtureCases() throws -> [[String: Any]] {
    let data = try Data(contentsOf: fixtures.appendingPathComponent("mnist.json"))
    return (try JSONSerialization.jsonObject(with: data) as! [String: Any])["cases"] as! [[String: Any]]
}

/// Decodes `{"shape", "dtype", "data"}` written by scripts/fixtures/_common.py.
private func tensor(_ any: Any) -> Tensor {
    let d = any as! [String: Any]
    let shape = d["shape"] as! [Int]
    let dtype = DType.allCases.first { $0.name == (d["dtype"] as! String) }!
    let values = (d["data"] as! [NSNumber]).map { $0.doubleValue }
    return Tensor(values, shape: shape).to(dtype)
}

private func assertEqualTensors(_ a: Tensor, _ b: Tensor, _ message: String = "", file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(a.shape, b.shape, message, file: file, line: line)
    XCTAssertEqual(a.dtype, b.dtype, message, file: file, line: line)
    XCTAssertEqual(a.toArray(as: Double.self), b.toArray(as: Double.self), message, file: file, line: line)
}

private func bytes(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }

private func temporaryDirectory() throws -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mnist-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir.path
}

/// The IDX bytes of a uint8 array.
private func idx(_ dims: [Int], _ values: [UInt8]) -> [UInt8] {
    [0, 0, 8, UInt8(dims.count)] + dims.flatMap { d in (0..<4).map { UInt8(truncatingIfNeeded: d >> (8 * (3 - $0))) } } + values
}

final class MNISTTests: XCTestCase {
    private let normalize = transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.5], [0.5])])

    // MARK: - Synthetic IDX files (committed fixtures, see scripts/fixtures/mnist.py)

    func testTinyDatasetMatchesTorchvision() throws {
        for c in try fixtureCases() where c["kind"] as? String == "tiny" {
            let train = c["train"] as! Bool
            // <root>/MNIST/raw layout (train: gzip with a file name; test: uncompressed) and the flat
            // layout (train images: a two-member gzip stream; test: single-member gzips).
            for root in [tinyRoot, tinyRoot + "/flat"] {
                let ds = try datasets.MNIST(root: root, train: train, transform: normalize)
                XCTAssertEqual(ds.count, c["count"] as! Int)
                assertEqualTensors(ds.data, tensor(c["data"]!), "data \(root)")
                assertEqualTensors(ds.targets, tensor(c["targets"]!), "targets \(root)")
                let labels = c["labels"] as! [Int]
                for (i, sample) in (c["samples"] as! [Any]).enumerated() {
                    let (x, y) = ds[i]
                    assertEqualTensors(x, tensor(sample), "sample \(i) \(root)")
                    XCTAssertEqual(y, labels[i])
                }
                let plain = try datasets.MNIST(root, train: train, transform: transforms.ToTensor())
                for (i, sample) in (c["toTensor"] as! [Any]).enumerated() {
                    assertEqualTensors(plain[i].0, tensor(sample), "ToTensor sample \(i)")
                }
                if root == tinyRoot {
                    XCTAssertEqual(ds.description, (c["repr"] as! String).replacingOccurrences(of: "ROOT", with: root))
                }
            }
        }
        let fashion = try fixtureCases().first { $0["kind"] as? String == "tinyFashion" }!
        // FashionMNIST looks in <root>/FashionMNIST/raw, then <root>: the flat folder works.
        let fds = try datasets.FashionMNIST(tinyRoot + "/flat", train: false)
        XCTAssertEqual(fds.description, (fashion["repr"] as! String).replacingOccurrences(of: "ROOT", with: tinyRoot + "/flat"))
        XCTAssertEqual(fds.classes, fashion["classes"] as! [String])
        XCTAssertEqual(fds.classToIdx["Bag"], 8)
        XCTAssertEqual(fds[0].0.dtype, .uint8)
        XCTAssertEqual(fds[0].0.shape, [4, 5])
    }

    func testRandomPipelinesLoadBatchWiseWithPerSampleValues() throws {
        // Issue 10's augmentation pipeline (images here are 4×5): the batch path draws what the per-sample path
        // draws, with and without workers (each worker with its own seeded generator in both paths).
        let augment = transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.5], [0.5]),
                                          transforms.RandomCrop([4, 5], padding: [2]), transforms.RandomHorizontalFlip()])
        let ds = try datasets.MNIST(root: tinyRoot, train: true, transform: augment)
        XCTAssertNotNil(ds.collatedBatch([0, 1]))
        for workers in [0, 2] {
            torch.manualSeed(11)
            let fast = Array(DataLoader(ds, batchSize: 3, shuffle: true, numWorkers: workers))
            torch.manualSeed(11)
            let slow = Array(DataLoader(ds, batchSize: 3, shuffle: true, numWorkers: workers, collateFn: { utils.data.defaultCollate($0) }))
            XCTAssertEqual(fast.count, slow.count)
            for (f, s) in zip(fast, slow) {
                assertEqualTensors(f.0, s.0, "workers \(workers)")
                assertEqualTensors(f.1, s.1, "workers \(workers)")
            }
        }
    }

    func testBatchedLoadingEqualsPerSample() throws {
        let ds = try datasets.MNIST(root: tinyRoot, train: true, transform: normalize, targetTransform: { $0 + 100 })
        let fast = Array(DataLoader(ds, batchSize: 4))
        let slow = Array(DataLoader(ds, batchSize: 4, collateFn: { utils.data.defaultCollate($0) }))
        XCTAssertEqual(fast.count, 2)
        XCTAssertEqual(fast[0].0.shape, [4, 1, 4, 5])
        XCTAssertEqual(fast[0].0.dtype, .float32)
        XCTAssertEqual(fast[0].1.dtype, .int64)
        for (f, s) in zip(fast, slow) {
            assertEqualTensors(f.0, s.0)
            assertEqualTensors(f.1, s.1)
        }
        XCTAssertTrue(fast[0].1.toArray(as: Int.self).allSatisfy { $0 >= 100 })
        // shuffled, with workers, through a Subset, with a transform that only works per image
        let lambda = try datasets.MNIST(root: tinyRoot, train: true,
                                        transform: transforms.Compose([transforms.ToTensor(), transforms.Lambda { $0 * 2 }]))
        for d in [ds, lambda] {
            let a = Array(DataLoader(d, batchSize: 4, shuffle: true, generator: Generator().manualSeed(3)))
            let b = Array(DataLoader(utils.data.Subset(d, Array(0..<6)), batchSize: 4, shuffle: true, numWorkers: 2,
                                     generator: Generator().manualSeed(3)))
            for (f, s) in zip(a, b) {
                assertEqualTensors(f.0, s.0)
                assertEqualTensors(f.1, s.1)
            }
        }
        XCTAssertNil(lambda.collatedBatch([0, 1]))
        let raw = try datasets.MNIST(root: tinyRoot, train: true)
        let batch = raw.collatedBatch([5, 0, -1])!
        XCTAssertEqual(batch.0.dtype, .uint8)
        assertEqualTensors(batch.0, utils.data.defaultCollate([raw[5].0, raw[0].0, raw[5].0]))
    }

    func testIDXElementTypes() throws {
        let c = try fixtureCases().first { $0["kind"] as? String == "types" }!
        let expectedTypes: [DType] = [.int32, .int32, .int32, .float32, .float64]
        for (k, f) in (c["files"] as! [[String: Any]]).enumerated() {
            let t = try datasets.IDX.read(tinyRoot + "/" + (f["file"] as! String))
            XCTAssertEqual(t.shape, f["shape"] as! [Int])
            XCTAssertEqual(t.dtype, expectedTypes[k])
            let want = (f["values"] as! [NSNumber]).map { $0.doubleValue }
            XCTAssertEqual(t.toArray(as: Double.self), want.map { expectedTypes[k] == .float32 ? Double(Float($0)) : $0 })
        }
    }

    // MARK: - Gzip

    func testGzipMembersAndErrors() throws {
        let multi = try bytes(tinyRoot + "/flat/train-images-idx3-ubyte.gz")
        let single = try bytes(tinyRoot + "/MNIST/raw/train-images-idx3-ubyte.gz")
        XCTAssertEqual(single[3] & 0x08, 0x08, "fixture has a file name in its header")
        let a = try Gzip.decompress(multi, maxOutputSize: 1 << 20)
        let b = try Gzip.decompress(single, maxOutputSize: 1 << 20)
        XCTAssertEqual(a, b)
        XCTAssertEqual(a.count, 16 + 6 * 20)
        XCTAssertEqual(try Gzip.decompress(single + [0, 0, 0], maxOutputSize: 1 << 20), b, "zero padding is ignored")

        func gzipError(_ input: [UInt8], max: Int = 1 << 20) -> String {
            do { _ = try Gzip.decompress(input, maxOutputSize: max); return "no error" } catch { return "\(error)" }
        }
        var badCRC = single
        badCRC[badCRC.count - 6] ^= 0xFF
        XCTAssertTrue(gzipError(badCRC).contains("CRC-32 of the data"), gzipError(badCRC))
        var badSize = single
        badSize[badSize.count - 2] ^= 0x01
        XCTAssertTrue(gzipError(badSize).contains("trailer declares"), gzipError(badSize))
        XCTAssertTrue(gzipError(Array(single.prefix(single.count - 3))).contains("trailer"))
        XCTAssertTrue(gzipError([0x1F, 0x8B, 8]).contains("truncated header"))
        XCTAssertTrue(gzipError([0x1F, 0x8C, 8, 0, 0, 0, 0, 0, 0, 0, 0]).contains("bad magic number"))
        XCTAssertTrue(gzipError([0x1F, 0x8B, 7, 0, 0, 0, 0, 0, 0, 0, 0]).contains("compression method 7"))
        XCTAssertTrue(gzipError(single + [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]).contains("bad magic"), "trailing garbage must be another member")
        XCTAssertTrue(gzipError(single, max: 10).contains("limit"), gzipError(single, max: 10))
    }

    // MARK: - Validation

    func testIDXValidation() throws {
        func error(_ b: [UInt8]) -> String {
            do { _ = try datasets.IDX.decode(b, source: "mem.idx"); return "no error" } catch { return "\(error)" }
        }
        let good = idx([2, 3], [1, 2, 3, 4, 5, 6])
        XCTAssertEqual(try datasets.IDX.decode(good, source: "mem.idx").toArray(as: Int.self), [1, 2, 3, 4, 5, 6])
        XCTAssertTrue(error([0, 0]).contains("too short"))
        XCTAssertTrue(error([1, 0, 8, 1, 0, 0, 0, 0]).contains("not an IDX file"))
        XCTAssertTrue(error([0, 0, 0x0A, 1, 0, 0, 0, 0]).contains("unknown IDX element type code 0x0a"))
        XCTAssertTrue(error([0, 0, 8, 0]).contains("0 dimensions"))
        XCTAssertTrue(error([0, 0, 8, 3, 0, 0, 0, 1]).contains("need 16 header bytes"))
        XCTAssertTrue(error(good + [7]).contains("need 6 data bytes"), error(good + [7]))
        XCTAssertTrue(error(Array(good.dropLast())).contains("but the file has 5"))
        XCTAssertTrue(error([0, 0, 0x0E, 3, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255]).contains("limit"))
        XCTAssertTrue(error([0, 0, 8, 2, 0, 0, 0, 0, 255, 255, 255, 255]).contains("no error"), "empty dimensions are valid")
        XCTAssertTrue(error(good).contains("mem.idx") || error(good) == "no error")
    }

    func testDatasetErrors() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func loadError(_ train: Bool = true) -> String {
            do { _ = try datasets.FashionMNIST(root: dir, train: train); return "no error" } catch { return "\(error)" }
        }
        XCTAssertTrue(loadError().contains("train-images-idx3-ubyte' not found"))
        XCTAssertTrue(loadError().contains("\(dir)/FashionMNIST/raw/train-images-idx3-ubyte.gz"))
        XCTAssertTrue(loadError().contains("dataset-fashion-mnist"))
        func write(_ name: String, _ b: [UInt8]) {
            XCTAssertTrue(FileManager.default.createFile(atPath: "\(dir)/\(name)", contents: Data(b)))
        }
        write("train-images-idx3-ubyte", idx([3, 2, 2], [UInt8](repeating: 9, count: 12)))
        write("train-labels-idx1-ubyte", idx([2], [1, 2]))
        XCTAssertTrue(loadError().contains("holds 3 images but"), loadError())
        write("train-labels-idx1-ubyte", idx([3, 1], [1, 2, 3]))
        XCTAssertTrue(loadError().contains("expected unsigned-byte labels with 1 dimension"), loadError())
        write("train-labels-idx1-ubyte", idx([3], [1, 2, 3]))
        XCTAssertEqual(loadError(), "no error")
        write("t10k-images-idx3-ubyte.gz", [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 3, 0xFF])
        write("t10k-labels-idx1-ubyte", idx([3], [1, 2, 3]))
        XCTAssertTrue(loadError(false).contains("cannot decompress"), loadError(false))
        XCTAssertTrue(loadError(false).contains("t10k-images-idx3-ubyte.gz"))
        XCTAssertEqual(transforms.ToTensor.inputError([1, 2, 3, 4]), "pic should be 2/3 dimensional. Got 4 dimensions.")
        XCTAssertEqual(transforms.Normalize.inputError([3, 4, 4], .uint8), "Input tensor should be a float tensor. Got torch.uint8.")
        XCTAssertEqual(transforms.Normalize.inputError([4, 4], .float32),
                       "Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = torch.Size([4, 4])")
        XCTAssertNil(transforms.Normalize.inputError([2, 1, 4, 4], .float64))
    }

    /// Random corruptions of valid files (bit flips, byte overwrites, truncations, insertions) must
    /// throw or decode, never crash or allocate without bound.
    func testFuzzCorruptFiles() throws {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ n: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(n))
        }
        let seeds = [try bytes(tinyRoot + "/MNIST/raw/train-images-idx3-ubyte.gz"),
                     try bytes(tinyRoot + "/flat/train-images-idx3-ubyte.gz"),
                     try bytes(tinyRoot + "/MNIST/raw/t10k-images-idx3-ubyte"),
                     try bytes(tinyRoot + "/flat/train-labels-idx1-ubyte")]
        var threw = 0, decoded = 0
        for iteration in 0..<3000 {
            var b = seeds[iteration % seeds.count]
            for _ in 0..<(1 + next(4)) {
                switch next(5) {
                case 0: b[next(b.count)] ^= UInt8(1 << next(8))
                case 1: b[next(b.count)] = UInt8(next(256))
                case 2: b = Array(b.prefix(next(b.count + 1)))
                case 3: b.insert(UInt8(next(256)), at: next(b.count + 1))
                default: if b.count > 4 { b[next(4)] = UInt8(next(256)) }   // headers matter most
                }
                if b.isEmpty { b = [0] }
            }
            do {
                let plain = Gzip.hasMagic(b) ? try Gzip.decompress(b, maxOutputSize: 1 << 20) : b
                let t = try datasets.IDX.decode(plain, source: "fuzz")
                XCTAssertLessThanOrEqual(t.numel, plain.count)
                decoded += 1
            } catch is SerializationError {
                threw += 1
            } catch is datasets.DatasetError {
                threw += 1
            }
        }
        XCTAssertEqual(threw + decoded, 3000)
        XCTAssertGreaterThan(threw, 1000)
    }

    // MARK: - Transforms

    func testTransforms() {
        let hwc = torch.arange(18).view(2, 3, 3).to(.uint8)
        let chw = transforms.ToTensor()(hwc)
        XCTAssertEqual(chw.shape, [3, 2, 3])
        XCTAssertEqual(chw.dtype, .float32)
        XCTAssertEqual(chw.select(0, 1).toArray(as: Float.self), [1, 4, 7, 10, 13, 16].map { Float($0) / 255 })
        let batch = transforms.ToTensor().applyToBatch(torch.stack([hwc, hwc]))!
        XCTAssertEqual(batch.shape, [2, 3, 2, 3])
        XCTAssertEqual(batch.select(0, 1).toArray(as: Float.self), chw.toArray(as: Float.self))
        let floats = transforms.ToTensor()(torch.ones(2, 2, dtype: .float64))
        XCTAssertEqual(floats.dtype, .float64)
        XCTAssertEqual(floats.shape, [1, 2, 2])

        let n = transforms.Normalize(mean: [1, 2, 3], std: [2, 4, 8])
        let x = torch.ones(3, 1, 2)
        XCTAssertEqual(n(x).toArray(as: Float.self), [0, 0, -0.25, -0.25, -0.25, -0.25])
        XCTAssertEqual(x.toArray(as: Float.self), [1, 1, 1, 1, 1, 1], "not in place by default")
        _ = transforms.Normalize([1], [2], inplace: true)(x)
        XCTAssertEqual(x.toArray(as: Float.self), [0, 0, 0, 0, 0, 0])
        XCTAssertEqual(n(torch.ones(3, 1, 1, dtype: .float64)).dtype, .float64)

        // Compose's byte-table path equals the transforms applied one by one, for every byte value.
        let all = torch.arange(256, dtype: .uint8).view(16, 16)
        let steps: [any transforms.Transform] = [transforms.ToTensor(), transforms.Normalize([0.1307], [0.3081]),
                                                 transforms.Normalize([0.25], [2])]
        let stepwise = steps.reduce(all) { x, t in t(x) }
        assertEqualTensors(transforms.Compose(steps)(all), stepwise)
        assertEqualTensors(transforms.Compose(steps).applyToBatch(torch.stack([all, all]))!.select(0, 1), stepwise)
        torch.setDefaultDType(.float64)
        let stepwise64 = steps.reduce(all) { x, t in t(x) }
        XCTAssertEqual(stepwise64.dtype, .float64)
        assertEqualTensors(transforms.Compose(steps)(all), stepwise64)
        torch.setDefaultDType(.float32)

        let c = transforms.Compose([transforms.ToTensor(), transforms.Lambda { $0 + 1 }, transforms.Normalize([0.5], [0.5])])
        XCTAssertEqual(c.description, "Compose(\n    ToTensor()\n    Lambda()\n    Normalize(mean=[0.5], std=[0.5])\n)")
        XCTAssertEqual(c(torch.zeros(1, 1, dtype: .uint8)).toArray(as: Float.self), [1])
        XCTAssertNil(c.applyToBatch(torch.zeros(2, 1, 1, dtype: .uint8)))
    }

    // MARK: - Real Fashion-MNIST

    func testRealFashionMNIST() throws {
        guard FileManager.default.fileExists(atPath: realRoot + "/train-images-idx3-ubyte.gz") else {
            throw XCTSkip("\(realRoot) is missing: install the Debian package dataset-fashion-mnist to run this test")
        }
        let cases = try fixtureCases().filter { $0["kind"] as? String == "real" }
        XCTAssertEqual(cases.count, 2, "regenerate Tests/Fixtures/mnist.json where the dataset is installed")
        for c in cases {
            let train = c["train"] as! Bool
            let start = Date()
            let ds = try datasets.FashionMNIST(realRoot, train: train, transform: normalize)
            let loadTime = Date().timeIntervalSince(start)
            XCTAssertEqual(ds.count, c["count"] as! Int)
            XCTAssertEqual(ds.count, train ? 60000 : 10000)
            XCTAssertEqual(Array(ds.targets.toArray(as: Int.self).prefix(32)), c["firstLabels"] as! [Int])
            var counts = [Int](repeating: 0, count: 10)
            for y in ds.targets.toArray(as: Int.self) { counts[y] += 1 }
            XCTAssertEqual(counts, c["labelCounts"] as! [Int])
            XCTAssertEqual(Int(ds.data.to(.int64).sum().item()), c["pixelSum"] as! Int)
            XCTAssertEqual(ds[ds.count - 1].1, c["lastLabel"] as! Int)
            XCTAssertEqual(ds.classes, c["classes"] as! [String])
            let plain = try datasets.FashionMNIST(root: realRoot, train: train, transform: transforms.ToTensor())
            let x0 = plain[0].0
            XCTAssertEqual(x0.shape, [1, 28, 28])
            assertEqualTensors(x0.select(0, 0).select(0, 14), tensor(c["row14ToTensor"]!))
            assertEqualTensors(ds[0].0.select(0, 0).select(0, 14), tensor(c["row14Normalized"]!))
            XCTAssertEqual(x0.double().sum().item(), c["sample0Sum"] as! Double, accuracy: 1e-9)
            if train {
                // One shuffled epoch through the loader, as the MLP tutorial iterates it.
                let loader = DataLoader(ds, batchSize: 64, shuffle: true, generator: Generator().manualSeed(0))
                XCTAssertEqual(loader.count, 938)
                let t0 = Date()
                var seen = 0
                for (img, label) in loader {
                    XCTAssertEqual(img.shape[1...], [1, 28, 28])
                    seen += label.shape[0]
                }
                let epoch = Date().timeIntervalSince(t0)
                XCTAssertEqual(seen, 60000)
                print("Fashion-MNIST train: load \(String(format: "%.3f", loadTime)) s, one DataLoader epoch (batch 64, shuffled) \(String(format: "%.3f", epoch)) s")
            }
        }
    }
}
