#if canImport(Glibc)
import Glibc
#endif
import Torch

private typealias TF = transforms.functional

extension transforms {
    /// Randomly changes brightness, contrast, saturation and hue, in a random order (torchvision's
    /// `ColorJitter`). A value `v` gives the factor range `[max(0, 1 - v), 1 + v]` (hue: `[-v, v]`, at most 0.5);
    /// 0 leaves that property alone.
    ///
    /// ```swift
    /// let t = transforms.ColorJitter(brightness: 0.4, contrast: 0.4, saturation: 0.4, hue: 0.1)
    /// ```
    public struct ColorJitter: Transform {
        public let brightness: (Double, Double)?
        public let contrast: (Double, Double)?
        public let saturation: (Double, Double)?
        public let hue: (Double, Double)?

        /// Jitter amounts as single values.
        public init(brightness: Double = 0, contrast: Double = 0, saturation: Double = 0, hue: Double = 0) {
            self.init(brightnessRange: Self.range(brightness, "brightness"), contrastRange: Self.range(contrast, "contrast"),
                      saturationRange: Self.range(saturation, "saturation"), hueRange: Self.range(hue, "hue", center: 0, bound: 0.5))
        }

        /// Jitter amounts as explicit factor ranges (nil: unchanged).
        public init(brightnessRange: (Double, Double)?, contrastRange: (Double, Double)? = nil,
                    saturationRange: (Double, Double)? = nil, hueRange: (Double, Double)? = nil) {
            func keep(_ r: (Double, Double)?, center: Double) -> (Double, Double)? {
                guard let r else { return nil }
                precondition(r.0 <= r.1, "ColorJitter: a range must be (min, max), got \(r)")
                return r.0 == center && r.1 == center ? nil : r
            }
            if let h = hueRange { precondition(h.0 >= -0.5 && h.1 <= 0.5, "hue values should be between (-0.5, 0.5), got \(h)") }
            brightness = keep(brightnessRange, center: 1)
            contrast = keep(contrastRange, center: 1)
            saturation = keep(saturationRange, center: 1)
            hue = keep(hueRange, center: 0)
        }

        private static func range(_ v: Double, _ name: String, center: Double = 1, bound: Double = .infinity) -> (Double, Double)? {
            precondition(v >= 0, "If \(name) is a single number, it must be non negative.")
            precondition(v <= bound, "\(name) values should be between \((center - bound, center + bound)), got \(v)")
            return v == 0 ? nil : (max(center - v, 0 > center - bound ? center - bound : 0), center + v)
        }

        /// The random order of the four adjustments (0 brightness, 1 contrast, 2 saturation, 3 hue) and
        /// a factor for each range given.
        public static func getParams(brightness: (Double, Double)?, contrast: (Double, Double)?, saturation: (Double, Double)?,
                                     hue: (Double, Double)?) -> ([Int], Double?, Double?, Double?, Double?) {
            let order = RandomDraw.permutation(4)
            let b = brightness.map { RandomDraw.uniform($0.0, $0.1) }
            let c = contrast.map { RandomDraw.uniform($0.0, $0.1) }
            let s = saturation.map { RandomDraw.uniform($0.0, $0.1) }
            let h = hue.map { RandomDraw.uniform($0.0, $0.1) }
            return (order, b, c, s, h)
        }

        public func callAsFunction(_ input: Tensor) -> Tensor {
            let (order, b, c, s, h) = Self.getParams(brightness: brightness, contrast: contrast, saturation: saturation, hue: hue)
            var img = input
            for fn in order {
                switch fn {
                case 0: if let b { img = TF.adjustBrightness(img, b) }
                case 1: if let c { img = TF.adjustContrast(img, c) }
                case 2: if let s { img = TF.adjustSaturation(img, s) }
                default: if let h { img = TF.adjustHue(img, h) }
                }
            }
            return img
        }

        /// A picture is adjusted the way Pillow adjusts it, as torchvision does for PIL images.
        public func apply(_ sample: Sample) -> Sample {
            guard case .image(let pixels) = sample else { return .tensor(callAsFunction(sample.value)) }
            let (order, b, c, s, h) = Self.getParams(brightness: brightness, contrast: contrast, saturation: saturation, hue: hue)
            var img = Image(tensor: pixels)
            for fn in order {
                switch fn {
                case 0: if let b { img = TF.adjustBrightness(img, b) }
                case 1: if let c { img = TF.adjustContrast(img, c) }
                case 2: if let s { img = TF.adjustSaturation(img, s) }
                default: if let h { img = TF.adjustHue(img, h) }
                }
            }
            return .image(img.tensor())
        }

        public var description: String {
            func r(_ v: (Double, Double)?) -> String { v.map { PyRepr.tuple([$0.0, $0.1]) } ?? "None" }
            return "ColorJitter(brightness=\(r(brightness)), contrast=\(r(contrast)), saturation=\(r(saturation)), hue=\(r(hue)))"
        }
    }

    /// Converts to greyscale with 1 or 3 output channels (torchvision's `Grayscale`).
    public struct Grayscale: Transform {
        public let numOutputChannels: Int
        public init(numOutputChannels: Int = 1) { self.numOutputChannels = numOutputChannels }
        public init(_ numOutputChannels: Int) { self.init(numOutputChannels: numOutputChannels) }
        public func callAsFunction(_ input: Tensor) -> Tensor { TF.rgbToGrayscale(input, numOutputChannels: numOutputChannels) }
        public func applyToBatch(_ batch: Tensor) -> Tensor? { callAsFunction(batch) }

        /// A picture is converted by PIL's luma rule, as torchvision does for PIL images.
        public func apply(_ sample: Sample) -> Sample {
            guard case .image(let pixels) = sample else { return .tensor(callAsFunction(sample.value)) }
            return .image(TF.toGrayscale(Image(tensor: pixels), numOutputChannels: numOutputChannels).tensor())
        }
        public var description: String { "Grayscale(num_output_channels=\(numOutputChannels))" }
    }

    /// Converts to greyscale (keeping the channel count) with probability `p` (torchvision's `RandomGrayscale`).
    public struct RandomGrayscale: Transform {
        public let p: Double
        public init(p: Double = 0.1) { self.p = p }
        public func callAsFunction(_ input: Tensor) -> Tensor {
            let c = TF.getDimensions(input)[0]
            return RandomDraw.chance(p) ? TF.rgbToGrayscale(input, numOutputChannels: c) : input
        }

        /// A picture is converted by PIL's luma rule, keeping its channel count, as torchvision does for PIL images.
        public func apply(_ sample: Sample) -> Sample {
            guard case .image(let pixels) = sample else { return .tensor(callAsFunction(sample.value)) }
            guard RandomDraw.chance(p) else { return sample }
            return .image(TF.toGrayscale(Image(tensor: pixels), numOutputChannels: pixels.shape[0]).tensor())
        }
        public var description: String { "RandomGrayscale(p=\(PyRepr.float(p)))" }
    }

    /// Blurs with a Gaussian whose sigma is drawn from `sigma` (torchvision's `GaussianBlur`).
    public struct GaussianBlur: Transform {
        /// (x, y) kernel sizes, odd and positive.
        public let kernelSize: [Int]
        public let sigma: (Double, Double)

        public init(_ kernelSize: [Int], sigma: (Double, Double) = (0.1, 2.0)) {
            precondition(kernelSize.count == 1 || kernelSize.count == 2, "Kernel size should be a tuple/list of two integers")
            let ks = kernelSize.count == 1 ? [kernelSize[0], kernelSize[0]] : kernelSize
            precondition(ks.allSatisfy { $0 > 0 && $0 % 2 == 1 }, "Kernel size value should be an odd and positive number.")
            precondition(sigma.0 > 0 && sigma.0 <= sigma.1, "sigma values should be positive and of the form (min, max).")
            self.kernelSize = ks
            self.sigma = sigma
        }

        public init(_ kernelSize: Int, sigma: (Double, Double) = (0.1, 2.0)) { self.init([kernelSize], sigma: sigma) }
        public init(_ kernelSize: [Int], sigma: Double) { self.init(kernelSize, sigma: (sigma, sigma)) }
        public init(_ kernelSize: Int, sigma: Double) { self.init([kernelSize], sigma: (sigma, sigma)) }

        /// A uniform random sigma in [`sigmaMin`, `sigmaMax`].
        public static func getParams(_ sigmaMin: Double, _ sigmaMax: Double) -> Double { RandomDraw.uniform(sigmaMin, sigmaMax) }

        public func callAsFunction(_ input: Tensor) -> Tensor {
            let s = Self.getParams(sigma.0, sigma.1)
            return TF.gaussianBlur(input, kernelSize: kernelSize, sigma: [s, s])
        }

        public var description: String { "GaussianBlur(kernel_size=\(PyRepr.tuple(kernelSize)), sigma=\(PyRepr.tuple([sigma.0, sigma.1])))" }
    }

    /// With probability `p`, sets a random rectangle (a `scale` fraction of the image, aspect ratio in
    /// `ratio`) to `value` (torchvision's `RandomErasing`, on tensor images). `value` holds one value, or one
    /// per channel; nil fills with standard normal noise (torchvision's `value="random"`).
    public struct RandomErasing: Transform {
        public let p: Double
        public let scale: (Double, Double)
        public let ratio: (Double, Double)
        public let value: [Double]?
        public let inplace: Bool

        public init(p: Double = 0.5, scale: (Double, Double) = (0.02, 0.33), ratio: (Double, Double) = (0.3, 3.3),
                    value: [Double]? = [0], inplace: Bool = false) {
            precondition(scale.0 <= scale.1 && ratio.0 <= ratio.1, "Scale and ratio should be of kind (min, max)")
            precondition(scale.0 >= 0 && scale.1 <= 1, "Scale should be between 0 and 1")
            precondition((0...1).contains(p), "Random erasing probability should be between 0 and 1")
            self.p = p
            self.scale = scale
            self.ratio = ratio
            self.value = value
            self.inplace = inplace
        }

        /// A random region `(i, j, h, w)` and its fill `v` (C×h×w noise, or `value` as C×1×1); the whole image
        /// with `v` = the image itself after ten failed tries. The noise is drawn on the image's device (by that
        /// device's generator), so erasing a GPU image never goes through the host.
        public static func getParams(_ img: Tensor, scale: (Double, Double), ratio: (Double, Double),
                                     value: [Double]?) -> (Int, Int, Int, Int, Tensor) {
            let d = TF.getDimensions(img)
            let (c, h0, w0) = (d[0], d[1], d[2])
            let area = Double(h0 * w0)
            let logRatio = (Double(Float(Glibc.log(Float(ratio.0)))), Double(Float(Glibc.log(Float(ratio.1)))))
            for _ in 0..<10 {
                let eraseArea = area * RandomDraw.uniform(scale.0, scale.1)
                let aspect = Double(Glibc.exp(Float(RandomDraw.uniform(logRatio.0, logRatio.1))))
                let h = Int((eraseArea * aspect).squareRoot().rounded(.toNearestOrEven))
                let w = Int((eraseArea / aspect).squareRoot().rounded(.toNearestOrEven))
                if !(h < h0 && w < w0) { continue }
                let v: Tensor
                if let value {
                    v = Tensor(value, shape: [value.count, 1, 1]).to(.float32)
                } else {
                    v = torch.empty([c, h, w], dtype: .float32, device: img.device).normal_()
                }
                let i = RandomDraw.randint(0, h0 - h + 1)
                let j = RandomDraw.randint(0, w0 - w + 1)
                return (i, j, h, w, v)
            }
            return (0, 0, h0, w0, img)
        }

        public func callAsFunction(_ input: Tensor) -> Tensor {
            guard RandomDraw.chance(p) else { return input }
            let c = TF.getDimensions(input)[0]
            if let value {
                precondition(value.count == 1 || value.count == c,
                             "If value is a sequence, it should have either a single value or \(c) (number of input channels)")
            }
            let (i, j, h, w, v) = Self.getParams(input, scale: scale, ratio: ratio, value: value)
            return TF.erase(input, i, j, h, w, v, inplace: inplace)
        }

        public var description: String {
            let v = value.map { PyRepr.fill($0) } ?? "random"
            return "RandomErasing(p=\(PyRepr.float(p)), scale=\(PyRepr.tuple([scale.0, scale.1])), ratio=\(PyRepr.tuple([ratio.0, ratio.1]))"
                + ", value=\(v), inplace=\(PyRepr.bool(inplace)))"
        }
    }

    /// Converts between image dtypes with rescaling (torchvision's `ConvertImageDtype`).
    public struct ConvertImageDtype: Transform, BatchSteppable {
        public let dtype: DType
        public init(_ dtype: DType) { self.dtype = dtype }
        public func callAsFunction(_ input: Tensor) -> Tensor { TF.convertImageDtype(input, dtype) }
        public func applyToBatch(_ batch: Tensor) -> Tensor? { callAsFunction(batch) }
        func batchStep(sampleShape: [Int]) -> BatchStep? { MapStep(outputShape: sampleShape) { callAsFunction($0) } }
        public var description: String { "ConvertImageDtype()" }
    }
}
