import CMPIShim

/// The process-wide MPI state behind `dist`: loading libmpi, `MPI_Init_thread`, error codes.
enum MPIRuntime {
    /// The thread level MPI granted (3 = MPI_THREAD_MULTIPLE).
    nonisolated(unsafe) static var threadLevel: Int32 = 0
    /// True once this process has called MPI_Finalize (MPI cannot start again).
    nonisolated(unsafe) static var finalized = false

    /// Loads libmpi (honouring SWIFTTORCH_MPI_LIBRARY) or throws `.mpiNotFound`.
    static func load() throws {
        var err = [CChar](repeating: 0, count: 512)
        let path = getenv("SWIFTTORCH_MPI_LIBRARY").map { String(cString: $0) }
        let flavor = path.withOptionalCString { stmpi_load($0, &err, err.count) }
        if flavor == Int32(STMPI_FLAVOR_NONE.rawValue) {
            throw DistributedError.mpiNotFound(reason: String(cString: err))
        }
    }

    /// Whether a libmpi can be loaded here.
    static var isLoadable: Bool { (try? load()) != nil }

    /// "Open MPI" or "MPICH" (after `load`).
    static var flavorName: String {
        stmpi_flavor() == Int32(STMPI_FLAVOR_OPENMPI.rawValue) ? "Open MPI" : "MPICH"
    }

    /// Initialises MPI once per process, asking for MPI_THREAD_MULTIPLE (DDP's communication thread
    /// calls MPI while the training thread may too).
    static func initialize() throws {
        try load()
        var flag: Int32 = 0
        try check(stmpi_finalized(&flag), "initProcessGroup")
        if flag != 0 || finalized {
            throw DistributedError.mpiUnusable(reason: "MPI was finalized by destroyProcessGroup() and cannot start again in this process")
        }
        try check(stmpi_initialized(&flag), "initProcessGroup")
        if flag == 0 {
            var provided: Int32 = 0
            try check(stmpi_init_thread(3, &provided), "initProcessGroup")
            threadLevel = provided
        } else {
            threadLevel = 3   // initialised by the host program; assume it asked for what it needs
            try check(stmpi_comm_set_errors_return(stmpi_comm_world()), "initProcessGroup")
        }
    }

    /// Shared windows still allocated (groups never destroyed, such as DDP's own): freed before MPI_Finalize,
    /// in creation order, which is the same on every rank.
    nonisolated(unsafe) static var sharedWindows: [SharedMemoryAllReduce] = []

    static func finalize() throws {
        guard !finalized else { return }
        for shm in sharedWindows { try shm.free() }
        sharedWindows = []
        finalized = true
        try check(stmpi_finalize(), "destroyProcessGroup")
    }

    /// Throws `.mpiFailed` for a non-zero MPI return code.
    @inline(__always)
    static func check(_ rc: Int32, _ op: @autoclosure () -> String) throws {
        if rc != 0 { throw DistributedError.mpiFailed(op: op(), code: rc, message: errorString(rc)) }
    }

    static func errorString(_ code: Int32) -> String {
        var buf = [CChar](repeating: 0, count: 1024)
        stmpi_error_string(code, &buf, buf.count)
        return String(cString: buf)
    }

    static var libraryVersion: String {
        var buf = [CChar](repeating: 0, count: 1024)
        stmpi_library_version(&buf, buf.count)
        return String(cString: buf)
    }

    /// Ends the whole job (every rank) after a fatal error: prints `message` on standard error and
    /// calls MPI_Abort, which mpirun/srun turn into killing the other processes.
    static func abortJob(_ message: String) -> Never {
        let line = message.hasSuffix("\n") ? message : message + "\n"
        fputs(line, stderr)
        fflush(stderr)
        _ = stmpi_abort(stmpi_comm_world(), 1)
        exit(1)
    }
}

private extension Optional where Wrapped == String {
    func withOptionalCString<R>(_ body: (UnsafePointer<CChar>?) -> R) -> R {
        switch self {
        case .some(let s): return s.withCString { body($0) }
        case .none: return body(nil)
        }
    }
}
