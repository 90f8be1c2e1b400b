import Torch

extension models {
    /// MNASNet's inverted residual (torchvision's `mnasnet._InvertedResidual`), in `layers`: 1×1
    /// expansion, k×k depthwise, 1×1 projection, with BN (and ReLU but the last); residual when shapes allow.
    public final class MNASNetInvertedResidual: nn.Module {
        /// torchvision's class name, as `print(model)` shows it.
        public override var typeName: String { "_InvertedResidual" }
        public var layers: nn.Module
        let applyResidual: Bool

        public init(_ inCh: Int, _ outCh: Int, kernelSize: Int, stride: Int, expansionFactor: Int, bnMomentum: Double = 0.1) {
            precondition(stride == 1 || stride == 2, "stride should be 1 or 2 instead of \(stride)")
            precondition(kernelSize == 3 || kernelSize == 5, "kernel_size should be 3 or 5 instead of \(kernelSize)")
            let mid = inCh * expansionFactor
            applyResidual = inCh == outCh && stride == 1
            layers = nn.Sequential(
                nn.Conv2d(inCh, mid, 1, bias: false), nn.BatchNorm2d(mid, momentum: bnMomentum), nn.ReLU(inplace: true),
                nn.Conv2d(mid, mid, kernelSize, stride: stride, padding: kernelSize / 2, groups: mid, bias: false),
                nn.BatchNorm2d(mid, momentum: bnMomentum), nn.ReLU(inplace: true),
                nn.Conv2d(mid, outCh, 1, bias: false), nn.BatchNorm2d(outCh, momentum: bnMomentum))
            super.init()
        }

        public override func forward(_ x: Tensor) -> Tensor {
            applyResidual ? layers(x) + x : layers(x)
        }
    }

    /// torchvision's MNASNet (B1 variant): `layers` (stem, six stacks of inverted residuals, a 1×1 conv to
    /// 1280 channels), global mean, `classifier` (dropout, linear). BN momentum 0.0003; convolutions
    /// kaiming-normal (fan-out), the linear kaiming-uniform (fan-out, sigmoid gain).
    public final class MNASNet: nn.Module {
        public var layers: nn.Module
        public var classifier: nn.Module
        /// The depth multiplier.
        public let alpha: Double

        public init(alpha: Double, numClasses: Int = 1000, dropout: Double = 0.2) {
            precondition(alpha > 0, "alpha should be greater than 0.0 instead of \(alpha)")
            self.alpha = alpha
            let m = 1 - 0.9997
            let d = [32, 16, 24, 40, 80, 96, 192, 320].map { MNASNet.roundToMultiple(Double($0) * alpha, 8) }
            func stack(_ i: Int, _ o: Int, _ k: Int, _ s: Int, _ e: Int, _ r: Int) -> nn.Module {
                nn.Sequential([MNASNetInvertedResidual(i, o, kernelSize: k, stride: s, expansionFactor: e, bnMomentum: m)]
                    + (1..<r).map { _ in MNASNetInvertedResidual(o, o, kernelSize: k, stride: 1, expansionFactor: e, bnMomentum: m) })
            }
            layers = nn.Sequential(
                nn.Conv2d(3, d[0], 3, stride: 2, padding: 1, bias: false), nn.BatchNorm2d(d[0], momentum: m), nn.ReLU(inplace: true),
                nn.Conv2d(d[0], d[0], 3, stride: 1, padding: 1, groups: d[0], bias: false), nn.BatchNorm2d(d[0], momentum: m),
                nn.ReLU(inplace: true),
                nn.Conv2d(d[0], d[1], 1, stride: 1, padding: 0, bias: false), nn.BatchNorm2d(d[1], momentum: m),
                stack(d[1], d[2], 3, 2, 3, 3), stack(d[2], d[3], 5, 2, 3, 3), stack(d[3], d[4], 5, 2, 6, 3),
                stack(d[4], d[5], 3, 1, 6, 2), stack(d[5], d[6], 5, 2, 6, 4), stack(d[6], d[7], 3, 1, 6, 1),
                nn.Conv2d(d[7], 1280, 1, stride: 1, padding: 0, bias: false), nn.BatchNorm2d(1280, momentum: m),
                nn.ReLU(inplace: true))
            classifier = nn.Sequential(nn.Dropout(p: dropout, inplace: true), nn.Linear(1280, numClasses))
            super.init()
            for mod in modules() {
                if let c = mod as? nn.Conv2d {
                    nn.init_.kaimingNormal_(c.weight, mode: .fanOut, nonlinearity: .relu)
                    if let b = c.bias { nn.init_.zeros_(b) }
                } else if let bn = mod as? nn.BatchNorm2d {
                    nn.init_.ones_(bn.weight!)
                    nn.init_.zeros_(bn.bias!)
                } else if let l = mod as? nn.Linear {
                    nn.init_.kaimingUniform_(l.weight, mode: .fanOut, nonlinearity: .sigmoid)
                    if let b = l.bias { nn.init_.zeros_(b) }
                }
            }
        }

        public override func forward(_ x: Tensor) -> Tensor {
            classifier(layers(x).mean(dim: [2, 3]))
        }

        /// `val` rounded to a multiple of `divisor`, rounding up unless that is more than 10% above.
        static func roundToMultiple(_ val: Double, _ divisor: Int, roundUpBias: Double = 0.9) -> Int {
            let v = Swift.max(divisor, Int(val + Double(divisor) / 2) / divisor * divisor)
            return Double(v) >= roundUpBias * val ? v : v + divisor
        }
    }
}

extension models.Weights {
    public static let mnasnet1_0ImageNet1kV1 = models.Weights(
        name: "MNASNet1_0_Weights.IMAGENET1K_V1", arch: "mnasnet1_0",
        url: "https://download.pytorch.org/models/mnasnet1.0_top1_73.512-f206786ef8.pth")
}

extension models {
    /// MNASNet with depth multiplier 1.0, randomly initialised (torchvision's `mnasnet1_0()`).
    public static func mnasnet1_0(numClasses: Int = 1000) -> MNASNet { MNASNet(alpha: 1.0, numClasses: numClasses) }
    /// MNASNet 1.0 with `weights` from the hub cache. - Throws: ``WeightsError``.
    public static func mnasnet1_0(weights: Weights, numClasses: Int? = nil) throws -> MNASNet {
        try build("mnasnet1_0", weights, numClasses) { mnasnet1_0(numClasses: $0) }
    }
    /// MNASNet 1.0; `pretrained: true` loads `.mnasnet1_0ImageNet1kV1`. - Throws: ``WeightsError``.
    public static func mnasnet1_0(pretrained: Bool, numClasses: Int? = nil) throws -> MNASNet {
        try build("mnasnet1_0", pretrained ? .mnasnet1_0ImageNet1kV1 : nil, numClasses) { mnasnet1_0(numClasses: $0) }
    }
}
