#if canImport(Glibc)
import Glibc
#endif
import Torch

/// Collects failed checks; `finish` prints them and exits non-zero when any failed.
final class CheckLog {
    var failures: [String] = []
    var count = 0

    func expect(_ ok: Bool, _ message: @autoclosure () -> String) {
        count += 1
        if !ok { failures.append(message()) }
    }

    /// Compares `got`'s elements with `want` (absolute tolerance `tol`) and its shape with `shape`.
    func expectValues(_ got: Tensor, _ want: [Double], shape: [Int], tol: Double = 0, _ what: String) {
        count += 1
        guard got.shape == shape else {
            failures.append("\(what): shape \(got.shape), expected \(shape)")
            return
        }
        let g = got.to(.float64).toArray(as: Double.self)
        for (i, (a, b)) in zip(g, want).enumerated() where !(abs(a - b) <= tol) {
            failures.append("\(what): element \(i) is \(a), expected \(b)")
            return
        }
    }

    /// Agrees on success across ranks (so every rank exits the same way), prints, exits on failure.
    func finish(_ label: String) throws {
        let bad = torch.tensor([Int64(failures.count)])
        try dist.allReduce(bad, op: .sum)
        for f in failures.prefix(20) { print("FAIL [rank \(dist.getRank())] \(f)") }
        if dist.getRank() == 0 {
            print("RESULT \(label) checks=\(count) failures=\(bad.item(as: Int.self)) world=\(dist.getWorldSize())")
        }
        let ok = bad.item(as: Int.self) == 0
        try dist.destroyProcessGroup()
        exit(ok ? 0 : 1)
    }
}

/// The device a worker mode asks for (`args[index]`: `cpu`, the default; `cuda` or `nccl`, each rank on
/// `cuda:(local rank % device count)`, made its current device), and the backend to start the group with.
/// Exits with status 2 on an unknown mode or without CUDA.
func workerDevice(_ args: [String], at index: Int, program: String) throws -> (device: Device, backend: dist.Backend) {
    let mode = args.count > index ? args[index] : "cpu"
    guard ["cpu", "cuda", "nccl"].contains(mode) else {
        fputs("\(program): unknown device mode \(mode) (cpu, cuda or nccl)\n", stderr)
        exit(2)
    }
    guard mode != "cpu" else { return (.cpu, .mpi) }
    guard torch.cuda.isAvailable() else {
        fputs("\(program): device mode \(mode) needs CUDA: \(torch.cuda.unavailableReason ?? "no GPU")\n", stderr)
        exit(2)
    }
    let device = Device.cuda(try dist.getNodeLocalRank(fallbackRank: 0) % torch.cuda.deviceCount())
    torch.cuda.setDevice(device)
    return (device, mode == "nccl" ? .nccl : .mpi)
}
