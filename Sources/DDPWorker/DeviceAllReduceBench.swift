#if canImport(Glibc)
import Glibc
#endif
import Torch

/// `dist.allReduce` of one float32 buffer (default 45 MB, ResNet-18's gradients) from host memory against the
/// same from device memory, each rank on `cuda:(local rank % device count)`: with `mpi` the device buffer goes
/// through pinned host staging, with `nccl` NCCL reduces it on the device. Per-call time, best of 5 rounds of
/// ~0.5 s, the device timed up to `torch.cuda.synchronize()`.
///
///   mpirun -np 2 ddp-worker bench-allreduce-device [MB] [mpi|nccl]
func runDeviceAllReduceBenchmark(_ args: [String]) throws {
    let megabytes = args.count > 1 ? Double(args[1]) ?? 45 : 45
    let backend = args.count > 2 && args[2] == "nccl" ? dist.Backend.nccl : .mpi
    guard torch.cuda.isAvailable() else {
        fputs("bench-allreduce-device: needs CUDA: \(torch.cuda.unavailableReason ?? "no GPU")\n", stderr)
        exit(2)
    }
    let device = Device.cuda(try dist.getNodeLocalRank(fallbackRank: 0) % torch.cuda.deviceCount())
    torch.cuda.setDevice(device)
    try dist.initProcessGroup(backend: backend)
    let rank = dist.getRank(), world = dist.getWorldSize()
    let n = Int(megabytes * 1_048_576) / 4
    var results: [String: Double] = [:]
    for (label, t) in [("host", torch.ones([n])), ("device", torch.ones([n], device: device))] {
        func once() throws {
            try dist.allReduce(t, op: .avg)
            if t.device != .cpu { torch.cuda.synchronize() }
        }
        for _ in 0..<3 { try once() }
        try dist.barrier()
        let t0 = now()
        try once()
        let probe = torch.tensor([max(1.0, min(500.0, 0.5 / max(now() - t0, 1e-6)))])
        try dist.allReduce(probe, op: .min)
        let iters = Int(probe.item())
        var best = Double.infinity
        for _ in 0..<5 {
            try dist.barrier()
            let s = now()
            for _ in 0..<iters { try once() }
            best = min(best, (now() - s) / Double(iters))
        }
        let slowest = torch.tensor([best], dtype: .float64)
        try dist.allReduce(slowest, op: .max)
        results[label] = slowest.item()
    }
    if rank == 0 {
        let bytes = n * 4
        let host = results["host"]!, dev = results["device"]!
        print("RESULT allreduce-device bytes=\(bytes) world=\(world) backend=\(backend) device=\(device) "
              + "hostMs=\(String(cFormat: "%.3f", host * 1e3)) deviceMs=\(String(cFormat: "%.3f", dev * 1e3)) "
              + "deviceOverHost=\(String(cFormat: "%.2f", dev / host)) "
              + "deviceGBps=\(String(cFormat: "%.2f", Double(bytes) / dev / 1e9))")
    }
    try dist.destroyProcessGroup()
}
