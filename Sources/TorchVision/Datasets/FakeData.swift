import Torch

extension datasets {
    /// Random images with random labels (torchvision's `FakeData`), the same every time: sample `i`
    /// is drawn from a generator seeded with `i + randomOffset` — an image of `imageSize` standard
    /// normal values, then a label in `0..<numClasses` — and converted to uint8 the way
    /// `ToPILImage` converts floats (`x * 255` truncated to an integer, keeping its low 8 bits).
    /// The global generator is left untouched.
    ///
    /// The transform receives the picture as torchvision's receive its PIL image
    /// (`transforms.Sample.image` of the uint8 C×H×W pixels).
    ///
    /// ```swift
    /// let ds = datasets.FakeData(size: 100, imageSize: [3, 32, 32], numClasses: 10)
    /// let (x, y) = ds[0]   // x: uint8 [3, 32, 32]
    /// ```
    public final class FakeData: utils.data.Dataset, CustomStringConvertible {
        /// Number of samples.
        public let size: Int
        /// Shape of each image, C×H×W.
        public let imageSize: [Int]
        /// Labels are drawn from `0..<numClasses`.
        public let numClasses: Int
        /// Added to the index to seed each sample.
        public let randomOffset: Int
        /// Applied to each image.
        public let transform: (any transforms.Transform)?
        /// Applied to each label.
        public let targetTransform: ((Int) -> Int)?

        /// - Parameters:
        ///   - size: number of samples (default 1000).
        ///   - imageSize: C×H×W with C = 1, 3 or 4 (default 3×224×224).
        ///   - numClasses: number of classes (default 10).
        ///   - randomOffset: added to each index before seeding.
        ///   - transform: applied to each image.
        ///   - targetTransform: applied to each label.
        public init(size: Int = 1000, imageSize: [Int] = [3, 224, 224], numClasses: Int = 10,
                    transform: (any transforms.Transform)? = nil, targetTransform: ((Int) -> Int)? = nil,
                    randomOffset: Int = 0) {
            precondition(size >= 0, "FakeData: size must be non-negative, got \(size)")
            precondition(imageSize.count == 3 && [1, 3, 4].contains(imageSize[0]) && imageSize.allSatisfy { $0 > 0 },
                         "FakeData: imageSize must be C×H×W with C = 1, 3 or 4, got \(imageSize)")
            precondition(numClasses > 0, "FakeData: numClasses must be positive, got \(numClasses)")
            self.size = size
            self.imageSize = imageSize
            self.numClasses = numClasses
            self.transform = transform
            self.targetTransform = targetTransform
            self.randomOffset = randomOffset
        }

        public var count: Int { size }

        /// The uint8 image and the label of sample `index`, before the transforms.
        public func raw(_ index: Int) -> (Tensor, Int) {
            precondition(index >= 0 && index < size, "FakeData: index \(index) is out of range for a dataset of \(size) samples")
            let g = Generator().manualSeed(UInt64(truncatingIfNeeded: index + randomOffset))
            let values = torch.randn(imageSize, generator: g)
            let label = Int(torch.randint(0, numClasses, [1], generator: g).item())
            let bytes = values.toArray(as: Float.self).map { UInt8(truncatingIfNeeded: Int32(($0 * 255).rounded(.towardZero))) }
            return (Tensor(bytes, shape: imageSize), label)
        }

        /// `(transform(image), targetTransform(label))` for sample `index`.
        public subscript(index: Int) -> (Tensor, Int) {
            let (image, label) = raw(index)
            return (transform.map { $0.apply(.image(image)).value } ?? image, targetTransform.map { $0(label) } ?? label)
        }

        /// torchvision's dataset repr.
        public var description: String {
            DatasetSupport.repr("FakeData", count: count, root: nil, transform: transform,
                                hasTargetTransform: targetTransform != nil)
        }
    }
}
