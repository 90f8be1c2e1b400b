// Tutorial 002: a network that learns to add two numbers — a custom nn.Module, its parameters,
// MSELoss and SGD, the training loop with a loss history, a Dataset/DataLoader, prediction on
// [[10, 11]], intermediate layer values, and the same model as nn.Sequential.
//   swift run -c release add-two-numbers [--device auto|cpu|cuda|cuda:N] [--save PATH]
import ArgumentParser
import ExampleSupport
import Foundation
import Torch

@main
struct AddTwoNumbers: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-two-numbers", abstract: "Tutorial 002: a network that learns to add two numbers.")

    @OptionGroup var placement: DeviceOption

    @Option(help: ArgumentHelp("Where the trained nn.Sequential's state dict is saved (torch.save) and loaded back from.",
                               valueName: "path"))
    var save = (NSTemporaryDirectory() as NSString).appendingPathComponent("mymodel.pth")

    func run() throws {
        let x = [[1, 2], [3, 4], [5, 6], [7, 8]]
        let y = [[3], [7], [11], [15]]
        let device = try placement.device()
        print("device:", device)
        let X = torch.tensor(x).float().to(device)
        let Y = torch.tensor(y).float().to(device)

        /// The tutorial's dataset class: stores the tensors and hands out one (x, y) pair per index.
        struct MyDataset: Dataset {
            let x: Tensor, y: Tensor
            init(_ x: [[Int]], _ y: [[Int]], device: Device) {
                self.x = torch.tensor(x).float().to(device)
                self.y = torch.tensor(y).float().to(device)
            }
            var count: Int { x.size(0) }
            subscript(ix: Int) -> (Tensor, Tensor) { (x[ix], y[ix]) }
        }

        final class MyNeuralNet: nn.Module {
            let inputToHiddenLayer = nn.Linear(2, 8)
            let hiddenLayerActivation = nn.ReLU()
            let hiddenToOutputLayer = nn.Linear(8, 1)
            override func forward(_ x: Tensor) -> Tensor {
                hiddenToOutputLayer(hiddenLayerActivation(inputToHiddenLayer(x)))
            }
        }

        torch.manualSeed(0)
        let mynet = MyNeuralNet().to(device)
        print(mynet.inputToHiddenLayer.weight)
        for param in mynet.parameters() { print(param) }

        let lossFunc = nn.MSELoss()
        print(lossFunc(mynet(X), Y))

        let opt = optim.SGD(mynet.parameters(), lr: 0.001)
        let ds = MyDataset(x, y, device: device)
        let dl = DataLoader(ds, batchSize: 2, shuffle: true)
        var lossHistory: [Double] = []
        let start = Date()
        for _ in 0..<50 {
            for (x, y) in dl {
                opt.zeroGrad()
                let lossValue = lossFunc(mynet(x), y)
                lossValue.backward()
                opt.step()
                lossHistory.append(lossValue.item())
            }
        }
        print("training time: \(Date().timeIntervalSince(start)) s")
        print("loss history (every 10th):", stride(from: 0, to: lossHistory.count, by: 10).map { String(format: "%.4f", lossHistory[$0]) })

        let valX = torch.tensor([[10, 11]]).float().to(device)
        print(mynet(valX))
        print(mynet.hiddenLayerActivation(mynet.inputToHiddenLayer(X)))

        // The same network as nn.Sequential.
        let model = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1)).to(device)
        print(model)
        let opt2 = optim.SGD(model.parameters(), lr: 0.001)
        for _ in 0..<50 {
            for (x, y) in dl {
                opt2.zeroGrad()
                let loss = lossFunc(model(x), y)
                loss.backward()
                opt2.step()
            }
        }
        print(model(valX))

        // Saving and loading (the tutorial's section 4): the state dict, torch.save, and a fresh model of
        // the same architecture restored with loadStateDict. The file is a real PyTorch checkpoint:
        // `torch.load('mymodel.pth')` reads it in Python.
        print(model.stateDict())
        let savePath = save
        do {
            try torch.save(model.stateDict(), savePath)
            let restored = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
            let stateDict = try torch.load(savePath)   // on the CPU, whatever device saved it
            try restored.loadStateDict(stateDict)
            let val = torch.tensor([[8, 9], [10, 11], [1.5, 2.5]]).float()
            print("saved to \(savePath); the loaded model predicts:")
            print(restored(val))
        } catch {
            print("save/load failed: \(error)")
            throw ExitCode.failure
        }
    }
}
