import CMPIShim
#if canImport(Glibc)
import Glibc
#endif
import Torch
import TorchVision
import TutorialModels

/// Wall-clock seconds.
func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// `dist.allReduce` against MPI's own `MPI_Allreduce` on the same float32 buffer sizes, 1 KB to
/// `maxMB` MB: per-call time (best of 5 alternating rounds) and the overhead of the Swift layer, or, where
/// `dist.allReduce` takes the shared-memory path (`algorithm` shm: ≥ SWIFTTORCH_SHM_MIN_KB on one host),
/// how that path compares with MPI's (SWIFTTORCH_ALLREDUCE=mpi measures the Swift layer over MPI alone).
func runAllReduceBenchmark(_ args: [String]) throws {
    let maxMB = args.count > 1 ? Double(args[1]) ?? 100 : 100
    try dist.initProcessGroup(backend: .mpi)
    let rank = dist.getRank(), world = dist.getWorldSize()
    let comm = stmpi_comm_world()
    var sizes = [1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 100 << 20]
    sizes = sizes.filter { Double($0) <= maxMB * 1_048_576 }
    if rank == 0 { print("bytes        MPI_Allreduce(us)  dist.allReduce(us)  algorithm  dist/MPI   (world \(world), float32 sum, best of 5 rounds)") }
    for bytes in sizes {
        let n = bytes / 4
        let t = torch.zeros(n)
        let algorithm = try dist.allReduceAlgorithm(for: t)
        let raw = UnsafeMutablePointer<Float>.allocate(capacity: n)
        raw.initialize(repeating: 0, count: n)
        defer { raw.deallocate() }
        func rawOnce() { _ = stmpi_allreduce(nil, raw, Int32(n), Int32(STMPI_FLOAT.rawValue), Int32(STMPI_SUM.rawValue), comm) }
        for _ in 0..<3 { rawOnce(); try dist.allReduce(t) }
        // Iterations for ~0.2 s per block, agreed on by all ranks.
        try dist.barrier()
        let t0 = now()
        rawOnce()
        let probe = torch.tensor([max(1.0, min(2000.0, 0.2 / max(now() - t0, 1e-6)))])
        try dist.allReduce(probe, op: .min)
        let iters = Int(probe.item())
        var bestRaw = Double.infinity, bestDist = Double.infinity
        for _ in 0..<5 {
            try dist.barrier()
            var s = now()
            for _ in 0..<iters { rawOnce() }
            bestRaw = min(bestRaw, (now() - s) / Double(iters))
            try dist.barrier()
            s = now()
            for _ in 0..<iters { try dist.allReduce(t) }
            bestDist = min(bestDist, (now() - s) / Double(iters))
        }
        let times = torch.tensor([bestRaw, bestDist], dtype: .float64)
        try dist.allReduce(times, op: .max)
        let r = times.toArray(as: Double.self)
        if rank == 0 {
            let pad = { (s: String, w: Int) in String(repeating: " ", count: max(0, w - s.count)) + s }
            print(pad("\(bytes)", 10), pad(String(cFormat: "%.1f", r[0] * 1e6), 18), pad(String(cFormat: "%.1f", r[1] * 1e6), 19),
                  pad(algorithm.rawValue, 10), pad(String(cFormat: "%+.1f%%", (r[1] / r[0] - 1) * 100), 10))
            print("RESULT allreduce bytes=\(bytes) world=\(world) algorithm=\(algorithm) mpiMicros=\(r[0] * 1e6) distMicros=\(r[1] * 1e6)")
        }
    }
    try dist.destroyProcessGroup()
}

/// Training throughput: tutorial 000's MLP (batch 64 per rank) or ResNet-18 on 3×32×32 (batch 32
/// per rank), one thread per process. One process trains the bare model; more wrap it in DDP, or,
/// with `local`, each train a bare model side by side (the same CPU sharing without communication:
/// the ceiling DDP can reach on a machine shared with other work); `view` wraps it in DDP with
/// `gradientAsBucketView`; `barrier` trains bare models side by side with one `dist.barrier()` per step after
/// backward (the ceiling of any synchronous data-parallel scheme on this machine: what the ranks' drift alone
/// costs, without moving a byte). Options after the step count, in any order: `local`, `view`, `barrier`, `ddp` (the default),
/// a number (bucketCapMB, default 25), and `trace`: print rank 0's `CommunicationTimeline` (when each bucket
/// was ready, began and finished its all-reduce, against the end of backward) over the timed steps.
/// The RESULT line names the all-reduce algorithm (`shm`, `mpi`, or `none` without DDP).
func runDDPBenchmark(_ args: [String]) throws {
    let kind = args.count > 1 ? args[1] : "mlp"
    let isMLP = kind == "mlp"
    let steps = args.count > 2 ? Int(args[2]) ?? (isMLP ? 400 : 20) : (isMLP ? 400 : 20)
    let options = args.dropFirst(3)
    let barrierEach = options.contains("barrier")
    let local = options.contains("local") || barrierEach, bucketView = options.contains("view"), trace = options.contains("trace")
    let bucketCapMB = options.compactMap { Double($0) }.first ?? 25
    if trace { setenv("SWIFTTORCH_DDP_TRACE", "1", 1) }
    try dist.initProcessGroup(backend: .mpi)
    let rank = dist.getRank(), world = dist.getWorldSize()
    let warmup = isMLP ? 20 : 3
    let batch = isMLP ? 64 : 32
    torch.manualSeed(UInt64(rank))
    let net: nn.Module = isMLP ? TutorialMLP(784, 300, 100, 10) : models.resnet18(numClasses: 10)
    let ddp = world > 1 && !local ? try DistributedDataParallel(net, bucketCapMB: bucketCapMB, gradientAsBucketView: bucketView) : nil
    let model: nn.Module = ddp ?? net
    let opt = optim.SGD(model.parameters(), lr: 0.01, momentum: 0.9)
    let shape = isMLP ? [batch, 784] : [batch, 3, 32, 32]
    let batches = (0..<4).map { _ in (torch.randn(shape), torch.randint(10, [batch])) }
    func step(_ i: Int) {
        let (x, y) = batches[i % batches.count]
        opt.zeroGrad()
        F.crossEntropy(model(x), y).backward()
        if barrierEach {
            do { try dist.barrier() } catch { fatalError("bench-ddp: barrier failed: \(error)") }
        }
        opt.step()
    }
    for i in 0..<warmup { step(i) }
    ddp?.resetCommunicationTimeline()
    try dist.barrier()
    let t0 = now()
    for i in 0..<steps { step(i) }
    try dist.barrier()
    let seconds = now() - t0
    if rank == 0 {
        let sps = Double(world * batch * steps) / seconds
        if let timeline = ddp?.communicationTimeline { print(timeline) }
        print("RESULT bench-ddp model=\(kind) world=\(world) ddp=\(ddp != nil) algorithm=\(ddp.map { "\($0.allReduceAlgorithm)" } ?? "none") "
              + "barrierEachStep=\(barrierEach) bucketCapMB=\(bucketCapMB) buckets=\(ddp?.bucketSizes.count ?? 0) bucketView=\(bucketView) batchPerRank=\(batch) steps=\(steps) seconds=\(String(cFormat: "%.3f", seconds)) "
              + "samplesPerSec=\(String(cFormat: "%.1f", sps)) msPerStep=\(String(cFormat: "%.2f", seconds / Double(steps) * 1000))")
    }
    try dist.destroyProcessGroup()
}
