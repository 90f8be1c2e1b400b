import XCTest
import Foundation
@testable import TorchVision
@testable import Torch

private let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures")
private let cifarRoot = fixtures.appendingPathComponent("cifar").path
private let variantsRoot = fixtures.appendingPathComponent("mnist_variants").path

private func cases(_ family: String) throws -> [[String: Any]] {
    let data = try Data(contentsOf: fixtures.appendingPathComponent("\(family).json"))
    return (try JSONSerialization.jsonObject(with: data) as! [String: Any])["cases"] as! [[String: Any]]
}

/// Decodes `{"shape", "dtype", "data"}` written by scripts/fixtures/_common.py.
private func tensor(_ any: Any) -> Tensor {
    let d = any as! [String: Any]
    let shape = d["shape"] as! [Int]
    let dtype = DType.allCases.first { $0.name == (d["dtype"] as! String) }!
    let values = (d["data"] as! [Any]).map { v -> Double in
        if let b = v as? Bool { return b ? 1 : 0 }
        return (v as! NSNumber).doubleValue
    }
    let t = Tensor(values, shape: shape.isEmpty ? [1] : shape).to(dtype)
    return shape.isEmpty ? t.select(0, 0) : t
}

private func assertSameValues(_ a: Tensor, _ b: Tensor, atol: Double = 0, _ message: String = "",
                              file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(a.shape, b.shape, message, file: file, line: line)
    XCTAssertEqual(a.dtype, b.dtype, message, file: file, line: line)
    let x = a.toArray(as: Double.self), y = b.toArray(as: Double.self)
    XCTAssertEqual(x.count, y.count, message, file: file, line: line)
    let worst = zip(x, y).map { abs($0 - $1) }.max() ?? 0
    XCTAssertLessThanOrEqual(worst, atol, message, file: file, line: line)
}

/// The description of the error `body` throws; fails when it throws none.
private func errorText(_ body: () throws -> Any, file: StaticString = #filePath, line: UInt = #line) -> String {
    do {
        _ = try body()
        XCTFail("expected an error", file: file, line: line)
        return ""
    } catch {
        return "\(error)"
    }
}

private func temporaryDirectory() throws -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vision-datasets-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir.path
}

final class VisionDatasetsTests: XCTestCase {
    // MARK: - numpy arrays in pickles

    func testNumpyPickledArraysDecode() throws {
        var checked = 0
        for c in try cases("cifar") where c["kind"] as? String == "numpy" {
            let bytes = (c["pickle"] as! [NSNumber]).map { $0.uint8Value }
            let value = try NumpyPickle.unpickler.load(bytes)
            XCTAssertTrue(NumpyPickle.isArray(value))
            assertSameValues(try NumpyPickle.tensor(value), tensor(c["expected"]!), atol: 1e-15, c["name"] as! String)
            checked += 1
        }
        XCTAssertEqual(checked, 6)
        // Anything beyond the allow-list is refused before it could run.
        let hostile = Array("\u{80}\u{02}cos\nsystem\nU\u{07}echo hi\u{85}R.".unicodeScalars.map { UInt8($0.value) })
        XCTAssertTrue(errorText { try NumpyPickle.unpickler.load(hostile) }.contains("os.system"))
        XCTAssertTrue(errorText { try NumpyPickle.tensor(.list([.int(1)])) }.contains("_reconstruct"))
    }

    // MARK: - CIFAR

    func testCIFARMatchesTorchvision() throws {
        let normalize = transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.5, 0.4, 0.3], [0.2, 0.25, 0.3])])
        var checked = 0
        for c in try cases("cifar") where (c["kind"] as! String).hasPrefix("CIFAR") {
            let train = c["train"] as! Bool
            let what = "\(c["kind"]!) train=\(train)"
            for version in ["py", "bin"] {
                let root = "\(cifarRoot)/\(version)"
                let ds: datasets.CIFAR10 = c["kind"] as! String == "CIFAR10"
                    ? try datasets.CIFAR10(root, train: train, transform: normalize)
                    : try datasets.CIFAR100(root, train: train, transform: normalize)
                XCTAssertEqual(ds.count, c["count"] as! Int, what)
                XCTAssertEqual(ds.classes, c["classes"] as! [String], what)
                XCTAssertEqual(ds.classToIdx[ds.classes[3]], 3)
                XCTAssertEqual(ds.targets, c["targets"] as! [Int], what)
                XCTAssertEqual(ds.data.shape, c["shape"] as! [Int], what)
                XCTAssertEqual(ds.data.dtype, .uint8)
                let v = ds.data.toArray(as: UInt8.self)
                var (sum, wsum) = (Int64(0), Int64(0))
                for (i, x) in v.enumerated() { sum += Int64(x); wsum += Int64(x) * Int64(i % 1000 + 1) }
                XCTAssertEqual(sum, (c["dataSum"] as! NSNumber).int64Value, what)
                XCTAssertEqual(wsum, (c["dataWsum"] as! NSNumber).int64Value, what)
                assertSameValues(ds.data[0], tensor(c["image0"]!), what)
                if let s = c["sample1"] {
                    let (x, label) = ds[1]
                    assertSameValues(x, tensor(s), atol: 1e-6, what)
                    XCTAssertEqual(label, ds.targets[1])
                }
                // torchvision's repr, apart from the root folder's spelling.
                func lines(_ s: String) -> [String] { s.split(separator: "\n").map(String.init).filter { !$0.contains("Root location") } }
                XCTAssertEqual(lines(ds.description).prefix(4), lines(c["repr"] as! String).prefix(4), what)
                let plain = c["kind"] as! String == "CIFAR10" ? try datasets.CIFAR10(root: root, train: train)
                                                               : try datasets.CIFAR100(root: root, train: train)
                XCTAssertEqual(lines(plain.description), lines(c["plainRepr"] as! String), what)
                XCTAssertEqual(plain[-1].0.shape, [32, 32, 3])
                checked += 1
            }
        }
        XCTAssertEqual(checked, 8)
    }

    func testCIFARBatchesEqualSamplesAndTargetTransform() throws {
        let ds = try datasets.CIFAR10(root: "\(cifarRoot)/py", train: true,
                                      transform: transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.5], [0.5])]),
                                      targetTransform: { $0 + 100 })
        let indices = [4, 0, 14, 7]
        let (x, y) = try XCTUnwrap(ds.collatedBatch(indices))
        XCTAssertEqual(x.shape, [4, 3, 32, 32])
        assertSameValues(x, torch.stack(indices.map { ds[$0].0 }))
        XCTAssertEqual(y.toArray(as: Int64.self), indices.map { Int64(ds.targets[$0] + 100) })
        var seen = 0
        for (images, labels) in DataLoader(ds, batchSize: 4, shuffle: false) {
            XCTAssertEqual(images.shape.dropFirst(), [3, 32, 32])
            seen += labels.shape[0]
        }
        XCTAssertEqual(seen, 15)
    }

    func testCIFARErrorsSayWhatAndWhere() throws {
        let empty = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let missing = errorText { try datasets.CIFAR10(root: empty) }
        XCTAssertTrue(missing.contains("\(empty)/cifar-10-batches-py/batches.meta") && missing.contains("cifar-10-python.tar.gz"), missing)
        let download = errorText { try datasets.CIFAR100(root: empty, train: false, download: true) }
        XCTAssertTrue(download.contains("download: true cannot fetch") && download.contains("cifar-100-python/meta"), download)
        let truncated = errorText { try datasets.CIFAR10(root: "\(cifarRoot)/bad/truncated") }
        XCTAssertTrue(truncated.contains("data_batch_1") && truncated.contains("truncated"), truncated)
        let hostile = errorText { try datasets.CIFAR10(root: "\(cifarRoot)/bad/hostile") }
        XCTAssertTrue(hostile.contains("os.system") && hostile.contains("allow-list"), hostile)
        let labels = errorText { try datasets.CIFAR10(root: "\(cifarRoot)/bad/labels") }
        XCTAssertTrue(labels.contains("2 entries") && labels.contains("3 images"), labels)
    }

    // MARK: - KMNIST, EMNIST, QMNIST

    func testMNISTVariantsMatchTorchvision() throws {
        func body(_ repr: String) -> [String] { repr.split(separator: "\n").map(String.init).filter { !$0.contains("Root location") } }
        var checked = 0
        for c in try cases("mnist_variants") {
            let kind = c["kind"] as! String
            let ds: datasets.MNIST
            switch kind {
            case "KMNIST":
                ds = try datasets.KMNIST(variantsRoot, train: c["train"] as! Bool)
            case "EMNIST":
                let split = datasets.EMNIST.Split(rawValue: c["split"] as! String)!
                ds = try datasets.EMNIST(variantsRoot, split: split, train: c["train"] as! Bool)
            default:
                let q = try datasets.QMNIST(variantsRoot, what: datasets.QMNIST.What(rawValue: c["what"] as! String)!,
                                            compat: c["compat"] as! Bool)
                XCTAssertEqual(q.count, c["count"] as! Int)
                if let last = c["lastTarget"] {
                    if q.compat {
                        XCTAssertEqual(q[-1].1, last as! Int)
                    } else {
                        assertSameValues(q.extendedTarget(-1), tensor(last))
                        XCTAssertEqual(q[-1].1, Int(q.extendedTarget(-1)[0].item()))
                    }
                }
                ds = q
            }
            let what = "\(kind) \(c["split"] ?? c["what"] ?? "") \(c["train"] ?? c["compat"] ?? "")"
            XCTAssertEqual(ds.classes, c["classes"] as! [String], what)
            assertSameValues(ds.targets, tensor(c["targets"]!), what)
            assertSameValues(ds.data, tensor(c["data"]!), what)
            XCTAssertEqual(body(ds.description), body(c["repr"] as! String), what)
            checked += 1
        }
        XCTAssertEqual(checked, 16)
        let missing = errorText { try datasets.EMNIST(variantsRoot, split: .byclass, download: true) }
        XCTAssertTrue(missing.contains("emnist-byclass-train-images-idx3-ubyte") && missing.contains("download: true cannot fetch")
                      && missing.contains("gzip.zip"), missing)
    }
}
