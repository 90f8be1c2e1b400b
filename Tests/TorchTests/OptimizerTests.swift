import XCTest
@testable import Torch

final class OptimizerTests: XCTestCase {
    private func make(_ name: String, _ params: [Tensor], _ o: [String: Any]) -> optim.Optimizer {
        func d(_ k: String, _ def: Double) -> Double { (o[k] as? NSNumber)?.doubleValue ?? def }
        func b(_ k: String) -> Bool { (o[k] as? Bool) ?? false }
        func betas(_ def: (Double, Double)) -> (Double, Double) {
            guard let a = o["betas"] as? [NSNumber] else { return def }
            return (a[0].doubleValue, a[1].doubleValue)
        }
        switch name {
        case "SGD": return optim.SGD(params, lr: d("lr", 1e-3), momentum: d("momentum", 0), dampening: d("dampening", 0),
                                     weightDecay: d("weight_decay", 0), nesterov: b("nesterov"), maximize: b("maximize"))
        case "Adam": return optim.Adam(params, lr: d("lr", 1e-3), betas: betas((0.9, 0.999)), weightDecay: d("weight_decay", 0),
                                       amsgrad: b("amsgrad"), maximize: b("maximize"))
        case "AdamW": return optim.AdamW(params, lr: d("lr", 1e-3), betas: betas((0.9, 0.999)), weightDecay: d("weight_decay", 0.01),
                                         amsgrad: b("amsgrad"), maximize: b("maximize"))
        case "RMSprop": return optim.RMSprop(params, lr: d("lr", 1e-2), alpha: d("alpha", 0.99), weightDecay: d("weight_decay", 0),
                                             momentum: d("momentum", 0), centered: b("centered"))
        case "Adagrad": return optim.Adagrad(params, lr: d("lr", 1e-2), lrDecay: d("lr_decay", 0), weightDecay: d("weight_decay", 0),
                                             initialAccumulatorValue: d("initial_accumulator_value", 0))
        case "Adadelta": return optim.Adadelta(params, lr: d("lr", 1), rho: d("rho", 0.9), weightDecay: d("weight_decay", 0))
        case "Adamax": return optim.Adamax(params, lr: d("lr", 2e-3), weightDecay: d("weight_decay", 0))
        case "NAdam": return optim.NAdam(params, lr: d("lr", 2e-3), weightDecay: d("weight_decay", 0),
                                         decoupledWeightDecay: b("decoupled_weight_decay"))
        case "RAdam": return optim.RAdam(params, lr: d("lr", 1e-3), weightDecay: d("weight_decay", 0))
        default: fatalError("unknown optimizer \(name)")
        }
    }

    func testMatchesPyTorchFiveSteps() throws {
        for c in try loadFixtureCases("optim") {
            let name = c["optimizer"] as! String, dtype = c["dtype"] as! String
            let params = (c["initial"] as! [Any]).map { fixtureTensor($0).requiresGrad_() }
            let opt = make(name, params, c["options"] as! [String: Any])
            let tol = dtype == "float32" ? 2e-5 : 1e-10
            for (s, step) in (c["steps"] as! [[String: Any]]).enumerated() {
                for (p, g) in zip(params, step["grads"] as! [Any]) { p.grad = fixtureTensor(g) }
                opt.step()
                for (p, e) in zip(params, step["params"] as! [Any]) {
                    assertClose(p, fixtureTensor(e), atol: tol, rtol: tol, "\(name) \(c["options"]!) \(dtype) step \(s + 1)")
                }
            }
        }
    }

    func testParamGroupsLearningRateCanBeChanged() {
        let w = torch.ones(2, requiresGrad: true)
        let opt = optim.SGD([w], lr: 0.1, momentum: 0.5)
        opt.paramGroups[0].lr *= 0.1
        XCTAssertEqual(opt.paramGroups[0].lr, 0.01, accuracy: 1e-15)
        w.grad = torch.ones(2)
        opt.step()
        assertClose(w, [0.99, 0.99])
        XCTAssertEqual(opt.paramGroups[0]["momentum"]?.doubleValue, 0.5)
    }

    func testZeroGradAndStateDictRoundTrip() throws {
        let w = torch.randn(3, requiresGrad: true)
        let opt = optim.Adam([w], lr: 0.1)
        w.grad = torch.ones(3)
        opt.step()
        let sd = opt.stateDict()
        XCTAssertEqual(sd["state"]?[0]?["step"]?.tensorValue?.item(), 1)
        XCTAssertEqual(sd["param_groups"]?[0]?["lr"]?.doubleValue, 0.1)
        opt.zeroGrad()
        XCTAssertNil(w.grad)
        let w2 = w.detach().clone().requiresGrad_()
        let opt2 = optim.Adam([w2], lr: 0.5)
        try opt2.loadStateDict(sd)
        XCTAssertEqual(opt2.paramGroups[0].lr, 0.1)
        for o in [opt, opt2] {
            let p = o.paramGroups[0].params[0]
            p.grad = torch.full([3], 0.5)
            o.step()
        }
        assertClose(w, w2, atol: 1e-7)
    }

    /// A transposed view made a parameter (non-contiguous) takes the same steps as its contiguous twin: the CPU
    /// updates walk memory in order, so a non-contiguous parameter updates through a contiguous copy.
    func testNonContiguousParameterMatchesContiguous() {
        let makers: [(String, ([Tensor]) -> optim.Optimizer)] = [
            ("SGD momentum nesterov", { optim.SGD($0, lr: 0.1, momentum: 0.9, weightDecay: 0.01, nesterov: true) }),
            ("Adam amsgrad", { optim.Adam($0, lr: 0.05, amsgrad: true) }),
            ("RMSprop centered", { optim.RMSprop($0, lr: 0.01, momentum: 0.5, centered: true) }),
        ]
        for (name, make) in makers {
            torch.manualSeed(21)
            let base = torch.randn([5, 3])
            let strided = base.t().detach().requiresGrad_(), dense = base.t().contiguous().requiresGrad_()
            XCTAssertFalse(strided.isContiguous)
            let target = torch.randn([3, 5])
            let a = make([strided]), b = make([dense])
            for _ in 0..<3 {
                for (p, o) in [(strided, a), (dense, b)] {
                    o.zeroGrad()
                    ((p - target) * (p - target)).sum().backward()
                    o.step()
                }
            }
            XCTAssertFalse(strided.isContiguous, name)
            XCTAssertLessThanOrEqual((strided - dense).abs().max().item(), 1e-6, name)
        }
    }
}
