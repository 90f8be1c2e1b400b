#if canImport(Glibc)
import Glibc
#endif
import Torch

struct InjectedFailure: Error, CustomStringConvertible {
    let rank: Int
    var description: String { "rank \(rank) threw on purpose (ddp-worker fail-throw)" }
}

/// Rank 1 dies (exit 3), throws, or stops participating; rank 0 waits in an allReduce. The job must
/// end with a non-zero status and a clear message, never hang.
func runFailure(_ args: [String]) throws {
    let mode = args[0]
    let timeout = args.count > 1 ? Double(args[1]) ?? 5 : 5
    try dist.initProcessGroup(backend: .mpi, timeout: .milliseconds(Int(timeout * 1000)))
    let rank = dist.getRank()
    try dist.barrier()
    if rank == 1 {
        switch mode {
        case "fail-exit":
            fputs("[rank 1] exiting with status 3 on purpose\n", stderr)
            exit(3)
        case "fail-throw":
            throw InjectedFailure(rank: rank)
        default:
            fputs("[rank 1] sleeping instead of joining the allReduce\n", stderr)
            sleep(600)
        }
    }
    try dist.allReduce(torch.ones(10), op: .sum)
    print("RESULT unexpected: allReduce returned on rank \(rank)")
    exit(0)
}
