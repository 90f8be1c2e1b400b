import XCTest
@testable import Torch

final class LRSchedulerTests: XCTestCase {
    typealias L = optim.lrScheduler

    private func make(_ name: String, _ opt: optim.Optimizer) -> L.LRScheduler {
        switch name {
        case "StepLR": return L.StepLR(opt, stepSize: 5, gamma: 0.1)
        case "MultiStepLR": return L.MultiStepLR(opt, milestones: [3, 7, 7, 20], gamma: 0.5)
        case "ExponentialLR": return L.ExponentialLR(opt, gamma: 0.9)
        case "CosineAnnealingLR": return L.CosineAnnealingLR(opt, tMax: 10, etaMin: 0.001)
        case "CosineAnnealingWarmRestarts": return L.CosineAnnealingWarmRestarts(opt, t0: 5, tMult: 2, etaMin: 0.01)
        case "LinearLR": return L.LinearLR(opt, startFactor: 0.25, totalIters: 8)
        case "LambdaLR": return L.LambdaLR(opt, lrLambda: { e in pow(0.95, Double(e)) })
        case "OneCycleLR-linear-3phase": return L.OneCycleLR(opt, maxLr: 0.5, totalSteps: 40, annealStrategy: .linear, threePhase: true)
        default: fatalError(name)
        }
    }

    func testLearningRateSequencesMatchPyTorch() throws {
        for c in try loadFixtureCases("lr_scheduler") {
            let name = c["scheduler"] as! String
            let expected = (c["lrs"] as! [NSNumber]).map(\.doubleValue)
            let p = torch.zeros(2, requiresGrad: true)
            p.grad = torch.zeros(2)
            if name == "ReduceLROnPlateau" {
                let opt = optim.SGD([p], lr: 1.0)
                let s = L.ReduceLROnPlateau(opt, factor: 0.5, patience: 2, cooldown: 1)
                for (m, e) in zip((c["metrics"] as! [NSNumber]).map(\.doubleValue), expected) {
                    s.step(m)
                    XCTAssertEqual(opt.paramGroups[0].lr, e, accuracy: 1e-12, name)
                }
                continue
            }
            let opt: optim.Optimizer
            let sched: L.LRScheduler
            if name == "OneCycleLR" {
                let adam = (c["optimizer"] as! String) == "Adam"
                let maxLr = ((c["options"] as! [String: Any])["max_lr"] as! NSNumber).doubleValue
                opt = adam ? optim.Adam([p], lr: 0.001) : optim.SGD([p], lr: 0.1, momentum: 0.9)
                sched = L.OneCycleLR(opt, maxLr: maxLr, totalSteps: 40)
            } else {
                opt = optim.SGD([p], lr: 0.1, momentum: 0.9)
                sched = make(name, opt)
            }
            var got = [sched.getLastLr()[0]]
            var moms: [Double] = []
            for _ in 0..<40 {
                opt.step()
                sched.step()
                got.append(sched.getLastLr()[0])
                let g = opt.paramGroups[0]
                moms.append(g["momentum"]?.doubleValue ?? g.pair("betas").0)
            }
            for (i, (a, e)) in zip(got, expected).enumerated() {
                XCTAssertEqual(a, e, accuracy: 1e-12 + 1e-9 * abs(e), "\(name) step \(i)")
            }
            for (i, (a, e)) in zip(moms, (c["momentum"] as! [NSNumber]).map(\.doubleValue)).enumerated() {
                XCTAssertEqual(a, e, accuracy: 1e-12, "\(name) momentum at step \(i + 1)")
            }
        }
    }

    func testStateDictRoundTrip() throws {
        let p = torch.zeros(2, requiresGrad: true)
        let opt = optim.SGD([p], lr: 0.1)
        let s = L.StepLR(opt, stepSize: 2, gamma: 0.5)
        for _ in 0..<3 { s.step() }
        let sd = s.stateDict()
        XCTAssertEqual(sd["last_epoch"]?.intValue, 3)
        let opt2 = optim.SGD([torch.zeros(2, requiresGrad: true)], lr: 0.1)
        let s2 = L.StepLR(opt2, stepSize: 2, gamma: 0.5)
        try s2.loadStateDict(sd)
        opt2.paramGroups[0].lr = opt.paramGroups[0].lr
        s.step(); s2.step()
        XCTAssertEqual(s.getLastLr(), s2.getLastLr())
    }
}
