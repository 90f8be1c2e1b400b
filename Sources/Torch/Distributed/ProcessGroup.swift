import CMPIShim

extension dist {
    /// The communication backend. MPI is always the launcher and carries CPU tensors; `.nccl` adds NVIDIA's
    /// collective library for CUDA tensors.
    public enum Backend: String, Sendable {
        /// MPI (Open MPI 4.x or MPICH 3.x/4.x), loaded at run time; CUDA tensors go through pinned host copies.
        case mpi
        /// NCCL 2 (libnccl.so.2, loaded at run time) for the all-reduces and broadcasts of CUDA tensors, which
        /// then stay on the device; MPI launches the ranks, passes NCCL its id and carries everything else.
        case nccl
    }

    /// A set of ranks that run collectives together (PyTorch's `ProcessGroup`): the world from
    /// `initProcessGroup`, or a private copy of it such as the one each `DistributedDataParallel`
    /// uses for its gradient buckets.
    public final class ProcessGroup: @unchecked Sendable {
        /// This process's rank in the group.
        public let rank: Int
        /// Number of processes in the group.
        public let size: Int
        /// How long a blocking call may wait for the other ranks before the job is aborted.
        public let timeout: Double
        /// The backend the group was made with.
        public let backend: Backend
        let comm: stmpi_comm
        /// NCCL communicators by CUDA device (`.nccl` groups), made at the first collective on that device.
        private var ncclComms: [Int: NCCLCommunicator] = [:]
        private let ownsComm: Bool
        private var worker: CommThread?
        private var destroyed = false
        /// Whether the ranks' hosts were looked at (`allReduceAlgorithm(_:)`).
        private var hostsProbed = false
        /// The shared-memory all-reduce over the group, when every rank is on this host.
        private(set) var sharedMemory: SharedMemoryAllReduce?

        init(comm: stmpi_comm, ownsComm: Bool, timeout: Double, backend: Backend) throws {
            var r: Int32 = 0, s: Int32 = 0
            try MPIRuntime.check(stmpi_comm_rank(comm, &r), "getRank")
            try MPIRuntime.check(stmpi_comm_size(comm, &s), "getWorldSize")
            self.comm = comm
            self.ownsComm = ownsComm
            self.rank = Int(r)
            self.size = Int(s)
            self.timeout = timeout
            self.backend = backend
        }

        /// A new group with the same ranks on a duplicated communicator: its traffic never mixes
        /// with this group's (collective on every rank).
        func duplicate() throws -> ProcessGroup {
            var c: stmpi_comm = 0
            try Watchdog.shared.guarding("newGroup", timeout: timeout) {
                try MPIRuntime.check(stmpi_comm_dup(comm, &c), "newGroup")
            }
            return try ProcessGroup(comm: c, ownsComm: true, timeout: timeout, backend: backend)
        }

        /// The NCCL communicator that carries `tensor`'s collectives: in a `.nccl` group, the one of the tensor's
        /// CUDA device (made now when this is the first collective there, which makes this call collective);
        /// nil for CPU tensors and in `.mpi` groups.
        func ncclCommunicator(for tensor: Tensor) throws -> NCCLCommunicator? {
            guard backend == .nccl, case .cuda(let device) = tensor.device else { return nil }
            if let c = ncclComms[device] { return c }
            let c = try NCCLCommunicator(group: self, device: device)
            ncclComms[device] = c
            return c
        }

        /// Whether asynchronous operations can run on their own thread (MPI_THREAD_MULTIPLE).
        var supportsThreads: Bool { MPIRuntime.threadLevel >= 3 }

        /// Runs `body` (the MPI call and what follows it) now, or, with `async`, on the group's
        /// communication thread and returns its work. A synchronous call queues behind pending
        /// asynchronous ones so every rank issues them in the same order.
        /// `finish` (copying staged results back) runs on the caller's thread: right after a
        /// synchronous call, in `Work.wait()` for an asynchronous one.
        func run(_ op: String, async: Bool, _ body: @escaping () throws -> Void,
                 finish: (() -> Void)? = nil) throws -> Work? {
            precondition(!destroyed, "dist.\(op): the process group was destroyed")
            if supportsThreads && (async || (worker?.isBusy ?? false)) {
                let work = Work(op: op, timeout: timeout)
                work.finisher = finish
                communicationThread().submit(work) { [unowned self] in try self.guarded(op, body) }
                if async { return work }
                try work.wait()
                return nil
            }
            try guarded(op, body)
            finish?()
            return async ? Work.completed(op: op) : nil
        }

        private func guarded(_ op: String, _ body: () throws -> Void) throws {
            let token = Watchdog.shared.begin(op, timeout: timeout)
            defer { Watchdog.shared.end(token) }
            try body()
        }

        private func communicationThread() -> CommThread {
            if let worker { return worker }
            let t = CommThread(name: "swifttorch-dist-comm")
            worker = t
            return t
        }

        /// The algorithm that runs when `requested` is asked for: `shm` only where every rank of the group shares
        /// this host (`AllReduceAlgorithm.choose`). The first call that asks for `shm` looks at the ranks' hosts
        /// and allocates the shared window: collective, so every rank must reach it at the same point of the
        /// group's sequence of collectives (inside an operation's body, or where the group is created).
        func allReduceAlgorithm(_ requested: AllReduceAlgorithm) throws -> AllReduceAlgorithm {
            guard requested == .shm, size > 1 else { return .mpi }
            if !hostsProbed {
                hostsProbed = true
                let probe = try SharedMemoryAllReduce.ranksOnThisHost(of: comm)
                if AllReduceAlgorithm.choose(requested: .shm, groupSize: size, ranksOnThisHost: probe?.count) == .shm, let probe {
                    let shm = try SharedMemoryAllReduce(nodeComm: probe.comm)
                    MPIRuntime.sharedWindows.append(shm)
                    sharedMemory = shm
                } else if let probe {
                    try MPIRuntime.check(stmpi_comm_free(probe.comm), "allReduce (MPI_Comm_free)")
                }
            }
            return sharedMemory == nil ? .mpi : .shm
        }

        /// Finishes pending work and frees the communicator.
        func destroy() throws {
            guard !destroyed else { return }
            worker?.stop()
            worker = nil
            for device in ncclComms.keys.sorted() { try ncclComms[device]!.destroy() }   // the same order on every rank
            ncclComms = [:]
            destroyed = true
            if let shm = sharedMemory {
                sharedMemory = nil
                MPIRuntime.sharedWindows.removeAll { $0 === shm }
                try shm.free()
            }
            if ownsComm { try MPIRuntime.check(stmpi_comm_free(comm), "destroyProcessGroup") }
        }
    }

    nonisolated(unsafe) static var defaultGroup: ProcessGroup?

    /// The group a call uses: `group`, else the default one (a precondition names the call when
    /// `initProcessGroup` has not run, with PyTorch's message).
    static func resolve(_ group: ProcessGroup?, _ op: String) -> ProcessGroup {
        if let group { return group }
        guard let g = defaultGroup else {
            preconditionFailure("dist.\(op): Default process group has not been initialized, please make sure to call initProcessGroup.")
        }
        return g
    }

    /// Initialises the default process group (PyTorch's `init_process_group`). Rank and world size
    /// come from MPI, so this works under `mpirun`, `mpiexec` and Slurm's `srun` (and as a single
    /// process without a launcher).
    ///
    /// ```swift
    /// try dist.initProcessGroup(backend: .mpi)
    /// print(dist.getRank(), dist.getWorldSize())
    /// ```
    /// - Parameter timeout: how long a collective may wait for the other ranks before the job is
    ///   aborted with a message naming the call (PyTorch's default: 30 minutes).
    /// With `backend: .nccl`, pick each rank's GPU first, as torchrun scripts do:
    ///
    /// ```swift
    /// torch.cuda.setDevice(try dist.getNodeLocalRank() % torch.cuda.deviceCount())
    /// try dist.initProcessGroup(backend: .nccl)
    /// ```
    /// - Throws: `DistributedError.mpiNotFound` when no libmpi can be loaded (the message names
    ///   the packages to install), `.mpiUnusable`/`.mpiFailed` when MPI cannot start,
    ///   `.ncclUnavailable` for `.nccl` without a usable GPU or libnccl.so.2.
    public static func initProcessGroup(backend: Backend = .mpi, timeout: Duration = .seconds(1800)) throws {
        precondition(defaultGroup == nil, "dist.initProcessGroup: trying to initialize the default process group twice!")
        if backend == .nccl {
            // Checked before MPI starts, so every rank fails alike and nothing is left half made.
            guard torch.cuda.isAvailable() else {
                throw DistributedError.ncclUnavailable(reason: "CUDA is not available (\(torch.cuda.unavailableReason ?? "no GPU"))")
            }
            if !CUDARuntime.isEmulated { try NCCLCommunicator.loadLibrary() }
        }
        try MPIRuntime.initialize()
        let c = timeout.components
        let seconds = Double(c.seconds) + Double(c.attoseconds) * 1e-18
        precondition(seconds > 0, "dist.initProcessGroup: timeout must be positive, got \(timeout)")
        defaultGroup = try ProcessGroup(comm: stmpi_comm_world(), ownsComm: false, timeout: seconds, backend: backend)
    }

    /// Whether the default process group has been initialised.
    public static func isInitialized() -> Bool { defaultGroup != nil }

    /// Whether the MPI backend can be used here (a libmpi can be loaded); PyTorch's `is_mpi_available()`.
    public static func isMPIAvailable() -> Bool { MPIRuntime.isLoadable }

    /// Whether the NCCL backend can be used here: a CUDA device and a loadable libnccl.so.2 (the CUDA host
    /// emulator counts, with its MPI stand-in for NCCL); PyTorch's `is_nccl_available()`.
    public static func isNCCLAvailable() -> Bool {
        guard torch.cuda.isAvailable() else { return false }
        return CUDARuntime.isEmulated || (try? NCCLCommunicator.loadLibrary()) != nil
    }

    /// The NCCL version libnccl.so.2 reports (e.g. (2, 28, 7)), or nil where none loads; needs no GPU.
    /// PyTorch's `torch.cuda.nccl.version()`.
    public static func ncclVersion() -> (major: Int, minor: Int, patch: Int)? {
        guard let v = try? NCCLCommunicator.loadLibrary().version else { return nil }
        // NCCL_VERSION_CODE: major*10000 + minor*100 + patch from 2.9 on, major*1000 + minor*100 + patch before.
        return v >= 10000 ? (v / 10000, (v % 10000) / 100, v % 100) : (v / 1000, (v % 1000) / 100, v % 100)
    }

    /// The MPI library in use, as `MPI_Get_library_version` reports it (first line), e.g.
    /// "Open MPI v4.1.4, package: Debian OpenMPI, ...". A SwiftTorch addition; nil before
    /// `initProcessGroup`.
    public static func mpiLibraryVersion() -> String? {
        guard isInitialized() else { return nil }
        return MPIRuntime.libraryVersion.split(separator: "\n").first.map(String.init)
    }

    /// This process's rank in `group` (default: the world).
    public static func getRank(group: ProcessGroup? = nil) -> Int { resolve(group, "getRank").rank }

    /// Number of processes in `group` (default: the world).
    public static func getWorldSize(group: ProcessGroup? = nil) -> Int { resolve(group, "getWorldSize").size }

    /// The backend of `group`.
    public static func getBackend(group: ProcessGroup? = nil) -> Backend {
        resolve(group, "getBackend").backend
    }

    /// Blocks until every rank of `group` has reached this call.
    @discardableResult
    public static func barrier(group: ProcessGroup? = nil, async: Bool = false) throws -> Work? {
        let g = resolve(group, "barrier")
        return try g.run("barrier", async: async) { try MPIRuntime.check(stmpi_barrier(g.comm), "barrier") }
    }

    /// Tears down the default process group and finalises MPI (which cannot be started again in
    /// this process).
    public static func destroyProcessGroup() throws {
        let g = resolve(nil, "destroyProcessGroup")
        try g.destroy()
        defaultGroup = nil
        try MPIRuntime.finalize()
    }
}
