// Tutorial 000: SGD, Momentum, RMSprop and Adam fitting y = x² + noise with the same small network;
// prints each optimizer's loss history (the plot comes with the tools issue).
//   swift run -c release optimizer-comparison [--device auto|cpu|cuda|cuda:N]
import ArgumentParser
import ExampleSupport
import Foundation
import Torch

@main
struct OptimizerComparison: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "optimizer-comparison", abstract: "Tutorial 000: SGD, Momentum, RMSprop and Adam fitting y = x² + noise.")

    @OptionGroup var placement: DeviceOption

    func run() throws {
        let device = try placement.device()

        torch.manualSeed(1)
        let lr = 0.01, batchSize = 32, epochs = 12
        let x = torch.linspace(-1, 1, steps: 1000).unsqueeze(1)
        let y = x.pow(2) + 0.1 * torch.normal(0, 1, x.shape)
        let loader = DataLoader(TensorDataset(x, y), batchSize: batchSize, shuffle: true, pinMemory: device != .cpu)

        final class Net: nn.Module {
            let hidden = nn.Linear(1, 20)
            let predict = nn.Linear(20, 1)
            override func forward(_ x: Tensor) -> Tensor { predict(F.relu(hidden(x))) }
        }

        let nets = [Net(), Net(), Net(), Net()].map { $0.to(device) }
        let optimizers: [optim.Optimizer] = [
            optim.SGD(nets[0].parameters(), lr: lr),
            optim.SGD(nets[1].parameters(), lr: lr, momentum: 0.8),
            optim.RMSprop(nets[2].parameters(), lr: lr, alpha: 0.9),
            optim.Adam(nets[3].parameters(), lr: lr, betas: (0.9, 0.99)),
        ]
        let lossFunc = nn.MSELoss()
        var lossHistory: [[Double]] = [[], [], [], []]
        for _ in 0..<epochs {
            for (cpuX, cpuY) in loader {
                let batchX = cpuX.to(device), batchY = cpuY.to(device)
                for i in 0..<4 {
                    let loss = lossFunc(nets[i](batchX), batchY)
                    optimizers[i].zeroGrad()
                    loss.backward()
                    optimizers[i].step()
                    lossHistory[i].append(loss.item())
                }
            }
        }
        for (name, history) in zip(["SGD", "Momentum", "RMSprop", "Adam"], lossHistory) {
            let tail = history.suffix(20)
            print("\(name): \(history.count) steps, first loss \(String(format: "%.4f", history[0])), mean of last 20 \(String(format: "%.4f", tail.reduce(0, +) / Double(tail.count)))")
            print("  " + stride(from: 0, to: history.count, by: max(1, history.count / 12)).map { String(format: "%.4f", history[$0]) }.joined(separator: " "))
        }
    }
}
