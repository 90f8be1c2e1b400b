#if canImport(Glibc)
import Glibc
#endif
import Torch

/// DDP's behaviour besides the averaged step: state-dict keys, `module`, `noSync` accumulation,
/// unused-parameter detection, buffers broadcast at forward, repr, `gradientAsBucketView`, and
/// float16/bfloat16 models.
func runDDPFeatureChecks() throws {
    try dist.initProcessGroup(backend: .mpi, timeout: .seconds(120))
    let rank = dist.getRank(), world = dist.getWorldSize()
    let log = CheckLog()

    torch.manualSeed(UInt64(10 + rank))
    let net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    let model = try DistributedDataParallel(net)
    log.expect(model.module === net, "module is the wrapped model")
    let keys = model.stateDict().keys
    log.expect(keys.first == "module.0.weight" && keys.contains("module.1.running_mean"), "state dict keys \(keys)")
    log.expect(String(describing: model).hasPrefix("DistributedDataParallel(\n  (module): Sequential("), "repr \(model)")

    // Construction broadcast rank 0's parameters and buffers.
    let w = net[0].getParameter("weight").detach().clone()
    try dist.broadcast(w, src: 0)
    log.expect((w - net[0].getParameter("weight")).abs().max().item() == 0, "parameters equal rank 0's after construction")

    // Forward in training mode broadcasts rank 0's BatchNorm statistics first.
    let runningMean = net[1].getBuffer("running_mean")
    torch.noGrad { _ = runningMean.fill_(Double(rank + 5)) }
    let x = torch.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]]).float()    // the same batch on every rank
    model(x).sum().backward()
    // rank 0's statistics (5) were broadcast, then every rank updated them from the same batch.
    let rm = runningMean.detach().clone()
    try dist.broadcast(rm, src: 0)
    log.expect((rm - runningMean).abs().max().item() == 0, "buffers equal after forward")

    // noSync: two local backward passes, then one synchronised: the gradient is the average over
    // ranks of each rank's three-pass sum.
    let lin = nn.Linear(2, 1, bias: false)
    torch.noGrad { _ = lin.weight.fill_(1) }
    let m2 = try DistributedDataParallel(lin)
    let inp = torch.full([1, 2], Double(rank + 1))
    try m2.noSync {
        m2(inp).sum().backward()
        m2(inp).sum().backward()
        log.expectValues(lin.weight.grad!, [2 * Double(rank + 1), 2 * Double(rank + 1)], shape: [1, 2], tol: 1e-6, "noSync keeps local gradients")
    }
    m2(inp).sum().backward()
    let avg = 3 * Double((1...world).reduce(0, +)) / Double(world)
    log.expectValues(lin.weight.grad!, [avg, avg], shape: [1, 2], tol: 1e-5, "first backward after noSync averages the accumulated sum")

    // findUnusedParameters: a branch not used on this iteration still lets the buckets complete.
    final class TwoHeads: nn.Module {
        let a = nn.Linear(2, 2), b = nn.Linear(2, 2)
        var useB = false
        override func forward(_ x: Tensor) -> Tensor { useB ? b(a(x)) : a(x) }
    }
    let heads = TwoHeads()
    let m3 = try DistributedDataParallel(heads, bucketCapMB: 0.00001, findUnusedParameters: true)
    m3(torch.ones(1, 2)).sum().backward()
    log.expect(heads.a.weight.grad != nil, "used parameters get averaged gradients")
    heads.useB = true
    m3(torch.ones(1, 2)).sum().backward()
    log.expect(heads.b.weight.grad != nil, "second iteration with all parameters")

    // gradientAsBucketView: after backward the gradients are the bucket's slots, in bucket order (reverse
    // parameter order), averaged; a second backward without zeroing accumulates into those slots.
    let viewed = nn.Linear(2, 3)
    torch.noGrad { _ = viewed.weight.fill_(1); _ = viewed.bias!.fill_(0) }
    let m4 = try DistributedDataParallel(viewed, gradientAsBucketView: true)
    log.expect(m4.gradientAsBucketView && !m2.gradientAsBucketView, "gradientAsBucketView property")
    m4(torch.full([1, 2], Double(rank + 1))).sum().backward()
    let mean = Double((1...world).reduce(0, +)) / Double(world)
    log.expectValues(viewed.weight.grad!, [Double](repeating: mean, count: 6), shape: [3, 2], tol: 1e-6, "view gradient averaged")
    let slots = viewed.weight.grad!.dataPtr() - viewed.bias!.grad!.dataPtr()
    log.expect(slots == 3 * 4, "weight's gradient follows the bias's in the bucket (byte distance \(slots))")
    m4(torch.full([1, 2], Double(rank + 1))).sum().backward()
    log.expectValues(viewed.weight.grad!, [Double](repeating: 2 * mean, count: 6), shape: [3, 2], tol: 1e-6,
                     "second backward accumulates into the bucket view")

    // Half-precision models: float16 and bfloat16 buckets are averaged through float32.
    for dtype in [DType.float16, .bfloat16] {
        let half = nn.Linear(2, 3).to(dtype)
        torch.noGrad { _ = half.weight.fill_(1); _ = half.bias!.fill_(0) }
        let m5 = try DistributedDataParallel(half)
        m5(torch.full([1, 2], Double(rank + 1)).to(dtype)).sum().backward()
        log.expect(half.weight.grad!.dtype == dtype, "\(dtype) gradient keeps its dtype")
        log.expectValues(half.weight.grad!.float(), [Double](repeating: mean, count: 6), shape: [3, 2], tol: 1e-6,
                         "\(dtype) gradient averaged")
        log.expectValues(half.bias!.grad!.float(), [1, 1, 1], shape: [3], tol: 0, "\(dtype) bias gradient averaged")
    }

    try log.finish("ddp-features")
}
