#if canImport(Glibc)
import Glibc
#endif
import Torch

/// Every collective on every dtype against values computed here from the known inputs (rank `r`,
/// element `i`): odd sizes, 0-d, empty and non-contiguous tensors, synchronous and `async: true`.
/// `args[1]`: `cpu` (default); `cuda`, every tensor on `cuda:(local rank % device count)` with the MPI backend;
/// `nccl`, the same with `backend: .nccl`.
func runCollectiveChecks(_ args: [String]) throws {
    let (device, backend) = try workerDevice(args, at: 1, program: "collectives")
    try dist.initProcessGroup(backend: backend, timeout: .seconds(120))
    let rank = dist.getRank(), world = dist.getWorldSize()
    let log = CheckLog()
    let dtypes: [DType] = [.float32, .float64, .int64, .int32, .uint8, .bool, .float16, .bfloat16]
    let shapes: [[Int]] = [[], [0], [7], [3, 5], [1001]]

    /// The input of rank `r`, element `i` (exact in every dtype, small enough that products fit uint8).
    func value(_ r: Int, _ i: Int, _ dt: DType) -> Double {
        switch dt {
        case .bool: return (i + r) % 3 == 0 ? 1 : 0
        case .uint8: return Double((r + i) % 4 + 1)
        case .int32, .int64: return Double((i * 7 + r * 3) % 11 - 5)
        default: return Double((i * 5 + r * 3) % 13) * 0.5 - 2.5
        }
    }
    func input(_ r: Int, _ shape: [Int], _ dt: DType) -> Tensor {
        let n = shape.reduce(1, *)
        return Tensor((0..<n).map { value(r, $0, dt) }, shape: shape, dtype: dt).to(device)
    }
    func reduced(_ op: dist.ReduceOp, _ i: Int, _ dt: DType) -> Double {
        let vs = (0..<world).map { value($0, i, dt) }
        if dt == .bool {
            switch op {
            case .sum, .max: return vs.contains(1) ? 1 : 0
            default: return vs.allSatisfy { $0 == 1 } ? 1 : 0
            }
        }
        switch op {
        case .sum: return vs.reduce(0, +)
        case .avg: return vs.reduce(0, +) / Double(world)
        case .product:
            if dt == .uint8 { return Double(vs.reduce(UInt8(1)) { $0 &* UInt8($1) }) }
            return vs.reduce(1, *)
        case .min: return vs.min()!
        case .max: return vs.max()!
        }
    }
    func ops(_ dt: DType) -> [dist.ReduceOp] { dt.isFloatingPoint ? dist.ReduceOp.allCases : [.sum, .product, .min, .max] }
    func tol(_ dt: DType) -> Double { dt == .bfloat16 ? 0.07 : dt == .float16 ? 0.01 : 1e-6 }

    for dt in dtypes {
        for shape in shapes {
            let n = shape.reduce(1, *)
            let tag = "\(dt) \(shape)"
            for op in ops(dt) {
                for async in [false, true] {
                    let t = input(rank, shape, dt)
                    let work = try dist.allReduce(t, op: op, async: async)
                    try work?.wait()
                    log.expectValues(t, (0..<n).map { reduced(op, $0, dt) }, shape: shape, tol: tol(dt),
                                     "allReduce \(op) async=\(async) \(tag)")
                }
            }
            let b = input(rank, shape, dt)
            try dist.broadcast(b, src: world - 1)
            log.expectValues(b, (0..<n).map { value(world - 1, $0, dt) }, shape: shape, "broadcast \(tag)")

            let red = input(rank, shape, dt)
            try dist.reduce(red, dst: 0, op: .max)
            log.expectValues(red, (0..<n).map { rank == 0 ? reduced(.max, $0, dt) : value(rank, $0, dt) },
                             shape: shape, "reduce max \(tag)")

            let list = (0..<world).map { _ in torch.zeros(shape, dtype: dt, device: device) }
            try dist.allGather(list, input(rank, shape, dt))
            for r in 0..<world { log.expectValues(list[r], (0..<n).map { value(r, $0, dt) }, shape: shape, "allGather[\(r)] \(tag)") }

            let out = torch.zeros([world] + shape, dtype: dt, device: device)
            try dist.allGatherIntoTensor(out, input(rank, shape, dt))
            log.expectValues(out, (0..<world).flatMap { r in (0..<n).map { value(r, $0, dt) } }, shape: [world] + shape,
                             "allGatherIntoTensor \(tag)")

            // reduceScatter: every block of rank q is input(q), so each rank receives the reduction.
            let blocks = (0..<world).map { _ in input(rank, shape, dt) }
            let rsOut = torch.zeros(shape, dtype: dt, device: device)
            try dist.reduceScatter(rsOut, blocks, op: .sum)
            log.expectValues(rsOut, (0..<n).map { reduced(.sum, $0, dt) }, shape: shape, tol: tol(dt), "reduceScatter \(tag)")
            let rsOut2 = torch.zeros(shape, dtype: dt, device: device)
            try dist.reduceScatterTensor(rsOut2, torch.stack(blocks), op: .min)
            log.expectValues(rsOut2, (0..<n).map { reduced(.min, $0, dt) }, shape: shape, "reduceScatterTensor \(tag)")

            let gl = rank == 0 ? (0..<world).map { _ in torch.zeros(shape, dtype: dt, device: device) } : nil
            try dist.gather(input(rank, shape, dt), gatherList: gl, dst: 0)
            if let gl { for r in 0..<world { log.expectValues(gl[r], (0..<n).map { value(r, $0, dt) }, shape: shape, "gather[\(r)] \(tag)") } }

            let sc = torch.zeros(shape, dtype: dt, device: device)
            try dist.scatter(sc, scatterList: rank == 0 ? (0..<world).map { input($0, shape, dt) } : nil, src: 0)
            log.expectValues(sc, (0..<n).map { value(rank, $0, dt) }, shape: shape, "scatter \(tag)")

            // allToAll: rank q sends input(q + 10 * j) to rank j.
            let outs = (0..<world).map { _ in torch.zeros(shape, dtype: dt, device: device) }
            try dist.allToAll(outs, (0..<world).map { input(rank + 10 * $0, shape, dt) })
            for r in 0..<world { log.expectValues(outs[r], (0..<n).map { value(r + 10 * rank, $0, dt) }, shape: shape, "allToAll[\(r)] \(tag)") }

            if world > 1 {
                let next = (rank + 1) % world, prev = (rank + world - 1) % world
                let s = try dist.isend(input(rank, shape, dt), dst: next, tag: 7)
                let rcv = torch.zeros(shape, dtype: dt, device: device)
                let from = try dist.recv(rcv, src: prev, tag: 7)
                try s.wait()
                log.expect(from == prev, "recv source \(from), expected \(prev)")
                log.expectValues(rcv, (0..<n).map { value(prev, $0, dt) }, shape: shape, "isend/recv \(tag)")
                let r2 = torch.zeros(shape, dtype: dt, device: device)
                let rw = try dist.irecv(r2, tag: 8)
                try dist.send(input(rank, shape, dt), dst: next, tag: 8)
                try rw.wait()
                log.expect(rw.sourceRank == prev, "irecv sourceRank \(String(describing: rw.sourceRank)), expected \(prev)")
                log.expectValues(r2, (0..<n).map { value(prev, $0, dt) }, shape: shape, "send/irecv \(tag)")
            }
        }

        // Non-contiguous: a transposed, narrowed view of a larger base; the rest of the base is untouched.
        let base = Tensor((0..<48).map { value(rank, $0, dt) }, shape: [6, 8], dtype: dt).to(device)
        let before = base.to(.float64).toArray(as: Double.self)
        let view = base.t().narrow(0, 1, 5)                     // shape [5, 6], strides [1, 8]
        let viewInput = view.to(.float64).toArray(as: Double.self)
        try dist.allReduce(view, op: .sum)
        var want = before
        for a in 0..<5 { for c in 0..<6 {
            let idx = c * 8 + (a + 1)
            want[idx] = (0..<world).map { value($0, idx, dt) }.reduce(0) { dt == .bool ? max($0, $1) : $0 + $1 }
        } }
        log.expect(viewInput.count == 30, "view size")
        log.expectValues(base, want, shape: [6, 8], tol: tol(dt), "allReduce sum non-contiguous view \(dt)")
        let bview = base.t().narrow(0, 2, 3)
        try dist.broadcast(bview, src: 0)
        log.expect(bview.shape == [3, 6], "broadcast non-contiguous shape")
    }

    // A tensor that requires grad (a parameter) is updated in place without recording.
    let p = nn.Parameter(torch.full([4], Double(rank + 1), device: device))
    try dist.allReduce(p, op: .avg)
    log.expectValues(p, [Double](repeating: Double(world + 1) / 2, count: 4), shape: [4], tol: 1e-6, "allReduce avg on a parameter")
    log.expect(p.gradFn == nil && p.requiresGrad, "parameter stays a leaf that requires grad")

    // Ordering of async and sync calls on one group: an async allReduce then a sync broadcast.
    let a = torch.full([100_000], Double(rank), device: device)
    let w = try dist.allReduce(a, op: .sum, async: true)
    let c = torch.full([3], Double(rank), device: device)
    try dist.broadcast(c, src: 0)
    try w!.wait()
    log.expect(w!.isCompleted(), "Work.isCompleted after wait")
    log.expectValues(a.narrow(0, 0, 3), [Double](repeating: Double(world * (world - 1) / 2), count: 3), shape: [3], "async then sync")
    log.expectValues(c, [0, 0, 0], shape: [3], "sync after async")
    try dist.barrier()
    try dist.barrier(async: true)?.wait()
    log.expect(dist.getBackend() == backend, "getBackend \(dist.getBackend())")
    if device != .cpu {
        log.expect(a.device == device && p.device == device, "results stay on \(device)")
        // One node: the launcher's local rank is the world rank, so the ranks spread over the devices.
        log.expect(device == .cuda(rank % torch.cuda.deviceCount()), "rank \(rank) trained on \(device)")
    }
    try log.finish("collectives device=\(device) backend=\(dist.getBackend())")
}
