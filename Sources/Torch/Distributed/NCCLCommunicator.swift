import CCUDAShim
import CMPIShim

/// The NCCL side of a process group made with `initProcessGroup(backend: .nccl)`: one communicator per CUDA
/// device, created at the first collective on a tensor of that device (collective, like PyTorch's lazily made
/// NCCL communicators), from an `ncclUniqueId` that rank 0 makes and MPI broadcasts. MPI stays the launcher, the
/// bootstrap and the transport of everything this type does not carry: CPU tensors, and the collectives other
/// than all-reduce and broadcast (those DDP uses), which go through host staging.
///
/// Collectives are enqueued on the device's stream, the one every SwiftTorch kernel of that device runs on,
/// so a later kernel sees the result and the call returns without waiting for the GPU (PyTorch's NCCL
/// semantics). On the host emulator there is no NCCL: the same calls run as MPI collectives on the emulated
/// devices' memory (host memory) after the emulated stream has drained, so CI exercises the routing and the
/// in-place device buffers, not NCCL itself.
final class NCCLCommunicator {
    private enum Transport {
        case nccl(ncclComm_t)
        case emulated(stmpi_comm)
    }

    /// The CUDA device this communicator's buffers live on.
    let device: Int
    private let worldSize: Int
    private var transport: Transport?

    /// Makes the communicator of `group` on CUDA device `device` (collective over `group`). The MPI part goes
    /// through `group.run`, so it queues behind the group's pending asynchronous MPI work like any collective.
    init(group: dist.ProcessGroup, device: Int) throws {
        self.device = device
        worldSize = group.size
        CUDARuntime.device(device).bind()
        if CUDARuntime.isEmulated {
            let comm = UnsafeMutablePointer<stmpi_comm>.allocate(capacity: 1)
            defer { comm.deallocate() }
            _ = try group.run("initProcessGroup (NCCL emulation)", async: false) {
                try MPIRuntime.check(stmpi_comm_dup(group.comm, comm), "initProcessGroup (NCCL emulation)")
            }
            transport = .emulated(comm.pointee)
            return
        }
        try Self.loadLibrary()
        // Rank 0's id and whether making it worked, so a failure there stops every rank instead of leaving the
        // others waiting in the broadcast.
        struct Bootstrap { var id = stcu_ncclUniqueId(); var status: Int32 = 0 }
        let boot = UnsafeMutablePointer<Bootstrap>.allocate(capacity: 1)
        defer { boot.deallocate() }
        boot.initialize(to: Bootstrap())
        if group.rank == 0 { boot.pointee.status = stcu_ncclGetUniqueId(&boot.pointee.id) }
        _ = try group.run("initProcessGroup (broadcasting the NCCL id)", async: false) {
            try MPIRuntime.check(stmpi_bcast(boot, Int32(MemoryLayout<Bootstrap>.size), Int32(STMPI_BYTE.rawValue), 0,
                                             group.comm), "initProcessGroup (broadcasting the NCCL id)")
        }
        try Self.check(boot.pointee.status, "ncclGetUniqueId (on rank 0)")
        CUDARuntime.device(device).bind()
        var comm: ncclComm_t?
        let id = boot.pointee.id
        try Watchdog.shared.guarding("initProcessGroup (ncclCommInitRank)", timeout: group.timeout) {
            try Self.check(stcu_ncclCommInitRank(&comm, Int32(group.size), id, Int32(group.rank)), "ncclCommInitRank")
        }
        guard let comm else { throw DistributedError.ncclFailed(op: "ncclCommInitRank", code: -1, message: "no communicator returned") }
        transport = .nccl(comm)
    }

    /// Loads libnccl.so.2 (no GPU needed) and returns its version (e.g. 22807 for 2.28.7) and path.
    @discardableResult
    static func loadLibrary() throws -> (version: Int, path: String?) {
        var err = [CChar](repeating: 0, count: 1024)
        if stcu_load_nccl(&err, err.count) != 0 {
            throw DistributedError.ncclUnavailable(reason: String(cString: err)
                + "; PyTorch's CUDA wheels bring one (pip install nvidia-nccl-cu13), or point SWIFTTORCH_NCCL_LIBRARY at a libnccl.so.2")
        }
        var v: Int32 = 0
        try check(stcu_ncclGetVersion(&v), "ncclGetVersion")
        return (Int(v), stcu_nccl_path().map { String(cString: $0) })
    }

    static func check(_ r: ncclResult_t, _ op: String) throws {
        guard r != Int32(STCU_NCCL_SUCCESS) else { return }
        throw DistributedError.ncclFailed(op: op, code: r, message: String(cString: stcu_ncclGetErrorString(r)))
    }

    /// `t` itself when NCCL can work on it in place, else a contiguous device copy (float32 for half types on the
    /// emulator, whose MPI stand-in has no half arithmetic) that `body`'s result is copied back from.
    private func inPlace(_ t: Tensor, copyIn: Bool = true, _ body: (Tensor) throws -> Void) throws {
        if case .cuda(let i) = t.device {
            precondition(i == device, "dist: a tensor on \(t.device) in a collective whose NCCL communicator is on cuda:\(device)")
        }
        let halfOnEmulator = CUDARuntime.isEmulated && (t.dtype == .float16 || t.dtype == .bfloat16)
        if t.isContiguous && !halfOnEmulator { return try body(t) }
        let type: DType = halfOnEmulator ? .float32 : t.dtype
        let staged = Tensor(uninitializedShape: t.shape, dtype: type, device: t.device)
        if copyIn { copyKernel(from: t.detach(), into: staged) }
        try body(staged)
        copyKernel(from: staged, into: t)
        t.storage.bumpVersion()
    }

    /// `t` reduced over the group in place. ReduceOp.AVG sums and divides on the device (NCCL's own ncclAvg
    /// exists from 2.10 only, and the emulation has none).
    func allReduce(_ t: Tensor, op: dist.ReduceOp, name: String) throws {
        try inPlace(t) { try allReduceContiguous($0, op: op, name: name) }
    }

    /// Rank `root`'s `t` into every rank's `t`.
    func broadcast(_ t: Tensor, root: Int, name: String) throws {
        try inPlace(t) { try broadcastContiguous($0, root: root, name: name) }
    }

    private func allReduceContiguous(_ t: Tensor, op: dist.ReduceOp, name: String) throws {
        let type = Self.ncclType(t.dtype)
        let redOp = Self.ncclOp(op, t.dtype)
        let address = t.deviceAddress, count = t.numel
        try run(name, t) { comm, stream in
            stcu_ncclAllReduce(UnsafeRawPointer(bitPattern: UInt(address)), UnsafeMutableRawPointer(bitPattern: UInt(address)),
                               count, type, redOp, comm, stream)
        } emulated: { comm, buffer in
            try MPIRuntime.check(stmpi_allreduce(nil, buffer, Int32(count), Self.mpiType(t.dtype),
                                                 Int32(op.mpiOp(for: t.dtype).rawValue), comm), name)
        }
        if op == .avg { torch.noGrad { _ = t.div_(Double(worldSize)) } }
    }

    private func broadcastContiguous(_ t: Tensor, root: Int, name: String) throws {
        let type = Self.ncclType(t.dtype)
        let address = t.deviceAddress, count = t.numel
        try run(name, t) { comm, stream in
            stcu_ncclBroadcast(UnsafeRawPointer(bitPattern: UInt(address)), UnsafeMutableRawPointer(bitPattern: UInt(address)),
                               count, type, Int32(root), comm, stream)
        } emulated: { comm, buffer in
            try MPIRuntime.check(stmpi_bcast(buffer, Int32(count), Self.mpiType(t.dtype), Int32(root), comm), name)
        }
    }

    private func run(_ name: String, _ t: Tensor, _ call: (ncclComm_t, CUstream?) -> ncclResult_t,
                     emulated: (stmpi_comm, UnsafeMutableRawPointer) throws -> Void) throws {
        guard let transport else { preconditionFailure("dist.\(name): the NCCL communicator was destroyed") }
        let ctx = CUDARuntime.device(device)
        ctx.bind()
        switch transport {
        case .nccl(let comm):
            try Self.check(call(comm, ctx.stream), name)
        case .emulated(let comm):
            // The emulator's device memory is host memory at the device address.
            CUDARuntime.check(stcu_dev_sync(ctx.stream), "cuStreamSynchronize")
            if t.numel > 0 { try emulated(comm, UnsafeMutableRawPointer(bitPattern: UInt(t.deviceAddress))!) }
        }
        t.storage.bumpVersion()
    }

    static func ncclType(_ dtype: DType) -> ncclDataType_t {
        switch dtype {
        case .float32: return Int32(STCU_NCCL_FLOAT32)
        case .float64: return Int32(STCU_NCCL_FLOAT64)
        case .float16: return Int32(STCU_NCCL_FLOAT16)
        case .bfloat16: return Int32(STCU_NCCL_BFLOAT16)
        case .int64: return Int32(STCU_NCCL_INT64)
        case .int32: return Int32(STCU_NCCL_INT32)
        case .uint8, .bool: return Int32(STCU_NCCL_UINT8)
        }
    }

    /// PyTorch's mapping: Bool reduces as uint8, sum as max and product as min (logical or / and).
    static func ncclOp(_ op: dist.ReduceOp, _ dtype: DType) -> ncclRedOp_t {
        switch (op, dtype) {
        case (.sum, .bool), (.max, _): return Int32(STCU_NCCL_MAX)
        case (.product, .bool), (.min, _): return Int32(STCU_NCCL_MIN)
        case (.sum, _), (.avg, _): return Int32(STCU_NCCL_SUM)
        case (.product, _): return Int32(STCU_NCCL_PROD)
        }
    }

    /// The emulation's MPI type (`inPlace` keeps half types off it).
    private static func mpiType(_ dtype: DType) -> Int32 {
        switch dtype {
        case .float32: return Int32(STMPI_FLOAT.rawValue)
        case .float64: return Int32(STMPI_DOUBLE.rawValue)
        case .int64: return Int32(STMPI_INT64.rawValue)
        case .int32: return Int32(STMPI_INT32.rawValue)
        case .uint8: return Int32(STMPI_UINT8.rawValue)
        case .bool: return Int32(STMPI_BOOL.rawValue)
        case .float16, .bfloat16: preconditionFailure("NCCL emulation: \(dtype) is not emulated")
        }
    }

    /// Frees the communicator (every rank, as the group is destroyed).
    func destroy() throws {
        guard let transport else { return }
        self.transport = nil
        switch transport {
        case .nccl(let comm): try Self.check(stcu_ncclCommDestroy(comm), "ncclCommDestroy")
        case .emulated(let comm): try MPIRuntime.check(stmpi_comm_free(comm), "destroyProcessGroup")
        }
    }
}
