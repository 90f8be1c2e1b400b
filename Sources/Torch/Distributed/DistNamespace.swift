/// PyTorch's `torch.distributed`, used as `dist` (`import torch.distributed as dist`): process groups
/// and collectives on CPU tensors over MPI (Open MPI or MPICH, loaded at run time).
///
/// ```swift
/// try dist.initProcessGroup(backend: .mpi)           // under `mpirun -np 2 ...`
/// let t = torch.tensor([Float(dist.getRank() + 1)])
/// try dist.allReduce(t, op: .sum)                    // every rank: tensor([3.])
/// try dist.destroyProcessGroup()
/// ```
public enum dist {}

extension torch {
    /// `torch.distributed` (also available as the top-level `dist`).
    public typealias distributed = dist
}
