#if canImport(Glibc)
import Glibc
#endif

extension dist {
    /// The environment variables that carry a process's rank among the processes of its node, in the order they
    /// are read: torchrun's, Open MPI's, MPICH/Hydra's, Intel MPI's and Slurm's.
    static let localRankVariables = ["LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID"]

    /// This process's rank among the processes of its node, as the launcher set it (PyTorch's
    /// `get_node_local_rank`): what a rank uses to pick its GPU. Reads `LOCAL_RANK` (torchrun), then the
    /// variables `mpirun` (Open MPI, MPICH, Intel MPI) and `srun` set; needs no process group.
    ///
    /// ```swift
    /// let device = Device.cuda(try dist.getNodeLocalRank(fallbackRank: 0) % torch.cuda.deviceCount())
    /// torch.cuda.setDevice(device)
    /// ```
    /// - Parameter fallbackRank: returned when no launcher variable is set (a process started by hand).
    /// - Throws: `DistributedError.localRankUnknown` when none is set and there is no fallback, or a variable
    ///   holds something other than a non-negative integer.
    public static func getNodeLocalRank(fallbackRank: Int? = nil) throws -> Int {
        try nodeLocalRank(environment: { name in getenv(name).map { String(cString: $0) } }, fallbackRank: fallbackRank)
    }

    /// `getNodeLocalRank` on any environment (tests).
    static func nodeLocalRank(environment: (String) -> String?, fallbackRank: Int?) throws -> Int {
        for name in localRankVariables {
            guard let text = environment(name) else { continue }
            guard let value = Int(text), value >= 0 else {
                throw DistributedError.localRankUnknown(reason: "\(name)='\(text)' is not a non-negative integer")
            }
            return value
        }
        if let fallbackRank { return fallbackRank }
        throw DistributedError.localRankUnknown(reason: "none of \(localRankVariables.joined(separator: ", ")) is set "
            + "(start the processes with torchrun, mpirun or srun, or pass fallbackRank)")
    }
}
