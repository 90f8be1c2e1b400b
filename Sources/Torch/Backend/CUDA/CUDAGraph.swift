import CCUDAShim

/// Why a CUDA graph could not be captured: thrown by `torch.cuda.CUDAGraph.captureBegin/captureEnd` and
/// `torch.cuda.graph`. (A failing driver call throws `CUDAError.call` instead.)
public enum CUDAGraphError: Error, CustomStringConvertible, Equatable {
    /// The loaded CUDA driver cannot capture graphs (the reason names what is missing).
    case unsupported(String)
    /// Operations issued during the capture that a graph cannot hold, in order; the capture was discarded.
    case operationsRefused([String])

    public var description: String {
        switch self {
        case .unsupported(let why): return "CUDA graphs are not available: \(why)"
        case .operationsRefused(let ops):
            return "CUDA graph capture failed: operation not permitted when stream is capturing: "
                + ops.joined(separator: "; ")
                + ". A graph replays device work only: keep host reads, waits, host-to-device copies and random "
                + "numbers out of the captured code, and use static device tensors for inputs and outputs"
        }
    }
}

extension torch.cuda {
    /// Which potentially unsafe CUDA calls a capture forbids, and from which threads (CUDA's
    /// `cudaStreamCaptureMode`; PyTorch's `capture_error_mode`). Also written as PyTorch's strings:
    /// `captureErrorMode: "thread_local"`.
    public enum CaptureErrorMode: String, ExpressibleByStringLiteral, Sendable {
        /// Unsafe calls from any thread fail while the capture runs (the default; the most careful).
        case global
        /// Unsafe calls fail on the capturing thread only.
        case threadLocal = "thread_local"
        /// Nothing is refused for being unsafe. Use only when you know why.
        case relaxed

        public init(stringLiteral value: String) {
            guard let mode = CaptureErrorMode(rawValue: value) else {
                preconditionFailure("torch.cuda.graph: captureErrorMode must be \"global\", \"thread_local\" or \"relaxed\" (got \"\(value)\")")
            }
            self = mode
        }

        /// The driver's CUstreamCaptureMode.
        var driverMode: Int32 {
            switch self {
            case .global: return Int32(CU_STREAM_CAPTURE_MODE_GLOBAL)
            case .threadLocal: return Int32(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            case .relaxed: return Int32(CU_STREAM_CAPTURE_MODE_RELAXED)
            }
        }
    }

    /// Names a graph memory pool, so graphs captured one after another can share memory (PyTorch's
    /// `MempoolId_t`): from `CUDAGraph.pool()` or `torch.cuda.graphPoolHandle()`.
    public struct GraphPoolHandle: Hashable, Sendable {
        let id: Int

        nonisolated(unsafe) private static var last = 0
        private static let lock = PosixLock()
        static func next() -> GraphPoolHandle {
            lock.lock(); defer { lock.unlock() }
            last += 1
            return GraphPoolHandle(id: last)
        }
    }

    /// A fresh pool handle to pass as `pool:` to several captures (PyTorch's `torch.cuda.graph_pool_handle()`).
    public static func graphPoolHandle() -> GraphPoolHandle { GraphPoolHandle.next() }

    /// Whether the current device's stream is capturing a CUDA graph (false without CUDA).
    public static func isCurrentStreamCapturing() -> Bool {
        guard CUDARuntime.isAvailable else { return false }
        return stcu_dev_is_capturing(CUDARuntime.device(currentDevice()).stream) != 0
    }

    /// Captures the device work `body` issues on the current device into `graph` (PyTorch's
    /// `with torch.cuda.graph(g):`) and returns what `body` returns. Nothing runs during the capture: the work
    /// runs at each `graph.replay()`, on the same memory, with the values of capture time for everything passed
    /// by value.
    ///
    /// ```swift
    /// // Warm up eagerly first: kernels are compiled, the optimizer's state and the allocator's cache are made.
    /// for _ in 0..<3 { step(staticInput, staticTarget) }
    /// opt.zeroGrad()
    /// let g = torch.cuda.CUDAGraph()
    /// let staticLoss = try torch.cuda.graph(g) { step(staticInput, staticTarget) }
    /// for (x, y) in loader {
    ///     staticInput.copy_(x)      // new data into the tensors the graph reads
    ///     staticTarget.copy_(y)
    ///     g.replay()                // forward, backward and the optimizer step: one launch
    ///     print(staticLoss.item())  // outputs land in the tensors the capture returned
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - pool: share memory with the graphs of this pool (see `CUDAGraph.pool()`); a new private pool otherwise.
    ///   - captureErrorMode: which potentially unsafe calls the driver refuses meanwhile.
    /// - Throws: `CUDAGraphError.unsupported` when the driver cannot capture, `CUDAGraphError.operationsRefused`
    ///   when `body` did something a graph cannot hold (then `graph` stays empty), `CUDAError.call` when the
    ///   driver fails, and whatever `body` throws (the capture is discarded first).
    ///
    /// Before capturing it waits for the device, like PyTorch. Requirements (PyTorch's): static shapes and
    /// control flow; inputs and outputs in tensors that stay alive; a warm-up run before capture; no host reads
    /// (`item()`, printing), waits, host-to-device copies or random numbers (dropout) inside; only `optim.SGD`
    /// among the optimizers (the others keep their step count on the host: no `capturable: true` yet), run
    /// once before capture so its momentum buffers exist; learning rates are frozen at capture (a scheduler
    /// changing `lr` later does not reach the graph).
    @discardableResult
    public static func graph<Result>(_ graph: CUDAGraph, pool: GraphPoolHandle? = nil,
                                     captureErrorMode: CaptureErrorMode = .global,
                                     _ body: () throws -> Result) throws -> Result {
        synchronize(currentDevice())
        try graph.captureBegin(pool: pool, captureErrorMode: captureErrorMode)
        let result: Result
        do {
            result = try body()
        } catch {
            graph.abandonCapture()
            throw error
        }
        try graph.captureEnd()
        return result
    }

    /// A CUDA graph (PyTorch's `torch.cuda.CUDAGraph`): device work captured once and replayed with one launch,
    /// which takes the per-kernel host work (argument packing, launch calls) out of each repetition. Worth it
    /// for small batches, whose steps are bound by that host work rather than by the GPU.
    ///
    /// Usually filled by `torch.cuda.graph(_:pool:captureErrorMode:_:)`; `captureBegin()`/`captureEnd()` are
    /// the same steps by hand.
    ///
    /// ```swift
    /// let x = torch.randn(64, 784, device: .cuda(0))    // static input
    /// _ = model(x)                                       // warm-up
    /// let g = torch.cuda.CUDAGraph()
    /// let y = try torch.cuda.graph(g) { model(x) }       // static output
    /// x.copy_(nextBatch)
    /// g.replay()                                         // y now holds model(nextBatch)
    /// ```
    ///
    /// The graph's tensors live in a private memory pool (never handed to tensors made outside it), released
    /// by `reset()` or when the graph is deinitialised. Calling `replay()` or `pool()` before a successful
    /// capture is a programmer error and stops the program.
    ///
    /// Warm-up: PyTorch runs a few iterations on a side stream before capturing, so that lazy initialisation
    /// (cuBLAS handles and workspaces, autograd's and the optimizer's buffers, the allocator's cache) happens
    /// outside the graph. SwiftTorch has one stream per device and captures that stream, so the warm-up is
    /// simply one or more ordinary eager iterations before the capture; it also compiles and loads every kernel
    /// the capture will record (module loading inside a capture is not allowed by the driver).
    ///
    /// Limits: everything passed by value is frozen at capture (shapes, scalars, the learning rate, the random
    /// generator's offset: random ops are refused); host reads, waits and host-to-device copies are refused;
    /// graphs do not nest (`replay()` inside a capture is refused). With cuBLAS older than 12.2 each capture may
    /// keep its own cuBLAS workspace (PyTorch sets one explicitly for that reason).
    public final class CUDAGraph {
        private var executable: stcu_graph_t? = nil
        private var device = 0
        private var capturing = false
        private var memoryPool: CUDAGraphPool? = nil
        private var countersAtBegin = (kernels: 0, gemms: 0, copies: 0)

        /// The device operations the capture recorded (kernels, cuBLAS calls, copies and memsets): what one
        /// `replay()` runs with a single launch.
        public private(set) var capturedOperations = 0

        /// An empty graph.
        public init() {}

        deinit {
            if capturing { abandonCapture() }
            reset()
        }

        /// Starts capturing the current device's stream: from now on, device work is recorded instead of run.
        /// Prefer `torch.cuda.graph`, which also ends the capture when the body throws.
        /// - Throws: `CUDAGraphError.unsupported` when the driver cannot capture, `CUDAError.call` when it refuses.
        public func captureBegin(pool: GraphPoolHandle? = nil, captureErrorMode: CaptureErrorMode = .global) throws {
            precondition(CUDARuntime.isAvailable,
                         "CUDAGraph.captureBegin: CUDA is not available (\(CUDARuntime.status.reason ?? "no CUDA device")); graphs capture a GPU's work")
            precondition(executable == nil && !capturing,
                         "CUDAGraph.captureBegin: this CUDAGraph already owns a captured graph (or is capturing); create a new one or call reset() first")
            var reason = [CChar](repeating: 0, count: 512)
            guard stcu_dev_graphs_supported(&reason, reason.count) != 0 else {
                throw CUDAGraphError.unsupported(String(cString: reason))
            }
            let index = torch.cuda.currentDevice()
            let ctx = CUDARuntime.device(index)
            ctx.bind()
            precondition(stcu_dev_is_capturing(ctx.stream) == 0,
                         "CUDAGraph.captureBegin: cuda:\(index)'s stream is already capturing another graph (captures do not nest)")
            let pool = CUDAAllocator.beginCapture(pool: (pool ?? GraphPoolHandle.next()).id, device: index)
            CUDAGraphCapture.begin(device: index)
            countersAtBegin = (CUDALaunchCounter.kernels, CUDALaunchCounter.gemms, CUDALaunchCounter.copies)
            let r = stcu_dev_capture_begin(ctx.stream, captureErrorMode.driverMode)
            if r != 0 {
                _ = CUDAGraphCapture.end(device: index)
                CUDAAllocator.endCapture(device: index)
                CUDAAllocator.releaseGraphPool(pool)
                throw CUDAError.call("cuStreamBeginCapture", code: r, message: CUDARuntime.errorText(r))
            }
            device = index
            memoryPool = pool
            capturing = true
        }

        /// Ends the capture and makes the graph replayable.
        /// - Throws: `CUDAGraphError.operationsRefused` naming what the captured code did that a graph cannot
        ///   hold, or `CUDAError.call` when the driver fails to end or instantiate; the graph then stays empty.
        public func captureEnd() throws {
            precondition(capturing, "CUDAGraph.captureEnd: no capture underway (call captureBegin() first)")
            let ctx = CUDARuntime.device(device)
            ctx.bind()
            var graph: stcu_graph_t? = nil
            let r = stcu_dev_capture_end(ctx.stream, &graph)
            let refused = finishCapture()
            if r != 0 || !refused.isEmpty {
                if let graph { stcu_dev_graph_destroy(graph) }
                reset()
                if !refused.isEmpty { throw CUDAGraphError.operationsRefused(refused) }
                throw CUDAError.call("cuStreamEndCapture", code: r, message: CUDARuntime.errorText(r))
            }
            executable = graph
        }

        /// Runs the captured work again, asynchronously on the device's stream like any launch.
        public func replay() {
            guard let executable else {
                preconditionFailure("CUDAGraph.replay: called without a successful capture (use torch.cuda.graph or captureBegin()/captureEnd() first)")
            }
            let ctx = CUDARuntime.device(device)
            ctx.bind()
            CUDALaunchCounter.graphs &+= 1
            CUDARuntime.check(stcu_dev_graph_launch(executable, ctx.stream), "cuGraphLaunch (CUDAGraph.replay)")
        }

        /// Frees the captured graph and lets go of its memory pool (given back to the driver when no other
        /// graph shares it); the graph can then capture again.
        public func reset() {
            precondition(!capturing, "CUDAGraph.reset: called during capture (end it with captureEnd() first)")
            if let executable { stcu_dev_graph_destroy(executable) }
            executable = nil
            capturedOperations = 0
            if let memoryPool { CUDAAllocator.releaseGraphPool(memoryPool) }
            memoryPool = nil
        }

        /// The graph's memory pool, for `torch.cuda.graph(_:pool:)` of a graph that should share it (graphs
        /// sharing a pool must be replayed in the order they were captured, as in PyTorch).
        public func pool() -> GraphPoolHandle {
            guard executable != nil, let memoryPool else {
                preconditionFailure("CUDAGraph.pool: called without a successful capture")
            }
            return GraphPoolHandle(id: memoryPool.id)
        }

        /// Ends a capture whose body threw: the recording is thrown away with its memory pool.
        func abandonCapture() {
            guard capturing else { return }
            let ctx = CUDARuntime.device(device)
            ctx.bind()
            var graph: stcu_graph_t? = nil
            _ = stcu_dev_capture_end(ctx.stream, &graph)
            _ = finishCapture()
            if let graph { stcu_dev_graph_destroy(graph) }
            reset()
        }

        /// Stops routing allocations to the pool, takes the recorded operations out of the launch counts and
        /// returns the refusals.
        private func finishCapture() -> [String] {
            capturing = false
            CUDAAllocator.endCapture(device: device)
            let kernels = CUDALaunchCounter.kernels &- countersAtBegin.kernels
            let gemms = CUDALaunchCounter.gemms &- countersAtBegin.gemms
            let copies = CUDALaunchCounter.copies &- countersAtBegin.copies
            CUDALaunchCounter.kernels = countersAtBegin.kernels
            CUDALaunchCounter.gemms = countersAtBegin.gemms
            CUDALaunchCounter.copies = countersAtBegin.copies
            capturedOperations = kernels &+ gemms &+ copies
            return CUDAGraphCapture.end(device: device)
        }
    }
}
