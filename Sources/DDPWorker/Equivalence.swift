#if canImport(Glibc)
import Glibc
#endif
import Torch

/// The networks of the equivalence check. `mlp` and `cnn` have no BatchNorm (its statistics
/// would be per rank); `cnn-bn` has two, which the distributed run converts to SyncBatchNorm.
func makeEquivalenceModel(_ kind: String, dtype: DType) -> nn.Module {
    let m: nn.Module
    switch kind {
    case "mlp":
        m = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 5))
    case "cnn":
        m = nn.Sequential(nn.Conv2d(1, 4, 3, padding: 1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(4, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 3 * 3, 5))
    case "cnn-bn":
        m = nn.Sequential(nn.Conv2d(1, 4, 3, padding: 1, bias: false), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(4, 8, 3), nn.BatchNorm2d(8, momentum: nil), nn.ReLU(), nn.Flatten(),
                          nn.Linear(8 * 3 * 3, 6), nn.BatchNorm1d(6), nn.Linear(6, 5))
    default:
        fputs("equivalence: unknown model \(kind) (mlp, cnn or cnn-bn)\n", stderr)
        exit(2)
    }
    return dtype == .float64 ? m.double() : m
}

/// Two ranks × batch 32 against one process × batch 64, 50 SGD-momentum steps from the same
/// start: rank 0 replays the single-process run itself and compares the weights. Rank 1 starts
/// from different weights, so the check also covers DDP's broadcast at construction.
/// `cnn-bn`: 20 steps of 2 ranks × batch 16 with SyncBatchNorm (`convertSyncBatchnorm`) against
/// one process × batch 32 with BatchNorm; the running statistics are compared too.
/// Gradients: `copy` (default), `view` (`gradientAsBucketView`), or `view-keep` (bucket views and
/// `zeroGrad(setToNone: false)`, so backward accumulates into the buckets themselves).
/// Device: `cpu` (default); `cuda`, each rank training on `cuda:(local rank % device count)` with the MPI
/// backend (buckets staged through pinned host memory); `nccl`, the same with `backend: .nccl`. The
/// single-process reference always runs on the CPU.
func runEquivalence(_ args: [String]) throws {
    let kind = args.count > 1 ? args[1] : "mlp"
    let dtype: DType = args.count > 2 && args[2] == "float64" ? .float64 : .float32
    let bucketCapMB = args.count > 3 ? Double(args[3]) ?? 25 : 25
    let gradients = args.count > 4 ? args[4] : "copy"
    guard ["copy", "view", "view-keep"].contains(gradients) else {
        fputs("equivalence: unknown gradient mode \(gradients) (copy, view or view-keep)\n", stderr)
        exit(2)
    }
    let setToNone = gradients != "view-keep"
    let (device, backend) = try workerDevice(args, at: 5, program: "equivalence")
    let (steps, global) = kind == "cnn-bn" ? (20, 32) : (50, 64)
    try dist.initProcessGroup(backend: backend, timeout: .seconds(300))
    let rank = dist.getRank(), world = dist.getWorldSize()
    precondition(global % world == 0, "equivalence: world size must divide \(global)")
    let local = global / world

    let g = Generator().manualSeed(1234)
    let inputShape = kind == "mlp" ? [20] : [1, 10, 10]
    let synchronised = kind == "cnn-bn"
    let X = torch.randn([steps * global] + inputShape, generator: g).to(dtype)
    let Y = torch.randint(5, [steps * global], generator: g)

    func train(_ model: nn.Module, batch: Int, offset: Int, on device: Device = .cpu) {
        let opt = optim.SGD(model.parameters(), lr: 0.05, momentum: 0.9)
        for s in 0..<steps {
            let x = X.narrow(0, s * global + offset, batch).to(device), y = Y.narrow(0, s * global + offset, batch).to(device)
            opt.zeroGrad(setToNone: setToNone)
            F.crossEntropy(model(x), y).backward()
            opt.step()
        }
    }
    /// Parameters, then buffers (BatchNorm's running statistics and batch counts).
    func flat(_ m: nn.Module) -> Tensor {
        torch.cat((m.parameters() + m.buffers()).map { $0.detach().flatten().to(.cpu, dtype: dtype) })
    }

    torch.manualSeed(UInt64(rank))                       // different starting weights per rank
    var model = makeEquivalenceModel(kind, dtype: dtype)
    if synchronised { model = nn.SyncBatchNorm.convertSyncBatchnorm(model) }
    model.to(device)
    let ddp = try DistributedDataParallel(model, bucketCapMB: bucketCapMB, gradientAsBucketView: gradients != "copy")
    train(ddp, batch: local, offset: rank * local, on: device)
    let mine = flat(ddp.module)

    // Every rank must hold the same weights.
    let gathered = (0..<world).map { _ in torch.zerosLike(mine) }
    try dist.allGather(gathered, mine)
    let rankSpread = gathered.map { ($0 - gathered[0]).abs().max().item() }.max()!

    if rank == 0 {
        torch.manualSeed(0)
        let reference = makeEquivalenceModel(kind, dtype: dtype)
        train(reference, batch: global, offset: 0)
        let ref = flat(reference)
        let maxDiff = (mine - ref).abs().max().item()
        let scale = ref.abs().max().item()
        let syncLayers = ddp.module.modules().filter { $0 is nn.SyncBatchNorm }.count
        print("RESULT equivalence model=\(kind) dtype=\(dtype) world=\(world) steps=\(steps) buckets=\(ddp.bucketSizes.count) algorithm=\(ddp.allReduceAlgorithm) "
              + "device=\(device) backend=\(dist.getBackend()) "
              + "params=\(ref.numel) gradients=\(gradients) maxAbsDiff=\(maxDiff) maxAbsWeight=\(scale) rankSpread=\(rankSpread) syncBatchNorms=\(syncLayers)")
    }
    try dist.destroyProcessGroup()
}
