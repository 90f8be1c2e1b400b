// Tutorial 001's checkpoint section: a model's parameters saved to a `.pt` file with torch.save and
// loaded into a new model with loadStateDict; then a training checkpoint (model + optimizer +
// scheduler + epoch in one dictionary) that resumes exactly where it stopped. The files are real
// PyTorch checkpoints (`torch.load(path, weights_only=True)` reads them).
//   swift run -c release checkpoint [--output-dir DIR]
import ArgumentParser
import Foundation
import Torch

@main
struct Checkpoint: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "checkpoint", abstract: "Tutorial 001: save and load a model, then stop and resume a training run.")

    @Option(help: ArgumentHelp("The folder model.pt and checkpoint.pt are written to and read back from.", valueName: "folder"))
    var outputDir = NSTemporaryDirectory()

    func run() throws {
        let folder = outputDir
        let modelPath = (folder as NSString).appendingPathComponent("model.pt")
        let checkpointPath = (folder as NSString).appendingPathComponent("checkpoint.pt")

        do {
            // The tutorial: change the weight and bias, save, load into a new model.
            let model = nn.Linear(3, 1)
            let newWeight = torch.tensor([[1.0, 2.0, 3.0]])
            let newBias = torch.tensor([4.0])
            model.weight = nn.Parameter(newWeight)
            model.bias = nn.Parameter(newBias)
            try torch.save(model.stateDict(), modelPath)
            let newModel = nn.Linear(3, 1)
            print("默认参数", newModel.weight, newModel.bias!)
            try newModel.loadStateDict(torch.load(modelPath))
            print("加载后", newModel.weight, newModel.bias!)

            // A training checkpoint: stop after 5 of 10 epochs, save, resume in fresh objects.
            torch.manualSeed(0)
            let x = torch.randn(64, 3)
            let y = x.matmul(torch.tensor([[1.0], [-2.0], [0.5]])) + 0.3
            func makeTraining() -> (nn.Linear, optim.SGD, optim.lrScheduler.StepLR) {
                torch.manualSeed(1)
                let net = nn.Linear(3, 1)
                let opt = optim.SGD(net.parameters(), lr: 0.1, momentum: 0.5)
                return (net, opt, optim.lrScheduler.StepLR(opt, stepSize: 3, gamma: 0.5))
            }
            func trainEpoch(_ net: nn.Linear, _ opt: optim.SGD, _ sched: optim.lrScheduler.StepLR) -> Double {
                opt.zeroGrad()
                let loss = nn.MSELoss()(net(x), y)
                loss.backward()
                opt.step()
                sched.step()
                return loss.item()
            }
            var (net, opt, sched) = makeTraining()
            var losses: [Double] = []
            for epoch in 0..<5 {
                losses.append(trainEpoch(net, opt, sched))
                print(String(format: "epoch %d loss %.6f", epoch, losses.last!))
            }
            try torch.save(["epoch": .int(5), "model_state_dict": StateValue(net.stateDict()),
                            "optimizer_state_dict": opt.stateDict(), "scheduler_state_dict": sched.stateDict()],
                           checkpointPath)
            print("saved \(checkpointPath)")

            (net, opt, sched) = makeTraining()
            let checkpoint = try torch.load(checkpointPath)
            try net.loadStateDict(checkpoint["model_state_dict"]!)
            try opt.loadStateDict(checkpoint["optimizer_state_dict"]!)
            try sched.loadStateDict(checkpoint["scheduler_state_dict"]!)
            let start = checkpoint["epoch"]!.intValue!
            print("resumed at epoch \(start), lr \(sched.getLastLr()[0])")
            for epoch in start..<10 {
                losses.append(trainEpoch(net, opt, sched))
                print(String(format: "epoch %d loss %.6f", epoch, losses.last!))
            }
            // The same 10 epochs without stopping give the same losses, bit for bit.
            let (net2, opt2, sched2) = makeTraining()
            let uninterrupted = (0..<10).map { _ in trainEpoch(net2, opt2, sched2) }
            print("identical to an uninterrupted run:", uninterrupted == losses)
        } catch {
            print("checkpoint example failed: \(error)")
            throw ExitCode.failure
        }
    }
}
