import Torch

/// Tutorial 000's network, shared by the tests, fixtures and benchmarks that check it against PyTorch:
/// 784-300-100-10 with BatchNorm1d after each hidden Linear and ReLU after each BatchNorm.
///
/// Examples/FashionMNISTMLP keeps its own copy (`Net`) so that the example reads like the tutorial.
public final class TutorialMLP: nn.Module {
    public let layer1: nn.Sequential, layer2: nn.Sequential, layer3: nn.Sequential

    public init(_ inDim: Int, _ h1: Int, _ h2: Int, _ outDim: Int) {
        layer1 = nn.Sequential(nn.Linear(inDim, h1), nn.BatchNorm1d(h1))
        layer2 = nn.Sequential(nn.Linear(h1, h2), nn.BatchNorm1d(h2))
        layer3 = nn.Sequential(nn.Linear(h2, outDim))
        super.init()
    }

    public override func forward(_ x: Tensor) -> Tensor {
        layer3(F.relu(layer2(F.relu(layer1(x)))))
    }
}
