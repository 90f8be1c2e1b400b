// Tutorial 004's convolutional network: a 1×32×32 input through two 3×3 convolutions (1→6→16 channels, ReLU),
// three linear layers (16·28·28 → 512 → 64 → 2), an L1 loss against a random target, one SGD step (lr 0.01),
// and the network's output before and after the step.
//   swift run -c release conv-net [--device auto|cpu|cuda|cuda:N]
import ArgumentParser
import ExampleSupport
import Foundation
import Torch

@main
struct ConvNet: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conv-net", abstract: "Tutorial 004: a small convolutional network, its loss and one SGD step.")

    @OptionGroup var placement: DeviceOption

    func run() throws {
        let device = try placement.device()

        final class Net: nn.Module {
            let conv1 = nn.Conv2d(1, 6, 3)      // input channels 1, output channels 6, 3×3 kernel
            let conv2 = nn.Conv2d(6, 16, 3)     // 6 → 16 channels, 3×3
            let fc1 = nn.Linear(16 * 28 * 28, 512)
            let fc2 = nn.Linear(512, 64)
            let fc3 = nn.Linear(64, 2)

            override func forward(_ input: Tensor) -> Tensor {
                var x = F.relu(conv1(input))
                x = F.relu(conv2(x))
                x = x.view(-1, 16 * 28 * 28)   // -1: the batch size is inferred
                x = F.relu(fc1(x))
                x = F.relu(fc2(x))
                return fc3(x)
            }
        }

        torch.manualSeed(0)
        let net = Net().to(device)
        print(net)

        let inputData = torch.randn(1, 1, 32, 32).to(device)   // one random 1×32×32 image
        var target = torch.randn(2).to(device)
        target = target.view(1, -1)

        var out = net(inputData)
        print("output before the step:", out)
        let criterion = nn.L1Loss()                 // mean absolute error
        let loss = criterion(out, target)
        print("loss:", loss)

        net.zeroGrad()      // clear the gradients
        loss.backward()     // back-propagate
        print("conv1.bias.grad:", net.conv1.bias!.grad!)

        let optimizer = optim.SGD(net.parameters(), lr: 0.01)
        optimizer.step()    // update the weights

        out = net(inputData)
        print("output after the step:", out)
        print("loss after the step:", criterion(out, target))
    }
}
