// TorchVision data-pipeline cases (issue 10, "Data pipeline speed"). Twins in scripts/bench_pytorch.py.
import Foundation
import Torch
import TorchVision

/// Issue 10's augmentation pipeline: Fashion-MNIST through ToTensor + Normalize(0.5, 0.5) + RandomCrop(28,
/// padding: 2) + RandomHorizontalFlip in DataLoader(batchSize: 64, shuffle: true, numWorkers: workers); one epoch
/// per iteration, reported as images per second. Skipped when the dataset is not installed.
func visionPipelineCase(workers: Int) -> (BenchSettings) -> BenchResult {
    return { s in
        let transform = transforms.Compose([
            transforms.ToTensor(), transforms.Normalize(mean: [0.5], std: [0.5]),
            transforms.RandomCrop(28, padding: 2), transforms.RandomHorizontalFlip(),
        ])
        guard let train = try? datasets.FashionMNIST(root: fashionMNISTRoot, train: true, transform: transform) else {
            return .skip("\(fashionMNISTRoot) has no Fashion-MNIST (apt-get install dataset-fashion-mnist)")
        }
        let loader = DataLoader(train, batchSize: 64, shuffle: true, numWorkers: workers)
        var seen = 0
        let t = measure(s) { iters in
            for _ in 0..<iters {
                for (img, _) in loader { seen += img.shape[0] }
            }
        }
        let n = Double(train.count)
        return BenchResult(metric: "img/s", value: n / t.median, timing: t,
                           extra: [("s", .number(t.median)), ("best", .number(n / t.min)), ("workers", .int(workers))])
    }
}

/// scikit-image's sample photos (from the venv at /root/torchenv, or $SKIMAGE_DATA); nil when absent.
private func sampleImage(_ name: String) -> [UInt8]? {
    var dirs: [String] = []
    if let dir = ProcessInfo.processInfo.environment["SKIMAGE_DATA"] { dirs.append(dir) }
    let lib = "/root/torchenv/lib"
    for v in ((try? FileManager.default.contentsOfDirectory(atPath: lib)) ?? []).sorted() where v.hasPrefix("python") {
        dirs.append("\(lib)/\(v)/site-packages/skimage/data")
    }
    return dirs.lazy.compactMap { FileManager.default.contents(atPath: "\($0)/\(name)") }.first.map { [UInt8]($0) }
}

/// Issue 10's decode target: `io.decodeImage` of one of scikit-image's photos from bytes in memory (ms per
/// image); the twin decodes the same bytes with Pillow (`Image.open(BytesIO(b)).convert("RGB")`-free `load()`).
func decodeCase(_ name: String) -> (BenchSettings) -> BenchResult {
    return { s in
        guard let bytes = sampleImage(name) else {
            return .skip("scikit-image's \(name) not found (pip install scikit-image into /root/torchenv, or set SKIMAGE_DATA)")
        }
        let t = measure(s) { iters in
            for _ in 0..<iters { discard(try! io.decodeImage(bytes)) }
        }
        return .millis(t)
    }
}

func registerVisionCases() {
    register("vision_pipeline_w0", "Fashion-MNIST epoch through ToTensor+Normalize+RandomCrop(28, padding 2)+RandomHorizontalFlip, "
             + "DataLoader batch 64 shuffle, num_workers 0 (img/s)", visionPipelineCase(workers: 0))
    register("vision_pipeline_w2", "the same pipeline with num_workers 2 (img/s)", visionPipelineCase(workers: 2))
    register("decode_png", "decode scikit-image's astronaut.png (512x512 RGB) from memory (ms)", decodeCase("astronaut.png"))
    register("decode_jpeg", "decode scikit-image's hubble_deep_field.jpg (872x1000 RGB) from memory (ms)",
             decodeCase("hubble_deep_field.jpg"))
}
