import Torch

extension datasets {
    /// CIFAR-10 (torchvision's `CIFAR10`): 60000 32×32 colour images in 10 classes.
    ///
    /// Reads the Python version torchvision downloads, `<root>/cifar-10-batches-py/` with
    /// `data_batch_1` … `data_batch_5`, `test_batch` and `batches.meta` (pickles, decoded by
    /// `NumpyPickle` — nothing in them is executed), or, when that folder is absent, the binary
    /// version `<root>/cifar-10-batches-bin/` (`data_batch_1.bin` …, `test_batch.bin`,
    /// `batches.meta.txt`).
    ///
    /// `data` is uint8 N×32×32×3 (H×W×C, like torchvision's ndarray) and `targets` the labels. A
    /// sample is `(transform(image), targetTransform(label))`. The transform receives the image as
    /// torchvision's receive the PIL image it makes (a `transforms.Sample.image`), so
    /// `RandomCrop(32, padding: 4)` crops the picture and `ToTensor` gives float 3×32×32; a pipeline
    /// that keeps a picture gives its uint8 3×32×32 pixels, and no transform the uint8 32×32×3 array.
    ///
    /// ```swift
    /// let train = try datasets.CIFAR10("./data", train: true, transform: transforms.ToTensor())
    /// ```
    public class CIFAR10: utils.data.BatchedDataset, CustomStringConvertible {
        /// The images, uint8 N×32×32×3.
        public let data: Tensor
        /// The labels.
        public let targets: [Int]
        /// The class names, from the dataset's meta file.
        public let classes: [String]
        /// The root folder given.
        public let root: String
        /// The training split (true) or the test split.
        public let train: Bool
        /// Applied to each image.
        public let transform: (any transforms.Transform)?
        /// Applied to each label.
        public let targetTransform: ((Int) -> Int)?

        class var name: String { "CIFAR10" }
        class var pythonFolder: String { "cifar-10-batches-py" }
        class var binaryFolder: String { "cifar-10-batches-bin" }
        class var trainFiles: [String] { (1...5).map { "data_batch_\($0)" } }
        class var testFiles: [String] { ["test_batch"] }
        class var metaFile: String { "batches.meta" }
        class var metaKey: String { "label_names" }
        class var labelsKey: String { "labels" }
        class var binaryTrainFiles: [String] { (1...5).map { "data_batch_\($0).bin" } }
        class var binaryTestFiles: [String] { ["test_batch.bin"] }
        class var binaryMetaFile: String { "batches.meta.txt" }
        /// Label bytes before each binary record's pixels, and which of them is the label.
        class var binaryLabelBytes: (count: Int, used: Int) { (1, 0) }
        class var archive: String { "cifar-10-python.tar.gz" }

        /// Class name → index.
        public var classToIdx: [String: Int] { Dictionary(classes.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a }) }

        /// Loads a split from `root`.
        ///
        /// - Parameters:
        ///   - root: the folder holding `cifar-10-batches-py` (or `cifar-10-batches-bin`).
        ///   - train: the 50000-image training split, or the 10000-image test split.
        ///   - transform: applied to each uint8 32×32×3 image.
        ///   - targetTransform: applied to each label.
        ///   - download: files are never downloaded; with `true`, a missing file's error says so.
        /// - Throws: ``DatasetError`` when a file is missing, unreadable or malformed.
        public required init(root: String, train: Bool = true, transform: (any transforms.Transform)? = nil,
                             targetTransform: ((Int) -> Int)? = nil, download: Bool = false) throws {
            self.root = root
            self.train = train
            self.transform = transform
            self.targetTransform = targetTransform
            let base = root.hasSuffix("/") ? String(root.dropLast()) : (root.isEmpty ? "." : root)
            let py = "\(base)/\(Self.pythonFolder)", bin = "\(base)/\(Self.binaryFolder)"
            if !FileBytes.isFile("\(py)/\(Self.metaFile)") && FileBytes.isFile("\(bin)/\(Self.binaryMetaFile)") {
                (data, targets, classes) = try Self.loadBinary(bin, train: train, download: download)
            } else {
                (data, targets, classes) = try Self.loadPython(py, train: train, download: download)
            }
        }

        /// Same as `init(root:...)` with `root` positional, as torchvision code passes it.
        public convenience init(_ root: String, train: Bool = true, transform: (any transforms.Transform)? = nil,
                                targetTransform: ((Int) -> Int)? = nil, download: Bool = false) throws {
            try self.init(root: root, train: train, transform: transform, targetTransform: targetTransform, download: download)
        }

        static func missing(_ file: String, _ folder: String, download: Bool) -> DatasetError {
            .fileNotFound(file: file, searched: ["\(folder)/\(file)"], hint: DatasetSupport.hint(download: download,
                "Download \(archive) from https://www.cs.toronto.edu/~kriz/cifar.html and extract it in the root folder, so that \(folder)/ holds \((trainFiles + testFiles + [metaFile]).joined(separator: ", "))."))
        }

        static func read(_ path: String, _ folder: String, download: Bool) throws -> Tensor {
            guard FileBytes.isFile(path) else {
                throw missing(String(path.dropFirst(folder.count + 1)), folder, download: download)
            }
            return try FileBytes.read(path, limit: 1 << 31)
        }

        /// Unpickles a file of plain data and numpy arrays.
        static func unpickle(_ path: String, _ folder: String, download: Bool) throws -> PickleValue {
            let bytes = try read(path, folder, download: download)
            do {
                return try bytes.withRawBytes { try NumpyPickle.unpickler.load($0) }
            } catch let e as SerializationError {
                throw DatasetError.invalidFile(path: path, reason: e.description)
            }
        }

        static func loadPython(_ folder: String, train: Bool, download: Bool) throws -> (Tensor, [Int], [String]) {
            let meta = try unpickle("\(folder)/\(metaFile)", folder, download: download)
            guard let names = NumpyPickle.entry(meta, metaKey)?.elements?.compactMap(NumpyPickle.text) else {
                throw DatasetError.invalidFile(path: "\(folder)/\(metaFile)", reason: "no list of strings under '\(metaKey)'")
            }
            var batches: [Tensor] = [], labels: [Int] = []
            for file in train ? trainFiles : testFiles {
                let path = "\(folder)/\(file)"
                let entry = try unpickle(path, folder, download: download)
                func invalid(_ reason: String) -> DatasetError { .invalidFile(path: path, reason: reason) }
                guard let array = NumpyPickle.entry(entry, "data") else { throw invalid("the batch has no 'data' entry") }
                let images: Tensor
                do { images = try NumpyPickle.tensor(array) } catch let e as NumpyPickleError { throw invalid(e.description) }
                guard images.dtype == .uint8, images.dim == 2, images.shape[1] == 3 * 32 * 32 else {
                    throw invalid("'data' should be uint8 N×3072, found \(images.dtype) \(images.shape)")
                }
                guard let list = NumpyPickle.entry(entry, labelsKey)?.elements else {
                    throw invalid("the batch has no list under '\(labelsKey)'")
                }
                let ints = list.compactMap { $0.intValue }.map(Int.init)
                guard ints.count == list.count, ints.count == images.shape[0] else {
                    throw invalid("'\(labelsKey)' holds \(list.count) entries (\(ints.count) integers) for \(images.shape[0]) images")
                }
                try check(ints, classes: names.count, path)
                batches.append(images)
                labels += ints
            }
            let all = batches.count == 1 ? batches[0] : torch.cat(batches, dim: 0)
            return (all.reshape(-1, 3, 32, 32).permute(0, 2, 3, 1).contiguous(), labels, names)
        }

        static func loadBinary(_ folder: String, train: Bool, download: Bool) throws -> (Tensor, [Int], [String]) {
            let metaPath = "\(folder)/\(binaryMetaFile)"
            let metaText = try read(metaPath, folder, download: download).toArray(as: UInt8.self)
            let names = String(decoding: metaText, as: UTF8.self).split(whereSeparator: \.isNewline)
                .map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
            let (labelBytes, used) = binaryLabelBytes
            let record = labelBytes + 3 * 32 * 32
            var batches: [Tensor] = [], labels: [Int] = []
            for file in train ? binaryTrainFiles : binaryTestFiles {
                let path = "\(folder)/\(file)"
                let bytes = try read(path, folder, download: download)
                guard bytes.numel % record == 0 else {
                    throw DatasetError.invalidFile(path: path, reason: "\(bytes.numel) bytes is not a whole number of \(record)-byte records")
                }
                let records = bytes.reshape(-1, record)
                let ints = records[0..., used].toArray(as: UInt8.self).map(Int.init)
                try check(ints, classes: names.count, path)
                batches.append(records[0..., labelBytes...])
                labels += ints
            }
            let all = batches.count == 1 ? batches[0] : torch.cat(batches, dim: 0)
            return (all.reshape(-1, 3, 32, 32).permute(0, 2, 3, 1).contiguous(), labels, names)
        }

        static func check(_ labels: [Int], classes: Int, _ path: String) throws {
            if let bad = labels.first(where: { $0 < 0 || $0 >= classes }) {
                throw DatasetError.invalidFile(path: path, reason: "label \(bad) is outside the \(classes) classes of the meta file")
            }
        }

        /// Number of samples.
        public var count: Int { targets.count }

        /// `(transform(image), targetTransform(label))` for sample `index` (see the type's notes).
        public subscript(index: Int) -> (Tensor, Int) {
            let i = DatasetSupport.normalize(index, count: count, Self.name)
            let image = data.select(0, i)
            return (transform.map { DatasetSupport.transformPicture(image, $0) } ?? image.clone(), label(i))
        }

        /// The images of `indices` gathered into a uint8 B×32×32×3 tensor and transformed together;
        /// nil when the transform cannot work on batches or starts on the pictures before `ToTensor`.
        public func collatedBatch(_ indices: [Int]) -> (Tensor, Tensor)? {
            let rows = indices.map { DatasetSupport.normalize($0, count: count, Self.name) }
            var x = DatasetSupport.gather(data, rows)
            if let t = transform {
                guard DatasetSupport.convertsPicturesFirst(t), let y = t.applyToBatch(x) else { return nil }
                x = y
            }
            return (x, Int.collate(rows.map(label)))
        }

        @inline(__always) private func label(_ i: Int) -> Int {
            targetTransform.map { $0(targets[i]) } ?? targets[i]
        }

        /// torchvision's dataset repr.
        public var description: String {
            DatasetSupport.repr(Self.name, count: count, root: root, body: ["Split: \(train ? "Train" : "Test")"],
                                transform: transform, hasTargetTransform: targetTransform != nil)
        }
    }

    /// CIFAR-100 (torchvision's `CIFAR100`): 60000 32×32 colour images in 100 fine classes. Reads
    /// `<root>/cifar-100-python/{train,test,meta}` (targets are the `fine_labels`, classes the
    /// `fine_label_names`), or the binary version `<root>/cifar-100-binary/{train,test}.bin` with
    /// `fine_label_names.txt`.
    public final class CIFAR100: CIFAR10 {
        override class var name: String { "CIFAR100" }
        override class var pythonFolder: String { "cifar-100-python" }
        override class var binaryFolder: String { "cifar-100-binary" }
        override class var trainFiles: [String] { ["train"] }
        override class var testFiles: [String] { ["test"] }
        override class var metaFile: String { "meta" }
        override class var metaKey: String { "fine_label_names" }
        override class var labelsKey: String { "fine_labels" }
        override class var binaryTrainFiles: [String] { ["train.bin"] }
        override class var binaryTestFiles: [String] { ["test.bin"] }
        override class var binaryMetaFile: String { "fine_label_names.txt" }
        override class var binaryLabelBytes: (count: Int, used: Int) { (2, 1) }
        override class var archive: String { "cifar-100-python.tar.gz" }
    }
}
