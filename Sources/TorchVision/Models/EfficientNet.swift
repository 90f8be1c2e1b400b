import Torch

extension models {
    /// torchvision's `ops.StochasticDepth`: in training, zeroes the whole input (`"batch"`) or each
    /// sample (`"row"`) with probability `p` and scales the survivors by 1/(1−p); identity in eval mode.
    ///
    /// Not in Torch's `nn`; it lives here because only EfficientNet uses it.
    public final class StochasticDepth: nn.Module {
        public enum Mode: String, Sendable { case batch, row }
        public let p: Double
        public let mode: Mode

        public init(_ p: Double, mode: Mode) {
            precondition(p >= 0 && p <= 1, "drop probability has to be between 0 and 1, but got \(p)")
            self.p = p
            self.mode = mode
            super.init()
        }

        public override func forward(_ x: Tensor) -> Tensor {
            if !training || p == 0 { return x }
            let survival = 1 - p
            let size = mode == .row ? [x.size(0)] + [Int](repeating: 1, count: x.dim - 1) : [Int](repeating: 1, count: x.dim)
            var noise = (torch.rand(size, dtype: x.dtype) .< survival).to(x.dtype)
            if survival > 0 { noise = noise / survival }
            return x * noise
        }

        public override func extraRepr() -> String { "p=\(p), mode=\(mode.rawValue)" }
    }

    /// One EfficientNet stage: expansion ratio, kernel, first stride, channels in/out and block count
    /// (scaled by the width and depth multipliers).
    public struct MBConvConfig: Sendable {
        public let expandRatio: Double
        public let kernel: Int
        public let stride: Int
        public let inputChannels: Int
        public let outChannels: Int
        public let numLayers: Int

        public init(_ expandRatio: Double, _ kernel: Int, _ stride: Int, _ inputChannels: Int, _ outChannels: Int,
                    _ numLayers: Int, widthMult: Double = 1, depthMult: Double = 1) {
            self.expandRatio = expandRatio
            self.kernel = kernel
            self.stride = stride
            self.inputChannels = makeDivisible(Double(inputChannels) * widthMult, 8)
            self.outChannels = makeDivisible(Double(outChannels) * widthMult, 8)
            self.numLayers = Int((Double(numLayers) * depthMult).rounded(.up))
        }
    }

    /// EfficientNet's mobile inverted bottleneck, in `block`: optional 1×1 expansion, depthwise k×k,
    /// squeeze-and-excitation (SiLU, sigmoid gate), linear 1×1 projection, all with BN; SiLU activations.
    /// When shapes allow, the branch goes through `stochasticDepth` and the input is added.
    public final class MBConv: nn.Module {
        public var block: nn.Module
        public var stochasticDepth: nn.Module
        public let outChannels: Int
        let useResConnect: Bool

        public init(inputChannels: Int, outChannels: Int, expandRatio: Double, kernel: Int, stride: Int,
                    stochasticDepthProb: Double, norm: @escaping (Int) -> nn.Module) {
            precondition(1 <= stride && stride <= 2, "illegal stride value")
            useResConnect = stride == 1 && inputChannels == outChannels
            let act: () -> nn.Module = { nn.SiLU(inplace: true) }
            let expanded = makeDivisible(Double(inputChannels) * expandRatio, 8)
            var layers: [nn.Module] = []
            if expanded != inputChannels {
                layers.append(Conv2dNormActivation(inputChannels, expanded, kernelSize: 1, norm: norm, activation: act))
            }
            layers.append(Conv2dNormActivation(expanded, expanded, kernelSize: kernel, stride: stride, groups: expanded,
                                               norm: norm, activation: act))
            layers.append(SqueezeExcitation(expanded, Swift.max(1, inputChannels / 4), activation: nn.SiLU(inplace: true)))
            layers.append(Conv2dNormActivation(expanded, outChannels, kernelSize: 1, norm: norm, activation: nil))
            block = nn.Sequential(layers)
            stochasticDepth = StochasticDepth(stochasticDepthProb, mode: .row)
            self.outChannels = outChannels
            super.init()
        }

        public override func forward(_ x: Tensor) -> Tensor {
            let y = block(x)
            return useResConnect ? stochasticDepth(y) + x : y
        }
    }

    /// torchvision's EfficientNet (V1): `features` (SiLU stem, one Sequential of ``MBConv`` blocks per stage,
    /// a 1×1 conv to 4× the last stage's channels), `avgpool`, `classifier` (dropout, linear). Stochastic
    /// depth grows linearly with the block index up to `stochasticDepthProb`. Convolutions kaiming-normal
    /// (fan-out), BN ones/zeros, the linear uniform in ±1/√outFeatures.
    public final class EfficientNet: nn.Module {
        public var features: nn.Module
        public var avgpool: nn.Module
        public var classifier: nn.Module

        public init(_ setting: [MBConvConfig], dropout: Double, stochasticDepthProb: Double = 0.2, numClasses: Int = 1000,
                    lastChannel: Int? = nil) {
            precondition(!setting.isEmpty, "The inverted_residual_setting should not be empty")
            let norm: (Int) -> nn.Module = { nn.BatchNorm2d($0) }
            var layers: [nn.Module] = [
                Conv2dNormActivation(3, setting[0].inputChannels, kernelSize: 3, stride: 2, norm: norm,
                                     activation: { nn.SiLU(inplace: true) }),
            ]
            let total = setting.reduce(0) { $0 + $1.numLayers }
            var blockID = 0
            for cnf in setting {
                var stage: [nn.Module] = []
                for i in 0..<cnf.numLayers {
                    stage.append(MBConv(inputChannels: i == 0 ? cnf.inputChannels : cnf.outChannels,
                                        outChannels: cnf.outChannels, expandRatio: cnf.expandRatio, kernel: cnf.kernel,
                                        stride: i == 0 ? cnf.stride : 1,
                                        stochasticDepthProb: stochasticDepthProb * Double(blockID) / Double(total), norm: norm))
                    blockID += 1
                }
                layers.append(nn.Sequential(stage))
            }
            let lastIn = setting[setting.count - 1].outChannels
            let lastOut = lastChannel ?? 4 * lastIn
            layers.append(Conv2dNormActivation(lastIn, lastOut, kernelSize: 1, norm: norm, activation: { nn.SiLU(inplace: true) }))
            features = nn.Sequential(layers)
            avgpool = nn.AdaptiveAvgPool2d(1)
            classifier = nn.Sequential(nn.Dropout(p: dropout, inplace: true), nn.Linear(lastOut, numClasses))
            super.init()
            initWeights(self, linearStd: nil)
            for m in modules() {
                guard let l = m as? nn.Linear else { continue }
                let r = 1 / Double(l.outFeatures).squareRoot()
                nn.init_.uniform_(l.weight, -r, r)
                if let b = l.bias { nn.init_.zeros_(b) }
            }
        }

        public override func forward(_ x: Tensor) -> Tensor {
            classifier(avgpool(features(x)).flatten(startDim: 1))
        }

        /// The seven stages of EfficientNet-B0, scaled by `widthMult` and `depthMult` (B1–B7's compound scaling).
        public static func config(widthMult: Double = 1, depthMult: Double = 1) -> [MBConvConfig] {
            [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
             (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1)].map {
                MBConvConfig(Double($0.0), $0.1, $0.2, $0.3, $0.4, $0.5, widthMult: widthMult, depthMult: depthMult)
            }
        }
    }
}

extension models.Weights {
    public static let efficientnetB0ImageNet1kV1 = models.Weights(
        name: "EfficientNet_B0_Weights.IMAGENET1K_V1", arch: "efficientnet_b0",
        url: "https://download.pytorch.org/models/efficientnet_b0_rwightman-7f5810bc.pth")
}

extension models {
    /// EfficientNet-B0 (dropout 0.2), randomly initialised (torchvision's `efficientnet_b0()`).
    public static func efficientnetB0(numClasses: Int = 1000) -> EfficientNet {
        EfficientNet(EfficientNet.config(), dropout: 0.2, numClasses: numClasses)
    }
    /// EfficientNet-B0 with `weights` from the hub cache. - Throws: ``WeightsError``.
    public static func efficientnetB0(weights: Weights, numClasses: Int? = nil) throws -> EfficientNet {
        try build("efficientnet_b0", weights, numClasses) { efficientnetB0(numClasses: $0) }
    }
    /// EfficientNet-B0; `pretrained: true` loads `.efficientnetB0ImageNet1kV1`. - Throws: ``WeightsError``.
    public static func efficientnetB0(pretrained: Bool, numClasses: Int? = nil) throws -> EfficientNet {
        try build("efficientnet_b0", pretrained ? .efficientnetB0ImageNet1kV1 : nil, numClasses) { efficientnetB0(numClasses: $0) }
    }
}
