import Foundation
import XCTest
@testable import Torch

/// `nn.DataParallel` on two emulated devices against one device on the whole batch: the same losses and weights
/// after 20 SGD steps (relative difference at most `tolerance`: float32 sums over the batch in another order,
/// each replica summing its slice), replicas running on both devices, gradients reaching the original
/// parameters, and the `module.` state-dict prefix.
final class CUDAEmulatorDataParallelTests: CUDAEmulatorMultiDeviceTestCase {
    private let tolerance = 1e-5
    /// The largest relative difference the last comparison run saw (printed, for the record).
    private var largest = 0.0

    private func assertClose(_ a: [Double], _ b: [Double], _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(a.count, b.count, what, file: file, line: line)
        for (p, q) in zip(a, b) { largest = max(largest, abs(p - q) / max(1, abs(p))) }
        for (i, (p, q)) in zip(a, b).enumerated() where abs(p - q) > tolerance * max(1, abs(p)) {
            XCTFail("\(what) element \(i): \(p) (one device) vs \(q) (DataParallel)", file: file, line: line)
            return
        }
    }

    private func values(_ t: Tensor) -> [Double] { t.cpu().toArray(as: Double.self) }

    /// Trains `make()` on cuda:0 alone and wrapped in DataParallel over both devices with the same data and
    /// SGD with momentum for `steps` steps; compares each step's loss and every final parameter.
    private func assertDataParallelMatchesOneDevice(_ name: String, input: [Int], classes: Int, steps: Int = 20,
                                                    eval: Bool = false, _ make: () -> nn.Module,
                                                    file: StaticString = #filePath, line: UInt = #line) {
        largest = 0
        torch.manualSeed(11)
        let single = make().to(Device.cuda(0))
        torch.manualSeed(11)
        let wrapped = make().to(Device.cuda(0))
        if eval { _ = single.eval(); _ = wrapped.eval() }
        let model = nn.DataParallel(wrapped, deviceIds: [0, 1])
        // Each replica's forward sees its slice on its own device (hooks are shared with the replicas).
        var seen = Set<String>()
        let lock = NSLock()
        wrapped.children().first!.registerForwardHook { _, x, _ in
            lock.lock(); seen.insert("\(x.device) \(x.shape[0])"); lock.unlock()
            return nil
        }
        let optA = optim.SGD(single.parameters(), lr: 0.05, momentum: 0.9)
        let optB = optim.SGD(model.parameters(), lr: 0.05, momentum: 0.9)
        torch.manualSeed(12)
        let x = torch.randn(input), y = torch.randint(0, classes, [input[0]])
        for step in 0..<steps {
            optA.zeroGrad()
            let lossA = F.crossEntropy(single(x.to(.cuda(0))), y.to(.cuda(0)))
            lossA.backward()
            optA.step()
            optB.zeroGrad()
            let out = model(x)
            XCTAssertEqual(out.device, .cuda(0), file: file, line: line)
            XCTAssertEqual(out.shape, [input[0], classes], file: file, line: line)
            let lossB = F.crossEntropy(out, y.to(.cuda(0)))
            lossB.backward()
            optB.step()
            assertClose([lossA.item()], [lossB.item()], "\(name) loss at step \(step)", file: file, line: line)
        }
        for ((n, a), b) in zip(single.namedParameters(), wrapped.parameters()) {
            XCTAssertEqual(b.device, .cuda(0), "\(name) \(n) stays on cuda:0", file: file, line: line)
            assertClose(values(a), values(b), "\(name) \(n) after \(steps) steps", file: file, line: line)
        }
        print("\(name): DataParallel on 2 devices vs 1 device after \(steps) steps: largest relative difference "
              + "\(largest) (losses and weights)")
        let half = (input[0] + 1) / 2
        XCTAssertEqual(seen, ["cuda:0 \(half)", "cuda:1 \(input[0] - half)"], "\(name): slices per device", file: file, line: line)
    }

    func testMLPMatchesOneDevice() throws {
        try requireTwoDevices()
        assertDataParallelMatchesOneDevice("MLP", input: [15, 10], classes: 4) {
            nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4))
        }
    }

    func testCNNMatchesOneDevice() throws {
        try requireTwoDevices()
        assertDataParallelMatchesOneDevice("CNN", input: [4, 1, 6, 6], classes: 3) {
            nn.Sequential(nn.Conv2d(1, 2, 3, padding: 1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(18, 3))
        }
    }

    func testCNNWithBatchNormInEvalMatchesOneDevice() throws {
        try requireTwoDevices()
        assertDataParallelMatchesOneDevice("CNN+BN (eval)", input: [4, 1, 6, 6], classes: 3, eval: true) {
            nn.Sequential(nn.Conv2d(1, 2, 3, padding: 1), nn.BatchNorm2d(2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(18, 3))
        }
    }

    func testReplicasAreDifferentiableCopies() throws {
        try requireTwoDevices()
        torch.manualSeed(3)
        let lin = nn.Linear(4, 2).to(Device.cuda(0))
        let replica = ModuleReplication.replicate(lin, on: [.cuda(1)])[0] as! nn.Linear
        XCTAssertFalse(replica === lin)
        XCTAssertEqual(replica.weight.device, .cuda(1))
        XCTAssertEqual(replica.weight.gradFn?.name, "BroadcastBackward")
        XCTAssertEqual(values(replica.weight), values(lin.weight))
        XCTAssertEqual(replica.parameters().map(\.device), [.cuda(1), .cuda(1)])
        XCTAssertEqual(lin.weight.device, .cuda(0), "the original is untouched")
        replica(torch.ones([3, 4], device: .cuda(1))).sum().backward()
        XCTAssertEqual(lin.weight.grad?.device, .cuda(0))
        XCTAssertEqual(values(lin.weight.grad!), [Double](repeating: 3, count: 8))
        XCTAssertEqual(values(lin.bias!.grad!), [3, 3])
    }

    /// Stored properties of every registrable shape: an array of modules, an optional module, a tied parameter
    /// held twice, a registered buffer also held in a property, a shared submodule and a weak back-reference.
    private final class Shapes: nn.Module {
        let blocks: [nn.Module] = [nn.Linear(3, 3), nn.Tanh()]
        var head: nn.Linear? = nn.Linear(3, 2)
        let scale = nn.Parameter(torch.tensor([2.0, 3.0, 4.0], dtype: .float32))
        lazy var sameScale: nn.Parameter = scale
        var offset: Tensor = torch.tensor([0.5, 0.5], dtype: .float32)
        weak var owner: nn.Module?
        override init() {
            super.init()
            registerBuffer("offset", offset)
            addModule("again", blocks[0])
        }
        override func forward(_ x: Tensor) -> Tensor {
            var y = x * sameScale
            for b in blocks { y = b(y) }
            return head!(y) + offset
        }
    }

    func testReplicationReachesEveryStoredProperty() throws {
        try requireTwoDevices()
        torch.manualSeed(8)
        let m = Shapes()
        m.owner = m
        _ = m.sameScale
        _ = m.to(Device.cuda(0))
        let x = torch.randn(5, 3)
        let r = ModuleReplication.replicate(m, on: [.cuda(1)])[0] as! Shapes
        XCTAssertTrue(m.owner === m)
        XCTAssertNil(r.owner, "a weak property is nil in a replica")
        XCTAssertTrue(r.sameScale === r.scale, "tied parameters stay tied")
        XCTAssertTrue(r.registeredModules["again"] === r.blocks[0], "a shared submodule stays shared")
        XCTAssertTrue(r.offset === r.registeredBuffers["offset"], "a buffer held in a property is the registered replica")
        XCTAssertEqual(r.parameters().count, m.parameters().count)
        for t in r.parameters() + r.buffers() { XCTAssertEqual(t.device, .cuda(1)) }
        for t in m.parameters() + m.buffers() { XCTAssertEqual(t.device, .cuda(0), "the original is untouched") }
        let expected = m(x.to(.cuda(0))), got = r(x.to(.cuda(1)))
        XCTAssertEqual(got.device, .cuda(1))
        for (p, q) in zip(values(expected), values(got)) { XCTAssertEqual(p, q, accuracy: 1e-6 * max(1, abs(p))) }
        got.sum().backward()
        XCTAssertEqual(m.scale.grad?.device, .cuda(0), "the tied parameter's gradient reaches the original")
        XCTAssertEqual(m.head?.weight.grad?.shape, [2, 3])
    }

    func testStateDictPrefixAndLoading() throws {
        try requireTwoDevices()
        torch.manualSeed(5)
        let model = nn.DataParallel(nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2)).to(Device.cuda(0)))
        XCTAssertEqual(model.deviceIds, [0, 1])
        XCTAssertEqual(model.outputDevice, 0)
        let sd = model.stateDict()
        XCTAssertEqual(Array(sd.keys.prefix(3)), ["module.0.weight", "module.0.bias", "module.1.weight"])
        XCTAssertTrue(sd.keys.allSatisfy { $0.hasPrefix("module.") })
        torch.manualSeed(6)
        let other = nn.DataParallel(nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2)).to(Device.cuda(0)))
        XCTAssertNoThrow(try other.loadStateDict(sd))
        XCTAssertEqual(values(other.module.stateDict()["0.weight"]!), values(sd["module.0.weight"]!))
        XCTAssertTrue(model.description.hasPrefix("DataParallel(\n  (module): Sequential("), model.description)
        // Output gathered on another device, and a batch smaller than the device count.
        let toOne = nn.DataParallel(nn.Linear(3, 2).to(Device.cuda(0)), deviceIds: [0, 1], outputDevice: 1)
        XCTAssertEqual(toOne(torch.ones([4, 3])).device, .cuda(1))
        XCTAssertEqual(toOne(torch.ones([1, 3])).shape, [1, 2])
    }

    func testOneDeviceMovesTheModuleAndTheInput() throws {
        try requireTwoDevices()
        torch.manualSeed(4)
        let lin = nn.Linear(3, 2)
        let expected = lin(torch.ones([4, 3])).toArray(as: Float.self)
        let model = nn.DataParallel(lin, deviceIds: [1])
        XCTAssertEqual(lin.weight.device, .cuda(1), "moved to deviceIds[0] at construction, as PyTorch")
        let y = model(torch.ones([4, 3]))
        XCTAssertEqual(y.device, .cuda(1))
        for (p, q) in zip(expected, y.cpu().toArray(as: Float.self)) { XCTAssertEqual(p, q, accuracy: 1e-6 * max(1, abs(p))) }
    }
}
