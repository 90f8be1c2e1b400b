import CMPIShim
#if canImport(Glibc)
import Glibc
#endif
import Torch

/// `dist.allReduce` on the shared-memory path against `MPI_Allreduce` on the same inputs: float32 and
/// float64, sum and avg, sizes from 1 element to several chunks (odd ones, so slices and chunks end
/// unevenly), synchronous and `async: true`, a non-contiguous tensor, and several calls in a row (the
/// window's halves alternate across calls). Two ranks: the very bits of MPI's result (`a + b == b + a`);
/// more ranks: MPI's values within rounding (its summation order differs) and identical bits on every rank.
/// The test runs it with SWIFTTORCH_SHM_MIN_KB=0 (every size takes the shared-memory path) and
/// SWIFTTORCH_SHM_CHUNK_KB=4 (1,024 float32 per chunk).
func runSharedMemoryChecks() throws {
    try dist.initProcessGroup(backend: .mpi, timeout: .seconds(120))
    let rank = dist.getRank(), world = dist.getWorldSize()
    let log = CheckLog()
    let probe = torch.zeros(4096)
    let algorithm = try dist.allReduceAlgorithm(for: probe)
    log.expect(algorithm == .shm, "dist.allReduceAlgorithm is \(algorithm) for 16 KB of float32 on one host, expected shm")

    /// MPI_Allreduce (sum) of `values` over the world, in place.
    func mpiSum<T>(_ values: inout [T], _ type: stmpi_dtype_t) {
        let n = values.count
        let rc = values.withUnsafeMutableBytes {
            stmpi_allreduce(nil, $0.baseAddress, Int32(n), Int32(type.rawValue), Int32(STMPI_SUM.rawValue), stmpi_comm_world())
        }
        log.expect(rc == 0, "MPI_Allreduce failed: \(rc)")
    }
    /// Whether every rank holds `bits` (compares with rank 0's copy).
    func sameOnEveryRank(_ bits: [UInt64]) throws -> Bool {
        let t = Tensor(bits.map { Int64(bitPattern: $0) }, shape: [bits.count], dtype: .int64)
        let mine = t.clone()
        try dist.broadcast(t, src: 0)
        let differs = torch.tensor([Int64((t .!= mine).sum().item(as: Int.self))])
        try dist.allReduce(differs, op: .max)
        return differs.item(as: Int.self) == 0
    }

    let sizes = [1, 2, 7, 17, 1001, 1024, 1025, 4099, 100_003]
    for dtype in [DType.float32, .float64] {
        for op in [dist.ReduceOp.sum, .avg] {
            for (i, n) in sizes.enumerated() {
                let async = i % 2 == 1
                let g = Generator().manualSeed(UInt64(1_000 + 7_919 * rank + n))
                let x = torch.randn([n], generator: g).to(dtype)
                let viaShm = x.clone()
                let work = try dist.allReduce(viaShm, op: op, async: async)
                try work?.wait()
                let tag = "\(dtype) \(op) n=\(n) async=\(async)"
                let gotBits: [UInt64]
                let wantBits: [UInt64]
                var maxDiff = 0.0
                if dtype == .float32 {
                    var ref = x.toArray(as: Float.self)
                    mpiSum(&ref, STMPI_FLOAT)
                    if op == .avg { ref = torch.tensor(ref).div_(Double(world)).toArray(as: Float.self) }
                    let got = viaShm.toArray(as: Float.self)
                    gotBits = got.map { UInt64($0.bitPattern) }
                    wantBits = ref.map { UInt64($0.bitPattern) }
                    maxDiff = zip(got, ref).map { Double(abs($0 - $1)) }.max() ?? 0
                } else {
                    var ref = x.toArray(as: Double.self)
                    mpiSum(&ref, STMPI_DOUBLE)
                    if op == .avg { ref = torch.tensor(ref, dtype: .float64).div_(Double(world)).toArray(as: Double.self) }
                    let got = viaShm.toArray(as: Double.self)
                    gotBits = got.map { $0.bitPattern }
                    wantBits = ref.map { $0.bitPattern }
                    maxDiff = zip(got, ref).map { abs($0 - $1) }.max() ?? 0
                }
                if world == 2 {
                    let firstBad = gotBits.indices.first { gotBits[$0] != wantBits[$0] }
                    log.expect(firstBad == nil, "\(tag): element \(firstBad ?? -1) differs from MPI_Allreduce's bits (max |diff| \(maxDiff))")
                } else {
                    log.expect(maxDiff <= (dtype == .float32 ? 1e-5 : 1e-12), "\(tag): max |shm - MPI| = \(maxDiff)")
                }
                log.expect(try sameOnEveryRank(gotBits), "\(tag): ranks hold different bits")
            }
        }
    }

    // A non-contiguous tensor goes through a staging copy and comes back in place.
    let values: [Double] = (0..<(37 * 29)).map { Double($0 % 17) * 0.25 + Double(rank) }
    let m = Tensor(values, shape: [37, 29], dtype: .float32).t()
    try dist.allReduce(m, op: .sum)
    var want: [Double] = []
    for i in 0..<(37 * 29) {
        var sum = 0.0
        for r in 0..<world { sum += Double(i % 17) * 0.25 + Double(r) }
        want.append(sum)
    }
    log.expectValues(m.t().contiguous().flatten(), want, shape: [37 * 29], "non-contiguous float32 sum")

    // Integer tensors and max never take the shared-memory path; they still reduce correctly.
    let ints = torch.tensor([Int64(rank + 1), 5])
    try dist.allReduce(ints, op: .max)
    log.expectValues(ints, [Double(world), 5], shape: [2], "int64 max beside the shared-memory path")
    try log.finish("shm-allreduce")
}
