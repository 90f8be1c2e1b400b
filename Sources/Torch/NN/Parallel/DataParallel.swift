extension nn {
    /// PyTorch's `nn.DataParallel`: runs `module` on several GPUs of this machine, each on a slice of the batch.
    ///
    /// Each call scatters the input along `dim` in `torch.chunk` pieces, one per device (fewer when the
    /// batch is smaller), runs a replica of the module on each device in its own host thread, and gathers
    /// the outputs on `outputDevice` along `dim`. Replicas are made afresh at each call; their parameters are
    /// differentiable copies of the originals, so `loss.backward()` sums every replica's gradient into the
    /// original parameters on `deviceIds[0]`, and an optimizer over `model.parameters()` trains as on one
    /// device. The original module runs on `deviceIds[0]`, so BatchNorm's running statistics there follow
    /// the first slice only, as in PyTorch.
    ///
    /// Without CUDA it just runs the module; with one device it moves the input there and runs the module.
    /// `stateDict()` keys start with `module.`, as PyTorch saves them.
    ///
    /// ```swift
    /// let model = nn.DataParallel(nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 10)).to(.cuda(0)))
    /// let loss = F.crossEntropy(model(x), y.to(.cuda(0)))   // x: the whole batch, on any device
    /// loss.backward()                                        // gradients on the parameters on cuda:0
    /// try torch.save(model.module.stateDict(), "m.pt")       // keys without the `module.` prefix
    /// ```
    public final class DataParallel: Module {
        /// The wrapped module (PyTorch's `model.module`).
        public let module: Module
        /// The devices used, first the one holding the module's parameters (empty without CUDA).
        public let deviceIds: [Int]
        /// Where outputs are gathered.
        public let outputDevice: Int?
        /// The dimension the input is scattered along and outputs gathered along.
        public let dim: Int

        /// Wraps `module`, whose parameters and buffers must be on `cuda:deviceIds[0]` when called (with one
        /// device the module is moved there now, as PyTorch does).
        ///
        /// - Parameters:
        ///   - deviceIds: CUDA device indices; nil: every device (`torch.cuda.deviceCount()`).
        ///   - outputDevice: where outputs are gathered; nil: `deviceIds[0]`.
        ///   - dim: the batch dimension (negative counts from the end).
        public init(_ module: Module, deviceIds: [Int]? = nil, outputDevice: Int? = nil, dim: Int = 0) {
            self.module = module
            self.dim = dim
            guard torch.cuda.isAvailable() else {
                self.deviceIds = []
                self.outputDevice = nil
                super.init()
                return
            }
            let ids = deviceIds ?? Array(0..<torch.cuda.deviceCount())
            precondition(!ids.isEmpty, "DataParallel: no available devices were found (deviceIds is empty)")
            for i in ids { _ = CUDARuntime.device(i) }   // PyTorch's invalid-ordinal error
            if let o = outputDevice { _ = CUDARuntime.device(o) }
            self.deviceIds = ids
            self.outputDevice = outputDevice ?? ids[0]
            super.init()
            if ids.count == 1 { _ = module.to(Device.cuda(ids[0])) }
        }

        /// Scatter, replicate, run in parallel, gather (one device: the module on the input moved there).
        public override func forward(_ x: Tensor) -> Tensor {
            guard let first = deviceIds.first else { return module(x) }
            let source = Device.cuda(first)
            for t in module.parameters() + module.buffers() where t.device != source {
                preconditionFailure("module must have its parameters and buffers on device \(source) (device_ids[0]) "
                                    + "but found one of them on device: \(t.device)")
            }
            let inputs = DataParallelScatter.scatter(x, devices: deviceIds, dim: dim)
            if deviceIds.count == 1 { return module(inputs[0]) }
            let devices = deviceIds.prefix(inputs.count).map { Device.cuda($0) }
            let replicas = [module] + ModuleReplication.replicate(module, on: Array(devices.dropFirst()))
            let outputs = DataParallelApply.run(replicas, inputs, devices: devices)
            return DataParallelScatter.gather(outputs, on: .cuda(outputDevice ?? first), dim: dim)
        }
    }
}

/// PyTorch's `scatter`/`gather` for one tensor (`torch.nn.parallel.scatter_gather`).
enum DataParallelScatter {
    /// `x` in `torch.chunk` pieces along `dim`, the i-th copied to `devices[i]` (differentiable: the gradient
    /// of each piece goes back into `x`'s gradient on `x`'s device).
    static func scatter(_ x: Tensor, devices: [Int], dim: Int) -> [Tensor] {
        precondition(x.dim > 0, "DataParallel: cannot scatter a 0-dim tensor along dim \(dim)")
        return x.chunk(devices.count, dim: dim).enumerated().map { i, piece in piece.to(.cuda(devices[i])) }
    }

    /// The outputs moved to `device` and concatenated along `dim`; 0-dim outputs become a vector, with
    /// PyTorch's warning.
    static func gather(_ outputs: [Tensor], on device: Device, dim: Int) -> Tensor {
        var parts = outputs.map { $0.to(device) }
        if parts.allSatisfy({ $0.dim == 0 }) {
            writeStandardError("UserWarning: Was asked to gather along dimension \(dim), but all input tensors were "
                               + "scalars; will instead unsqueeze and return a vector.\n")
            parts = parts.map { $0.unsqueeze(0) }
            return torch.cat(parts, dim: 0)
        }
        return torch.cat(parts, dim: dim)
    }
}

/// PyTorch's `parallel_apply`: replica i on input i in its own host thread, with the caller's grad mode and
/// autocast settings and `devices[i]` as the thread's current CUDA device.
enum DataParallelApply {
    static func run(_ replicas: [nn.Module], _ inputs: [Tensor], devices: [Device]) -> [Tensor] {
        let n = replicas.count
        let results = UnsafeMutablePointer<Tensor?>.allocate(capacity: n)
        results.initialize(repeating: nil, count: n)
        defer { results.deinitialize(count: n); results.deallocate() }
        let gradEnabled = GradMode.isEnabled
        let autocast = Autocast.state.map { ($0.cpuEnabled, $0.cpuDtype, $0.cudaEnabled, $0.cudaDtype, $0.cacheEnabled) }
        func body(_ i: Int) {
            guard case .cuda(let index) = devices[i] else { return }
            torch.cuda.device(index) {
                GradMode.with(gradEnabled) {
                    results[i] = withAutocast(autocast) { replicas[i](inputs[i]) }
                }
            }
        }
        var threads: [pthread_t] = []
        for i in 1..<n {
            let box = Unmanaged.passRetained(ThreadBody { body(i) }).toOpaque()
            var t = pthread_t()
            let rc = pthread_create(&t, nil, { raw in
                let b = Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue()
                b.run()
                return nil
            }, box)
            precondition(rc == 0, "DataParallel: pthread_create failed: \(String(cString: strerror(rc)))")
            threads.append(t)
        }
        body(0)
        for t in threads { pthread_join(t, nil) }
        return (0..<n).map { i in
            guard let r = results[i] else { preconditionFailure("DataParallel: replica \(i) on \(devices[i]) returned nothing") }
            return r
        }
    }

    /// `body` inside the caller's autocast regions (cpu, cuda), if any.
    private static func withAutocast(_ s: (Bool, DType, Bool, DType, Bool)?, _ body: () -> Tensor) -> Tensor {
        guard let s else { return body() }
        return Autocast.withRegion(.cpu, enabled: s.0, dtype: s.1, cacheEnabled: s.4) {
            Autocast.withRegion(.cuda, enabled: s.2, dtype: s.3, cacheEnabled: s.4, body)
        }
    }

    private final class ThreadBody {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }
}
