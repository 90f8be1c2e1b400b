import CMPIShim

/// Which algorithm sums a float buffer over a group's ranks, chosen per call site:
///
/// - `shm`: `SharedMemoryAllReduce`, when every rank of the group runs on this host (the default where it
///   applies).
/// - `mpi`: the MPI library's `MPI_Allreduce` / `MPI_Iallreduce` (see `MPIWait`).
///
/// DDP's gradient buckets follow SWIFTTORCH_DDP_ALLREDUCE (`shm`, the default, or `mpi`); `dist.allReduce`
/// follows SWIFTTORCH_ALLREDUCE for float32/float64 sums and averages of at least
/// SWIFTTORCH_SHM_MIN_KB kilobytes. Every rank must see the same settings: the choice decides which MPI
/// calls a rank issues.
public enum AllReduceAlgorithm: String, Sendable, CaseIterable {
    case shm
    case mpi

    /// The algorithm an environment variable asks for; `shm` when it is unset or unknown.
    static func requested(_ variable: String) -> AllReduceAlgorithm {
        guard let v = getenv(variable) else { return .shm }
        return AllReduceAlgorithm(rawValue: String(cString: v).lowercased()) ?? .shm
    }

    /// The algorithm that runs: `shm` only when asked for, with more than one rank, every rank of the group on
    /// this host (`ranksOnThisHost`: how many of the group's ranks share this rank's node, as
    /// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) counts them; nil when MPI cannot tell or lacks shared windows).
    /// A group that spans hosts falls back to `mpi` on every rank: each rank then sees fewer ranks on its host
    /// than in the group, so all ranks decide alike.
    static func choose(requested: AllReduceAlgorithm, groupSize: Int, ranksOnThisHost: Int?) -> AllReduceAlgorithm {
        guard requested == .shm, groupSize > 1, let local = ranksOnThisHost, local == groupSize else { return .mpi }
        return .shm
    }

    /// Whether `dist.allReduce` may use `shm` for this buffer: float32/float64 sums (and averages, summed
    /// then divided as the MPI path does) of at least `minBytes`.
    static func eligible(type: stmpi_dtype_t, op: stmpi_op_t, bytes: Int, minBytes: Int) -> Bool {
        (type == STMPI_FLOAT || type == STMPI_DOUBLE) && op == STMPI_SUM && bytes >= minBytes
    }

    /// SWIFTTORCH_ALLREDUCE: what `dist.allReduce` asks for.
    static let forAllReduce = requested("SWIFTTORCH_ALLREDUCE")
    /// SWIFTTORCH_DDP_ALLREDUCE: what DDP's gradient buckets ask for.
    static let forDDP = requested("SWIFTTORCH_DDP_ALLREDUCE")

    /// SWIFTTORCH_SHM_MIN_KB (default 1024): below 1 MiB MPI's latency-optimised algorithms (recursive
    /// doubling over shared-memory transports) take a few tens of microseconds, which two barriers and three
    /// copies cannot beat; above it the time goes into moving data, where the shared-memory sum moves each byte
    /// fewer times than a ring or tree. Not yet measured on many cores: `ddp-worker bench-allreduce` prints both.
    static let minBytesForAllReduce: Int = {
        guard let v = getenv("SWIFTTORCH_SHM_MIN_KB"), let kb = Int(String(cString: v)), kb >= 0 else { return 1 << 20 }
        return kb << 10
    }()
}

/// An all-reduce (sum) for ranks that share a host, through an MPI-3 shared-memory window
/// (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), MPI_Win_allocate_shared, MPI_Win_shared_query): every rank
/// can read every rank's segment with plain loads, so a reduction needs no messages, only barriers.
///
/// A buffer goes through in chunks of `chunkBytes` per rank. For each chunk every rank
/// 1. copies its chunk into its own segment;
/// 2. meets the others (MPI_Win_sync, barrier, MPI_Win_sync);
/// 3. sums its 1/N slice of the chunk over all N segments, in rank order (`((s0 + s1) + s2) + ...` in the
///    buffer's own dtype), and stores the sum in its own segment and in its output;
/// 4. meets the others again;
/// 5. copies the other ranks' summed slices from their segments into its output.
/// Each element is summed by exactly one rank, in a fixed order, so every rank ends with identical bits (and
/// with two ranks the very bits of MPI_Allreduce, since `a + b == b + a`). Segments alternate between two
/// halves from one chunk to the next: a rank writes a half again only after the barrier of the following
/// chunk, which every rank reaches only after it finished reading that half, so two barriers per chunk suffice.
/// The halves' parity carries over from call to call (every rank makes the same calls), so no closing barrier
/// is needed either.
///
/// Per rank and byte of buffer it reads 3 and writes 2 bytes, all in parallel across ranks; a ring moves
/// 2(N−1)/N of the buffer through MPI's transport (each a copy in and a copy out through its queues) in 2(N−1)
/// dependent steps; a tree funnels the whole buffer through one rank (Open MPI's nonblocking in-place
/// all-reduce is that tree, whatever the size).
///
/// Waits: polled (`MPI_Ibarrier` + `MPIWait.wait`, which sleeps when a peer is late) when the caller overlaps
/// computation, else MPI_Barrier; every rank decides alike (`MPIWait.polling`).
final class SharedMemoryAllReduce {
    /// The group's ranks on this host (all of them: see `AllReduceAlgorithm.choose`).
    let nodeComm: stmpi_comm
    let rank: Int
    let size: Int
    /// Bytes per rank per chunk.
    let chunkBytes: Int
    private let window: stmpi_win
    /// Each rank's segment: two halves of `chunkBytes`.
    private let segments: [UnsafeMutableRawPointer]
    private let sources: UnsafeMutablePointer<UnsafeRawPointer?>
    /// Chunks reduced so far (its parity picks the half).
    private var chunks = 0
    private var freed = false

    /// SWIFTTORCH_SHM_CHUNK_KB (default 2048): at 2 MiB a chunk's copy takes ~100–200 µs, so the two
    /// barriers per chunk (a few µs each among present ranks) cost a few percent, while N × 2 MiB in
    /// flight (16 MiB at 8 ranks) still fits a server CPU's last-level cache, so step 3 reads what step 1
    /// just wrote from cache instead of DRAM.
    static let chunkBytes: Int = {
        guard let v = getenv("SWIFTTORCH_SHM_CHUNK_KB"), let kb = Int(String(cString: v)), kb >= 4 else { return 2 << 20 }
        return kb << 10
    }()

    /// The ranks of `comm` that share this host: their count (collective over `comm`) and their communicator,
    /// which the caller frees unless it keeps it. nil when the library lacks MPI-3 shared windows.
    static func ranksOnThisHost(of comm: stmpi_comm) throws -> (count: Int, comm: stmpi_comm)? {
        guard stmpi_has_shared_windows() != 0 else { return nil }
        var node: stmpi_comm = 0
        try MPIRuntime.check(stmpi_comm_split_shared(comm, 0, &node), "allReduce (MPI_Comm_split_type)")
        var n: Int32 = 0
        try MPIRuntime.check(stmpi_comm_size(node, &n), "allReduce (MPI_Comm_size)")
        return (Int(n), node)
    }

    /// Allocates the window over `nodeComm` (collective over it).
    init(nodeComm: stmpi_comm, chunkBytes: Int = SharedMemoryAllReduce.chunkBytes) throws {
        var r: Int32 = 0, s: Int32 = 0
        try MPIRuntime.check(stmpi_comm_rank(nodeComm, &r), "allReduce (MPI_Comm_rank)")
        try MPIRuntime.check(stmpi_comm_size(nodeComm, &s), "allReduce (MPI_Comm_size)")
        self.nodeComm = nodeComm
        rank = Int(r)
        size = Int(s)
        // A multiple of 4 KiB keeps every segment page- and cache-line-aligned in the contiguous allocation.
        self.chunkBytes = (chunkBytes + 4095) & ~4095
        var base: UnsafeMutableRawPointer?
        var win: stmpi_win = 0
        try MPIRuntime.check(stmpi_win_allocate_shared(2 * self.chunkBytes, nodeComm, &base, &win),
                             "allReduce (MPI_Win_allocate_shared of \(2 * self.chunkBytes) bytes per rank)")
        window = win
        var segs: [UnsafeMutableRawPointer] = []
        for q in 0..<size {
            var p: UnsafeMutableRawPointer?
            var bytes = 0
            try MPIRuntime.check(stmpi_win_shared_query(win, Int32(q), &p, &bytes), "allReduce (MPI_Win_shared_query)")
            guard let p, bytes >= 2 * self.chunkBytes else {
                throw DistributedError.mpiUnusable(reason: "MPI_Win_shared_query gave rank \(q)'s segment as \(bytes) bytes, expected \(2 * self.chunkBytes)")
            }
            segs.append(p)
        }
        segments = segs
        sources = .allocate(capacity: size)
    }

    deinit { sources.deallocate() }

    /// Frees the window and the node communicator (collective over the node's ranks).
    func free() throws {
        guard !freed else { return }
        freed = true
        try MPIRuntime.check(stmpi_win_free(window), "destroyProcessGroup (MPI_Win_free)")
        try MPIRuntime.check(stmpi_comm_free(nodeComm), "destroyProcessGroup (MPI_Comm_free)")
    }

    /// Sums `count` float32 (`STMPI_FLOAT`) or float64 (`STMPI_DOUBLE`) elements at `buffer` over the ranks,
    /// in place. `polling`: wait as `MPIWait.polling(overlapping:)` says (the same on every rank).
    func allReduce(_ buffer: UnsafeMutableRawPointer, count: Int, type: stmpi_dtype_t, polling: Bool,
                   name: @autoclosure () -> String) throws {
        precondition(type == STMPI_FLOAT || type == STMPI_DOUBLE, "SharedMemoryAllReduce: float32 or float64 only")
        precondition(!freed, "SharedMemoryAllReduce: used after free")
        let item = type == STMPI_DOUBLE ? 8 : 4
        let perChunk = chunkBytes / item
        var done = 0
        while done < count {
            let n = Swift.min(perChunk, count - done)
            let offset = (chunks & 1) * chunkBytes
            chunks += 1
            let data = buffer + done * item
            (segments[rank] + offset).copyMemory(from: data, byteCount: n * item)
            try meet(polling: polling, name())
            let (lo, hi) = Self.slice(rank, of: n, ranks: size, itemSize: item)
            if hi > lo {
                for q in 0..<size { sources[q] = UnsafeRawPointer(segments[q] + offset + lo * item) }
                let mine = segments[rank] + offset + lo * item, out = data + lo * item
                if type == STMPI_FLOAT {
                    sources.withMemoryRebound(to: UnsafePointer<Float>?.self, capacity: size) {
                        stmpi_sum_f32(mine.assumingMemoryBound(to: Float.self), out.assumingMemoryBound(to: Float.self),
                                      $0, Int32(size), hi - lo)
                    }
                } else {
                    sources.withMemoryRebound(to: UnsafePointer<Double>?.self, capacity: size) {
                        stmpi_sum_f64(mine.assumingMemoryBound(to: Double.self), out.assumingMemoryBound(to: Double.self),
                                      $0, Int32(size), hi - lo)
                    }
                }
            }
            try meet(polling: polling, name())
            for q in 0..<size where q != rank {
                let (a, b) = Self.slice(q, of: n, ranks: size, itemSize: item)
                if b > a { (data + a * item).copyMemory(from: segments[q] + offset + a * item, byteCount: (b - a) * item) }
            }
            done += n
        }
    }

    /// Rank `q`'s slice `[lo, hi)` of an `n`-element chunk: equal shares rounded up to 64 bytes, so no two
    /// ranks write into one cache line (the last ranks' slices may be short or empty).
    static func slice(_ q: Int, of n: Int, ranks: Int, itemSize: Int) -> (Int, Int) {
        let align = Swift.max(1, 64 / itemSize)
        let share = ((n + ranks - 1) / ranks + align - 1) / align * align
        let lo = Swift.min(n, q * share)
        return (lo, Swift.min(n, lo + share))
    }

    /// Every rank's stores before it are visible to every rank's loads after it (MPI-3's separate-epoch-free
    /// pattern for shared windows: MPI_Win_sync, a barrier, MPI_Win_sync).
    private func meet(polling: Bool, _ name: @autoclosure () -> String) throws {
        try MPIRuntime.check(stmpi_win_sync(window), name())
        if polling {
            var req: stmpi_request = 0
            try MPIRuntime.check(stmpi_ibarrier(nodeComm, &req), name())
            try MPIWait.wait(&req, name())
        } else {
            try MPIRuntime.check(stmpi_barrier(nodeComm), name())
        }
        try MPIRuntime.check(stmpi_win_sync(window), name())
    }
}
