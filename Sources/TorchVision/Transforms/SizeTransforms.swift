#if canImport(Glibc)
import Glibc
#endif
import Torch

private typealias TF = transforms.functional

extension transforms {
    /// Resizes to `size` (torchvision's `Resize`): one value matches the smaller edge keeping the aspect
    /// ratio (the longer edge capped at `maxSize`), two values give (height, width).
    ///
    /// ```swift
    /// let t = transforms.Resize(256)                         // smaller edge → 256
    /// let u = transforms.Resize([32, 48], interpolation: .nearest)
    /// ```
    public struct Resize: Transform {
        public let size: [Int]
        public let interpolation: InterpolationMode
        public let maxSize: Int?
        public let antialias: Bool

        public init(_ size: [Int], interpolation: InterpolationMode = .bilinear, maxSize: Int? = nil, antialias: Bool = true) {
            precondition(size.count == 1 || size.count == 2, "If size is a sequence, it should have 1 or 2 values, got \(size)")
            self.size = size
            self.interpolation = interpolation
            self.maxSize = maxSize
            self.antialias = antialias
        }

        public init(_ size: Int, interpolation: InterpolationMode = .bilinear, maxSize: Int? = nil, antialias: Bool = true) {
            self.init([size], interpolation: interpolation, maxSize: maxSize, antialias: antialias)
        }

        public func callAsFunction(_ input: Tensor) -> Tensor {
            TF.resize(input, size, interpolation: interpolation, maxSize: maxSize, antialias: antialias)
        }

        public func applyToBatch(_ batch: Tensor) -> Tensor? { batch.dim >= 4 ? callAsFunction(batch) : nil }

        /// A picture is resized as Pillow resizes: always antialiased, NEAREST sampling under pixel centres.
        public func apply(_ sample: Sample) -> Sample {
            guard case .image(let pixels) = sample else { return .tensor(callAsFunction(sample.value)) }
            return .image(TF.resize(Image(tensor: pixels), size, interpolation: interpolation, maxSize: maxSize).tensor())
        }

        public var description: String {
            let s = size.count == 1 ? "\(size[0])" : PyRepr.tuple(size)
            return "Resize(size=\(s), interpolation=\(interpolation), max_size=\(maxSize.map(String.init) ?? "None"), antialias=\(PyRepr.bool(antialias)))"
        }
    }

    /// Crops the centre (torchvision's `CenterCrop`), zero-padding images smaller than `size`.
    public struct CenterCrop: Transform, BatchSteppable {
        /// (height, width).
        public let size: [Int]

        public init(_ size: [Int]) {
            precondition(size.count == 1 || size.count == 2, "Please provide only two dimensions (h, w) for size, got \(size)")
            self.size = size.count == 1 ? [size[0], size[0]] : size
        }

        public init(_ size: Int) { self.init([size]) }

        public func callAsFunction(_ input: Tensor) -> Tensor { TF.centerCrop(input, size) }
        public func applyToBatch(_ batch: Tensor) -> Tensor? { batch.dim >= 4 ? callAsFunction(batch) : nil }
        public var description: String { "CenterCrop(size=\(PyRepr.tuple(size)))" }

        func batchStep(sampleShape: [Int]) -> BatchStep? {
            guard sampleShape.count >= 2 else { return nil }
            return MapStep(outputShape: Array(sampleShape.dropLast(2)) + size) { TF.centerCrop($0, size) }
        }
    }

    /// Pads every side (torchvision's `Pad`): `padding` is `[all]`, `[leftRight, topBottom]` or
    /// `[left, top, right, bottom]`.
    public struct Pad: Transform {
        public let padding: [Int]
        public let fill: Double
        public let paddingMode: PaddingMode

        public init(_ padding: [Int], fill: Double = 0, paddingMode: PaddingMode = .constant) {
            precondition([1, 2, 4].contains(padding.count), "Padding must be an int or a 1, 2, or 4 element tuple, not a \(padding.count) element tuple")
            self.padding = padding
            self.fill = fill
            self.paddingMode = paddingMode
        }

        public init(_ padding: Int, fill: Double = 0, paddingMode: PaddingMode = .constant) {
            self.init([padding], fill: fill, paddingMode: paddingMode)
        }

        public func callAsFunction(_ input: Tensor) -> Tensor { TF.pad(input, padding, fill: fill, paddingMode: paddingMode) }
        public func applyToBatch(_ batch: Tensor) -> Tensor? { callAsFunction(batch) }

        public var description: String {
            "Pad(padding=\(padding.count == 1 ? "\(padding[0])" : PyRepr.tuple(padding)), fill=\(PyRepr.number(fill)), padding_mode=\(paddingMode))"
        }
    }

    /// Crops a random `size` region (torchvision's `RandomCrop`), after optional `padding` and, with
    /// `padIfNeeded`, padding images smaller than `size`.
    ///
    /// ```swift
    /// let t = transforms.RandomCrop(28, padding: 2)
    /// ```
    public struct RandomCrop: Transform, BatchSteppable {
        /// (height, width).
        public let size: [Int]
        public let padding: [Int]?
        public let padIfNeeded: Bool
        public let fill: Double
        public let paddingMode: PaddingMode

        public init(_ size: [Int], padding: [Int]? = nil, padIfNeeded: Bool = false, fill: Double = 0,
                    paddingMode: PaddingMode = .constant) {
            precondition(size.count == 1 || size.count == 2, "Please provide only two dimensions (h, w) for size, got \(size)")
            self.size = size.count == 1 ? [size[0], size[0]] : size
            self.padding = padding
            self.padIfNeeded = padIfNeeded
            self.fill = fill
            self.paddingMode = paddingMode
        }

        public init(_ size: Int, padding: Int? = nil, padIfNeeded: Bool = false, fill: Double = 0,
                    paddingMode: PaddingMode = .constant) {
            self.init([size], padding: padding.map { [$0] }, padIfNeeded: padIfNeeded, fill: fill, paddingMode: paddingMode)
        }

        /// A random crop box `(top, left, height, width)` of `outputSize` (h, w) inside `img`.
        public static func getParams(_ img: Tensor, outputSize: [Int]) -> (Int, Int, Int, Int) {
            let d = TF.getDimensions(img)
            return drawBox(height: d[1], width: d[2], outputSize: outputSize)
        }

        /// `getParams` for an image of `height`×`width`.
        static func drawBox(height h: Int, width w: Int, outputSize: [Int]) -> (Int, Int, Int, Int) {
            let (th, tw) = (outputSize[0], outputSize[1])
            precondition(h >= th && w >= tw, "Required crop size \((th, tw)) is larger than input image size \((h, w))")
            if h == th && w == tw { return (0, 0, h, w) }
            let i = RandomDraw.randint(0, h - th + 1)
            let j = RandomDraw.randint(0, w - tw + 1)
            return (i, j, th, tw)
        }

        public func callAsFunction(_ input: Tensor) -> Tensor {
            let img = padded(input)
            let (i, j, h, w) = Self.getParams(img, outputSize: size)
            return TF.crop(img, i, j, h, w)
        }

        /// The image after `padding` and, with `padIfNeeded`, the padding up to `size`.
        private func padded(_ input: Tensor) -> Tensor {
            var img = input
            if let padding { img = TF.pad(img, padding, fill: fill, paddingMode: paddingMode) }
            let d = TF.getDimensions(img)
            if padIfNeeded && d[2] < size[1] { img = TF.pad(img, [size[1] - d[2], 0], fill: fill, paddingMode: paddingMode) }
            if padIfNeeded && d[1] < size[0] { img = TF.pad(img, [0, size[0] - d[1]], fill: fill, paddingMode: paddingMode) }
            return img
        }

        /// `padded`'s (height, width) for an image of `h`×`w`.
        private func paddedSize(_ height: Int, _ width: Int) -> (h: Int, w: Int) {
            var h = height, w = width
            if let padding {
                let p = padding.count == 1 ? [Int](repeating: padding[0], count: 4)
                    : padding.count == 2 ? [padding[0], padding[1], padding[0], padding[1]] : padding
                h += p[1] + p[3]
                w += p[0] + p[2]
            }
            if padIfNeeded && w < size[1] { w += 2 * (size[1] - w) }
            if padIfNeeded && h < size[0] { h += 2 * (size[0] - h) }
            return (h, w)
        }

        /// Per sample: the padding (done once for the whole batch), then this sample's random box.
        func batchStep(sampleShape: [Int]) -> BatchStep? {
            guard sampleShape.count >= 2, padding.map({ [1, 2, 4].contains($0.count) }) ?? true else { return nil }
            let prepared = paddedSize(sampleShape[sampleShape.count - 2], sampleShape[sampleShape.count - 1])
            let size = self.size
            let (h, w) = (sampleShape[sampleShape.count - 2], sampleShape[sampleShape.count - 1])
            let needsPadding = padding != nil || prepared.h != h || prepared.w != w
            // Constant padding is read through, never materialised: the extra rows and columns before the image.
            var constant: SampleWindow.Padding?
            if needsPadding && paddingMode == .constant {
                let p = padding.map { $0.count == 1 ? [Int](repeating: $0[0], count: 4) : $0.count == 2 ? $0 + $0 : $0 } ?? [0, 0, 0, 0]
                let extraH = padIfNeeded && h + p[1] + p[3] < size[0] ? size[0] - (h + p[1] + p[3]) : 0
                let extraW = padIfNeeded && w + p[0] + p[2] < size[1] ? size[1] - (w + p[0] + p[2]) : 0
                constant = SampleWindow.Padding(top: p[1] + extraH, left: p[0] + extraW, fill: fill)
            }
            return WindowStep(sampleShape: sampleShape, prepared: prepared, size: (h: size[0], w: size[1]),
                              prepare: needsPadding && constant == nil ? { padded($0) } : nil, padding: constant) {
                let (i, j, _, _) = Self.drawBox(height: prepared.h, width: prepared.w, outputSize: size)
                return SampleWindow(top: i, left: j)
            }
        }

        public var description: String {
            let p = padding.map { $0.count == 1 ? "\($0[0])" : PyRepr.tuple($0) } ?? "None"
            return "RandomCrop(size=\(PyRepr.tuple(size)), padding=\(p))"
        }
    }

    /// Crops a random area (a `scale` fraction of the image, aspect ratio in `ratio`) and resizes it to
    /// `size` (torchvision's `RandomResizedCrop`).
    public struct RandomResizedCrop: Transform {
        /// (height, width).
        public let size: [Int]
        public let scale: (Double, Double)
        public let ratio: (Double, Double)
        public let interpolation: InterpolationMode
        public let antialias: Bool

        public init(_ size: [Int], scale: (Double, Double) = (0.08, 1.0), ratio: (Double, Double) = (3.0 / 4.0, 4.0 / 3.0),
                    interpolation: InterpolationMode = .bilinear, antialias: Bool = true) {
            precondition(size.count == 1 || size.count == 2, "Please provide only two dimensions (h, w) for size, got \(size)")
            self.size = size.count == 1 ? [size[0], size[0]] : size
            self.scale = scale
            self.ratio = ratio
            self.interpolation = interpolation
            self.antialias = antialias
        }

        public init(_ size: Int, scale: (Double, Double) = (0.08, 1.0), ratio: (Double, Double) = (3.0 / 4.0, 4.0 / 3.0),
                    interpolation: InterpolationMode = .bilinear, antialias: Bool = true) {
            self.init([size], scale: scale, ratio: ratio, interpolation: interpolation, antialias: antialias)
        }

        /// A random crop box `(top, left, height, width)`: up to ten tries at a random area and log-uniform
        /// aspect ratio, then a centre crop clamped to `ratio`.
        public static func getParams(_ img: Tensor, scale: (Double, Double), ratio: (Double, Double)) -> (Int, Int, Int, Int) {
            let d = TF.getDimensions(img)
            let (height, width) = (d[1], d[2])
            let area = Double(height * width)
            let logRatio = (Double(Float(Glibc.log(Float(ratio.0)))), Double(Float(Glibc.log(Float(ratio.1)))))
            for _ in 0..<10 {
                let targetArea = area * RandomDraw.uniform(scale.0, scale.1)
                let aspect = Double(Glibc.exp(Float(RandomDraw.uniform(logRatio.0, logRatio.1))))
                let w = Int((targetArea * aspect).squareRoot().rounded(.toNearestOrEven))
                let h = Int((targetArea / aspect).squareRoot().rounded(.toNearestOrEven))
                if w > 0 && w <= width && h > 0 && h <= height {
                    let i = RandomDraw.randint(0, height - h + 1)
                    let j = RandomDraw.randint(0, width - w + 1)
                    return (i, j, h, w)
                }
            }
            let inRatio = Double(width) / Double(height)
            var (w, h) = (width, height)
            if inRatio < min(ratio.0, ratio.1) {
                h = Int((Double(w) / min(ratio.0, ratio.1)).rounded(.toNearestOrEven))
            } else if inRatio > max(ratio.0, ratio.1) {
                w = Int((Double(h) * max(ratio.0, ratio.1)).rounded(.toNearestOrEven))
            }
            return ((height - h) / 2, (width - w) / 2, h, w)
        }

        public func callAsFunction(_ input: Tensor) -> Tensor {
            let (i, j, h, w) = Self.getParams(input, scale: scale, ratio: ratio)
            return TF.resizedCrop(input, i, j, h, w, size, interpolation: interpolation, antialias: antialias)
        }

        /// A picture is resized as Pillow resizes: always antialiased, NEAREST sampling under pixel centres.
        public func apply(_ sample: Sample) -> Sample {
            guard case .image(let pixels) = sample else { return .tensor(callAsFunction(sample.value)) }
            let (i, j, h, w) = Self.getParams(pixels, scale: scale, ratio: ratio)
            return .image(TF.resizedCrop(Image(tensor: pixels), i, j, h, w, size, interpolation: interpolation).tensor())
        }

        public var description: String {
            "RandomResizedCrop(size=\(PyRepr.tuple(size)), scale=\(PyRepr.tuple([PyRepr.round4(scale.0), PyRepr.round4(scale.1)])), "
                + "ratio=\(PyRepr.tuple([PyRepr.round4(ratio.0), PyRepr.round4(ratio.1)])), interpolation=\(interpolation), antialias=\(PyRepr.bool(antialias)))"
        }
    }

    /// The four corner crops and the centre crop (torchvision's `FiveCrop`), stacked in a new leading
    /// dimension (torchvision returns a tuple; stacking is what its examples do next).
    public struct FiveCrop: Transform {
        public let size: [Int]

        public init(_ size: [Int]) {
            precondition(size.count == 1 || size.count == 2, "Please provide only two dimensions (h, w) for size, got \(size)")
            self.size = size.count == 1 ? [size[0], size[0]] : size
        }

        public init(_ size: Int) { self.init([size]) }

        public func callAsFunction(_ input: Tensor) -> Tensor { torch.stack(TF.fiveCrop(input, size)) }

        /// A picture gives its five crops' pixels stacked, a uint8 5×C×h×w tensor (follow with
        /// `ConvertImageDtype(.float32)` for what `ToTensor` on each crop gives).
        public func apply(_ sample: Sample) -> Sample { .tensor(callAsFunction(sample.value)) }
        public var description: String { "FiveCrop(size=\(PyRepr.tuple(size)))" }
    }

    /// `FiveCrop` of the image and of its mirror image (torchvision's `TenCrop`), stacked: ten crops.
    public struct TenCrop: Transform {
        public let size: [Int]
        public let verticalFlip: Bool

        public init(_ size: [Int], verticalFlip: Bool = false) {
            precondition(size.count == 1 || size.count == 2, "Please provide only two dimensions (h, w) for size, got \(size)")
            self.size = size.count == 1 ? [size[0], size[0]] : size
            self.verticalFlip = verticalFlip
        }

        public init(_ size: Int, verticalFlip: Bool = false) { self.init([size], verticalFlip: verticalFlip) }

        public func callAsFunction(_ input: Tensor) -> Tensor { torch.stack(TF.tenCrop(input, size, verticalFlip: verticalFlip)) }

        /// A picture gives its ten crops' pixels stacked, a uint8 10×C×h×w tensor.
        public func apply(_ sample: Sample) -> Sample { .tensor(callAsFunction(sample.value)) }
        public var description: String { "TenCrop(size=\(PyRepr.tuple(size)), vertical_flip=\(PyRepr.bool(verticalFlip)))" }
    }

    /// Mirrors left to right with probability `p` (torchvision's `RandomHorizontalFlip`).
    public struct RandomHorizontalFlip: Transform, BatchSteppable {
        public let p: Double
        public init(p: Double = 0.5) { self.p = p }
        public func callAsFunction(_ input: Tensor) -> Tensor { RandomDraw.chance(p) ? TF.hflip(input) : input }
        public var description: String { "RandomHorizontalFlip(p=\(PyRepr.float(p)))" }

        /// Per sample: mirrored or not.
        func batchStep(sampleShape: [Int]) -> BatchStep? {
            guard sampleShape.count >= 2 else { return nil }
            let size = (h: sampleShape[sampleShape.count - 2], w: sampleShape[sampleShape.count - 1])
            return WindowStep(sampleShape: sampleShape, prepared: size, size: size) { [p] in
                SampleWindow(flipH: RandomDraw.chance(p))
            }
        }
    }

    /// Mirrors top to bottom with probability `p` (torchvision's `RandomVerticalFlip`).
    public struct RandomVerticalFlip: Transform, BatchSteppable {
        public let p: Double
        public init(p: Double = 0.5) { self.p = p }
        public func callAsFunction(_ input: Tensor) -> Tensor { RandomDraw.chance(p) ? TF.vflip(input) : input }
        public var description: String { "RandomVerticalFlip(p=\(PyRepr.float(p)))" }

        /// Per sample: mirrored or not.
        func batchStep(sampleShape: [Int]) -> BatchStep? {
            guard sampleShape.count >= 2 else { return nil }
            let size = (h: sampleShape[sampleShape.count - 2], w: sampleShape[sampleShape.count - 1])
            return WindowStep(sampleShape: sampleShape, prepared: size, size: size) { [p] in
                SampleWindow(flipV: RandomDraw.chance(p))
            }
        }
    }
}
