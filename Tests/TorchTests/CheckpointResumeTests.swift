// Checkpoint and resume (tutorial 001's checkpoint section, the issue's "training continues exactly
// as if never stopped"): train k steps, save model + optimizer + scheduler + epoch as one
// dictionary with torch.save, build everything fresh, load, continue; the loss sequence equals the
// uninterrupted run's bit for bit.

import Foundation
import XCTest
@testable import Torch

final class CheckpointResumeTests: XCTestCase {
    private struct Run {
        let model: nn.Sequential
        let optimizer: optim.Optimizer
        let scheduler: optim.lrScheduler.LRScheduler
    }

    /// Seeded batches, made once, indexed by step (the data does not depend on the RNG at resume).
    private let batches: [(Tensor, Tensor)] = {
        torch.manualSeed(123)
        return (0..<24).map { _ in
            let x = torch.randn(16, 5)
            let y = (x.narrow(1, 0, 2) * 1.5 - x.narrow(1, 2, 2).pow(2) + 0.1 * torch.randn(16, 2))
            return (x, y)
        }
    }()

    /// A fresh model/optimizer/scheduler; `seed` sets the initial weights.
    private func makeRun(_ kind: String, seed: UInt64) -> Run {
        torch.manualSeed(seed)
        let model = nn.Sequential(nn.Linear(5, 32), nn.ReLU(), nn.Linear(32, 2))
        switch kind {
        case "adam":
            let opt = optim.Adam(model.parameters(), lr: 0.02, weightDecay: 1e-3)
            return Run(model: model, optimizer: opt, scheduler: optim.lrScheduler.StepLR(opt, stepSize: 5, gamma: 0.5))
        default:
            let opt = optim.SGD(model.parameters(), lr: 0.05, momentum: 0.9, weightDecay: 1e-4, nesterov: true)
            return Run(model: model, optimizer: opt,
                       scheduler: optim.lrScheduler.CosineAnnealingLR(opt, tMax: 10, etaMin: 0.001))
        }
    }

    /// Steps `range` of training; returns each step's loss (float32 bits as a Double).
    private func train(_ r: Run, _ range: Range<Int>) -> [Double] {
        let criterion = nn.MSELoss()
        r.model.train()
        return range.map { step in
            let (x, y) = batches[step]
            r.optimizer.zeroGrad()
            let loss = criterion(r.model(x), y)
            loss.backward()
            r.optimizer.step()
            r.scheduler.step()
            return loss.item()
        }
    }

    private func checkResume(_ kind: String, total: Int, stopAt k: Int) throws {
        let whole = makeRun(kind, seed: 7)
        let expected = train(whole, 0..<total)

        let path = try makeTemporaryFolder(self).appendingPathComponent("checkpoint.pt").path
        let first = makeRun(kind, seed: 7)
        var losses = train(first, 0..<k)
        try torch.save(["epoch": .int(k),
                        "model_state_dict": StateValue(first.model.stateDict()),
                        "optimizer_state_dict": first.optimizer.stateDict(),
                        "scheduler_state_dict": first.scheduler.stateDict(),
                        "loss": .double(losses.last!)], path)

        // A new process would start here: different initial weights, fresh optimizer state.
        let resumed = makeRun(kind, seed: 99)
        let checkpoint = try torch.load(path)
        try resumed.model.loadStateDict(XCTUnwrap(checkpoint["model_state_dict"]))
        try resumed.optimizer.loadStateDict(XCTUnwrap(checkpoint["optimizer_state_dict"]))
        try resumed.scheduler.loadStateDict(XCTUnwrap(checkpoint["scheduler_state_dict"]))
        let epoch = try XCTUnwrap(checkpoint["epoch"]?.intValue)
        XCTAssertEqual(epoch, k)
        XCTAssertEqual(checkpoint["loss"]?.doubleValue, losses.last)
        XCTAssertEqual(resumed.scheduler.getLastLr(), first.scheduler.getLastLr())
        losses += train(resumed, epoch..<total)

        XCTAssertEqual(losses.count, expected.count)
        XCTAssertEqual(losses.map(\.bitPattern), expected.map(\.bitPattern), "\(kind): loss sequence after resuming at \(k)")
        XCTAssertLessThan(expected.last!, expected.first!, "\(kind): the model learns")
        for ((k1, a), (_, b)) in zip(zip(resumed.model.stateDict().keys, resumed.model.stateDict().values),
                                     zip(whole.model.stateDict().keys, whole.model.stateDict().values)) {
            assertIdentical(a.detach(), b.detach(), "\(kind): final \(k1)")
        }
        XCTAssertEqual(resumed.optimizer.paramGroups[0].lr, whole.optimizer.paramGroups[0].lr)
    }

    func testAdamStepLRResumesBitwise() throws {
        try checkResume("adam", total: 24, stopAt: 11)
    }

    func testSGDNesterovCosineResumesBitwise() throws {
        try checkResume("sgd", total: 24, stopAt: 7)
    }

    /// Saving twice in a row (resume, continue, save again) keeps working: a second interruption.
    func testTwoInterruptions() throws {
        let whole = makeRun("adam", seed: 3)
        let expected = train(whole, 0..<20)
        let dir = try makeTemporaryFolder(self)
        var losses: [Double] = []
        var run = makeRun("adam", seed: 3)
        var start = 0
        for stop in [6, 13, 20] {
            losses += train(run, start..<stop)
            let path = dir.appendingPathComponent("ckpt-\(stop).pt").path
            try torch.save(["epoch": .int(stop), "model": StateValue(run.model.stateDict()),
                            "optimizer": run.optimizer.stateDict(), "scheduler": run.scheduler.stateDict()], path)
            run = makeRun("adam", seed: UInt64(stop))
            let ck = try torch.load(path)
            try run.model.loadStateDict(XCTUnwrap(ck["model"]))
            try run.optimizer.loadStateDict(XCTUnwrap(ck["optimizer"]))
            try run.scheduler.loadStateDict(XCTUnwrap(ck["scheduler"]))
            start = try XCTUnwrap(ck["epoch"]?.intValue)
        }
        XCTAssertEqual(losses.map(\.bitPattern), expected.map(\.bitPattern))
    }
}
