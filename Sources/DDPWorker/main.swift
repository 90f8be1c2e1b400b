// ddp-worker: the program the distributed tests and benchmarks launch under mpirun.
//
//   mpirun -np 2 .build/release/ddp-worker collectives [cpu|cuda|nccl]
//   mpirun -np 2|3 .build/release/ddp-worker shm-allreduce   (with SWIFTTORCH_SHM_MIN_KB=0 SWIFTTORCH_SHM_CHUNK_KB=4)
//   mpirun -np 2 .build/release/ddp-worker equivalence mlp|cnn|cnn-bn [float32|float64] [bucketCapMB] [copy|view|view-keep] [cpu|cuda|nccl]
//   mpirun -np 2 .build/release/ddp-worker ddp-features
//   mpirun -np 2|3 .build/release/ddp-worker syncbn
//   mpirun -np 1|2 .build/release/ddp-worker nccl-check
//   mpirun -np 1|2 .build/release/ddp-worker bench-allreduce-device [MB] [mpi|nccl]
//   mpirun -np 2 .build/release/ddp-worker fail-exit | fail-throw | fail-hang <timeout s>
//   mpirun -np 2 .build/release/ddp-worker bench-allreduce [maxMB]
//   mpirun -np 1|2 .build/release/ddp-worker bench-ddp mlp|resnet18 [steps] [ddp|local|view|barrier] [bucketCapMB] [trace]
//
// Results are printed as `RESULT key=value ...` lines by rank 0; failed checks as `FAIL ...`
// lines, with a non-zero exit status.
#if canImport(Glibc)
import Glibc
#endif
import Torch

setvbuf(stdout, nil, _IOLBF, 0)
let args = Array(CommandLine.arguments.dropFirst())
guard let mode = args.first else {
    fputs("usage: ddp-worker collectives|shm-allreduce|equivalence|ddp-features|syncbn|fail-exit|fail-throw|fail-hang|bench-allreduce|bench-ddp|nccl-check|bench-allreduce-device ...\n", stderr)
    exit(2)
}
torch.setNumThreads(1)

switch mode {
case "collectives": try runCollectiveChecks(args)
case "shm-allreduce": try runSharedMemoryChecks()
case "equivalence": try runEquivalence(args)
case "ddp-features": try runDDPFeatureChecks()
case "syncbn": try runSyncBatchNormChecks()
case "fail-exit", "fail-throw", "fail-hang": try runFailure(args)
case "bench-allreduce": try runAllReduceBenchmark(args)
case "bench-ddp": try runDDPBenchmark(args)
case "nccl-check": try runNCCLCheck()
case "bench-allreduce-device": try runDeviceAllReduceBenchmark(args)
default:
    fputs("ddp-worker: unknown mode \(mode)\n", stderr)
    exit(2)
}
