import Torch

extension datasets {
    /// The MNIST handwritten digits (torchvision's `MNIST`), read from the IDX files in `root`.
    ///
    /// Files are looked for as `<root>/MNIST/raw/<name>` (torchvision's layout) and
    /// `<root>/<name>`, each uncompressed or with `.gz`; `<name>` is
    /// `train-images-idx3-ubyte` / `train-labels-idx1-ubyte` for `train: true` and
    /// `t10k-images-idx3-ubyte` / `t10k-labels-idx1-ubyte` otherwise. Each file is decoded once
    /// into `data` (uint8 N×28×28) and `targets` (int64 N).
    ///
    /// A sample is `(image, label)`: the uint8 28×28 image passed through `transform`, and the
    /// class index passed through `targetTransform`.
    ///
    /// ```swift
    /// let transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.5], [0.5])])
    /// let train = try datasets.MNIST("./data", train: true, transform: transform)
    /// let loader = DataLoader(train, batchSize: 64, shuffle: true)
    /// for (img, label) in loader { ... }    // img: [64, 1, 28, 28] float32, label: [64] int64
    /// ```
    ///
    /// The dataset builds whole batches at once for `DataLoader` when its transform supports it
    /// (`ToTensor`, `Normalize` and `Compose`s of them do), with the same values as sample by sample.
    public class MNIST: utils.data.BatchedDataset, CustomStringConvertible {
        /// The images, uint8 N×H×W.
        public let data: Tensor
        /// The labels, int64 N (QMNIST: N×8).
        public let targets: Tensor
        /// The root folder given.
        public let root: String
        /// The training split (true) or the test split.
        public let train: Bool
        /// Applied to each image.
        public let transform: (any transforms.Transform)?
        /// Applied to each label.
        public let targetTransform: ((Int) -> Int)?
        private let labels: [Int]

        /// The folder name under `root` in torchvision's layout (`<root>/<folderName>/raw`).
        class var folderName: String { "MNIST" }
        /// A sentence on where to get the files, added to the file-not-found error.
        class var installHint: String {
            "Download the MNIST IDX files (e.g. from https://ossci-datasets.s3.amazonaws.com/mnist/) into that folder; this implementation does not download."
        }
        /// The class names.
        public class var classes: [String] {
            ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven", "8 - eight", "9 - nine"]
        }
        /// The class names (torchvision's `dataset.classes`).
        public var classes: [String] { Self.classes }
        /// Class name → index.
        public var classToIdx: [String: Int] {
            Dictionary(uniqueKeysWithValues: classes.enumerated().map { ($1, $0) })
        }

        /// Loads a split from `root`.
        ///
        /// - Parameters:
        ///   - root: the folder holding the files (or `<root>/MNIST/raw/` holding them).
        ///   - train: the 60000-sample training split, or the 10000-sample test split.
        ///   - transform: applied to each uint8 H×W image.
        ///   - targetTransform: applied to each label.
        ///   - download: accepted for source compatibility; files are never downloaded, and a
        ///     missing file throws whatever its value.
        /// - Throws: ``DatasetError`` when a file is missing, unreadable or malformed, or when the
        ///   image and label files disagree.
        public convenience init(root: String, train: Bool = true, transform: (any transforms.Transform)? = nil,
                                targetTransform: ((Int) -> Int)? = nil, download: Bool = false) throws {
            let prefix = train ? "train" : "t10k"
            try self.init(root: root, train: train, transform: transform, targetTransform: targetTransform,
                          download: download, files: ("\(prefix)-images-idx3-ubyte", "\(prefix)-labels-idx1-ubyte"),
                          select: nil)
        }

        /// Loads `files` (images, labels) from `root`: what every member of the family shares.
        /// `select` may pick rows of both (QMNIST's test10k/test50k).
        init(root: String, train: Bool, transform: (any transforms.Transform)?, targetTransform: ((Int) -> Int)?,
             download: Bool, files: (images: String, labels: String), select: Range<Int>?) throws {
            self.root = root
            self.train = train
            self.transform = transform
            self.targetTransform = targetTransform
            let imagesPath = try Self.locate(files.images, root: root, download: download)
            let labelsPath = try Self.locate(files.labels, root: root, download: download)
            var images = try IDX.read(imagesPath)
            var labelTensor = try IDX.read(labelsPath)
            guard images.dtype == .uint8 && images.dim == 3 else {
                throw DatasetError.invalidFile(path: imagesPath, reason: "expected unsigned-byte images with 3 dimensions, found \(images.dtype) with shape \(images.shape)")
            }
            let expected = Self.labelLayout
            guard labelTensor.dtype == expected.dtype && labelTensor.dim == expected.dims else {
                throw DatasetError.invalidFile(path: labelsPath, reason: "expected \(expected.dtype == .uint8 ? "unsigned-byte" : "32-bit integer") labels with \(expected.dims) dimension\(expected.dims == 1 ? "" : "s"), found \(labelTensor.dtype) with shape \(labelTensor.shape)")
            }
            guard images.shape[0] == labelTensor.shape[0] else {
                throw DatasetError.inconsistent("'\(imagesPath)' holds \(images.shape[0]) images but '\(labelsPath)' holds \(labelTensor.shape[0]) labels")
            }
            if let rows = select {
                let r = rows.clamped(to: 0..<images.shape[0])
                images = images.narrow(0, r.lowerBound, r.count).contiguous()
                labelTensor = labelTensor.narrow(0, r.lowerBound, r.count).contiguous()
            }
            data = images
            let targetTensor = labelTensor.to(.int64)
            labels = (targetTensor.dim == 1 ? targetTensor : targetTensor.select(1, 0)).toArray(as: Int64.self).map { Int($0) }
            targets = targetTensor
        }

        /// The dtype and rank of the labels file (MNIST: unsigned bytes, 1-D).
        class var labelLayout: (dtype: DType, dims: Int) { (.uint8, 1) }

        /// Same as `init(root:...)` with `root` positional, as torchvision code passes it.
        public convenience init(_ root: String, train: Bool = true, transform: (any transforms.Transform)? = nil,
                                targetTransform: ((Int) -> Int)? = nil, download: Bool = false) throws {
            try self.init(root: root, train: train, transform: transform, targetTransform: targetTransform, download: download)
        }

        /// The paths tried for `file`, in order.
        static func candidates(_ file: String, root: String) -> [String] {
            let base = root.hasSuffix("/") ? String(root.dropLast()) : root
            let dirs = ["\(base)/\(folderName)/raw", base.isEmpty ? "." : base]
            return dirs.flatMap { ["\($0)/\(file)", "\($0)/\(file).gz"] }
        }

        /// The first existing candidate for `file`.
        static func locate(_ file: String, root: String, download: Bool = false) throws -> String {
            let paths = candidates(file, root: root)
            guard let found = paths.first(where: FileBytes.isFile) else {
                throw DatasetError.fileNotFound(file: file, searched: paths,
                                                hint: download ? "download: true cannot fetch anything here (SwiftTorch has no download code). " + installHint : installHint)
            }
            return found
        }

        /// Number of samples.
        public var count: Int { labels.count }

        /// `(transform(image), targetTransform(label))` for sample `index`.
        public subscript(index: Int) -> (Tensor, Int) {
            let i = normalized(index)
            let image = data.select(0, i)
            let x = transform.map { $0(image) } ?? image.clone()
            return (x, label(i))
        }

        /// The batch of `indices` built at once: images gathered into one uint8 B×H×W tensor and
        /// transformed together; nil when the transform cannot work on batches.
        public func collatedBatch(_ indices: [Int]) -> (Tensor, Tensor)? {
            let rows = indices.map(normalized)
            var x = DatasetSupport.gather(data, rows)
            if let t = transform {
                guard let y = t.applyToBatch(x) else { return nil }
                x = y
            }
            return (x, Int.collate(rows.map(label)))
        }

        @inline(__always) private func normalized(_ index: Int) -> Int {
            DatasetSupport.normalize(index, count: labels.count, Self.folderName)
        }

        @inline(__always) private func label(_ i: Int) -> Int {
            targetTransform.map { $0(labels[i]) } ?? labels[i]
        }

        /// The split as the repr names it.
        var splitName: String { train ? "Train" : "Test" }

        /// torchvision's dataset repr.
        public var description: String {
            DatasetSupport.repr(Self.folderName, count: count, root: root, body: ["Split: \(splitName)"],
                                transform: transform, hasTargetTransform: targetTransform != nil)
        }
    }
}
