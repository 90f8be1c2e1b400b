import Torch

extension datasets {
    /// The Street View House Numbers (torchvision's `SVHN`), cropped-digit version: 32×32 colour
    /// images read from `<root>/{train,test,extra}_32x32.mat` (MATLAB files, read without scipy).
    /// Label 10 (the digit 0) becomes 0, as in torchvision.
    ///
    /// `data` is uint8 N×3×32×32 (torchvision's layout); a sample's image is given to `transform` as
    /// uint8 32×32×3 (H×W×C, what torchvision turns into its PIL image), so `ToTensor` gives 3×32×32.
    public final class SVHN: utils.data.BatchedDataset, CustomStringConvertible {
        /// Which file to read.
        public enum Split: String, CaseIterable {
            case train, test, extra
        }

        /// The images, uint8 N×3×32×32.
        public let data: Tensor
        /// The labels, 0...9.
        public let labels: [Int]
        /// The split loaded.
        public let split: Split
        /// The root folder given.
        public let root: String
        /// Applied to each image.
        public let transform: (any transforms.Transform)?
        /// Applied to each label.
        public let targetTransform: ((Int) -> Int)?

        /// Loads `split` from `<root>/<split>_32x32.mat`.
        /// - Throws: ``DatasetError`` when the file is missing or not the expected MATLAB data.
        public init(root: String, split: Split = .train, transform: (any transforms.Transform)? = nil,
                    targetTransform: ((Int) -> Int)? = nil, download: Bool = false) throws {
            self.root = root
            self.split = split
            self.transform = transform
            self.targetTransform = targetTransform
            let base = root.hasSuffix("/") ? String(root.dropLast()) : (root.isEmpty ? "." : root)
            let file = "\(split.rawValue)_32x32.mat", path = "\(base)/\(file)"
            guard FileBytes.isFile(path) else {
                throw DatasetError.fileNotFound(file: file, searched: [path], hint: DatasetSupport.hint(download: download,
                    "Download \(file) from http://ufldl.stanford.edu/housenumbers/ into the root folder."))
            }
            let vars = try MATFile.read(path)
            guard let x = vars["X"], x.dims.count == 4, x.dims[2] == 3, x.values.dtype == .uint8 else {
                throw DatasetError.invalidFile(path: path, reason: "expected a uint8 variable X of dimensions H×W×3×N, found \(vars["X"].map { "\($0.values.dtype) \($0.dims)" } ?? "none")")
            }
            guard let y = vars["y"], y.values.numel == x.dims[3] else {
                throw DatasetError.invalidFile(path: path, reason: "expected a variable y of \(x.dims[3]) labels, found \(vars["y"].map { "\($0.values.numel) values" } ?? "none")")
            }
            // Column-major H×W×3×N → N×3×W×H in memory order → N×3×H×W.
            data = x.values.reshape(Array(x.dims.reversed())).permute(0, 1, 3, 2).contiguous()
            labels = y.values.toArray(as: Double.self).map { v in
                let l = Int(v)
                return l == 10 ? 0 : l
            }
        }

        /// Same as `init(root:...)` with `root` positional.
        public convenience init(_ root: String, split: Split = .train, transform: (any transforms.Transform)? = nil,
                                targetTransform: ((Int) -> Int)? = nil, download: Bool = false) throws {
            try self.init(root: root, split: split, transform: transform, targetTransform: targetTransform, download: download)
        }

        public var count: Int { labels.count }

        /// `(transform(image), targetTransform(label))`: the transform receives the picture as
        /// torchvision's receive the PIL image (see ``CIFAR10``); without one, the uint8 32×32×3 array.
        public subscript(index: Int) -> (Tensor, Int) {
            let i = DatasetSupport.normalize(index, count: count, "SVHN")
            let image = data.select(0, i).permute(1, 2, 0).contiguous()
            return (transform.map { DatasetSupport.transformPicture(image, $0) } ?? image, label(i))
        }

        /// The images of `indices` as uint8 B×32×32×3, transformed together; nil when the transform cannot
        /// or starts on the pictures before `ToTensor`.
        public func collatedBatch(_ indices: [Int]) -> (Tensor, Tensor)? {
            let rows = indices.map { DatasetSupport.normalize($0, count: count, "SVHN") }
            var x = DatasetSupport.gather(data, rows).permute(0, 2, 3, 1).contiguous()
            if let t = transform {
                guard DatasetSupport.convertsPicturesFirst(t), let y = t.applyToBatch(x) else { return nil }
                x = y
            }
            return (x, Int.collate(rows.map(label)))
        }

        private func label(_ i: Int) -> Int { targetTransform.map { $0(labels[i]) } ?? labels[i] }

        /// torchvision's dataset repr.
        public var description: String {
            DatasetSupport.repr("SVHN", count: count, root: root, body: ["Split: \(split.rawValue)"],
                                transform: transform, hasTargetTransform: targetTransform != nil)
        }
    }
}
