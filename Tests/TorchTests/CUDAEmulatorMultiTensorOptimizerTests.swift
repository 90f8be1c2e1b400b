import CCUDAShim
import XCTest
@testable import Torch

/// The multi-tensor optimizer kernels (`CUDAOptimizer.Batch`: SGD, Adam/AdamW, RMSprop, Adagrad, Adadelta,
/// Adamax, NAdam, RAdam) on the host emulator against the CPU: 40
/// parameters (more than one launch's `CUDAOptimizer.tensorsPerLaunch`) of sizes 1 to 16,386, most not a
/// multiple of the block or of a block's chunk, over several steps, with half of them joining at the second
/// step (so one launch mixes first and later steps: SGD's buffer creation, per-tensor step counts), and
/// the launches each step takes.
final class CUDAEmulatorMultiTensorOptimizerTests: CUDAEmulatorTestCase {
    /// The parameters' shapes: 40, cycling through awkward element counts.
    private static let shapes: [[Int]] = (0..<40).map { k in
        let n = [1, 3, 255, 257, 4097, 100, 31, 8193, 64, 7][k % 10]
        return k < 20 ? [n] : [2, n]
    }

    /// How many launches a step of 40 parameters of one group takes: 32 in the first, 8 in the second.
    private static let launchesPerStep = (shapes.count + CUDAOptimizer.tensorsPerLaunch - 1) / CUDAOptimizer.tensorsPerLaunch

    /// Runs `steps` steps of `make`'s optimizer over the 40 parameters on `device` in `dtype` and returns the
    /// parameters, with the kernel launches of the last step in `lastStepKernels`.
    private func train(_ make: ([Tensor]) -> optim.Optimizer, _ dtype: DType, on device: Device, steps: Int = 4,
                       lastStepKernels: inout Int) -> [Tensor] {
        let params = Self.shapes.enumerated().map { k, shape in
            data(shape, seed: 100 + UInt64(k), on: device).to(dtype).requiresGrad_()
        }
        let opt = make(params)
        for step in 0..<steps {
            opt.zeroGrad()
            var loss: Tensor? = nil
            // The odd parameters get their first gradient at the second step.
            for (k, p) in params.enumerated() where step > 0 || k % 2 == 0 {
                let term = (p.tanh() * p).sum() * Double(k + 1)
                loss = loss.map { $0 + term } ?? term
            }
            loss!.backward()
            let before = CUDALaunchCounter.kernels
            opt.step()
            lastStepKernels = CUDALaunchCounter.kernels - before
        }
        return params.map { $0.detach() }
    }

    private func assertMatchesTheCPU(_ variants: [(String, ([Tensor]) -> optim.Optimizer)], steps: Int = 4,
                                     file: StaticString = #filePath, line: UInt = #line) {
        for (name, make) in variants {
            for (dtype, tol) in [(DType.float32, 1e-5), (.float64, 1e-11)] {
                var kernels = 0
                assertSameOnBothDevices("\(name) \(dtype.name), 40 parameters, \(steps) steps", tol: tol, file: file, line: line) { dev in
                    var count = 0
                    let result = train(make, dtype, on: dev, steps: steps, lastStepKernels: &count)
                    if dev != .cpu { kernels = count }
                    return result
                }
                XCTAssertEqual(kernels, Self.launchesPerStep, "\(name) \(dtype.name): launches per step", file: file, line: line)
            }
        }
    }

    func testMultiTensorSGDMatchesTheCPU() {
        assertMatchesTheCPU([
            ("SGD", { optim.SGD($0, lr: 0.01) }),
            ("SGD momentum, dampening, weight decay", { optim.SGD($0, lr: 0.01, momentum: 0.9, dampening: 0.3, weightDecay: 0.01) }),
            ("SGD nesterov, weight decay, maximize", {
                optim.SGD($0, lr: 0.01, momentum: 0.8, weightDecay: 0.05, nesterov: true, maximize: true)
            }),
        ])
    }

    func testMultiTensorAdamAndAdamWMatchTheCPU() {
        assertMatchesTheCPU([
            ("Adam", { optim.Adam($0, lr: 0.01) }),
            ("Adam L2 weight decay, amsgrad, maximize", {
                optim.Adam($0, lr: 0.01, weightDecay: 0.1, amsgrad: true, maximize: true)
            }),
            ("AdamW amsgrad", { optim.AdamW($0, lr: 0.01, weightDecay: 0.1, amsgrad: true) }),
        ])
    }

    func testMultiTensorRMSpropAdagradAndAdadeltaMatchTheCPU() {
        assertMatchesTheCPU([
            ("RMSprop", { optim.RMSprop($0, lr: 0.01) }),
            ("RMSprop centered, momentum, weight decay, maximize", {
                optim.RMSprop($0, lr: 0.01, alpha: 0.9, weightDecay: 0.1, momentum: 0.5, centered: true, maximize: true)
            }),
            ("Adagrad lr decay, weight decay, initial accumulator", {
                optim.Adagrad($0, lr: 0.1, lrDecay: 0.1, weightDecay: 0.05, initialAccumulatorValue: 0.2)
            }),
            ("Adagrad maximize", { optim.Adagrad($0, lr: 0.1, maximize: true) }),
            ("Adadelta weight decay", { optim.Adadelta($0, lr: 0.5, weightDecay: 0.1) }),
            ("Adadelta maximize", { optim.Adadelta($0, rho: 0.8, maximize: true) }),
        ])
    }

    func testMultiTensorAdamaxNAdamAndRAdamMatchTheCPU() {
        assertMatchesTheCPU([
            ("Adamax weight decay", { optim.Adamax($0, lr: 0.01, weightDecay: 0.1) }),
            ("Adamax maximize", { optim.Adamax($0, lr: 0.01, betas: (0.8, 0.9), maximize: true) }),
            ("NAdam", { optim.NAdam($0, lr: 0.01) }),
            ("NAdam decoupled weight decay, maximize", {
                optim.NAdam($0, lr: 0.01, weightDecay: 0.1, decoupledWeightDecay: true, maximize: true)
            }),
            ("NAdam L2 weight decay", { optim.NAdam($0, lr: 0.01, weightDecay: 0.1) }),
        ])
        // ρ_t passes 5 at a parameter's sixth step: at the sixth step the even-numbered parameters are rectified and
        // the odd ones (one step behind) not, in the same launches.
        assertMatchesTheCPU([
            ("RAdam", { optim.RAdam($0, lr: 0.01) }),
            ("RAdam decoupled weight decay, maximize", {
                optim.RAdam($0, lr: 0.01, weightDecay: 0.1, decoupledWeightDecay: true, maximize: true)
            }),
            ("RAdam L2 weight decay", { optim.RAdam($0, lr: 0.01, weightDecay: 0.1) }),
        ], steps: 7)
    }

    /// The by-value launch arguments stay under the 4 KB a kernel's parameters may take on every driver.
    func testLaunchArgumentsFitTheDriversParameterLimit() {
        XCTAssertEqual(MemoryLayout<stcu_opt_args>.size, 2904)
        XCTAssertLessThan(MemoryLayout<stcu_opt_args>.size, 4096)
        XCTAssertEqual(CUDAOptimizer.tensorsPerLaunch, 32)
    }

    /// Groups with different options launch apart; a parameter that cannot fuse (non-contiguous) takes the
    /// composed path beside them; all match the CPU.
    func testGroupsLaunchApartAndUnfusableParametersFallBack() {
        var kernels = 0
        assertSameOnBothDevices("two SGD groups and a transposed parameter", tol: 1e-5) { dev in
            let a = (0..<5).map { data([7 * ($0 + 1)], seed: 200 + UInt64($0), on: dev).requiresGrad_() }
            let b = (0..<3).map { data([300 + $0], seed: 300 + UInt64($0), on: dev).requiresGrad_() }
            // Transposed on both devices: the CPU updates it through a contiguous copy, the GPU by composed ops.
            let strided = data([6, 4], seed: 400, on: dev).t().detach().requiresGrad_()
            let opt = optim.SGD(groups: [optim.ParamGroup(params: a + [strided]), optim.ParamGroup(params: b, options: ["momentum": .double(0.5)])],
                                lr: 0.05)
            for _ in 0..<3 {
                opt.zeroGrad()
                let terms = (a + b + [strided]).map { ($0.tanh() * $0).sum() }
                terms.dropFirst().reduce(terms[0], +).backward()
                let before = CUDALaunchCounter.kernels
                opt.step()
                if dev != .cpu { kernels = CUDALaunchCounter.kernels - before }
            }
            return a + b + [strided]
        }
        XCTAssertFalse(torch.randn([6, 4]).t().isContiguous)
        // One launch per group; the transposed parameter's composed update launches on its own (at least 1).
        XCTAssertGreaterThan(kernels, 2)
        XCTAssertLessThan(kernels, 8)
    }
}
