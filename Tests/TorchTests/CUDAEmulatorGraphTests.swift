import XCTest
@testable import Torch

/// CUDA graphs (`torch.cuda.CUDAGraph`, `torch.cuda.graph`) on the host emulator: a capture records the device
/// work instead of running it, a replay runs it again on the same memory, the graph's memory stays private, and
/// what a graph cannot hold makes the capture throw. `cuda-check` runs the graphed training step on a GPU.
final class CUDAEmulatorGraphTests: CUDAEmulatorTestCase {
    private let cuda = Device.cuda(0)

    /// Values of `t` as doubles (on the host).
    private func values(_ t: Tensor) -> [Double] { t.cpu().toArray(as: Double.self) }

    private func assertClose(_ a: Tensor, _ b: Tensor, tol: Double, _ what: String, file: StaticString = #filePath,
                             line: UInt = #line) {
        XCTAssertEqual(a.shape, b.shape, what, file: file, line: line)
        for (i, (p, q)) in zip(values(a), values(b)).enumerated() where abs(p - q) > tol * max(1, abs(p)) {
            XCTFail("\(what) element \(i): \(p) vs \(q)", file: file, line: line)
            return
        }
    }

    func testCapturedLinearReLUReplaysOnNewInputs() throws {
        let w = data([6, 5], seed: 1, on: cuda), b = data([5], seed: 2, on: cuda)
        let x = data([4, 6], seed: 3, on: cuda)
        func forward() -> Tensor { (x.mm(w) + b).relu() }
        _ = forward()   // warm-up: kernels compiled, the cache holds the sizes
        x.copy_(data([4, 6], seed: 4, on: .cpu))
        let eagerBefore = forward()

        let g = torch.cuda.CUDAGraph()
        var capturing = false
        let issuedBefore = CUDALaunchCounter.total
        let y = try torch.cuda.graph(g) { () -> Tensor in
            capturing = torch.cuda.isCurrentStreamCapturing()
            return forward()
        }
        XCTAssertTrue(capturing, "isCurrentStreamCapturing() inside the capture")
        XCTAssertFalse(torch.cuda.isCurrentStreamCapturing(), "isCurrentStreamCapturing() after it")
        XCTAssertGreaterThanOrEqual(g.capturedOperations, 2, "a GEMM and the bias/relu kernels were recorded")
        XCTAssertEqual(CUDALaunchCounter.total, issuedBefore, "a capture issues nothing")
        XCTAssertNotEqual(values(y), values(eagerBefore), "the capture ran nothing: the static output is not computed yet")

        for seed: UInt64 in [5, 6] {
            let next = data([4, 6], seed: seed, on: .cpu)
            x.copy_(next)
            let kernels = CUDALaunchCounter.kernels, gemms = CUDALaunchCounter.gemms, graphs = CUDALaunchCounter.graphs
            g.replay()
            XCTAssertEqual(CUDALaunchCounter.graphs - graphs, 1, "a replay is one graph launch")
            XCTAssertEqual(CUDALaunchCounter.kernels - kernels + CUDALaunchCounter.gemms - gemms, 0,
                           "a replay issues no separate kernels or GEMMs")
            let expected = (next.mm(w.cpu()) + b.cpu()).relu()
            assertClose(expected, y, tol: 1e-5, "relu(x @ w + b) after replay with seed \(seed)")
        }
    }

    /// A model's whole training step (forward, cross-entropy backward, SGD with momentum) captured once after a
    /// warm-up step, then replayed on new batches copied into the static inputs, against the same steps run eagerly.
    private func assertGraphedStepsMatchEager(_ name: String, input: [Int], classes: Int, _ makeModel: () -> nn.Module,
                                              file: StaticString = #filePath, line: UInt = #line) throws {
        func seededModel() -> nn.Module {
            torch.manualSeed(11)
            return makeModel()
        }
        let batches: [(Tensor, Tensor)] = (0..<5).map { k in
            torch.manualSeed(100 + UInt64(k))
            return (torch.randn(input), torch.randint(0, classes, [input[0]]))
        }
        let lossFunction = nn.CrossEntropyLoss()

        let eager = seededModel().to(cuda)
        let eagerOpt = optim.SGD(eager.parameters(), lr: 0.05, momentum: 0.9)
        var eagerLosses: [Double] = [], eagerStepLaunches = 0
        for (x, y) in batches {
            let xd = x.to(cuda), yd = y.to(cuda)
            let before = CUDALaunchCounter.total
            eagerOpt.zeroGrad()
            let loss = lossFunction(eager(xd), yd)
            loss.backward()
            eagerOpt.step()
            eagerStepLaunches = CUDALaunchCounter.total - before
            eagerLosses.append(loss.item())
        }

        let graphed = seededModel().to(cuda)
        let opt = optim.SGD(graphed.parameters(), lr: 0.05, momentum: 0.9)
        let staticX = batches[0].0.to(cuda), staticY = batches[0].1.to(cuda)
        func step() -> Tensor {
            let loss = lossFunction(graphed(staticX), staticY)
            loss.backward()
            opt.step()
            return loss
        }
        opt.zeroGrad()
        let warmUpLoss = step().item()   // the first batch, eagerly: momentum buffers exist afterwards
        XCTAssertEqual(warmUpLoss, eagerLosses[0], accuracy: 1e-5, "\(name) warm-up loss", file: file, line: line)
        opt.zeroGrad()
        let g = torch.cuda.CUDAGraph()
        let staticLoss = try torch.cuda.graph(g) { step() }
        XCTAssertEqual(g.capturedOperations, eagerStepLaunches, "\(name): the graph holds what one eager step launches",
                       file: file, line: line)
        for (k, (x, y)) in batches.enumerated().dropFirst() {
            staticX.copy_(x)
            staticY.copy_(y)
            g.replay()
            XCTAssertEqual(staticLoss.item(), eagerLosses[k], accuracy: 1e-5, "\(name) loss of batch \(k)", file: file, line: line)
        }
        for (k, (a, b)) in zip(eager.parameters(), graphed.parameters()).enumerated() {
            assertClose(a, b, tol: 1e-5, "\(name) parameter \(k) after \(batches.count) steps", file: file, line: line)
        }
    }

    func testGraphedMLPTrainingStepMatchesEagerSteps() throws {
        try assertGraphedStepsMatchEager("MLP", input: [8, 20], classes: 5) {
            nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 5))
        }
    }

    /// Pooling's window tables are uploaded at the warm-up step and found again by the capture.
    func testGraphedCNNTrainingStepMatchesEagerSteps() throws {
        try assertGraphedStepsMatchEager("LeNet-style CNN", input: [4, 3, 16, 16], classes: 10) {
            nn.Sequential(nn.Conv2d(3, 6, 5), nn.ReLU(), nn.MaxPool2d(kernelSize: 2), nn.Conv2d(6, 8, 3), nn.ReLU(),
                          nn.AvgPool2d(kernelSize: 2), nn.Flatten(), nn.Linear(32, 10))
        }
    }

    func testGraphMemoryStaysPrivateAndResetGivesItBack() throws {
        let g = torch.cuda.CUDAGraph()
        var scratchAddress: UInt64 = 0
        var kept: Tensor? = try torch.cuda.graph(g) { () -> Tensor in
            let scratch = torch.zeros(3000, device: cuda)   // freed inside the capture
            scratchAddress = scratch.deviceAddress
            return scratch + 1
        }
        let keptAddress = kept!.deviceAddress
        kept = nil   // a static output dropped after capture: its block goes back to the graph's pool
        let outside = (0..<6).map { _ in torch.empty(3000, device: cuda) }
        for t in outside {
            XCTAssertNotEqual(t.deviceAddress, scratchAddress, "a block freed during capture was handed out")
            XCTAssertNotEqual(t.deviceAddress, keptAddress, "a block of the graph's pool was handed out")
        }
        let reserved = torch.cuda.memoryReserved()
        g.reset()
        XCTAssertLessThanOrEqual(torch.cuda.memoryReserved(), reserved - 2 * CUDAAllocator.roundedSize(3000 * 4),
                                 "reset gives the pool's two free blocks back")
    }

    func testPoolsAreSharedByHandle() throws {
        let x = data([16], seed: 9, on: cuda)
        let first = torch.cuda.CUDAGraph(), second = torch.cuda.CUDAGraph()
        let y = try torch.cuda.graph(first) { x * 2 }
        let z = try torch.cuda.graph(second, pool: first.pool(), captureErrorMode: "thread_local") { y + 1 }
        XCTAssertEqual(first.pool(), second.pool())
        first.replay()
        second.replay()
        assertClose(x.cpu() * 2 + 1, z, tol: 0, "two graphs of one pool replayed in capture order")
        first.reset()
        second.replay()   // the pool lives while a graph holds it
        assertClose(x.cpu() * 2 + 1, z, tol: 0, "the second graph after the first was reset")
        second.reset()
    }

    // MARK: what a capture refuses

    private func assertCaptureRefused(_ expected: [String], file: StaticString = #filePath, line: UInt = #line,
                                      _ body: () -> Void) {
        let g = torch.cuda.CUDAGraph()
        XCTAssertThrowsError(try torch.cuda.graph(g, body), file: file, line: line) { error in
            guard case CUDAGraphError.operationsRefused = error else {
                return XCTFail("expected operationsRefused, got \(error)", file: file, line: line)
            }
            let text = "\(error)"
            for e in expected { XCTAssertTrue(text.contains(e), "\"\(e)\" missing from: \(text)", file: file, line: line) }
        }
        XCTAssertFalse(torch.cuda.isCurrentStreamCapturing(), "the failed capture ended", file: file, line: line)
    }

    func testHostReadsWaitsAndUploadsDuringCaptureThrowNamingTheOperation() throws {
        let x = data([10], seed: 1, on: cuda)
        _ = (x * 2).sum()
        assertCaptureRefused(["cuMemcpyDtoHAsync", "item()", "operation not permitted when stream is capturing"]) {
            _ = (x * 2).sum().item()
        }
        assertCaptureRefused(["torch.cuda.synchronize"]) { torch.cuda.synchronize() }
        assertCaptureRefused(["cuMemcpyHtoDAsync"]) { x.copy_(torch.ones(10)) }
        // The device still works eagerly afterwards, and a new capture succeeds.
        XCTAssertEqual((x * 0 + 1).sum().item(), 10)
        let g = torch.cuda.CUDAGraph()
        let y = try torch.cuda.graph(g) { x * 0 + 3 }
        g.replay()
        XCTAssertEqual(y.sum().item(), 30)
    }

    func testOptimizersWithHostStepCountsAndRandomNumbersAreRefused() {
        let lin = nn.Linear(4, 3).to(cuda)
        let x = data([2, 4], seed: 2, on: cuda)
        let adam = optim.Adam(lin.parameters(), lr: 1e-3)
        lin(x).sum().backward()
        adam.step()
        assertCaptureRefused(["step() for an instance of Adam", "capturable is False"]) { adam.step() }

        let fresh = nn.Linear(4, 3).to(cuda)
        fresh(x).sum().backward()
        let sgd = optim.SGD(fresh.parameters(), lr: 0.1, momentum: 0.9)
        assertCaptureRefused(["momentum buffers are made at the first step"]) { sgd.step() }

        let dropout = nn.Dropout(p: 0.5)
        assertCaptureRefused(["bernoulli", "random numbers"]) { _ = dropout(x) }
    }

    func testBodyErrorsEndTheCaptureAndAreRethrown() throws {
        struct Stop: Error {}
        let x = data([3], seed: 3, on: cuda)
        let g = torch.cuda.CUDAGraph()
        XCTAssertThrowsError(try torch.cuda.graph(g) { _ = x + 1; throw Stop() }) { XCTAssertTrue($0 is Stop) }
        XCTAssertFalse(torch.cuda.isCurrentStreamCapturing())
        let y = try torch.cuda.graph(g) { x + 1 }   // the same graph captures again
        g.replay()
        assertClose(x.cpu() + 1, y, tol: 0, "capture after a failed one")
    }
}
