import Torch

private typealias TF = transforms.functional

extension transforms {
    /// RandAugment (torchvision's `RandAugment`): `numOps` operations picked uniformly, each with the fixed
    /// `magnitude` bin out of `numMagnitudeBins`, signed at random. For uint8 images.
    public struct RandAugment: Transform {
        public let numOps: Int, magnitude: Int, numMagnitudeBins: Int
        public let interpolation: InterpolationMode
        public let fill: [Double]?

        public init(numOps: Int = 2, magnitude: Int = 9, numMagnitudeBins: Int = 31, interpolation: InterpolationMode = .nearest,
                    fill: [Double]? = nil) {
            precondition(magnitude >= 0 && magnitude < numMagnitudeBins, "RandAugment: magnitude must be in [0, numMagnitudeBins)")
            self.numOps = numOps
            self.magnitude = magnitude
            self.numMagnitudeBins = numMagnitudeBins
            self.interpolation = interpolation
            self.fill = fill
        }

        public func callAsFunction(_ input: Tensor) -> Tensor { apply(.tensor(input)).value }

        /// Tensors go through the tensor kernels, pictures through Pillow's, as in torchvision.
        public func apply(_ sample: Sample) -> Sample {
            let d = TF.getDimensions(sample.value)
            var out = sample
            let ops = AugmentSpace.randAugment.ops
            for _ in 0..<numOps {
                let op = ops[RandomDraw.randint(0, ops.count)]
                let (table, signed) = AugmentSpace.randAugment.magnitudes(op, bins: numMagnitudeBins, imageSize: (d[1], d[2]))
                var m = table.isEmpty ? 0 : table[magnitude]
                if signed && RandomDraw.randint(0, 2) != 0 { m = -m }
                out = op.apply(out, magnitude: m, interpolation: interpolation, fill: fill)
            }
            return out
        }

        public var description: String {
            "RandAugment(num_ops=\(numOps), magnitude=\(magnitude), num_magnitude_bins=\(numMagnitudeBins), "
                + "interpolation=InterpolationMode.\(interpolation.rawValue.uppercased()), fill=\(fill.map(PyRepr.fill) ?? "None"))"
        }
    }

    /// TrivialAugment (torchvision's `TrivialAugmentWide`): one operation and one magnitude bin, both
    /// picked uniformly, signed at random. For uint8 images.
    public struct TrivialAugmentWide: Transform {
        public let numMagnitudeBins: Int
        public let interpolation: InterpolationMode
        public let fill: [Double]?

        public init(numMagnitudeBins: Int = 31, interpolation: InterpolationMode = .nearest, fill: [Double]? = nil) {
            self.numMagnitudeBins = numMagnitudeBins
            self.interpolation = interpolation
            self.fill = fill
        }

        public func callAsFunction(_ input: Tensor) -> Tensor { apply(.tensor(input)).value }

        /// Tensors go through the tensor kernels, pictures through Pillow's, as in torchvision.
        public func apply(_ sample: Sample) -> Sample {
            let d = TF.getDimensions(sample.value)
            let ops = AugmentSpace.trivialAugmentWide.ops
            let op = ops[RandomDraw.randint(0, ops.count)]
            let (table, signed) = AugmentSpace.trivialAugmentWide.magnitudes(op, bins: numMagnitudeBins, imageSize: (d[1], d[2]))
            // Operations without magnitudes draw nothing more, as in torchvision.
            var m = table.isEmpty ? 0 : table[RandomDraw.randint(0, table.count)]
            if signed && RandomDraw.randint(0, 2) != 0 { m = -m }
            return op.apply(sample, magnitude: m, interpolation: interpolation, fill: fill)
        }

        public var description: String {
            "TrivialAugmentWide(num_magnitude_bins=\(numMagnitudeBins), "
                + "interpolation=InterpolationMode.\(interpolation.rawValue.uppercased()), fill=\(fill.map(PyRepr.fill) ?? "None"))"
        }
    }
}
