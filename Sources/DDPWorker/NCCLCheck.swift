#if canImport(Glibc)
import Glibc
#endif
import Torch

/// What the NCCL backend finds here: the libnccl version (none when no libnccl.so.2 loads), and whether
/// `initProcessGroup(backend: .nccl)` starts (with the device of `cuda:(local rank % device count)`) or throws,
/// with its message. On success, an all-reduce of a CUDA tensor checks the group works.
func runNCCLCheck() throws {
    let version = dist.ncclVersion().map { "\($0.major).\($0.minor).\($0.patch)" } ?? "none"
    if torch.cuda.isAvailable() {
        torch.cuda.setDevice(try dist.getNodeLocalRank(fallbackRank: 0) % torch.cuda.deviceCount())
    }
    do {
        try dist.initProcessGroup(backend: .nccl, timeout: .seconds(120))
    } catch {
        print("RESULT nccl-check version=\(version) available=\(dist.isNCCLAvailable()) init=error message: \(error)")
        exit(0)
    }
    let t = torch.full([1000], Double(dist.getRank() + 1), device: .cuda(torch.cuda.currentDevice()))
    try dist.allReduce(t, op: .sum)
    let world = dist.getWorldSize()
    let ok = t.cpu().eq(Double(world * (world + 1) / 2)).all().item(as: Bool.self)
    if dist.getRank() == 0 {
        print("RESULT nccl-check version=\(version) available=\(dist.isNCCLAvailable()) init=ok backend=\(dist.getBackend()) "
              + "allReduce=\(ok ? "ok" : "wrong")")
    }
    try dist.destroyProcessGroup()
    exit(ok ? 0 : 1)
}
