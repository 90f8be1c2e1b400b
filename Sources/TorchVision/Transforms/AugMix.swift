import Torch

private typealias TF = transforms.functional

extension transforms {
    /// AugMix (torchvision's `AugMix`): `mixtureWidth` chains of 1–3 (or `chainDepth`) random operations at
    /// a random magnitude up to `severity`, mixed with Dirichlet(`alpha`) weights and blended with the original
    /// by a Beta(`alpha`, `alpha`) weight. For uint8 images; pictures are mixed as tensors, as in torchvision.
    ///
    /// ```swift
    /// let t = transforms.AugMix()
    /// let augmented = t(image)          // uint8 C×H×W
    /// ```
    ///
    /// Images with leading batch dimensions draw one pair of weights per entry of the first dimension and
    /// share the chains' operations, as torchvision does.
    public struct AugMix: Transform {
        public let severity: Int, mixtureWidth: Int, chainDepth: Int
        public let alpha: Double
        public let allOps: Bool
        public let interpolation: InterpolationMode
        public let fill: [Double]?

        public init(severity: Int = 3, mixtureWidth: Int = 3, chainDepth: Int = -1, alpha: Double = 1.0, allOps: Bool = true,
                    interpolation: InterpolationMode = .bilinear, fill: [Double]? = nil) {
            precondition((1...10).contains(severity), "The severity must be between [1, 10]. Got \(severity) instead.")
            self.severity = severity
            self.mixtureWidth = mixtureWidth
            self.chainDepth = chainDepth
            self.alpha = alpha
            self.allOps = allOps
            self.interpolation = interpolation
            self.fill = fill
        }

        public func callAsFunction(_ input: Tensor) -> Tensor {
            mix(input, fill: fill.map { transforms.fillList($0, channels: TF.getDimensions(input)[0]) })
        }

        /// A picture is mixed through the tensor operations and stays a picture.
        public func apply(_ sample: Sample) -> Sample {
            switch sample {
            case .image(let pixels): return .image(mix(pixels, fill: fill))
            case .tensor(let t): return .tensor(callAsFunction(t))
            }
        }

        private func mix(_ img: Tensor, fill: [Double]?) -> Tensor {
            let d = TF.getDimensions(img)
            let space = AugmentSpace.augMix(allOps: allOps)
            let ops = space.ops
            let batch = img.view([Int](repeating: 1, count: max(4 - img.dim, 0)) + img.shape)
            let n = batch.shape[0]
            let batchDims = [n] + [Int](repeating: 1, count: batch.dim - 1)
            func dirichlet(_ k: Int) -> Tensor {
                torch._sampleDirichlet(Tensor([Double](repeating: alpha, count: k), shape: [k]).to(torch.defaultDType).expand(n, -1))
                    .to(img.device)
            }
            let m = dirichlet(2)
            let combined = dirichlet(mixtureWidth) * m.select(1, 1).reshape(n, -1)
            let mixed = m.select(1, 0).reshape(batchDims) * batch
            for i in 0..<mixtureWidth {
                var aug = img
                let depth = chainDepth > 0 ? chainDepth : RandomDraw.randint(1, 4)
                for _ in 0..<depth {
                    let op = ops[RandomDraw.randint(0, ops.count)]
                    let (table, signed) = space.magnitudes(op, bins: 10, imageSize: (d[1], d[2]))
                    var magnitude = table.isEmpty ? 0 : table[RandomDraw.randint(0, severity)]
                    if signed && RandomDraw.randint(0, 2) != 0 { magnitude = -magnitude }
                    aug = op.apply(aug, magnitude: magnitude, interpolation: interpolation, fill: fill)
                }
                mixed.add_((combined.select(1, i).reshape(batchDims) * aug).reshape(batch.shape))
            }
            return mixed.view(img.shape).to(img.dtype)
        }

        public var description: String {
            "AugMix(severity=\(severity), mixture_width=\(mixtureWidth), chain_depth=\(chainDepth), alpha=\(PyRepr.float(alpha)), "
                + "all_ops=\(PyRepr.bool(allOps)), interpolation=InterpolationMode.\(interpolation.rawValue.uppercased()), "
                + "fill=\(fill.map(PyRepr.fill) ?? "None"))"
        }
    }
}
