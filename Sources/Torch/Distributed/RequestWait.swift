import CMPIShim

/// How `dist` waits for the all-reduces and broadcasts on its hot paths (DDP's buckets and buffers,
/// `allReduce`, `broadcast`), chosen with SWIFTTORCH_MPI_WAIT:
///
/// - `auto` (default): MPI's blocking calls (`MPI_Allreduce`, `MPI_Bcast`), which is what MPI programs do and
///   costs nothing over MPI itself, except for DDP's gradient buckets that are all-reduced on the
///   communication thread while backward goes on: those poll as below, so that the waiting thread does not
///   spin on the core backward runs on. The choice depends only on the call site (every rank's reducer
///   launches the same buckets the same way), never on the thread or timing: MPI does not match a blocking
///   collective on one rank with a nonblocking one on another.
/// - `poll`: every call polls: the nonblocking MPI call, then `MPI_Test` in a loop that spins for 50 µs,
///   then also yields the core (`sched_yield`) until 1 ms, then sleeps 50 µs between tests. On a shared or
///   oversubscribed machine the waiting rank then stops burning the core its peer needs; on dedicated
///   cores it costs time, because Open MPI's nonblocking collectives (libnbc) progress only inside
///   `MPI_Test` (1 MB all-reduce, 2 ranks, AMD EPYC: 0.72 ms polled against 0.31 ms blocking).
/// - `block`: MPI's blocking calls everywhere, the communication thread included.
/// - `barrier`: a polled `MPI_Ibarrier`, then the blocking call.
///
/// Buffers of 32 MiB and more always use the blocking calls: there the time goes into moving data,
/// and Open MPI's blocking algorithms measured twice as fast as its nonblocking ones (64 MB, 2 ranks).
enum MPIWait {
    static let pollingLimitBytes = 32 << 20
    /// How long the poll loop only spins, then spins and yields, before it sleeps (seconds);
    /// SWIFTTORCH_MPI_SPIN_US and SWIFTTORCH_MPI_YIELD_US override the 50 µs and 1 ms defaults.
    static let spinSeconds = microseconds("SWIFTTORCH_MPI_SPIN_US", default: 50)
    static let yieldSeconds = microseconds("SWIFTTORCH_MPI_YIELD_US", default: 1000)

    private static func microseconds(_ name: String, default value: Double) -> Double {
        guard let v = getenv(name), let us = Double(String(cString: v)), us >= 0 else { return value * 1e-6 }
        return us * 1e-6
    }

    enum Mode { case auto, poll, block, barrier }
    /// SWIFTTORCH_MPI_WAIT: `auto` (default), `poll`, `block`, or `barrier`: a polled `MPI_Ibarrier` (so a
    /// late peer is waited for without spinning), then the blocking call with every rank present.
    static let mode: Mode = {
        guard let v = getenv("SWIFTTORCH_MPI_WAIT") else { return .auto }
        switch String(cString: v) {
        case "poll": return .poll
        case "block": return .block
        case "barrier": return .barrier
        default: return .auto
        }
    }()
    /// Whether a call polls: always with `poll`; with `auto` when it overlaps computation (DDP's early buckets).
    static func polling(overlapping: Bool) -> Bool { mode == .poll || (mode == .auto && overlapping) }

    /// With `barrier`: waits, polling, until every rank of `comm` has arrived.
    static func meetPeers(_ comm: stmpi_comm, _ name: @autoclosure () -> String) throws {
        guard mode == .barrier else { return }
        var req: stmpi_request = 0
        try MPIRuntime.check(stmpi_ibarrier(comm, &req), name())
        try wait(&req, name())
    }

    /// Waits for `req` as described above; throws when MPI reports an error.
    static func wait(_ req: inout stmpi_request, _ op: @autoclosure () -> String) throws {
        var flag: Int32 = 0
        var start = 0.0
        var spins = 0
        while true {
            try MPIRuntime.check(stmpi_test(&req, &flag, nil), op())
            if flag != 0 { return }
            spins += 1
            if spins < 64 { continue }                       // a few tests before reading the clock
            if start == 0 { start = Watchdog.now(); continue }
            let waited = Watchdog.now() - start
            if waited < spinSeconds { continue }
            if waited < yieldSeconds { sched_yield() } else { usleep(50) }
        }
    }

    /// In-place all-reduce of `count` elements at `buffer` on `comm`.
    /// `overlapping`: the caller computes while this runs on the communication thread (the same on every rank).
    static func allReduce(_ buffer: UnsafeMutableRawPointer, count: Int32, type: stmpi_dtype_t, op: stmpi_op_t,
                          comm: stmpi_comm, overlapping: Bool = false, name: @autoclosure () -> String) throws {
        if polling(overlapping: overlapping) && Int(count) * byteSize(type) < pollingLimitBytes {
            var req: stmpi_request = 0
            try MPIRuntime.check(stmpi_iallreduce(nil, buffer, count, Int32(type.rawValue), Int32(op.rawValue), comm, &req), name())
            try wait(&req, name())
        } else {
            try meetPeers(comm, name())
            try MPIRuntime.check(stmpi_allreduce(nil, buffer, count, Int32(type.rawValue), Int32(op.rawValue), comm), name())
        }
    }

    /// Broadcast of `count` elements at `buffer` from `root` on `comm`.
    static func broadcast(_ buffer: UnsafeMutableRawPointer, count: Int32, type: stmpi_dtype_t, root: Int32,
                          comm: stmpi_comm, name: @autoclosure () -> String) throws {
        if polling(overlapping: false) && Int(count) * byteSize(type) < pollingLimitBytes {
            var req: stmpi_request = 0
            try MPIRuntime.check(stmpi_ibcast(buffer, count, Int32(type.rawValue), root, comm, &req), name())
            try wait(&req, name())
        } else {
            try meetPeers(comm, name())
            try MPIRuntime.check(stmpi_bcast(buffer, count, Int32(type.rawValue), root, comm), name())
        }
    }

    static func byteSize(_ type: stmpi_dtype_t) -> Int {
        switch type {
        case STMPI_DOUBLE, STMPI_INT64: return 8
        case STMPI_FLOAT, STMPI_INT32: return 4
        default: return 1
        }
    }
}
