import Torch

extension models {
    /// torchvision's `Conv2dNormActivation`: a Sequential of a convolution (padding that keeps the
    /// size at stride 1, bias only without a norm), a norm layer and an activation, named `0`, `1`, `2`.
    ///
    /// ```swift
    /// let stem = models.Conv2dNormActivation(3, 32, stride: 2, activation: { nn.ReLU6(inplace: true) })
    /// ```
    public final class Conv2dNormActivation: nn.Sequential {
        /// Channels of the output.
        public let outChannels: Int

        /// - Parameters:
        ///   - inChannels: channels of the input.
        ///   - outChannels: channels of the output.
        ///   - kernelSize: the convolution's kernel size.
        ///   - stride: the convolution's stride.
        ///   - padding: the convolution's padding (nil: `(kernelSize - 1) / 2 * dilation`).
        ///   - groups: the convolution's groups.
        ///   - dilation: the convolution's dilation.
        ///   - norm: builds the norm layer for the output channels (nil: none, and the conv gets a bias).
        ///   - activation: builds the activation (nil: none).
        public init(_ inChannels: Int, _ outChannels: Int, kernelSize: Int = 3, stride: Int = 1, padding: Int? = nil,
                    groups: Int = 1, dilation: Int = 1,
                    norm: ((Int) -> nn.Module)? = { nn.BatchNorm2d($0) },
                    activation: (() -> nn.Module)? = { nn.ReLU(inplace: true) }) {
            self.outChannels = outChannels
            var layers: [nn.Module] = [
                nn.Conv2d(inChannels, outChannels, kernelSize: kernelSize, stride: stride,
                          padding: padding ?? (kernelSize - 1) / 2 * dilation, dilation: dilation, groups: groups,
                          bias: norm == nil),
            ]
            if let norm { layers.append(norm(outChannels)) }
            if let activation { layers.append(activation()) }
            super.init(layers)
        }
    }

    /// torchvision's `SqueezeExcitation`: global average pooling, `fc1` (1×1 conv down to `squeezeChannels`),
    /// an activation, `fc2` (back up), a gate (sigmoid or hard sigmoid) multiplying the input per channel.
    public final class SqueezeExcitation: nn.Module {
        public var avgpool: nn.Module
        public var fc1: nn.Module
        public var fc2: nn.Module
        public var activation: nn.Module
        public var scaleActivation: nn.Module

        public init(_ inputChannels: Int, _ squeezeChannels: Int, activation: nn.Module = nn.ReLU(),
                    scaleActivation: nn.Module = nn.Sigmoid()) {
            avgpool = nn.AdaptiveAvgPool2d(1)
            fc1 = nn.Conv2d(inputChannels, squeezeChannels, 1)
            fc2 = nn.Conv2d(squeezeChannels, inputChannels, 1)
            self.activation = activation
            self.scaleActivation = scaleActivation
            super.init()
        }

        public override func forward(_ x: Tensor) -> Tensor {
            let scale = scaleActivation(fc2(activation(fc1(avgpool(x)))))
            return scale * x
        }
    }
}
