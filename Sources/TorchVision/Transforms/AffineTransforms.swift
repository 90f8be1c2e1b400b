import Torch

private typealias TF = transforms.functional

extension transforms {
    /// Rotates by a random angle in `degrees` (torchvision's `RandomRotation`).
    ///
    /// ```swift
    /// let t = transforms.RandomRotation(15)                  // angle in [-15, 15]
    /// ```
    public struct RandomRotation: Transform {
        public let degrees: (Double, Double)
        public let interpolation: InterpolationMode
        public let expand: Bool
        public let center: [Int]?
        /// The colour outside the rotated image: one value for all channels or one per channel.
        public let fill: [Double]

        public init(_ degrees: (Double, Double), interpolation: InterpolationMode = .nearest, expand: Bool = false,
                    center: [Int]? = nil, fill: [Double] = [0]) {
            precondition(center == nil || center!.count == 2, "center should be a sequence of length 2, got \(center!)")
            self.degrees = degrees
            self.interpolation = interpolation
            self.expand = expand
            self.center = center
            self.fill = fill
        }

        public init(_ degrees: Double, interpolation: InterpolationMode = .nearest, expand: Bool = false,
                    center: [Int]? = nil, fill: [Double] = [0]) {
            precondition(degrees >= 0, "If degrees is a single number, it must be positive, got \(degrees)")
            self.init((0 - degrees, degrees), interpolation: interpolation, expand: expand, center: center, fill: fill)
        }

        /// A uniform random angle in `degrees`.
        public static func getParams(_ degrees: (Double, Double)) -> Double { RandomDraw.uniform(degrees.0, degrees.1) }

        public func callAsFunction(_ input: Tensor) -> Tensor {
            let c = TF.getDimensions(input)[0]
            let angle = Self.getParams(degrees)
            return TF.rotate(input, angle, interpolation: interpolation, expand: expand, center: center,
                             fill: transforms.fillList(fill, channels: c))
        }

        /// A picture is rotated the way Pillow rotates it (fill `fill`), as torchvision does for PIL images.
        public func apply(_ sample: Sample) -> Sample {
            guard case .image(let pixels) = sample else { return .tensor(callAsFunction(sample.value)) }
            let angle = Self.getParams(degrees)
            return .image(functional.rotate(Image(tensor: pixels), angle, interpolation: interpolation, expand: expand,
                                            center: center, fill: fill).tensor())
        }

        public var description: String {
            var s = "RandomRotation(degrees=\(PyRepr.list([degrees.0, degrees.1])), interpolation=\(interpolation), expand=\(PyRepr.bool(expand))"
            if let center { s += ", center=\(PyRepr.tuple(center))" }
            return s + ", fill=\(PyRepr.fill(fill)))"
        }
    }

    /// A random affine map (torchvision's `RandomAffine`): angle in `degrees`, translation up to
    /// `translate` × (width, height), scale in `scale`, shear in `shear` degrees (one value `s`: x shear in
    /// [-s, s]; two: an x range; four: x and y ranges).
    public struct RandomAffine: Transform {
        public let degrees: (Double, Double)
        public let translate: (Double, Double)?
        public let scale: (Double, Double)?
        public let shear: [Double]?
        public let interpolation: InterpolationMode
        public let fill: [Double]
        public let center: [Int]?

        public init(_ degrees: (Double, Double), translate: (Double, Double)? = nil, scale: (Double, Double)? = nil,
                    shear: [Double]? = nil, interpolation: InterpolationMode = .nearest, fill: [Double] = [0], center: [Int]? = nil) {
            if let t = translate { precondition((0...1).contains(t.0) && (0...1).contains(t.1), "translation values should be between 0 and 1") }
            if let s = scale { precondition(s.0 > 0 && s.1 > 0, "scale values should be positive") }
            if let shear {
                precondition([1, 2, 4].contains(shear.count), "shear should be a single number or a sequence of 2 or 4 values, got \(shear)")
                if shear.count == 1 { precondition(shear[0] >= 0, "If shear is a single number, it must be positive.") }
            }
            self.degrees = degrees
            self.translate = translate
            self.scale = scale
            self.shear = shear.map { $0.count == 1 ? [-$0[0], $0[0]] : $0 }
            self.interpolation = interpolation
            self.fill = fill
            self.center = center
        }

        public init(_ degrees: Double, translate: (Double, Double)? = nil, scale: (Double, Double)? = nil,
                    shear: [Double]? = nil, interpolation: InterpolationMode = .nearest, fill: [Double] = [0], center: [Int]? = nil) {
            precondition(degrees >= 0, "If degrees is a single number, it must be positive, got \(degrees)")
            self.init((0 - degrees, degrees), translate: translate, scale: scale, shear: shear, interpolation: interpolation,
                      fill: fill, center: center)
        }

        /// Random `(angle, (tx, ty), scale, (shearX, shearY))` for an image of `imageSize` (width, height).
        public static func getParams(degrees: (Double, Double), translate: (Double, Double)?, scaleRanges: (Double, Double)?,
                                     shears: [Double]?, imageSize: (Int, Int)) -> (Double, (Int, Int), Double, (Double, Double)) {
            let angle = RandomDraw.uniform(degrees.0, degrees.1)
            var t = (0, 0)
            if let translate {
                let dx = translate.0 * Double(imageSize.0), dy = translate.1 * Double(imageSize.1)
                let tx = Int(RandomDraw.uniform(-dx, dx).rounded(.toNearestOrEven))
                let ty = Int(RandomDraw.uniform(-dy, dy).rounded(.toNearestOrEven))
                t = (tx, ty)
            }
            let scale = scaleRanges.map { RandomDraw.uniform($0.0, $0.1) } ?? 1
            var sh = (0.0, 0.0)
            if let shears {
                sh.0 = RandomDraw.uniform(shears[0], shears[1])
                if shears.count == 4 { sh.1 = RandomDraw.uniform(shears[2], shears[3]) }
            }
            return (angle, t, scale, sh)
        }

        public func callAsFunction(_ input: Tensor) -> Tensor {
            let d = TF.getDimensions(input)
            let (angle, t, s, sh) = Self.getParams(degrees: degrees, translate: translate, scaleRanges: scale, shears: shear,
                                                   imageSize: (d[2], d[1]))
            return TF.affine(input, angle: angle, translate: [t.0, t.1], scale: s, shear: [sh.0, sh.1],
                             interpolation: interpolation, fill: transforms.fillList(fill, channels: d[0]), center: center)
        }

        /// A picture is warped the way Pillow warps it (fill `fill`), as torchvision does for PIL images.
        public func apply(_ sample: Sample) -> Sample {
            guard case .image(let pixels) = sample else { return .tensor(callAsFunction(sample.value)) }
            let (w, h) = (pixels.shape[2], pixels.shape[1])
            let (angle, t, s, sh) = Self.getParams(degrees: degrees, translate: translate, scaleRanges: scale, shears: shear,
                                                   imageSize: (w, h))
            return .image(functional.affine(Image(tensor: pixels), angle: angle, translate: [t.0, t.1], scale: s, shear: [sh.0, sh.1],
                                            interpolation: interpolation, fill: fill, center: center).tensor())
        }

        public var description: String {
            var s = "RandomAffine(degrees=\(PyRepr.list([degrees.0, degrees.1]))"
            if let t = translate { s += ", translate=\(PyRepr.tuple([t.0, t.1]))" }
            if let c = scale { s += ", scale=\(PyRepr.tuple([c.0, c.1]))" }
            if let shear { s += ", shear=\(PyRepr.list(shear))" }
            if interpolation != .nearest { s += ", interpolation=\(interpolation)" }
            if fill != [0] { s += ", fill=\(PyRepr.fill(fill))" }
            if let center { s += ", center=\(PyRepr.tuple(center))" }
            return s + ")"
        }
    }

    /// With probability `p`, moves the corners inward by up to `distortionScale` of half the image
    /// (torchvision's `RandomPerspective`).
    public struct RandomPerspective: Transform {
        public let distortionScale: Double
        public let p: Double
        public let interpolation: InterpolationMode
        public let fill: [Double]

        public init(distortionScale: Double = 0.5, p: Double = 0.5, interpolation: InterpolationMode = .bilinear, fill: [Double] = [0]) {
            precondition((0...1).contains(distortionScale), "Argument distortion_scale value should be between 0 and 1")
            self.distortionScale = distortionScale
            self.p = p
            self.interpolation = interpolation
            self.fill = fill
        }

        /// Random `(startpoints, endpoints)`: the image corners (top-left, top-right, bottom-right,
        /// bottom-left, as (x, y)) and where they move.
        public static func getParams(width: Int, height: Int, distortionScale: Double) -> ([[Int]], [[Int]]) {
            let dx = Int(distortionScale * Double(width / 2)), dy = Int(distortionScale * Double(height / 2))
            let topLeft = [RandomDraw.randint(0, dx + 1), RandomDraw.randint(0, dy + 1)]
            let topRight = [RandomDraw.randint(width - dx - 1, width), RandomDraw.randint(0, dy + 1)]
            let bottomRight = [RandomDraw.randint(width - dx - 1, width), RandomDraw.randint(height - dy - 1, height)]
            let bottomLeft = [RandomDraw.randint(0, dx + 1), RandomDraw.randint(height - dy - 1, height)]
            let start = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
            return (start, [topLeft, topRight, bottomRight, bottomLeft])
        }

        public func callAsFunction(_ input: Tensor) -> Tensor {
            let d = TF.getDimensions(input)
            guard RandomDraw.chance(p) else { return input }
            let (start, end) = Self.getParams(width: d[2], height: d[1], distortionScale: distortionScale)
            return TF.perspective(input, start, end, interpolation: interpolation, fill: transforms.fillList(fill, channels: d[0]))
        }

        /// A picture is warped the way Pillow warps it (fill `fill`), as torchvision does for PIL images.
        public func apply(_ sample: Sample) -> Sample {
            guard case .image(let pixels) = sample else { return .tensor(callAsFunction(sample.value)) }
            guard RandomDraw.chance(p) else { return sample }
            let (start, end) = Self.getParams(width: pixels.shape[2], height: pixels.shape[1], distortionScale: distortionScale)
            return .image(functional.perspective(Image(tensor: pixels), start, end, interpolation: interpolation, fill: fill).tensor())
        }

        public var description: String { "RandomPerspective(p=\(PyRepr.float(p)))" }
    }
}

extension transforms {
    /// Displaces pixels by smooth random offsets (uniform noise blurred by a Gaussian of `sigma`, scaled by
    /// `alpha`), torchvision's `ElasticTransform`.
    public struct ElasticTransform: Transform {
        /// Displacement strength in x and y.
        public let alpha: [Double]
        /// Smoothness in x and y.
        public let sigma: [Double]
        public let interpolation: InterpolationMode
        public let fill: [Double]

        public init(alpha: [Double] = [50], sigma: [Double] = [5], interpolation: InterpolationMode = .bilinear, fill: [Double] = [0]) {
            precondition(alpha.count == 1 || alpha.count == 2, "If alpha is a sequence its length should be one of 2. Got \(alpha.count)")
            precondition(sigma.count == 1 || sigma.count == 2, "If sigma is a sequence its length should be 2. Got \(sigma.count)")
            self.alpha = alpha.count == 1 ? [alpha[0], alpha[0]] : alpha
            self.sigma = sigma.count == 1 ? [sigma[0], sigma[0]] : sigma
            self.interpolation = interpolation
            self.fill = fill
        }

        public init(alpha: Double, sigma: Double = 5, interpolation: InterpolationMode = .bilinear, fill: [Double] = [0]) {
            self.init(alpha: [alpha], sigma: [sigma], interpolation: interpolation, fill: fill)
        }

        /// A random displacement field (1×H×W×2) for an image of `size` (height, width).
        public static func getParams(alpha: [Double], sigma: [Double], size: [Int]) -> Tensor {
            func field(_ k: Int) -> Tensor {
                var d = torch.rand([1, 1] + size) * 2 - 1
                if sigma[k] > 0 {
                    var ks = Int(8 * sigma[k] + 1)
                    if ks % 2 == 0 { ks += 1 }
                    d = functional.gaussianBlur(d, kernelSize: [ks, ks], sigma: sigma)
                }
                return d * alpha[k] / Double(size[1 - k])
            }
            let dx = field(0), dy = field(1)
            return torch.cat([dx, dy], dim: 1).permute(0, 2, 3, 1).contiguous()
        }

        public func callAsFunction(_ input: Tensor) -> Tensor {
            let d = functional.getDimensions(input)
            let displacement = Self.getParams(alpha: alpha, sigma: sigma, size: [d[1], d[2]])
            return functional.elasticTransform(input, displacement, interpolation: interpolation, fill: fill)
        }

        public var description: String {
            "ElasticTransform(alpha=\(PyRepr.list(alpha)), sigma=\(PyRepr.list(sigma)), "
                + "interpolation=InterpolationMode.\(interpolation.rawValue.uppercased()), fill=\(PyRepr.list(fill)))"
        }
    }
}
