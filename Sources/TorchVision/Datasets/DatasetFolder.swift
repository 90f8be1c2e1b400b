#if canImport(Glibc)
import Glibc
#endif
import Torch

extension datasets {
    /// torchvision's `IMG_EXTENSIONS`: the file endings `ImageFolder` accepts by default.
    public static let imageExtensions = [".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp"]

    /// A dataset of files sorted into one sub-folder per class (torchvision's `DatasetFolder`):
    ///
    /// ```
    /// root/dog/xxx.png
    /// root/dog/nested/xxy.png
    /// root/cat/123.png
    /// ```
    ///
    /// Classes are the sub-folders' names, sorted; `samples` lists `(path, classIndex)` for every
    /// accepted file, class by class, folders walked in sorted order (symbolic links followed), files
    /// sorted within each folder. A file is accepted when its name ends with one of `extensions`
    /// (case-insensitive) or, instead, when `isValidFile` says so.
    ///
    /// A sample is `(transform(loader(path)), targetTransform(classIndex))`. `loader` may throw (a
    /// damaged file): ``load(_:)`` rethrows; the subscript, which cannot throw, stops with the error.
    public class DatasetFolder: utils.data.Dataset, CustomStringConvertible {
        /// The root folder.
        public let root: String
        /// The class names: the sub-folders of `root`, sorted.
        public let classes: [String]
        /// Class name → index.
        public let classToIdx: [String: Int]
        /// `(path, classIndex)` for every sample.
        public let samples: [(path: String, classIndex: Int)]
        /// The class index of every sample.
        public let targets: [Int]
        /// Reads a sample's file.
        public let loader: (String) throws -> Tensor
        /// The accepted file endings, or nil when `isValidFile` decides.
        public let extensions: [String]?
        /// Applied to each loaded sample.
        public let transform: (any transforms.Transform)?
        /// Applied to each class index.
        public let targetTransform: ((Int) -> Int)?
        /// Whether `loader` gives pictures (uint8 C×H×W pixels), which reach `transform` as
        /// `transforms.Sample.image`, like torchvision's PIL images.
        var loadsPictures: Bool { false }

        /// Scans `root`.
        ///
        /// - Parameters:
        ///   - root: the folder holding one sub-folder per class.
        ///   - loader: reads the file at a path.
        ///   - extensions: accepted endings (e.g. `[".npy"]`); give either this or `isValidFile`.
        ///   - transform: applied to each sample.
        ///   - targetTransform: applied to each class index.
        ///   - isValidFile: decides per path whether a file is a sample.
        ///   - allowEmpty: whether a class folder without accepted files is allowed.
        /// - Throws: ``DatasetError`` when `root` has no class folder, or a class has no accepted
        ///   file (unless `allowEmpty`), or a folder cannot be read.
        public init(root: String, loader: @escaping (String) throws -> Tensor, extensions: [String]? = nil,
                    transform: (any transforms.Transform)? = nil, targetTransform: ((Int) -> Int)? = nil,
                    isValidFile: ((String) -> Bool)? = nil, allowEmpty: Bool = false) throws {
            precondition((extensions == nil) != (isValidFile == nil),
                         "DatasetFolder: Both extensions and is_valid_file cannot be None or not None at the same time")
            self.root = root
            self.loader = loader
            self.extensions = extensions
            self.transform = transform
            self.targetTransform = targetTransform
            classes = try Self.findClasses(root)
            classToIdx = Dictionary(uniqueKeysWithValues: classes.enumerated().map { ($1, $0) })
            let lowered = extensions?.map { $0.lowercased() }
            let accept: (String) -> Bool = isValidFile ?? { path in
                let name = path.lowercased()
                return lowered!.contains { name.hasSuffix($0) }
            }
            var found: [(path: String, classIndex: Int)] = []
            var empty: [String] = []
            for (index, name) in classes.enumerated() {
                let files = try Self.walk("\(root)/\(name)").filter(accept)
                if files.isEmpty { empty.append(name) }
                found += files.map { ($0, index) }
            }
            if !empty.isEmpty && !allowEmpty {
                var message = "Found no valid file for the classes \(empty.joined(separator: ", ")). "
                if let e = extensions { message += "Supported extensions are: \(e.joined(separator: ", "))" }
                throw DatasetError.invalidFile(path: root, reason: message)
            }
            samples = found
            targets = found.map(\.classIndex)
        }

        /// The class folders of `root`, sorted (torchvision's `find_classes`).
        public static func findClasses(_ root: String) throws -> [String] {
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: root)
            } catch {
                throw DatasetError.io(path: root, operation: "list folder", message: errorDescription(error))
            }
            let classes = names.filter { isDirectory("\(root)/\($0)") }.sorted(by: pythonOrder)
            guard !classes.isEmpty else {
                throw DatasetError.fileNotFound(file: "<class folders>", searched: [root], hint: "Couldn't find any class folder in \(root).")
            }
            return classes
        }

        /// Python's string order (by code point).
        static func pythonOrder(_ a: String, _ b: String) -> Bool {
            a.unicodeScalars.lexicographicallyPrecedes(b.unicodeScalars)
        }

        static func isDirectory(_ path: String) -> Bool {
            var info = stat()
            return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
        }

        /// Every non-folder entry under `top`, folder by folder in sorted path order (torchvision's
        /// `sorted(os.walk(top, followlinks=True))`), names sorted within a folder. A folder reached
        /// twice through links is walked once.
        static func walk(_ top: String) throws -> [String] {
            var folders: [String] = []
            var seen = Set<String>()
            var pending = [top]
            while let dir = pending.popLast() {
                let real = PathString.resolvingSymlinks(dir)
                guard seen.insert(real).inserted else { continue }
                folders.append(dir)
                let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
                pending += names.map { "\(dir)/\($0)" }.filter(isDirectory)
            }
            var files: [String] = []
            for dir in folders.sorted(by: pythonOrder) {
                let names: [String]
                do {
                    names = try FileManager.default.contentsOfDirectory(atPath: dir)
                } catch {
                    throw DatasetError.io(path: dir, operation: "list folder", message: errorDescription(error))
                }
                files += names.sorted(by: pythonOrder).map { "\(dir)/\($0)" }.filter { !isDirectory($0) }
            }
            return files
        }

        /// Number of samples.
        public var count: Int { samples.count }

        /// Loads sample `index`: `(transform(loader(path)), targetTransform(classIndex))`.
        /// - Throws: what `loader` throws.
        public func load(_ index: Int) throws -> (Tensor, Int) {
            let i = DatasetSupport.normalize(index, count: count, String(describing: Self.self))
            let (path, target) = samples[i]
            let x = try loader(path)
            let y: Tensor
            if let t = transform {
                // A picture goes in as torchvision's PIL image would (see transforms.Sample).
                y = loadsPictures ? t.apply(.image(x)).value : t(x)
            } else {
                y = x
            }
            return (y, targetTransform.map { $0(target) } ?? target)
        }

        /// Sample `index`; stops with the loader's error message when the file cannot be read (use
        /// ``load(_:)`` to handle it).
        public subscript(index: Int) -> (Tensor, Int) {
            do {
                return try load(index)
            } catch {
                preconditionFailure("\(Self.self): cannot load sample \(index): \(error)")
            }
        }

        /// torchvision's dataset repr.
        public var description: String {
            DatasetSupport.repr(String(describing: Self.self), count: count, root: root, transform: transform,
                                hasTargetTransform: targetTransform != nil)
        }
    }

    /// Images sorted into one sub-folder per class (torchvision's `ImageFolder`): a ``DatasetFolder``
    /// of PNG and JPEG files (by default the endings of ``imageExtensions``) whose loader reads an
    /// ``Image``, by default converted to RGB as torchvision's `pil_loader` does.
    ///
    /// The transform receives the picture as torchvision's transforms receive a PIL image
    /// (`transforms.Sample.image` of its uint8 C×H×W pixels), so `ToTensor()` gives floats in [0, 1];
    /// without a transform a sample is the uint8 C×H×W pixels.
    ///
    /// ```swift
    /// let ds = try datasets.ImageFolder(root: "photos", transform: transforms.ToTensor())
    /// let (x, label) = ds[0]            // x: float32 [3, H, W]
    /// ```
    public final class ImageFolder: DatasetFolder {
        /// `Image.open(path).convert(.RGB)`.
        public static let defaultLoader: (String) throws -> Image = { try Image.open($0).convert(.RGB) }

        /// Scans `root` for images.
        public init(root: String, transform: (any transforms.Transform)? = nil, targetTransform: ((Int) -> Int)? = nil,
                    loader: @escaping (String) throws -> Image = ImageFolder.defaultLoader,
                    isValidFile: ((String) -> Bool)? = nil, allowEmpty: Bool = false) throws {
            try super.init(root: root, loader: { try loader($0).tensor() },
                           extensions: isValidFile == nil ? datasets.imageExtensions : nil,
                           transform: transform, targetTransform: targetTransform, isValidFile: isValidFile,
                           allowEmpty: allowEmpty)
        }

        /// Same as `init(root:...)` with `root` positional.
        public convenience init(_ root: String, transform: (any transforms.Transform)? = nil,
                                targetTransform: ((Int) -> Int)? = nil) throws {
            try self.init(root: root, transform: transform, targetTransform: targetTransform)
        }

        override var loadsPictures: Bool { true }

        /// torchvision's `imgs`, the same as `samples`.
        public var imgs: [(path: String, classIndex: Int)] { samples }
    }
}
