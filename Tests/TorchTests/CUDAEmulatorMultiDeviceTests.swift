import Foundation
import XCTest
@testable import Torch

/// Emulator tests that need several devices: the emulator is started with two (as
/// `SWIFTTORCH_CUDA_EMULATOR_DEVICES=2` does), and each test skips, saying why, when fewer are present (a real
/// single GPU is in use, which the emulator never replaces).
class CUDAEmulatorMultiDeviceTestCase: CUDAEmulatorTestCase {
    override class func setUp() {
        super.setUp()
        CUDARuntime.useEmulator(devices: 2)
    }

    override func setUp() {
        super.setUp()
        torch.cuda.setDevice(0)
    }

    /// Skips unless two CUDA devices are present.
    func requireTwoDevices() throws {
        if torch.cuda.deviceCount() < 2 {
            throw XCTSkip("needs 2 CUDA devices (emulated or real); this process has \(torch.cuda.deviceCount())")
        }
    }
}

/// A value shared with another thread (the tests join before reading it).
final class SharedBox<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}

/// Several emulated devices: device count, tensors and copies on `cuda:1`, the current device and its scoping
/// (per thread, as in PyTorch), per-device allocators and generators, and PyTorch's error for two devices.
final class CUDAEmulatorMultiDeviceTests: CUDAEmulatorMultiDeviceTestCase {
    func testTwoDevicesAreReported() throws {
        try requireTwoDevices()
        XCTAssertEqual(torch.cuda.deviceCount(), 2)
        XCTAssertEqual(torch.cuda.getDeviceCapability(1).0, torch.cuda.getDeviceCapability(0).0)
        XCTAssertEqual(CUDAInfo.current.devices.count, 2)
        XCTAssertNoThrow(try Device(choosing: "cuda:1"))
        XCTAssertThrowsError(try Device(choosing: "cuda:2"))
    }

    func testTensorsAndCopiesBetweenDevices() throws {
        try requireTwoDevices()
        let host = torch.arange(12, dtype: .float32).reshape(3, 4)
        let a = host.to(.cuda(0))
        let b = a.to(.cuda(1))
        XCTAssertEqual(b.device, .cuda(1))
        XCTAssertEqual(b.cpu().toArray(as: Float.self), host.toArray(as: Float.self))
        let c = (b * 2 + 1).sum(dim: 1)   // kernels and a reduction on cuda:1
        XCTAssertEqual(c.device, .cuda(1))
        XCTAssertEqual(c.cpu().toArray(as: Float.self), ((host * 2 + 1).sum(dim: 1)).toArray(as: Float.self))
        // Strided and dtype-changing copies both ways, and copy_ into a view on the other device.
        let t = b.t().to(.cuda(0), dtype: .float64)
        XCTAssertEqual(t.device, .cuda(0))
        XCTAssertEqual(t.cpu().toArray(as: Double.self), host.t().toArray(as: Double.self))
        let target = torch.zeros([4, 3], device: .cuda(1))
        target.narrow(0, 1, 2).copy_(a.t().narrow(0, 0, 2))
        XCTAssertEqual(target.cpu().narrow(0, 1, 2).toArray(as: Float.self), host.t().narrow(0, 0, 2).toArray(as: Float.self))
        XCTAssertEqual(torch.tensor([1.0, 2.0], device: .cuda(1)).device, .cuda(1))
        // Gradients move back across devices.
        let w = torch.ones([3], device: .cuda(0)).requiresGrad_()
        (w.to(.cuda(1)) * torch.tensor([1.0, 2.0, 3.0]).to(.cuda(1))).sum().backward()
        XCTAssertEqual(w.grad?.device, .cuda(0))
        XCTAssertEqual(w.grad?.cpu().toArray(as: Float.self), [1, 2, 3])
    }

    /// Copies between the devices are one peer copy each (the bytes cross once, not through the host), for
    /// contiguous, strided, dtype-changing and broadcast sources alike, and `canDeviceAccessPeer` answers as
    /// PyTorch's `can_device_access_peer` (never a device with itself).
    func testCopiesBetweenDevicesArePeerCopies() throws {
        try requireTwoDevices()
        XCTAssertTrue(torch.cuda.canDeviceAccessPeer(0, 1))
        XCTAssertFalse(torch.cuda.canDeviceAccessPeer(1, 1))
        let host = torch.randn([5, 7], generator: Generator().manualSeed(3))
        let a = host.to(.cuda(0))
        let cases: [(String, () -> Tensor, Tensor)] = [
            ("contiguous", { a.to(.cuda(1)) }, host),
            ("strided source", { a.t().to(.cuda(1)) }, host.t()),
            ("dtype change", { a.to(.cuda(1), dtype: .float64) }, host.to(.float64)),
            ("strided destination", {
                let d = torch.zeros([7, 5], device: .cuda(1)).t()
                d.copy_(a)
                return d
            }, host),
            ("broadcast source", {
                let d = torch.zeros([3, 5, 7], device: .cuda(1))
                d.copy_(a)
                return d
            }, host.expand([3, 5, 7])),
        ]
        for (what, make, expected) in cases {
            let before = CUDALaunchCounter.peerCopies
            let out = make()
            XCTAssertEqual(CUDALaunchCounter.peerCopies - before, 1, what)
            XCTAssertEqual(out.device, .cuda(1), what)
            XCTAssertEqual(out.cpu().toArray(as: Double.self), expected.toArray(as: Double.self), what)
        }
    }

    func testCurrentDeviceScopingAsPyTorch() throws {
        try requireTwoDevices()
        XCTAssertEqual(torch.cuda.currentDevice(), 0)
        let inner: Int = torch.cuda.device(1) {
            XCTAssertEqual(torch.cuda.currentDevice(), 1)
            XCTAssertEqual(torch.ones([2]).cuda().device, .cuda(1), "x.cuda() goes to the current device")
            XCTAssertEqual(Device("cuda"), .cuda(1), "\"cuda\" names the current device")
            torch.cuda.device(0) { XCTAssertEqual(torch.cuda.currentDevice(), 0) }
            torch.cuda.device(-1) { XCTAssertEqual(torch.cuda.currentDevice(), 1, "device(-1) is a no-op") }
            return torch.cuda.currentDevice()
        }
        XCTAssertEqual(inner, 1)
        XCTAssertEqual(torch.cuda.currentDevice(), 0, "restored after the scope")
        torch.cuda.deviceOf(torch.zeros([1], device: .cuda(1))) { XCTAssertEqual(torch.cuda.currentDevice(), 1) }
        torch.cuda.setDevice(1)
        XCTAssertEqual(torch.cuda.currentDevice(), 1)
        // The current device is per thread, as cudaSetDevice is.
        let seen = SharedBox<Int>(-1)
        let thread = Thread { seen.value = torch.cuda.currentDevice() }
        thread.start()
        while !thread.isFinished { usleep(1000) }
        XCTAssertEqual(seen.value, 0, "a new thread starts on device 0")
        torch.cuda.setDevice(0)
    }

    func testPerDeviceAllocatorsAndGenerators() throws {
        try requireTwoDevices()
        torch.cuda.emptyCache()
        let before0 = torch.cuda.memoryAllocated(0), before1 = torch.cuda.memoryAllocated(1)
        var x: Tensor? = torch.empty([1 << 16], device: .cuda(1))
        XCTAssertEqual(torch.cuda.memoryAllocated(0), before0, "cuda:1's allocation is not counted on cuda:0")
        XCTAssertEqual(torch.cuda.memoryAllocated(1) - before1, 1 << 18)
        XCTAssertEqual(torch.cuda.device(1) { torch.cuda.memoryAllocated() } - before1, 1 << 18, "default: the current device")
        x = nil
        XCTAssertEqual(torch.cuda.memoryAllocated(1), before1)
        XCTAssertEqual(torch.cuda.memoryReserved(1) - before1 >= 1 << 18, true, "the block stays cached on cuda:1")
        _ = x
        // Seeding one device leaves the other's generator alone; manualSeedAll seeds both.
        torch.cuda.manualSeedAll(7)
        let first0 = torch.randn([8], device: .cuda(0)).cpu().toArray(as: Float.self)
        let first1 = torch.randn([8], device: .cuda(1)).cpu().toArray(as: Float.self)
        XCTAssertEqual(first0, first1, "same seed and offset on both devices: the same numbers")
        torch.cuda.device(1) { torch.cuda.manualSeed(7) }
        XCTAssertEqual(torch.cuda.device(1) { torch.cuda.initialSeed() }, 7)
        XCTAssertEqual(torch.randn([8], device: .cuda(1)).cpu().toArray(as: Float.self), first1, "cuda:1 rewound")
        XCTAssertNotEqual(torch.randn([8], device: .cuda(0)).cpu().toArray(as: Float.self), first0, "cuda:0 went on")
    }

    func testDevicesRunInParallelThreads() throws {
        try requireTwoDevices()
        let host = torch.randn([16, 16])
        let results = SharedBox<[Tensor?]>([nil, nil])
        let lock = NSLock()
        let threads = (0..<2).map { i in
            Thread {
                let y = torch.cuda.device(i) { (host.cuda().mm(host.cuda()) + 1).relu().sum(dim: 0) }
                lock.lock(); results.value[i] = y; lock.unlock()
            }
        }
        threads.forEach { $0.start() }
        while threads.contains(where: { !$0.isFinished }) { usleep(1000) }
        let expected = (host.mm(host) + 1).relu().sum(dim: 0).toArray(as: Float.self)
        for i in 0..<2 {
            XCTAssertEqual(results.value[i]?.device, .cuda(i))
            let got = results.value[i]!.cpu().toArray(as: Float.self)
            for (p, q) in zip(expected, got) { XCTAssertEqual(p, q, accuracy: 1e-4 * max(1, abs(p))) }
        }
    }

    // MARK: PyTorch's error for two devices, in a child process (a precondition stops the program)

    func testOpOnTwoDevicesStopsWithPyTorchsMessage() throws {
        try requireTwoDevices()
        let count = try child("count")
        XCTAssertEqual(count.status, 0, count.stderr)
        XCTAssertTrue(count.stdout.contains("DEVICES 2"), "SWIFTTORCH_CUDA_EMULATOR_DEVICES=2: \(count.stdout)")
        let mix = try child("mix")
        XCTAssertNotEqual(mix.status, 0)
        XCTAssertFalse(mix.stdout.contains("SUM"))
        XCTAssertTrue(mix.stderr.contains("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cuda:1!"),
                      mix.stderr)
    }

    private func child(_ mode: String) throws -> (status: Int32, stdout: String, stderr: String) {
        var env = ProcessInfo.processInfo.environment
        env["SWIFTTORCH_MULTIDEVICE_TEST_CHILD"] = mode
        env["SWIFTTORCH_CUDA_EMULATOR"] = "1"
        env["SWIFTTORCH_CUDA_EMULATOR_DEVICES"] = "2"
        env["SWIFT_BACKTRACE"] = "enable=no"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ThreadSettingsTests.testBinary)
        p.arguments = ["TorchTests.CUDAEmulatorDevicesChild/testChildProcessBody"]
        p.environment = env
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }
}

/// The child side of `CUDAEmulatorMultiDeviceTests.testOpOnTwoDevicesStopsWithPyTorchsMessage`: a plain test case,
/// so only the environment (`SWIFTTORCH_CUDA_EMULATOR=1`, `SWIFTTORCH_CUDA_EMULATOR_DEVICES=2`) sets up the devices.
final class CUDAEmulatorDevicesChild: XCTestCase {
    /// Does nothing in the ordinary test run.
    func testChildProcessBody() {
        guard let mode = ProcessInfo.processInfo.environment["SWIFTTORCH_MULTIDEVICE_TEST_CHILD"] else { return }
        print("DEVICES \(torch.cuda.deviceCount())")
        fflush(stdout)
        if mode == "mix" {
            let a = torch.ones([3], device: .cuda(0)), b = torch.ones([3], device: .cuda(1))
            print("SUM \((a + b).sum().item())")   // stops before this
            fflush(stdout)
        }
    }
}
