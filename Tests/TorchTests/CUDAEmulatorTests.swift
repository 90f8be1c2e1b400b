import XCTest
@testable import Torch

/// A test case whose tests run with the CUDA host emulator in place of a GPU (`SWIFTTORCH_CUDA_EMULATOR`'s
/// switch, turned on for the class and off after it).
class CUDAEmulatorTestCase: XCTestCase {
    override class func setUp() {
        super.setUp()
        CUDARuntime.useEmulator()
    }

    override class func tearDown() {
        CUDARuntime.stopEmulator()
        super.tearDown()
    }

    /// Runs `program` on the CPU and on the emulated GPU and compares every tensor it returns.
    func assertSameOnBothDevices(_ name: String, tol: Double = 1e-6, file: StaticString = #filePath, line: UInt = #line,
                                 _ program: (Device) -> [Tensor]) {
        let cpu = program(.cpu), gpu = program(.cuda(0))
        XCTAssertEqual(cpu.count, gpu.count, name, file: file, line: line)
        for (k, (c, g)) in zip(cpu, gpu).enumerated() {
            XCTAssertEqual(g.device, .cuda(0), "\(name) #\(k): result on \(g.device)", file: file, line: line)
            XCTAssertEqual(c.shape, g.shape, "\(name) #\(k) shape", file: file, line: line)
            XCTAssertEqual(c.dtype, g.dtype, "\(name) #\(k) dtype", file: file, line: line)
            let x = c.toArray(as: Double.self), y = g.cpu().toArray(as: Double.self)
            for (i, (p, q)) in zip(x, y).enumerated() where p != q && !(p.isNaN && q.isNaN) {
                XCTAssertLessThanOrEqual(abs(p - q), tol * max(1, abs(p)), "\(name) #\(k) element \(i): \(p) (cpu) vs \(q)",
                                         file: file, line: line)
            }
        }
    }

    /// A fixed random tensor (made on the CPU, so both devices see the same values) moved to `device`.
    func data(_ shape: [Int], seed: UInt64, on device: Device, requiresGrad: Bool = false) -> Tensor {
        torch.manualSeed(seed)
        let t = torch.randn(shape).to(device)
        return requiresGrad ? t.requiresGrad_() : t
    }
}

/// The CUDA backend's logic on the host emulator (no GPU needed): the generated kernels, compiled for the
/// host, run through the same allocator, dispatch and launch code as on a GPU, and must match the CPU.
/// `cuda-check` runs the same comparisons on a real GPU.
final class CUDAEmulatorTests: CUDAEmulatorTestCase {

    private let cuda = Device.cuda(0)

    private func assertClose(_ a: Tensor, _ b: Tensor, tol: Double = 1e-6, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(a.shape, b.shape, "shape", file: file, line: line)
        XCTAssertEqual(a.dtype, b.dtype, "dtype", file: file, line: line)
        let x = a.cpu().toArray(as: Double.self), y = b.cpu().toArray(as: Double.self)
        for (i, (p, q)) in zip(x, y).enumerated() {
            if p.isNaN && q.isNaN { continue }
            if p == q { continue }
            XCTAssertLessThanOrEqual(abs(p - q), tol * max(1, abs(q)), "element \(i): \(p) vs \(q)", file: file, line: line)
        }
    }

    func testRoundTripEveryDType() {
        for dt in DType.allCases {
            let x = torch.arange(0, 24).reshape(2, 3, 4).to(dt)
            let d = x.to(cuda)
            XCTAssertEqual(d.device, cuda)
            XCTAssertTrue(d.isCuda)
            assertClose(d.cpu(), x)
            // Strided views of device memory, and conversions on the device.
            assertClose(d.transpose(0, 2).contiguous().cpu(), x.transpose(0, 2).contiguous())
            assertClose(d.to(.float64).cpu(), x.to(.float64))
        }
    }

    func testBinaryOpsMatchTheCPU() {
        torch.manualSeed(0)
        let a = torch.randn(5, 1, 7), b = torch.randn(3, 7) + 2
        let da = a.to(cuda), db = b.to(cuda)
        for op in BinaryOp.allCases {
            assertClose(binary(op, da, db).cpu(), binary(op, a, b), tol: 1e-5)
        }
        assertClose((da * 3 + 1).cpu(), a * 3 + 1)
        assertClose((2.5 - db).cpu(), 2.5 - b)
        let ia = torch.randint(-20, 20, [4, 6]), ib = torch.randint(1, 9, [6])
        for op in BinaryOp.allCases where op.integerExpression != nil {
            assertClose(binary(op, ia.to(cuda), ib.to(cuda)).cpu(), binary(op, ia, ib))
        }
        // A transposed (non-contiguous) operand.
        let m = torch.randn(6, 4)
        let md = m.to(cuda)
        assertClose((md.t() + md.t().contiguous()).cpu(), m.t() + m.t())
    }

    func testUnaryOpsMatchTheCPU() {
        torch.manualSeed(1)
        let x = torch.rand(4, 9) * 1.8 - 0.9
        for op in UnaryOp.allCases {
            assertClose(unary(op, x.to(cuda)).cpu(), unary(op, x), tol: 1e-5)
        }
        let h = x.to(.float16)
        assertClose(h.to(cuda).exp().cpu(), h.exp(), tol: 2e-3)
        let bf = x.to(.bfloat16)
        assertClose(bf.to(cuda).cpu(), bf)
    }

    func testComparisonsAndCreation() {
        let a = torch.tensor([1.0, 2.0, .nan, 4.0]), b = torch.tensor([1.0, 3.0, 3.0, 0.0])
        for op in CompareOp.allCases {
            assertClose(compare(op, a.to(cuda), b.to(cuda)).cpu(), compare(op, a, b))
        }
        assertClose(torch.zeros(3, 5, device: cuda).cpu(), torch.zeros(3, 5))
        assertClose(torch.full([2, 2], 7.5, device: cuda).cpu(), torch.full([2, 2], 7.5))
        assertClose(torch.onesLike(a.to(cuda)).cpu(), torch.onesLike(a))
        XCTAssertEqual(torch.onesLike(a.to(cuda)).device, cuda)
        XCTAssertEqual(torch.arange(0, 5, device: cuda).cpu().toArray(as: Int.self), [0, 1, 2, 3, 4])
        XCTAssertEqual(torch.tensor([3.5], device: cuda).item(), 3.5)
    }

    func testReductionsMatchTheCPU() {
        torch.manualSeed(2)
        let x = torch.randn(3, 5, 40000)
        let d = x.to(cuda)
        assertClose(d.sum().cpu(), x.sum(), tol: 1e-4)
        assertClose(d.sum(dim: 1).cpu(), x.sum(dim: 1), tol: 1e-5)
        assertClose(d.sum(dim: [0, 2], keepdim: true).cpu(), x.sum(dim: [0, 2], keepdim: true), tol: 1e-4)
        assertClose(d.mean(dim: -1).cpu(), x.mean(dim: -1), tol: 1e-5)
        let small = torch.randn(4, 6, 3), ds = small.to(cuda)
        let (v, i) = ds.max(dim: 1), (cv, ci) = small.max(dim: 1)
        assertClose(v.cpu(), cv)
        assertClose(i.cpu(), ci)
        assertClose(ds.argmin(dim: 2).cpu(), small.argmin(dim: 2))
        assertClose(ds.max().cpu(), small.max())
        assertClose((ds .> 0).any(dim: 0).cpu(), (small .> 0).any(dim: 0))
        assertClose((ds .> -5).all().cpu(), (small .> -5).all())
        let ints = torch.randint(1, 4, [3, 4])
        assertClose(ints.to(cuda).prod(dim: 1).cpu(), ints.prod(dim: 1))
        assertClose(ints.to(cuda).sum().cpu(), ints.sum())
    }

    func testMatrixProductsMatchTheCPU() {
        torch.manualSeed(3)
        let a = torch.randn(7, 5), b = torch.randn(5, 9), bias = torch.randn(9)
        let da = a.to(cuda), db = b.to(cuda)
        assertClose(da.mm(db).cpu(), a.mm(b), tol: 1e-5)
        assertClose(da.t().contiguous().t().mm(db).cpu(), a.mm(b), tol: 1e-5)
        assertClose(da.mm(db.t().contiguous().t()).cpu(), a.mm(b), tol: 1e-5)
        assertClose(torch.addmm(bias.to(cuda), da, db, beta: 0.5, alpha: 2).cpu(), torch.addmm(bias, a, b, beta: 0.5, alpha: 2), tol: 1e-5)
        let x = torch.randn(2, 3, 7, 5).double(), y = torch.randn(5, 4).double()
        assertClose(x.to(cuda).matmul(y.to(cuda)).cpu(), x.matmul(y), tol: 1e-12)
        let p = torch.randn(3, 4, 6), q = torch.randn(3, 6, 2)
        assertClose(p.to(cuda).bmm(q.to(cuda)).cpu(), p.bmm(q), tol: 1e-5)
    }

    /// Trains the same small MLP on the CPU and on the (emulated) GPU with each optimizer: losses and
    /// weights must agree (autograd, losses, batch norm and the optimizers' updates on the device). The first Linear
    /// has no bias: before a BatchNorm its gradient is zero up to rounding, and Adam turns that rounding noise
    /// (which differs between a fused and a composed backward, as between PyTorch's CPU and CUDA) into full steps.
    func testMLPTrainsLikeTheCPU() throws {
        for makeOptimizer in [{ (p: [nn.Parameter]) -> optim.Optimizer in optim.SGD(p, lr: 0.1, momentum: 0.9) },
                              { (p: [nn.Parameter]) -> optim.Optimizer in optim.Adam(p, lr: 0.01) }] {
            torch.manualSeed(4)
            let cpuModel = nn.Sequential(nn.Linear(20, 32, bias: false), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 5))
            let gpuModel = nn.Sequential(nn.Linear(20, 32, bias: false), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 5))
            try gpuModel.loadStateDict(cpuModel.stateDict())
            let gpuOptimizerBeforeMove = makeOptimizer(gpuModel.parameters())
            gpuModel.to(cuda)
            XCTAssertEqual(gpuModel.parameters().first?.device, cuda)
            let cpuOptimizer = makeOptimizer(cpuModel.parameters())
            let x = torch.randn(16, 20), y = torch.randint(0, 5, [16])
            let xd = x.to(cuda), yd = y.to(cuda)
            let lossFn = nn.CrossEntropyLoss()
            for _ in 0..<3 {
                cpuOptimizer.zeroGrad()
                let lc = lossFn(cpuModel(x), y)
                lc.backward()
                cpuOptimizer.step()
                gpuOptimizerBeforeMove.zeroGrad()
                let lg = lossFn(gpuModel(xd), yd)
                XCTAssertEqual(lg.device, cuda)
                lg.backward()
                XCTAssertEqual(gpuModel.parameters().first?.grad?.device, cuda)
                gpuOptimizerBeforeMove.step()
                XCTAssertEqual(lg.item(), lc.item(), accuracy: 1e-5)
            }
            for (p, q) in zip(gpuModel.parameters(), cpuModel.parameters()) { assertClose(p.cpu(), q, tol: 1e-5) }
            for (b, c) in zip(gpuModel.buffers(), cpuModel.buffers()) { assertClose(b.cpu(), c, tol: 1e-5) }
            gpuModel.eval(); cpuModel.eval()
            assertClose(gpuModel(xd).cpu(), cpuModel(x), tol: 1e-5)
        }
    }

    func testPrintingNamesTheDevice() {
        let x = torch.tensor([1.0, 2.0]).to(cuda)
        XCTAssertEqual(x.description, "tensor([1., 2.], device='cuda:0')")
        x.requiresGrad = true
        XCTAssertEqual((x * 2).description, "tensor([2., 4.], device='cuda:0', grad_fn=<MulBackward0>)")
        XCTAssertEqual(torch.tensor([1, 2], dtype: .int32, device: cuda).description, "tensor([1, 2], device='cuda:0', dtype=torch.int32)")
    }

    func testAllocatorStatisticsAndPinnedMemory() {
        let before = torch.cuda.memoryAllocated()
        var t: Tensor? = torch.zeros(1000, device: cuda)
        XCTAssertEqual(torch.cuda.memoryAllocated() - before, CUDAAllocator.roundedSize(4000))
        XCTAssertGreaterThanOrEqual(torch.cuda.maxMemoryAllocated(), torch.cuda.memoryAllocated())
        t = nil
        XCTAssertNil(t)
        XCTAssertEqual(torch.cuda.memoryAllocated(), before)
        XCTAssertGreaterThanOrEqual(torch.cuda.memoryReserved(), CUDAAllocator.roundedSize(4000))
        torch.cuda.emptyCache()
        XCTAssertEqual(torch.cuda.memoryReserved(), torch.cuda.memoryAllocated())
        XCTAssertTrue(torch.cuda.isAvailable())
        XCTAssertEqual(torch.cuda.deviceCount(), 1)
        XCTAssertEqual(torch.cuda.getDeviceCapability(0).0, 9)
        XCTAssertEqual(CUDAAllocator.roundedSize(1), 512)
        XCTAssertEqual(CUDAAllocator.roundedSize(3 << 20), 3 << 20)
        XCTAssertEqual(formatMemory(20 << 20), "20.00 MiB")
        XCTAssertEqual(formatMemory(1536 << 20), "1.50 GiB")
    }

    func testFusedAdamAndSGDUpdatesMatchTheCPU() {
        let variants: [(String, ([Tensor]) -> optim.Optimizer)] = [
            ("Adam", { optim.Adam($0, lr: 0.01) }),
            ("Adam L2 decay, amsgrad, maximize", { optim.Adam($0, lr: 0.01, weightDecay: 0.1, amsgrad: true, maximize: true) }),
            ("AdamW", { optim.AdamW($0, lr: 0.01, weightDecay: 0.1) }),
            ("SGD", { optim.SGD($0, lr: 0.1) }),
            ("SGD momentum, dampening, decay", { optim.SGD($0, lr: 0.1, momentum: 0.9, dampening: 0.3, weightDecay: 0.01) }),
            ("SGD nesterov, maximize", { optim.SGD($0, lr: 0.1, momentum: 0.9, nesterov: true, maximize: true) }),
        ]
        for (name, make) in variants {
            for dtype in [DType.float32, .float64] {
                assertSameOnBothDevices("\(name) \(dtype.name), 4 steps", tol: 1e-5) { dev in
                    let w = data([37, 5], seed: 11, on: dev).to(dtype).requiresGrad_(), b = data([5], seed: 12, on: dev).to(dtype).requiresGrad_()
                    let x = data([8, 37], seed: 13, on: dev).to(dtype)
                    let opt = make([w, b])
                    for _ in 0..<4 {
                        opt.zeroGrad()
                        (x.mm(w) + b).tanh().pow(2).sum().backward()
                        opt.step()
                    }
                    return [w.detach(), b.detach()]
                }
            }
        }
        // The updates above went through the fused kernels, not the composed fallback.
        for op in OptimizerKernelOp.allCases {
            XCTAssertNotNil(CUDARuntime.device(0).functions[KernelID.optimizer(op, .float32).slot], "\(op) kernel never loaded")
        }
    }

    func testBatchedAndExpandedMatrixProducts() {
        assertSameOnBothDevices("bmm in one strided-batched call; expanded and transposed operands", tol: 1e-5) { dev in
            let a = data([4, 5, 3], seed: 7, on: dev, requiresGrad: true), b = data([3, 6], seed: 8, on: dev, requiresGrad: true)
            let y = a.bmm(b.expand(4, 3, 6))                            // batch stride 0
            let z = a.transpose(1, 2).bmm(a)                            // column-major matrices
            let rows = data([1, 3], seed: 9, on: dev).expand(5, 3).mm(b) // row stride 0: copied, not read in place
            let one = a[0...0].bmm(b.unsqueeze(0))
            (y.pow(2).sum() + z.sum()).backward()
            return [y, z, rows, one, a.grad!, b.grad!]
        }
    }

    func testDataLoaderPinMemoryGivesTheSameBatches() {
        // The emulator has no page-locked memory, so pinning falls back to ordinary host memory; on a GPU the
        // same loader's batches are pinned (cuda-check). The batches and their trip to the device must not change.
        let x = torch.arange(0, 40).float().reshape(10, 4), y = torch.arange(0, 10)
        let ds = TensorDataset(x, y)
        let plain = DataLoader(ds, batchSize: 4)
        let pinned = DataLoader(ds, batchSize: 4, pinMemory: true)
        XCTAssertTrue(pinned.pinMemory)
        for ((a, b), (c, d)) in zip(plain, pinned) {
            assertClose(c.to(cuda).cpu(), a)
            assertClose(d.to(cuda).cpu(), b)
        }
        XCTAssertEqual(pinnedBatch(torch.ones(3)).shape, [3])
        XCTAssertEqual(pinnedBatch(7), 7)
    }

    func testSaveAndLoadKeepTheDevice() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cuda-save-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let w = torch.arange(0, 12).float().reshape(3, 4).to(cuda)
        let path = dir.appendingPathComponent("w.pt").path
        try torch.save(StateValue.dict([(key: .string("w"), value: .tensor(w)), (key: .string("row"), value: .tensor(w[1]))]), path)
        let onCPU = try torch.load(path)
        guard case .tensor(let c)? = onCPU["w"] else { return XCTFail("no tensor w") }
        XCTAssertEqual(c.device, .cpu)
        assertClose(c, w.cpu())
        let onGPU = try torch.load(path, mapLocation: "cuda")
        guard case .tensor(let g)? = onGPU["w"], case .tensor(let row)? = onGPU["row"] else { return XCTFail("no tensors") }
        XCTAssertEqual(g.device, cuda)
        XCTAssertTrue(g.storage === row.storage, "views of one storage stay views after mapLocation")
        assertClose(row.cpu(), w[1].cpu())
    }

    func testLoadWithAMapLocationClosureSeesEachStoragesLocation() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("cuda-map-\(getpid()).pt").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let w = torch.arange(0, 6).float().to(cuda), b = torch.ones(2)
        try torch.save(StateValue.dict([(key: .string("w"), value: .tensor(w)), (key: .string("b"), value: .tensor(b)),
                                        (key: .string("w2"), value: .tensor(w[2...]))]), path)
        var seen: [String] = []
        // Every GPU storage back to the CPU and every CPU storage onto the GPU: each goes where its location says.
        let value = try torch.load(path) { location in
            seen.append(location)
            return location == "cpu" ? cuda : .cpu
        }
        XCTAssertEqual(seen.sorted(), ["cpu", "cuda:0"], "one call per storage")
        guard case .tensor(let lw)? = value["w"], case .tensor(let lb)? = value["b"], case .tensor(let lw2)? = value["w2"] else {
            return XCTFail("missing tensors")
        }
        XCTAssertEqual(lw.device, .cpu)
        XCTAssertEqual(lb.device, cuda)
        XCTAssertTrue(lw.storage === lw2.storage)
        assertClose(lw, w.cpu())
        assertClose(lb.cpu(), b)
        XCTAssertThrowsError(try torch.load(path) { _ in .cuda(3) }, "a GPU that does not exist")
    }

    func testWhereClampAndPointwiseLossesWithGradients() {
        torch.manualSeed(5)
        let x = torch.randn(6, 4), t = torch.rand(6, 4)
        assertClose(torch.where(x.to(cuda) .> 0, x.to(cuda), 0.5).cpu(), torch.where(x .> 0, x, 0.5))
        assertClose(x.to(cuda).clamp(min: -0.5, max: 0.25).cpu(), x.clamp(min: -0.5, max: 0.25))
        for loss in [{ (p: Tensor, q: Tensor) in F.mseLoss(p, q) }, { F.smoothL1Loss($0, $1, beta: 0.5) }, { F.huberLoss($0, $1) },
                     { F.binaryCrossEntropy($0.sigmoid(), $1) }, { F.binaryCrossEntropyWithLogits($0, $1) }] {
            let xc = x.clone().requiresGrad_(), xg = x.to(cuda).requiresGrad_()
            let lc = loss(xc, t), lg = loss(xg, t.to(cuda))
            lc.backward(); lg.backward()
            XCTAssertEqual(lg.item(), lc.item(), accuracy: 1e-5)
            assertClose(xg.grad!.cpu(), xc.grad!, tol: 1e-5)
        }
    }
}
