import XCTest
import Foundation
@testable import TorchVision
@testable import Torch

private let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures")
private let cifarRoot = fixtures.appendingPathComponent("cifar").path
private let variantsRoot = fixtures.appendingPathComponent("mnist_variants").path
private let photosRoot = fixtures.appendingPathComponent("image_folder/photos").path

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

    func testCIFARAndSVHNTransformsSeePictures() throws {
        // torchvision's tutorial pipeline: picture transforms before ToTensor act on the 32×32 picture.
        let augment = transforms.Compose([transforms.RandomCrop(32, padding: 4), transforms.RandomHorizontalFlip(p: 1),
                                          transforms.ToTensor()])
        let ds = try datasets.CIFAR10(root: "\(cifarRoot)/py", train: true, transform: augment)
        XCTAssertNil(ds.collatedBatch([0, 1]), "pictures are transformed one by one")
        torch.manualSeed(3)
        let (x, _) = ds[1]
        torch.manualSeed(3)
        let want: Tensor = augment(Image(tensor: ds.data[1].permute(2, 0, 1).contiguous()))
        XCTAssertEqual(x.shape, [3, 32, 32])
        assertSameValues(x, want)
        // A pipeline that keeps the picture gives its C×H×W pixels.
        let flipped = try datasets.CIFAR10(root: "\(cifarRoot)/py", train: true, transform: transforms.RandomHorizontalFlip(p: 1))
        assertSameValues(flipped[2].0, ds.data[2].permute(2, 0, 1).flip(2))
        let svhn = try datasets.SVHN("\(cifarRoot)/svhn", split: .train, transform: augment)
        XCTAssertEqual(svhn[0].0.shape, [3, 32, 32])
        XCTAssertNil(svhn.collatedBatch([0]))
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

    // MARK: - ImageFolder, DatasetFolder, FakeData

    func testImageFolderMatchesTorchvision() throws {
        let all = try cases("vision_folders")
        let c = all.first { $0["kind"] as? String == "ImageFolder" }!
        let ds = try datasets.ImageFolder(root: photosRoot, allowEmpty: true)
        XCTAssertEqual(ds.classes, c["classes"] as! [String])
        XCTAssertEqual(ds.classToIdx, c["classToIdx"] as! [String: Int])
        let expected = (c["samples"] as! [[Any]]).map { "\(photosRoot)/\($0[0] as! String)|\($0[1] as! Int)" }
        XCTAssertEqual(ds.samples.map { "\($0.path)|\($0.classIndex)" }, expected)
        XCTAssertEqual(ds.imgs.count, ds.samples.count)
        XCTAssertEqual(ds.targets, c["targets"] as! [Int])
        for (i, pixels) in (c["pixels"] as! [Any]).enumerated() {
            let (x, label) = ds[i]
            XCTAssertEqual(label, ds.targets[i])
            // PNGs exactly; the JPEGs within the decoder tolerance of ImageIOTests.
            let atol: Double = ds.samples[i].path.lowercased().hasSuffix("png") ? 0 : 3
            assertSameValues(x, tensor(pixels), atol: atol, ds.samples[i].path)
        }
        XCTAssertEqual(ds.description.split(separator: "\n").first, "Dataset ImageFolder")
        // ToTensor sees a picture, as torchvision's sees the PIL image: floats in [0, 1], C×H×W.
        let asTensors = try datasets.ImageFolder(root: photosRoot, transform: transforms.ToTensor(), allowEmpty: true)
        assertSameValues(asTensors[2].0, tensor((c["pixels"] as! [Any])[2]).to(.float32) / 255, atol: 1e-7)
        let error = errorText { try datasets.ImageFolder(photosRoot) }
        let tv = all.first { $0["kind"] as? String == "ImageFolderError" }!["message"] as! String
        XCTAssertTrue(error.contains(tv), error)

        let files = try datasets.DatasetFolder(root: photosRoot, loader: { _ in torch.zeros(1) }, extensions: [".TXT", ".md"],
                                               allowEmpty: true)
        let tvFiles = (all.first { $0["kind"] as? String == "DatasetFolder" }!["samples"] as! [[Any]])
        XCTAssertEqual(files.samples.map { "\($0.path)|\($0.classIndex)" }, tvFiles.map { "\(photosRoot)/\($0[0] as! String)|\($0[1] as! Int)" })
        // isValidFile, a custom loader and the transforms.
        let custom = try datasets.ImageFolder(root: photosRoot, transform: transforms.Lambda { $0.to(.float32) / 255 },
                                              targetTransform: { -$0 }, loader: { try Image.open($0).convert(.L) },
                                              isValidFile: { $0.hasSuffix("b.png") || $0.hasSuffix("z.png") }, allowEmpty: true)
        XCTAssertEqual(custom.count, 2)
        XCTAssertEqual(custom[0].0.shape.first, 1)
        XCTAssertEqual(custom[1].1, -2)
        XCTAssertLessThanOrEqual(custom[0].0.max().item(), 1)
        // A damaged file: load throws ImageError, naming it.
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: "\(dir)/a", withIntermediateDirectories: true)
        try Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0]).write(to: URL(fileURLWithPath: "\(dir)/a/bad.png"))
        let broken = try datasets.ImageFolder(root: dir)
        XCTAssertTrue(errorText { try broken.load(0) }.contains("\(dir)/a/bad.png"))
        XCTAssertTrue(errorText { try datasets.ImageFolder(root: "\(dir)/a") }.contains("Couldn't find any class folder"))
        XCTAssertTrue(errorText { try datasets.ImageFolder(root: "\(dir)/missing") }.contains("\(dir)/missing"))
    }

    func testFakeDataMatchesTorchvision() throws {
        var checked = 0
        for c in try cases("vision_folders") where c["kind"] as? String == "FakeData" {
            let ds = datasets.FakeData(size: 3, imageSize: c["imageSize"] as! [Int], numClasses: 7, randomOffset: c["offset"] as! Int)
            let (x, label) = ds[c["index"] as! Int]
            assertSameValues(x, tensor(c["image"]!), "FakeData \(c["imageSize"]!) \(c["offset"]!) \(c["index"]!)")
            XCTAssertEqual(label, c["label"] as! Int)
            checked += 1
        }
        XCTAssertEqual(checked, 9)
        let repr = try cases("vision_folders").first { $0["kind"] as? String == "FakeDataRepr" }!["repr"] as! String
        XCTAssertEqual(datasets.FakeData(size: 3, imageSize: [3, 4, 5]).description, repr)
        // The global generator is untouched, and samples repeat.
        torch.manualSeed(5)
        let a = torch.rand(3).toArray(as: Float.self)
        torch.manualSeed(5)
        let ds = datasets.FakeData(size: 10, imageSize: [1, 4, 4], transform: transforms.ToTensor())
        _ = ds[3]
        XCTAssertEqual(torch.rand(3).toArray(as: Float.self), a)
        XCTAssertEqual(ds[3].0.toArray(as: Float.self), ds[3].0.toArray(as: Float.self))
        XCTAssertEqual(ds[3].0.shape, [1, 4, 4])
        assertSameValues(ds[3].0, ds.raw(3).0.to(.float32) / 255, atol: 1e-7)
    }

    // MARK: - SVHN

    func testSVHNMatchesTorchvision() throws {
        var checked = 0
        for c in try cases("cifar") where c["kind"] as? String == "SVHN" {
            let split = datasets.SVHN.Split(rawValue: c["split"] as! String)!
            let ds = try datasets.SVHN("\(cifarRoot)/svhn", split: split)
            XCTAssertEqual(ds.labels, c["labels"] as! [Int])
            XCTAssertEqual(ds.data.shape, c["shape"] as! [Int])
            let v = ds.data.toArray(as: UInt8.self)
            var (sum, wsum) = (Int64(0), Int64(0))
            for (i, x) in v.enumerated() { sum += Int64(x); wsum += Int64(x) * Int64(i % 1000 + 1) }
            XCTAssertEqual(sum, (c["dataSum"] as! NSNumber).int64Value)
            XCTAssertEqual(wsum, (c["dataWsum"] as! NSNumber).int64Value)
            assertSameValues(ds[0].0.permute(2, 0, 1), tensor(c["sample0"]!))
            let lines = ds.description.split(separator: "\n").filter { !$0.contains("Root location") }
            XCTAssertEqual(lines, (c["repr"] as! String).split(separator: "\n").filter { !$0.contains("Root location") })
            let (x, _) = try XCTUnwrap(datasets.SVHN("\(cifarRoot)/svhn", split: split, transform: transforms.ToTensor()).collatedBatch([0]))
            assertSameValues(x[0], transforms.ToTensor()(ds[0].0))
            checked += 1
        }
        XCTAssertEqual(checked, 2)
        let missing = errorText { try datasets.SVHN(cifarRoot, split: .extra) }
        XCTAssertTrue(missing.contains("extra_32x32.mat") && missing.contains("housenumbers"), missing)
        // Damaged files: a truncated copy and a file that is no MATLAB file.
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let good = try Data(contentsOf: URL(fileURLWithPath: "\(cifarRoot)/svhn/train_32x32.mat"))
        try good.prefix(good.count - 100).write(to: URL(fileURLWithPath: "\(dir)/train_32x32.mat"))
        let truncated = errorText { try datasets.SVHN(dir) }
        XCTAssertTrue(truncated.contains("\(dir)/train_32x32.mat") && truncated.contains("invalid file"), truncated)
        try Data(repeating: 7, count: 300).write(to: URL(fileURLWithPath: "\(dir)/test_32x32.mat"))
        let notMat = errorText { try datasets.SVHN(dir, split: .test) }
        XCTAssertTrue(notMat.contains("not a little-endian MATLAB 5 file"), notMat)
    }
}
