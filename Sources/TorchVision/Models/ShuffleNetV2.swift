import Torch

extension models {
    /// ShuffleNetV2's unit (torchvision's `shufflenetv2.InvertedResidual`): at stride 1 half the channels
    /// pass through and the other half go through `branch2`; at stride 2 both `branch1` and `branch2`
    /// see the whole input. The halves are concatenated and their channels shuffled in 2 groups.
    public final class ShuffleInvertedResidual: nn.Module {
        /// torchvision's class name, as `print(model)` shows it.
        public override var typeName: String { "InvertedResidual" }
        public var branch1: nn.Module
        public var branch2: nn.Module
        public let stride: Int

        public init(_ inp: Int, _ oup: Int, stride: Int) {
            precondition(1 <= stride && stride <= 3, "illegal stride value")
            let bf = oup / 2
            precondition(stride != 1 || inp == bf * 2,
                         "Invalid combination of stride \(stride), inp \(inp) and oup \(oup) values. If stride == 1 then inp should be equal to oup // 2 << 1.")
            func depthwise(_ c: Int) -> nn.Module {
                nn.Conv2d(c, c, kernelSize: 3, stride: stride, padding: 1, groups: c, bias: false)
            }
            if stride > 1 {
                branch1 = nn.Sequential(
                    depthwise(inp), nn.BatchNorm2d(inp),
                    nn.Conv2d(inp, bf, kernelSize: 1, stride: 1, padding: 0, bias: false), nn.BatchNorm2d(bf),
                    nn.ReLU(inplace: true))
            } else {
                branch1 = nn.Sequential()
            }
            branch2 = nn.Sequential(
                nn.Conv2d(stride > 1 ? inp : bf, bf, kernelSize: 1, stride: 1, padding: 0, bias: false), nn.BatchNorm2d(bf),
                nn.ReLU(inplace: true),
                depthwise(bf), nn.BatchNorm2d(bf),
                nn.Conv2d(bf, bf, kernelSize: 1, stride: 1, padding: 0, bias: false), nn.BatchNorm2d(bf),
                nn.ReLU(inplace: true))
            self.stride = stride
            super.init()
        }

        public override func forward(_ x: Tensor) -> Tensor {
            let out: Tensor
            if stride == 1 {
                let halves = x.chunk(2, dim: 1)
                out = torch.cat([halves[0], branch2(halves[1])], dim: 1)
            } else {
                out = torch.cat([branch1(x), branch2(x)], dim: 1)
            }
            return models.channelShuffle(out, groups: 2)
        }
    }

    /// Interleaves the channels of `[N, C, H, W]` across `groups` groups (ShuffleNet's channel shuffle).
    static func channelShuffle(_ x: Tensor, groups: Int) -> Tensor {
        let (n, c, h, w) = (x.size(0), x.size(1), x.size(2), x.size(3))
        return x.view(n, groups, c / groups, h, w).transpose(1, 2).contiguous().view(n, c, h, w)
    }

    /// torchvision's ShuffleNetV2: `conv1` (3×3 stride 2 + BN + ReLU), `maxpool`, `stage2`…`stage4`,
    /// `conv5` (1×1 + BN + ReLU), global mean, and `fc`. PyTorch's default layer initialisation.
    public final class ShuffleNetV2: nn.Module {
        public var conv1: nn.Module
        public var maxpool: nn.Module
        public var stage2: nn.Module
        public var stage3: nn.Module
        public var stage4: nn.Module
        public var conv5: nn.Module
        public var fc: nn.Module

        /// - Parameters:
        ///   - stagesRepeats: units in stages 2–4.
        ///   - stagesOutChannels: channels after conv1, stages 2–4 and conv5.
        ///   - numClasses: outputs of the final linear layer.
        public init(stagesRepeats: [Int], stagesOutChannels: [Int], numClasses: Int = 1000) {
            precondition(stagesRepeats.count == 3, "expected stages_repeats as list of 3 positive ints")
            precondition(stagesOutChannels.count == 5, "expected stages_out_channels as list of 5 positive ints")
            var inputChannels = stagesOutChannels[0]
            conv1 = nn.Sequential(nn.Conv2d(3, inputChannels, 3, stride: 2, padding: 1, bias: false),
                                  nn.BatchNorm2d(inputChannels), nn.ReLU(inplace: true))
            maxpool = nn.MaxPool2d(kernelSize: 3, stride: 2, padding: 1)
            var stages: [nn.Module] = []
            for (repeats, out) in zip(stagesRepeats, stagesOutChannels[1...4]) {
                var seq: [nn.Module] = [ShuffleInvertedResidual(inputChannels, out, stride: 2)]
                for _ in 1..<Swift.max(repeats, 1) { seq.append(ShuffleInvertedResidual(out, out, stride: 1)) }
                stages.append(nn.Sequential(seq))
                inputChannels = out
            }
            (stage2, stage3, stage4) = (stages[0], stages[1], stages[2])
            let last = stagesOutChannels[4]
            conv5 = nn.Sequential(nn.Conv2d(inputChannels, last, 1, stride: 1, padding: 0, bias: false),
                                  nn.BatchNorm2d(last), nn.ReLU(inplace: true))
            fc = nn.Linear(last, numClasses)
            super.init()
        }

        public override func forward(_ x: Tensor) -> Tensor {
            let y = conv5(stage4(stage3(stage2(maxpool(conv1(x))))))
            return fc(y.mean(dim: [2, 3]))
        }
    }
}

extension models.Weights {
    public static let shufflenetV2_x1_0ImageNet1kV1 = models.Weights(
        name: "ShuffleNet_V2_X1_0_Weights.IMAGENET1K_V1", arch: "shufflenet_v2_x1_0",
        url: "https://download.pytorch.org/models/shufflenetv2_x1-5666bf0f80.pth")
}

extension models {
    /// ShuffleNetV2 ×1.0 (repeats [4, 8, 4], channels [24, 116, 232, 464, 1024]), randomly initialised.
    public static func shufflenetV2_x1_0(numClasses: Int = 1000) -> ShuffleNetV2 {
        ShuffleNetV2(stagesRepeats: [4, 8, 4], stagesOutChannels: [24, 116, 232, 464, 1024], numClasses: numClasses)
    }
    /// ShuffleNetV2 ×1.0 with `weights` from the hub cache. - Throws: ``WeightsError``.
    public static func shufflenetV2_x1_0(weights: Weights, numClasses: Int? = nil) throws -> ShuffleNetV2 {
        try build("shufflenet_v2_x1_0", weights, numClasses) { shufflenetV2_x1_0(numClasses: $0) }
    }
    /// ShuffleNetV2 ×1.0; `pretrained: true` loads `.shufflenetV2_x1_0ImageNet1kV1`. - Throws: ``WeightsError``.
    public static func shufflenetV2_x1_0(pretrained: Bool, numClasses: Int? = nil) throws -> ShuffleNetV2 {
        try build("shufflenet_v2_x1_0", pretrained ? .shufflenetV2_x1_0ImageNet1kV1 : nil, numClasses) {
            shufflenetV2_x1_0(numClasses: $0)
        }
    }
}
