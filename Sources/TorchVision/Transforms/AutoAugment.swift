import Torch

private typealias TF = transforms.functional

extension transforms {
    /// The datasets AutoAugment learned its policies on (torchvision's `AutoAugmentPolicy`).
    public enum AutoAugmentPolicy: String, CaseIterable, Sendable, CustomStringConvertible {
        case imagenet, cifar10, svhn

        /// `AutoAugmentPolicy.IMAGENET`, as Python prints the enum.
        public var description: String { "AutoAugmentPolicy.\(rawValue.uppercased())" }

        /// One sub-policy step: the operation, its probability and its magnitude bin (nil: none).
        public typealias Step = (op: AugmentOp, probability: Double, magnitudeBin: Int?)

        /// The 25 two-step sub-policies, in torchvision's order.
        public var subPolicies: [[Step]] {
            switch self {
            case .imagenet:
                return [
                    [(.posterize, 0.4, 8), (.rotate, 0.6, 9)],
                    [(.solarize, 0.6, 5), (.autoContrast, 0.6, nil)],
                    [(.equalize, 0.8, nil), (.equalize, 0.6, nil)],
                    [(.posterize, 0.6, 7), (.posterize, 0.6, 6)],
                    [(.equalize, 0.4, nil), (.solarize, 0.2, 4)],
                    [(.equalize, 0.4, nil), (.rotate, 0.8, 8)],
                    [(.solarize, 0.6, 3), (.equalize, 0.6, nil)],
                    [(.posterize, 0.8, 5), (.equalize, 1.0, nil)],
                    [(.rotate, 0.2, 3), (.solarize, 0.6, 8)],
                    [(.equalize, 0.6, nil), (.posterize, 0.4, 6)],
                    [(.rotate, 0.8, 8), (.color, 0.4, 0)],
                    [(.rotate, 0.4, 9), (.equalize, 0.6, nil)],
                    [(.equalize, 0.0, nil), (.equalize, 0.8, nil)],
                    [(.invert, 0.6, nil), (.equalize, 1.0, nil)],
                    [(.color, 0.6, 4), (.contrast, 1.0, 8)],
                    [(.rotate, 0.8, 8), (.color, 1.0, 2)],
                    [(.color, 0.8, 8), (.solarize, 0.8, 7)],
                    [(.sharpness, 0.4, 7), (.invert, 0.6, nil)],
                    [(.shearX, 0.6, 5), (.equalize, 1.0, nil)],
                    [(.color, 0.4, 0), (.equalize, 0.6, nil)],
                    [(.equalize, 0.4, nil), (.solarize, 0.2, 4)],
                    [(.solarize, 0.6, 5), (.autoContrast, 0.6, nil)],
                    [(.invert, 0.6, nil), (.equalize, 1.0, nil)],
                    [(.color, 0.6, 4), (.contrast, 1.0, 8)],
                    [(.equalize, 0.8, nil), (.equalize, 0.6, nil)],
                ]
            case .cifar10:
                return [
                    [(.invert, 0.1, nil), (.contrast, 0.2, 6)],
                    [(.rotate, 0.7, 2), (.translateX, 0.3, 9)],
                    [(.sharpness, 0.8, 1), (.sharpness, 0.9, 3)],
                    [(.shearY, 0.5, 8), (.translateY, 0.7, 9)],
                    [(.autoContrast, 0.5, nil), (.equalize, 0.9, nil)],
                    [(.shearY, 0.2, 7), (.posterize, 0.3, 7)],
                    [(.color, 0.4, 3), (.brightness, 0.6, 7)],
                    [(.sharpness, 0.3, 9), (.brightness, 0.7, 9)],
                    [(.equalize, 0.6, nil), (.equalize, 0.5, nil)],
                    [(.contrast, 0.6, 7), (.sharpness, 0.6, 5)],
                    [(.color, 0.7, 7), (.translateX, 0.5, 8)],
                    [(.equalize, 0.3, nil), (.autoContrast, 0.4, nil)],
                    [(.translateY, 0.4, 3), (.sharpness, 0.2, 6)],
                    [(.brightness, 0.9, 6), (.color, 0.2, 8)],
                    [(.solarize, 0.5, 2), (.invert, 0.0, nil)],
                    [(.equalize, 0.2, nil), (.autoContrast, 0.6, nil)],
                    [(.equalize, 0.2, nil), (.equalize, 0.6, nil)],
                    [(.color, 0.9, 9), (.equalize, 0.6, nil)],
                    [(.autoContrast, 0.8, nil), (.solarize, 0.2, 8)],
                    [(.brightness, 0.1, 3), (.color, 0.7, 0)],
                    [(.solarize, 0.4, 5), (.autoContrast, 0.9, nil)],
                    [(.translateY, 0.9, 9), (.translateY, 0.7, 9)],
                    [(.autoContrast, 0.9, nil), (.solarize, 0.8, 3)],
                    [(.equalize, 0.8, nil), (.invert, 0.1, nil)],
                    [(.translateY, 0.7, 9), (.autoContrast, 0.9, nil)],
                ]
            case .svhn:
                return [
                    [(.shearX, 0.9, 4), (.invert, 0.2, nil)],
                    [(.shearY, 0.9, 8), (.invert, 0.7, nil)],
                    [(.equalize, 0.6, nil), (.solarize, 0.6, 6)],
                    [(.invert, 0.9, nil), (.equalize, 0.6, nil)],
                    [(.equalize, 0.6, nil), (.rotate, 0.9, 3)],
                    [(.shearX, 0.9, 4), (.autoContrast, 0.8, nil)],
                    [(.shearY, 0.9, 8), (.invert, 0.4, nil)],
                    [(.shearY, 0.9, 5), (.solarize, 0.2, 6)],
                    [(.invert, 0.9, nil), (.autoContrast, 0.8, nil)],
                    [(.equalize, 0.6, nil), (.rotate, 0.9, 3)],
                    [(.shearX, 0.9, 4), (.solarize, 0.3, 3)],
                    [(.shearY, 0.8, 8), (.invert, 0.7, nil)],
                    [(.equalize, 0.9, nil), (.translateY, 0.6, 6)],
                    [(.invert, 0.9, nil), (.equalize, 0.6, nil)],
                    [(.contrast, 0.3, 3), (.rotate, 0.8, 4)],
                    [(.invert, 0.8, nil), (.translateY, 0.0, 2)],
                    [(.shearY, 0.7, 6), (.solarize, 0.4, 8)],
                    [(.invert, 0.6, nil), (.rotate, 0.8, 4)],
                    [(.shearY, 0.3, 7), (.translateX, 0.9, 3)],
                    [(.shearX, 0.1, 6), (.invert, 0.6, nil)],
                    [(.solarize, 0.7, 2), (.translateY, 0.6, 7)],
                    [(.shearY, 0.8, 4), (.invert, 0.8, nil)],
                    [(.shearX, 0.7, 9), (.translateY, 0.8, 3)],
                    [(.shearY, 0.8, 5), (.autoContrast, 0.7, nil)],
                    [(.shearX, 0.7, 2), (.invert, 0.1, nil)],
                ]
            }
        }
    }

    /// AutoAugment (torchvision's `AutoAugment`): one of the policy's 25 sub-policies picked uniformly, each of
    /// its two operations applied with its probability at its fixed magnitude bin (of 10), signed at random.
    /// For uint8 images (tensors, or PIL-style pictures through Pillow's operations, as in torchvision).
    ///
    /// ```swift
    /// let t = transforms.AutoAugment(.cifar10)
    /// let augmented = t(image)          // uint8 C×H×W
    /// ```
    public struct AutoAugment: Transform {
        public let policy: AutoAugmentPolicy
        public let interpolation: InterpolationMode
        public let fill: [Double]?

        public init(_ policy: AutoAugmentPolicy = .imagenet, interpolation: InterpolationMode = .nearest, fill: [Double]? = nil) {
            self.policy = policy
            self.interpolation = interpolation
            self.fill = fill
        }

        /// Same as `init(_:interpolation:fill:)` with the policy labelled.
        public init(policy: AutoAugmentPolicy, interpolation: InterpolationMode = .nearest, fill: [Double]? = nil) {
            self.init(policy, interpolation: interpolation, fill: fill)
        }

        /// The random choices for one image: the sub-policy index, the two probabilities (float32 `rand(2)`)
        /// and the two signs (`randint(2, (2,))`), drawn in that order.
        public static func getParams(transformNum: Int) -> (Int, [Double], [Int]) {
            let id = RandomDraw.randint(0, transformNum)
            let probs = [RandomDraw.uniform(0, 1), RandomDraw.uniform(0, 1)]
            let signs = [RandomDraw.randint(0, 2), RandomDraw.randint(0, 2)]
            return (id, probs, signs)
        }

        public func callAsFunction(_ input: Tensor) -> Tensor { apply(.tensor(input)).value }

        /// Tensors go through the tensor kernels, pictures through Pillow's, as in torchvision.
        public func apply(_ sample: Sample) -> Sample {
            let d = TF.getDimensions(sample.value)
            let policies = policy.subPolicies
            let (id, probs, signs) = Self.getParams(transformNum: policies.count)
            var out = sample
            for (i, step) in policies[id].enumerated() where Float(probs[i]) <= Float(step.probability) {
                let (table, signed) = AugmentSpace.autoAugment.magnitudes(step.op, bins: 10, imageSize: (d[1], d[2]))
                var m = step.magnitudeBin.map { table[$0] } ?? 0
                if signed && signs[i] == 0 { m = -m }
                out = step.op.apply(out, magnitude: m, interpolation: interpolation, fill: fill)
            }
            return out
        }

        public var description: String { "AutoAugment(policy=\(policy), fill=\(fill.map(PyRepr.fill) ?? "None"))" }
    }
}
