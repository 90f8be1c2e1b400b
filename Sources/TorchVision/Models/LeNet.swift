import Torch

extension models {
    /// Tutorial 001's LeNet-5 for 3×32×32 images: `features` (conv 5×5 to 6 channels, ReLU, 2×2 max pool,
    /// conv 5×5 to 16 channels, ReLU, 2×2 max pool) and `classifier` (400 → 120 → 84 → classes, ReLU between).
    ///
    /// ```swift
    /// let model = models.LeNet5()
    /// let logits = model(torch.randn(64, 3, 32, 32))   // [64, 10]
    /// ```
    public final class LeNet5: nn.Module {
        public var features: nn.Module
        public var classifier: nn.Module

        /// - Parameters:
        ///   - inChannels: image channels (3 for CIFAR-10; 1 for padded MNIST).
        ///   - numClasses: outputs of the last linear layer.
        public init(inChannels: Int = 3, numClasses: Int = 10) {
            features = nn.Sequential(
                nn.Conv2d(inChannels, 6, kernelSize: 5), nn.ReLU(inplace: true), nn.MaxPool2d(kernelSize: 2, stride: 2),
                nn.Conv2d(6, 16, kernelSize: 5), nn.ReLU(inplace: true), nn.MaxPool2d(kernelSize: 2, stride: 2))
            classifier = nn.Sequential(
                nn.Linear(16 * 5 * 5, 120), nn.ReLU(inplace: true), nn.Linear(120, 84), nn.ReLU(inplace: true),
                nn.Linear(84, numClasses))
            super.init()
        }

        public override func forward(_ x: Tensor) -> Tensor {
            let f = features(x)
            return classifier(f.view(f.size(0), -1))
        }
    }

    /// Tutorial 001's LeNet-5 (see ``LeNet5``), PyTorch's default initialisation.
    public static func lenet5(inChannels: Int = 3, numClasses: Int = 10) -> LeNet5 {
        LeNet5(inChannels: inChannels, numClasses: numClasses)
    }
}
