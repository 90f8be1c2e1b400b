import CCUDAShim

/// How many device operations this process has issued, all devices together: kernel launches, cuBLAS calls,
/// copy-engine operations (device-to-device copies and memsets) and CUDA graph replays. Tests read it before and
/// after a training step to pin that step's launch count, so a change that adds launches shows; nothing here
/// resets it. One unsynchronised increment per operation: a count, not a lock.
///
/// A graph replay is one launch (`graphs`), whatever the graph holds: that is the host work it costs. What a
/// capture records is not issued, so `CUDAGraph.captureEnd()` takes it back out of these counts (and keeps it
/// as the graph's `capturedOperations`).
enum CUDALaunchCounter {
    nonisolated(unsafe) static var kernels = 0
    nonisolated(unsafe) static var gemms = 0
    nonisolated(unsafe) static var copies = 0
    nonisolated(unsafe) static var graphs = 0
    /// Copies between two GPUs (`CUDAPeerCopy`), also counted in `copies`.
    nonisolated(unsafe) static var peerCopies = 0

    /// Everything issued so far.
    static var total: Int { kernels &+ gemms &+ copies &+ graphs }

    /// Kernel launches by `KernelID.slot` while `byKernel` is on (off by default: the hot path then pays one
    /// predictable branch). Tests and investigations switch it on to see which kernels a step launches.
    nonisolated(unsafe) static var byKernel = false
    nonisolated(unsafe) static var kernelSlots = [Int](repeating: 0, count: KernelID.slotCount)

    /// The kernels launched while `byKernel` was on: (slot, count) for each slot launched at least once.
    static func kernelHistogram() -> [(slot: Int, count: Int)] {
        kernelSlots.enumerated().filter { $0.element > 0 }.map { ($0.offset, $0.element) }
    }
}

/// Kernel launches: every SwiftTorch kernel takes one argument struct by value (`stcu_ew_args`,
/// `stcu_red_args`, …), runs on its device's one stream, and most walk their work items in a grid-stride loop.
extension CUDADeviceContext {
    /// Launches kernel `id` with `args` in a `grid` of blocks of `block` threads on this device's stream; a
    /// failure stops with CUDA's message naming `what`.
    @inline(__always)
    func launch<Args>(_ id: KernelID, grid: (UInt32, UInt32), block: Int, args: inout Args, _ what: @autoclosure () -> String) {
        let f = function(id)
        bind()
        CUDALaunchCounter.kernels &+= 1
        if _slowPath(CUDALaunchCounter.byKernel) { CUDALaunchCounter.kernelSlots[id.slot] &+= 1 }
        let r = withUnsafePointer(to: &args) {
            stcu_dev_launch(f, grid.0, grid.1, 1, UInt32(block), 1, 1, stream, $0, MemoryLayout<Args>.size)
        }
        CUDARuntime.check(r, "cuLaunchKernel(\(what()))")
    }

    /// Launches kernel `id` over `items` one-thread work items in blocks of `block`: enough blocks to fill every
    /// SM 32 times over, fewer for small work (the kernels' grid-stride loops take the rest).
    @inline(__always)
    func launch<Args>(_ id: KernelID, items: Int, block: Int = ElementwiseKernelSource.blockSize, args: inout Args,
                      _ what: @autoclosure () -> String) {
        launch(id, grid: (gridSize(items: items, block: block), 1), block: block, args: &args, what())
    }

    /// Blocks of `block` threads for `items` one-thread work items, capped at 32 per SM.
    @inline(__always)
    func gridSize(items: Int, block: Int) -> UInt32 {
        UInt32(Swift.max(1, Swift.min((items + block - 1) / block, multiprocessorCount * 32)))
    }
}
