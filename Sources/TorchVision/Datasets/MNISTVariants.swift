import Torch

extension datasets {
    /// Kuzushiji-MNIST (torchvision's `KMNIST`): 28×28 grey images of ten cursive Japanese
    /// characters, in MNIST's IDX format and file names, under `<root>/KMNIST/raw` or `<root>`.
    public final class KMNIST: MNIST {
        override class var folderName: String { "KMNIST" }
        override class var installHint: String {
            "Download the four KMNIST IDX files (http://codh.rois.ac.jp/kmnist/dataset/kmnist/) into that folder; this implementation does not download."
        }
        override public class var classes: [String] { ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"] }
    }

    /// Extended MNIST (torchvision's `EMNIST`): handwritten digits and letters in six splits, read
    /// from `emnist-<split>-<train|test>-{images-idx3,labels-idx1}-ubyte[.gz]` under
    /// `<root>/EMNIST/raw` or `<root>` (the files of NIST's `gzip.zip`). As in torchvision, the
    /// images are as stored in the files (transposed relative to MNIST).
    ///
    /// ```swift
    /// let letters = try datasets.EMNIST("./data", split: .letters, train: true)
    /// ```
    public final class EMNIST: MNIST {
        /// EMNIST's splits.
        public enum Split: String, CaseIterable {
            case byclass, bymerge, balanced, letters, digits, mnist
        }

        /// The split loaded.
        public let split: Split

        override class var folderName: String { "EMNIST" }
        override class var installHint: String {
            "Download gzip.zip from https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip and put its emnist-<split>-*.gz files into that folder; this implementation does not download."
        }

        /// The class names of a split (torchvision's `classes_split_dict`).
        public static func classes(for split: Split) -> [String] {
            let digits = (0...9).map(String.init)
            let lower = (UInt8(ascii: "a")...UInt8(ascii: "z")).map { String(UnicodeScalar($0)) }
            let upper = lower.map { $0.uppercased() }
            let merged: Set<String> = ["c", "i", "j", "k", "l", "m", "o", "p", "s", "u", "v", "w", "x", "y", "z"]
            let all = digits + upper + lower   // sorted by code point, as Python sorts them
            switch split {
            case .byclass: return all
            case .bymerge, .balanced: return all.filter { !merged.contains($0) }
            case .letters: return ["N/A"] + lower
            case .digits, .mnist: return digits
            }
        }

        /// The class names of this split.
        override public var classes: [String] { Self.classes(for: split) }

        /// Loads `split` from `root`; the arguments are MNIST's.
        public init(root: String, split: Split, train: Bool = true, transform: (any transforms.Transform)? = nil,
                    targetTransform: ((Int) -> Int)? = nil, download: Bool = false) throws {
            self.split = split
            let prefix = "emnist-\(split.rawValue)-\(train ? "train" : "test")"
            try super.init(root: root, train: train, transform: transform, targetTransform: targetTransform,
                           download: download, files: ("\(prefix)-images-idx3-ubyte", "\(prefix)-labels-idx1-ubyte"),
                           select: nil)
        }

        /// Same as `init(root:split:...)` with `root` positional.
        public convenience init(_ root: String, split: Split, train: Bool = true, transform: (any transforms.Transform)? = nil,
                                targetTransform: ((Int) -> Int)? = nil, download: Bool = false) throws {
            try self.init(root: root, split: split, train: train, transform: transform, targetTransform: targetTransform, download: download)
        }
    }

    /// QMNIST (torchvision's `QMNIST`): MNIST's digits reconstructed from NIST with extended labels.
    /// Reads `qmnist-<train|test>-images-idx3-ubyte` and `qmnist-<train|test>-labels-idx2-int`
    /// (or `xnist-…` for `what: .nist`) under `<root>/QMNIST/raw` or `<root>`, uncompressed or `.gz`
    /// (decompress the `.xz` NIST files first). The label file is IDX int32 N×8: class, NIST
    /// writer and series ids, indices, and so on.
    ///
    /// `targets` is the int64 N×8 table, as in torchvision. A sample's label is the class (column 0),
    /// which is torchvision's target when `compat` is true; when it is false torchvision returns the
    /// row of eight, which ``extendedTarget(_:)`` gives here (a sample's label stays an `Int`).
    public final class QMNIST: MNIST {
        /// Which part of QMNIST to read.
        public enum What: String, CaseIterable {
            /// The 60000 training digits.
            case train
            /// All 60000 test digits.
            case test
            /// The first 10000 test digits (those of MNIST's test set).
            case test10k
            /// The other 50000 test digits.
            case test50k
            /// All 402953 NIST digits.
            case nist
        }

        /// The part loaded.
        public let what: What
        /// torchvision's `compat`: samples' targets are the class (true) or the row of eight (false, see
        /// ``extendedTarget(_:)``).
        public let compat: Bool

        override class var folderName: String { "QMNIST" }
        override class var installHint: String {
            "Download the QMNIST files from https://github.com/facebookresearch/qmnist into that folder; this implementation does not download."
        }
        override class var labelLayout: (dtype: DType, dims: Int) { (.int32, 2) }
        override var splitName: String { what.rawValue }

        /// Loads `what` (default: `train` or `test` by `train`) from `root`.
        public init(root: String, what: What? = nil, compat: Bool = true, train: Bool = true,
                    transform: (any transforms.Transform)? = nil, targetTransform: ((Int) -> Int)? = nil,
                    download: Bool = false) throws {
            let w = what ?? (train ? .train : .test)
            self.what = w
            self.compat = compat
            let stem: String
            switch w {
            case .train: stem = "qmnist-train"
            case .test, .test10k, .test50k: stem = "qmnist-test"
            case .nist: stem = "xnist"
            }
            let rows: Range<Int>? = w == .test10k ? 0..<10000 : (w == .test50k ? 10000..<Int.max : nil)
            try super.init(root: root, train: train, transform: transform, targetTransform: targetTransform,
                           download: download, files: ("\(stem)-images-idx3-ubyte", "\(stem)-labels-idx2-int"), select: rows)
            guard targets.shape.count == 2 && targets.shape[1] >= 1 else {
                throw DatasetError.invalidFile(path: root, reason: "QMNIST labels should be N×8, found \(targets.shape)")
            }

        }

        /// Same as `init(root:...)` with `root` positional.
        public convenience init(_ root: String, what: What? = nil, compat: Bool = true, train: Bool = true,
                                transform: (any transforms.Transform)? = nil, targetTransform: ((Int) -> Int)? = nil,
                                download: Bool = false) throws {
            try self.init(root: root, what: what, compat: compat, train: train, transform: transform,
                          targetTransform: targetTransform, download: download)
        }

        /// The eight label values of sample `index` (int64), torchvision's target when `compat` is false.
        public func extendedTarget(_ index: Int) -> Tensor {
            targets.select(0, DatasetSupport.normalize(index, count: count, "QMNIST")).clone()
        }
    }
}
