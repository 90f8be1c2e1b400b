import Torch

extension transforms {
    /// Applies all `transforms` in order with probability `p`, none otherwise (torchvision's `RandomApply`).
    public struct RandomApply: Transform {
        public let transforms: [any Transform]
        public let p: Double

        public init(_ transforms: [any Transform], p: Double = 0.5) {
            self.transforms = transforms
            self.p = p
        }

        public func callAsFunction(_ input: Tensor) -> Tensor { apply(.tensor(input)).value }

        public func apply(_ sample: transforms.Sample) -> transforms.Sample {
            // torchvision skips when p < rand(), i.e. applies when rand() <= p.
            if p < torch.rand([1]).item() { return sample }
            return transforms.reduce(sample) { s, t in t.apply(s) }
        }

        public var description: String {
            "RandomApply(\n    p=\(PyRepr.float(p))" + transforms.map { "\n    \($0)" }.joined() + "\n)"
        }
    }

    /// Applies one of `transforms`, picked at random (weighted by `p` when given) (torchvision's `RandomChoice`).
    public struct RandomChoice: Transform {
        public let transforms: [any Transform]
        public let p: [Double]?

        public init(_ transforms: [any Transform], p: [Double]? = nil) {
            precondition(!transforms.isEmpty, "RandomChoice: transforms must not be empty")
            precondition(p == nil || p!.count == transforms.count,
                         "Length of p doesn't match the number of transforms: \(p?.count ?? 0) != \(transforms.count)")
            self.transforms = transforms
            self.p = p
        }

        public func callAsFunction(_ input: Tensor) -> Tensor { apply(.tensor(input)).value }

        public func apply(_ sample: transforms.Sample) -> transforms.Sample {
            var k = 0
            if let p {
                let u = torch.rand([1], dtype: .float64).item() * p.reduce(0, +)
                var acc = 0.0
                k = p.count - 1
                for (i, w) in p.enumerated() { acc += w; if u < acc { k = i; break } }
            } else {
                k = RandomDraw.randint(0, transforms.count)
            }
            return transforms[k].apply(sample)
        }

        public var description: String {
            "RandomChoice(" + transforms.map { "\n    \($0)" }.joined() + "\n)(p=\(p.map(PyRepr.list) ?? "None"))"
        }
    }

    /// Applies `transforms` in a random order (torchvision's `RandomOrder`).
    public struct RandomOrder: Transform {
        public let transforms: [any Transform]

        public init(_ transforms: [any Transform]) { self.transforms = transforms }

        public func callAsFunction(_ input: Tensor) -> Tensor { apply(.tensor(input)).value }

        public func apply(_ sample: transforms.Sample) -> transforms.Sample {
            RandomDraw.permutation(transforms.count).reduce(sample) { s, i in transforms[i].apply(s) }
        }

        public var description: String { "RandomOrder(" + transforms.map { "\n    \($0)" }.joined() + "\n)" }
    }
}
