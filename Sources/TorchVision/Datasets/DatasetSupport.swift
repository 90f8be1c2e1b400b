import Torch

/// Pieces shared by the datasets: torchvision's repr, batch gathering, file lookup messages.
enum DatasetSupport {
    /// torchvision's `VisionDataset.__repr__`: a head line, the body lines, then the transforms.
    static func repr(_ name: String, count: Int, root: String?, body: [String] = [],
                     transform: (any transforms.Transform)?, hasTargetTransform: Bool) -> String {
        var lines = ["Dataset \(name)", "    Number of datapoints: \(count)"]
        if let root = root { lines.append("    Root location: \(root)") }
        lines += body.map { "    " + $0 }
        if transform != nil || hasTargetTransform {
            var block = ["    StandardTransform"]
            func add(_ repr: String, _ head: String) {
                let parts = repr.split(separator: "\n", omittingEmptySubsequences: false)
                block.append(head + parts[0])
                block += parts.dropFirst().map { String(repeating: " ", count: head.count) + $0 }
            }
            if let t = transform { add(t.description, "Transform: ") }
            if hasTargetTransform { add("Lambda()", "Target transform: ") }
            lines += block
        }
        return lines.joined(separator: "\n")
    }

    /// `transform` applied to one picture given as its uint8 H×W×C pixels, as torchvision's CIFAR and SVHN
    /// apply it to the PIL image they make (`transforms.Sample.image`): `ToTensor` gives float C×H×W, and a
    /// pipeline that keeps a picture gives its uint8 C×H×W pixels.
    static func transformPicture(_ hwc: Tensor, _ transform: any transforms.Transform) -> Tensor {
        transform.apply(.image(hwc.permute(2, 0, 1).contiguous())).value
    }

    /// Whether a B×H×W×C batch of pictures may go through `transform.applyToBatch`: only when the
    /// first step turns the pictures into tensors (`ToTensor` takes H×W×C arrays to the same C×H×W
    /// result), so no step sees the pixels' layout before the conversion.
    static func convertsPicturesFirst(_ transform: any transforms.Transform) -> Bool {
        let first = (transform as? transforms.Compose)?.transforms.first ?? transform
        return first is transforms.ToTensor
    }

    /// The rows `indices` of a contiguous tensor (any dtype) gathered into a new [B, ...] tensor.
    static func gather(_ data: Tensor, _ indices: [Int]) -> Tensor {
        precondition(data.isContiguous, "gather: the dataset's data must be contiguous")
        let sampleShape = Array(data.shape.dropFirst())
        let rowBytes = sampleShape.reduce(1, *) * data.elementSize
        let out = torch.empty([indices.count] + sampleShape, dtype: data.dtype)
        let src = data.storage.data + data.storageOffset * data.elementSize
        let dst = out.storage.data + out.storageOffset * out.elementSize
        for (k, i) in indices.enumerated() {
            (dst + k * rowBytes).copyMemory(from: src + i * rowBytes, byteCount: rowBytes)
        }
        return out
    }

    /// `index` made non-negative and checked against `count`.
    @inline(__always)
    static func normalize(_ index: Int, count: Int, _ name: String) -> Int {
        let i = index < 0 ? index + count : index
        precondition(i >= 0 && i < count, "\(name): index \(index) is out of range for a dataset of \(count) samples")
        return i
    }

    /// The sentence added to a missing-file error: what `download: true` cannot do here, and where to get the files.
    static func hint(download: Bool, _ whereToGet: String) -> String {
        (download ? "download: true cannot fetch anything here (SwiftTorch has no download code). " :
                    "Dataset not found or corrupted; this implementation does not download. ") + whereToGet
    }
}
