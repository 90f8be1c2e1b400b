// Tutorial 003: a two-layer network five ways — by hand, with autograd, with nn, with optim, and
// as a custom Module. N=64, D_in=1000, H=100, D_out=10, 500 steps each; prints the loss every 100.
//   swift run -c release two-layer-net [--device auto|cpu|cuda|cuda:N]
import ArgumentParser
import ExampleSupport
import Foundation
import Torch

@main
struct TwoLayerNetExample: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "two-layer-net", abstract: "Tutorial 003: a two-layer network five ways (by hand, autograd, nn, optim, a Module).")

    @OptionGroup var placement: DeviceOption

    func run() throws {
        let device = try placement.device()
        let (N, dIn, H, dOut) = (64, 1000, 100, 10)
        torch.manualSeed(0)
        let x = torch.randn(N, dIn).to(device)
        let y = torch.randn(N, dOut).to(device)

        func report(_ way: String, _ it: Int, _ loss: Double) {
            if it % 100 == 99 { print("\(way) step \(it + 1): loss \(loss)") }
        }

        // 1. Tensors and hand-written gradients.
        do {
            var w1 = torch.randn(dIn, H).to(device), w2 = torch.randn(H, dOut).to(device)
            let learningRate = 1e-6
            for it in 0..<500 {
                let h = x.mm(w1)
                let hRelu = h.clamp(min: 0)
                let yPred = hRelu.mm(w2)
                let loss = (yPred - y).pow(2).sum().item()
                report("manual", it, loss)
                let gradYPred = 2.0 * (yPred - y)
                let gradW2 = hRelu.t().mm(gradYPred)
                let gradHRelu = gradYPred.mm(w2.t())
                let gradH = gradHRelu.clone()
                gradH[h .< 0] = 0
                let gradW1 = x.t().mm(gradH)
                w1 = w1 - learningRate * gradW1
                w2 = w2 - learningRate * gradW2
            }
        }

        // 2. Autograd.
        do {
            let w1 = torch.randn(dIn, H).to(device).requiresGrad_(), w2 = torch.randn(H, dOut).to(device).requiresGrad_()
            let learningRate = 1e-6
            for it in 0..<500 {
                let yPred = x.mm(w1).clamp(min: 0).mm(w2)
                let loss = (yPred - y).pow(2).sum()
                report("autograd", it, loss.item())
                loss.backward()
                torch.noGrad {
                    w1 -= learningRate * w1.grad!
                    w2 -= learningRate * w2.grad!
                    w1.grad!.zero_()
                    w2.grad!.zero_()
                }
            }
        }

        // 3. nn.
        do {
            let model = nn.Sequential(nn.Linear(dIn, H, bias: false), nn.ReLU(), nn.Linear(H, dOut, bias: false))
            nn.init_.normal_((model[0] as! nn.Linear).weight)
            nn.init_.normal_((model[2] as! nn.Linear).weight)
            model.to(device)
            let lossFn = nn.MSELoss(reduction: .sum)
            let learningRate = 1e-6
            for it in 0..<500 {
                let loss = lossFn(model(x), y)
                report("nn", it, loss.item())
                model.zeroGrad()
                loss.backward()
                torch.noGrad {
                    for p in model.parameters() { p -= learningRate * p.grad! }
                }
            }
        }

        // 4. optim.
        do {
            let model = nn.Sequential(nn.Linear(dIn, H, bias: false), nn.ReLU(), nn.Linear(H, dOut, bias: false))
            nn.init_.normal_((model[0] as! nn.Linear).weight)
            nn.init_.normal_((model[2] as! nn.Linear).weight)
            model.to(device)
            let lossFn = nn.MSELoss(reduction: .sum)
            let optimizer = optim.Adam(model.parameters(), lr: 1e-4)
            for it in 0..<500 {
                let loss = lossFn(model(x), y)
                report("optim", it, loss.item())
                optimizer.zeroGrad()
                loss.backward()
                optimizer.step()
            }
        }

        // 5. A custom Module.
        final class TwoLayerNet: nn.Module {
            let linear1: nn.Linear
            let linear2: nn.Linear
            init(_ dIn: Int, _ h: Int, _ dOut: Int) {
                linear1 = nn.Linear(dIn, h, bias: false)
                linear2 = nn.Linear(h, dOut, bias: false)
                super.init()
            }
            override func forward(_ x: Tensor) -> Tensor { linear2(linear1(x).clamp(min: 0)) }
        }

        do {
            let model = TwoLayerNet(dIn, H, dOut).to(device)
            let lossFn = nn.MSELoss(reduction: .sum)
            let optimizer = optim.Adam(model.parameters(), lr: 1e-4)
            for it in 0..<500 {
                let loss = lossFn(model(x), y)
                report("module", it, loss.item())
                optimizer.zeroGrad()
                loss.backward()
                optimizer.step()
            }
        }
    }
}
