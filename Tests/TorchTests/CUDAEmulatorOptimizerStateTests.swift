import XCTest
@testable import Torch

/// An optimizer state saved on one device and loaded for parameters on another: PyTorch's
/// `Optimizer.load_state_dict` moves every state tensor to its parameter's device and dtype (the step
/// counter excepted), so a checkpoint written on the CPU resumes on a GPU and the other way round.
final class CUDAEmulatorOptimizerStateTests: CUDAEmulatorTestCase {
    /// Two Adam steps on `from`, a state-dict round trip onto fresh parameters on `to`, two more steps.
    private func resume(from: Device, to: Device) -> [Tensor] {
        let w = data([3, 5], seed: 7, on: from).requiresGrad_()
        let first = optim.Adam([w], lr: 0.1)
        for _ in 0..<2 {
            first.zeroGrad()
            (w.tanh() * w).sum().backward()
            first.step()
        }
        let moved = w.detach().to(to).requiresGrad_()
        let second = optim.Adam([moved], lr: 0.1)
        try! second.loadStateDict(first.stateDict())
        for (name, value) in second.state(for: moved).entries where name != "step" {
            if case .tensor(let t) = value { XCTAssertEqual(t.device, to, "state '\(name)' after loading") }
        }
        for _ in 0..<2 {
            second.zeroGrad()
            (moved.tanh() * moved).sum().backward()
            second.step()
        }
        return [moved.detach().cpu()]
    }

    func testStateSavedOnTheCPUResumesOnTheGPUAndBack() {
        let reference = resume(from: .cpu, to: .cpu)[0].toArray(as: Double.self)
        for (from, to) in [(Device.cpu, Device.cuda(0)), (.cuda(0), .cpu), (.cuda(0), .cuda(0))] {
            let got = resume(from: from, to: to)[0].toArray(as: Double.self)
            for (a, b) in zip(reference, got) {
                XCTAssertEqual(a, b, accuracy: 1e-5, "Adam resumed \(from) -> \(to)")
            }
        }
    }
}
