/// Failures of `dist` that come from outside the program: no MPI or NCCL library, an MPI or NCCL call that
/// failed, a peer that stopped answering, a launcher that gave no local rank.
public enum DistributedError: Error, CustomStringConvertible, Equatable {
    /// No loadable libmpi; `reason` says what was tried.
    case mpiNotFound(reason: String)
    /// libmpi was found but is unusable (a missing symbol, `MPI_Init_thread` failed, or MPI was
    /// already finalized in this process).
    case mpiUnusable(reason: String)
    /// An MPI call returned an error code.
    case mpiFailed(op: String, code: Int32, message: String)
    /// `backend: .nccl` cannot be used here: no GPU, or no loadable libnccl.so.2 (`reason` says which).
    case ncclUnavailable(reason: String)
    /// An NCCL call returned an error code.
    case ncclFailed(op: String, code: Int32, message: String)
    /// The launcher told this process nothing about its rank on the node (`getNodeLocalRank`).
    case localRankUnknown(reason: String)

    public var description: String {
        switch self {
        case .mpiNotFound(let reason):
            return "dist.initProcessGroup(backend: .mpi): \(reason). Install an MPI implementation, e.g. "
                + "`apt-get install libopenmpi-dev openmpi-bin` (Open MPI) or `apt-get install libmpich-dev mpich`, "
                + "or point SWIFTTORCH_MPI_LIBRARY at a libmpi.so"
        case .mpiUnusable(let reason):
            return "dist: MPI is unusable: \(reason)"
        case .mpiFailed(let op, let code, let message):
            return "dist.\(op): MPI error \(code): \(message)"
        case .ncclUnavailable(let reason):
            return "dist.initProcessGroup(backend: .nccl): \(reason)"
        case .ncclFailed(let op, let code, let message):
            return "dist: \(op) failed: NCCL error \(code): \(message)"
        case .localRankUnknown(let reason):
            return "dist.getNodeLocalRank: \(reason)"
        }
    }
}
