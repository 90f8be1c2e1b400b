import CMPIShim
import Foundation
import XCTest
@testable import Torch

/// `dist` and `DistributedDataParallel` across real processes: each test launches
/// `mpirun -np 2 --oversubscribe ddp-worker <mode>` (the worker is built with the tests) and checks
/// its exit status and `RESULT` lines. Skips, saying what is missing, where mpirun or the worker
/// is absent or MPI cannot start.
final class DistributedTests: MPITestCase {
    // MARK: The CLI

    /// `mpirun -np 2 swifttorch train --distributed` on the embedded digits: rank 0 alone prints (each epoch line
    /// and the final line once), and the checkpoint it writes resumes in a single process.
    func testCLITrainsDistributedAndResumesInOneProcess() throws {
        let checkpoint = FileManager.default.temporaryDirectory.appendingPathComponent("swifttorch-dist-\(getpid()).pt").path
        defer { try? FileManager.default.removeItem(atPath: checkpoint) }
        let run = try mpirun(2, ["train", "--distributed", "--epochs", "3", "--checkpoint", checkpoint], program: "swifttorch")
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertEqual(run.output.components(separatedBy: "final test accuracy").count - 1, 1, run.output)
        XCTAssertEqual(run.output.components(separatedBy: "epoch  3/3  loss").count - 1, 1, run.output)
        let tail = try XCTUnwrap(run.output.components(separatedBy: "final test accuracy ").last)
        let accuracy = try XCTUnwrap(Double(tail.prefix { $0 != " " }), run.output)
        XCTAssertGreaterThan(accuracy, 0.8, "3 epochs on 2 ranks")
        XCTAssertTrue(FileManager.default.fileExists(atPath: checkpoint))

        let resume = Process()
        resume.executableURL = Self.productsDirectory.appendingPathComponent("swifttorch")
        resume.arguments = ["train", "--resume", checkpoint, "--epochs", "4"]
        let out = Pipe()
        resume.standardOutput = out
        resume.standardError = FileHandle.nullDevice
        try resume.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        resume.waitUntilExit()
        XCTAssertEqual(resume.terminationStatus, 0, text)
        XCTAssertTrue(text.contains("resumed from") && text.contains("epoch  4/4"), text)
    }

    // MARK: Collectives

    func testCollectivesOnEveryDtypeAndLayoutAgainstReferences() throws {
        let run = try mpirun(2, ["collectives"])
        XCTAssertEqual(run.status, 0, run.output)
        let r = try XCTUnwrap(run.result("collectives"), run.output)
        XCTAssertEqual(r["failures"], "0")
        XCTAssertGreaterThan(Int(r["checks"]!)!, 1000)
    }

    /// The same checks with the other wait modes: every call polled, every call blocking (the communication
    /// thread's too), or a polled barrier before each blocking call.
    func testCollectivesWithEveryWaitMode() throws {
        for mode in ["poll", "block", "barrier"] {
            let run = try mpirun(2, ["collectives"], environment: ["SWIFTTORCH_MPI_WAIT": mode])
            XCTAssertEqual(run.status, 0, run.output)
            XCTAssertEqual(run.result("collectives")?["failures"], "0", "\(mode): \(run.output)")
        }
    }

    func testCollectivesWithThreeRanks() throws {
        let run = try mpirun(3, ["collectives"])
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertEqual(run.result("collectives")?["failures"], "0", run.output)
    }

    // MARK: The shared-memory all-reduce

    /// `dist.allReduce` through shared memory (every size, 4 KB chunks so sizes span several chunks and
    /// slices) against `MPI_Allreduce` on the same random inputs: float32/float64, sum and avg, odd sizes,
    /// several calls in a row; the very bits on 2 ranks, identical bits on every rank with 3.
    func testSharedMemoryAllReduceGivesMPIsValues() throws {
        for np in [2, 3] {
            let run = try mpirun(np, ["shm-allreduce"], environment: ["SWIFTTORCH_SHM_MIN_KB": "0", "SWIFTTORCH_SHM_CHUNK_KB": "4"])
            XCTAssertEqual(run.status, 0, run.output)
            let r = try XCTUnwrap(run.result("shm-allreduce"), run.output)
            XCTAssertEqual(r["failures"], "0", run.output)
            XCTAssertEqual(r["world"], "\(np)")
            XCTAssertGreaterThan(Int(r["checks"]!)!, 100, run.output)
        }
    }

    /// Every collective check with each float sum and average of `allReduce` (empty and 0-d tensors, half
    /// precision through float32 staging, async) on the shared-memory path.
    func testCollectivesWithTheSharedMemoryAllReduce() throws {
        let run = try mpirun(2, ["collectives"], environment: ["SWIFTTORCH_SHM_MIN_KB": "0", "SWIFTTORCH_SHM_CHUNK_KB": "4"])
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertEqual(run.result("collectives")?["failures"], "0", run.output)
    }

    /// DDP reaches the single-process weights with either algorithm (`SWIFTTORCH_DDP_ALLREDUCE`), with
    /// buckets spanning several shared-memory chunks (4 KB) and several buckets.
    func testDDPMatchesOneProcessWithEitherAllReduceAlgorithm() throws {
        for algorithm in ["shm", "mpi"] {
            for (model, dtype, bucket, tol) in [("mlp", "float64", "0.001", 1e-12), ("cnn", "float32", "25", 1e-5)] {
                let run = try mpirun(2, ["equivalence", model, dtype, bucket],
                                     environment: ["SWIFTTORCH_DDP_ALLREDUCE": algorithm, "SWIFTTORCH_SHM_CHUNK_KB": "4"])
                XCTAssertEqual(run.status, 0, run.output)
                let r = try XCTUnwrap(run.result("equivalence"), run.output)
                XCTAssertEqual(r["algorithm"], algorithm, run.output)
                XCTAssertLessThanOrEqual(Double(r["maxAbsDiff"]!)!, tol, "\(algorithm) \(model) \(dtype): \(run.output)")
                XCTAssertEqual(Double(r["rankSpread"]!)!, 0, "ranks hold identical weights (\(algorithm) \(model) \(dtype))")
            }
        }
    }

    /// The choice is pure: shared memory only when asked for, with several ranks, all on this host; a group
    /// spanning hosts (each rank sees fewer ranks on its host than in the group) falls back to MPI on every rank.
    func testAllReduceAlgorithmFallsBackToMPIWhenTheGroupSpansHosts() {
        XCTAssertEqual(AllReduceAlgorithm.choose(requested: .shm, groupSize: 8, ranksOnThisHost: 8), .shm)
        XCTAssertEqual(AllReduceAlgorithm.choose(requested: .shm, groupSize: 8, ranksOnThisHost: 4), .mpi, "two hosts")
        XCTAssertEqual(AllReduceAlgorithm.choose(requested: .shm, groupSize: 8, ranksOnThisHost: 1), .mpi, "one rank per host")
        XCTAssertEqual(AllReduceAlgorithm.choose(requested: .shm, groupSize: 8, ranksOnThisHost: nil), .mpi, "no MPI-3 windows")
        XCTAssertEqual(AllReduceAlgorithm.choose(requested: .mpi, groupSize: 8, ranksOnThisHost: 8), .mpi, "asked for MPI")
        XCTAssertEqual(AllReduceAlgorithm.choose(requested: .shm, groupSize: 1, ranksOnThisHost: 1), .mpi, "nothing to reduce")
        XCTAssertTrue(AllReduceAlgorithm.eligible(type: STMPI_FLOAT, op: STMPI_SUM, bytes: 1 << 20, minBytes: 1 << 20))
        XCTAssertTrue(AllReduceAlgorithm.eligible(type: STMPI_DOUBLE, op: STMPI_SUM, bytes: 8 << 20, minBytes: 1 << 20))
        XCTAssertFalse(AllReduceAlgorithm.eligible(type: STMPI_FLOAT, op: STMPI_SUM, bytes: 1000, minBytes: 1 << 20), "small")
        XCTAssertFalse(AllReduceAlgorithm.eligible(type: STMPI_FLOAT, op: STMPI_MAX, bytes: 1 << 20, minBytes: 0), "max")
        XCTAssertFalse(AllReduceAlgorithm.eligible(type: STMPI_INT64, op: STMPI_SUM, bytes: 1 << 20, minBytes: 0), "int64")
    }

    /// The ranks' slices of a chunk tile it exactly, each starting on a 64-byte boundary.
    func testSharedMemorySlicesTileTheChunk() {
        for (n, ranks, item) in [(1, 2, 4), (17, 3, 4), (1001, 2, 8), (1025, 8, 4), (524_288, 8, 4), (5, 8, 8)] {
            var next = 0
            for q in 0..<ranks {
                let (lo, hi) = SharedMemoryAllReduce.slice(q, of: n, ranks: ranks, itemSize: item)
                XCTAssertEqual(lo, next, "n \(n) ranks \(ranks) rank \(q)")
                XCTAssertLessThanOrEqual(lo, hi)
                XCTAssertTrue(lo == n || (lo * item) % 64 == 0, "aligned start")
                next = hi
            }
            XCTAssertEqual(next, n, "n \(n) ranks \(ranks) covered")
        }
    }

    // MARK: DistributedDataParallel

    /// 2 processes × batch 32 reach the weights of 1 process × batch 64 after 50 SGD-momentum steps.
    /// Tolerances: float32 1e-5 absolute (weights ~0.3; measured ~4e-8), float64 1e-12 (measured ~2e-16).
    func testTwoRanksMatchOneProcessWithTheDoubleBatch() throws {
        for (model, dtype, bucket, tol) in [("mlp", "float32", "25", 1e-5), ("cnn", "float32", "25", 1e-5),
                                            ("mlp", "float64", "0.001", 1e-12), ("cnn", "float64", "0.0005", 1e-12)] {
            let run = try mpirun(2, ["equivalence", model, dtype, bucket])
            XCTAssertEqual(run.status, 0, run.output)
            let r = try XCTUnwrap(run.result("equivalence"), run.output)
            XCTAssertLessThanOrEqual(Double(r["maxAbsDiff"]!)!, tol, "\(model) \(dtype): \(run.output)")
            XCTAssertEqual(Double(r["rankSpread"]!)!, 0, "ranks hold identical weights (\(model) \(dtype))")
            if bucket != "25" { XCTAssertGreaterThan(Int(r["buckets"]!)!, 1, "several buckets exercised") }
        }
    }

    /// The same with `gradientAsBucketView`: `.grad` views of the buckets (one bucket, and several with
    /// gradients accumulated into the buckets through `zeroGrad(setToNone: false)`) give the same weights.
    func testGradientAsBucketViewMatchesOneProcessWithTheDoubleBatch() throws {
        for (model, dtype, bucket, mode, tol) in [("mlp", "float32", "25", "view", 1e-5),
                                                  ("cnn", "float64", "0.0005", "view-keep", 1e-12)] {
            let run = try mpirun(2, ["equivalence", model, dtype, bucket, mode])
            XCTAssertEqual(run.status, 0, run.output)
            let r = try XCTUnwrap(run.result("equivalence"), run.output)
            XCTAssertEqual(r["gradients"], mode, run.output)
            XCTAssertLessThanOrEqual(Double(r["maxAbsDiff"]!)!, tol, "\(model) \(dtype) \(mode): \(run.output)")
            XCTAssertEqual(Double(r["rankSpread"]!)!, 0, "ranks hold identical weights (\(model) \(dtype) \(mode))")
        }
    }

    /// DDP over a conv net with BatchNorm converted to SyncBatchNorm: 2 processes × batch 16 reach the
    /// weights and running statistics of 1 process × batch 32 with BatchNorm after 20 SGD-momentum steps.
    /// Measured max differences: float32 8.7e-7, float64 (3 buckets) 7.1e-15.
    func testDDPWithSyncBatchNormMatchesOneProcessWithTheDoubleBatch() throws {
        for (dtype, bucket, tol) in [("float32", "25", 1e-5), ("float64", "0.0005", 1e-12)] {
            let run = try mpirun(2, ["equivalence", "cnn-bn", dtype, bucket])
            XCTAssertEqual(run.status, 0, run.output)
            let r = try XCTUnwrap(run.result("equivalence"), run.output)
            XCTAssertEqual(r["syncBatchNorms"], "3", run.output)
            XCTAssertLessThanOrEqual(Double(r["maxAbsDiff"]!)!, tol, "\(dtype): \(run.output)")
            XCTAssertEqual(Double(r["rankSpread"]!)!, 0, "ranks hold identical weights and statistics (\(dtype))")
            if bucket != "25" { XCTAssertGreaterThan(Int(r["buckets"]!)!, 1, "bucket all-reduces overlap SyncBatchNorm's") }
        }
    }

    /// SyncBatchNorm on unequal (and one empty) slices of a global batch equals one BatchNorm on the
    /// whole batch: outputs, input gradients, running statistics, summed parameter gradients, eval
    /// mode, and a numerical gradient check; on 2 and 3 ranks.
    func testSyncBatchNormMatchesOneBatchNormOverTheWholeBatch() throws {
        for np in [2, 3] {
            let run = try mpirun(np, ["syncbn"])
            XCTAssertEqual(run.status, 0, run.output)
            let r = try XCTUnwrap(run.result("syncbn"), run.output)
            XCTAssertEqual(r["failures"], "0", run.output)
            XCTAssertEqual(r["world"], "\(np)")
            XCTAssertGreaterThan(Int(r["checks"]!)!, 100, run.output)
        }
    }

    /// State-dict keys, `module`, `noSync`, unused parameters, buffer broadcast, repr, bucket views
    /// and float16/bfloat16 models (Sources/DDPWorker/DDPFeatureChecks.swift).
    func testDDPNoSyncStateDictBuffersAndUnusedParameters() throws {
        let run = try mpirun(2, ["ddp-features"])
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertEqual(run.result("ddp-features")?["failures"], "0", run.output)
        XCTAssertEqual(run.result("ddp-features")?["checks"], "19", "every check ran: \(run.output)")
    }

    // MARK: The ddp-mnist example

    /// Two processes train and checkpoint; one process resumes from the checkpoint.
    func testDDPMNISTCheckpointsAndResumesWithAnotherProcessCount() throws {
        let data = "/usr/share/datasets/fashion-mnist"
        guard FileManager.default.fileExists(atPath: data) else {
            throw XCTSkip("Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)")
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ddp-mnist-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let ckpt = dir.appendingPathComponent("mlp.pt").path
        let first = try mpirun(2, ["--epochs", "1", "--max-steps", "5", "--checkpoint", ckpt], program: "ddp-mnist")
        XCTAssertEqual(first.status, 0, first.output)
        XCTAssertTrue(first.output.contains("epoch 1/1"), first.output)
        let saved = try torch.load(ckpt)
        XCTAssertEqual(saved["epoch"]?.intValue, 1)
        let keys = try saved["model_state_dict"]!.stateDict().keys
        XCTAssertEqual(keys.first, "layer1.0.weight", "saved without DDP's module. prefix")
        let second = try mpirun(1, ["--epochs", "2", "--max-steps", "5", "--checkpoint", ckpt], program: "ddp-mnist")
        XCTAssertEqual(second.status, 0, second.output)
        XCTAssertTrue(second.output.contains("resumed from \(ckpt) after epoch 1 (saved by 2 processes, now 1)"), second.output)
        XCTAssertTrue(second.output.contains("epoch 2/2"), second.output)
        XCTAssertFalse(second.output.contains("epoch 1/2"), second.output)
    }

    // MARK: Failures end the job, never hang

    func testARankThatExitsEndsTheJob() throws {
        let run = try mpirun(2, ["fail-exit"], limit: 120)
        XCTAssertNotEqual(run.status, 0)
        XCTAssertLessThan(run.seconds, 60)
        XCTAssertFalse(run.output.contains("RESULT unexpected"))
    }

    func testARankThatThrowsEndsTheJob() throws {
        let run = try mpirun(2, ["fail-throw"], limit: 120)
        XCTAssertNotEqual(run.status, 0)
        XCTAssertLessThan(run.seconds, 60)
        XCTAssertTrue(run.output.contains("rank 1 threw on purpose"), run.output)
    }

    func testARankThatStopsParticipatingTimesOutWithAClearError() throws {
        let run = try mpirun(2, ["fail-hang", "3"], limit: 120)
        XCTAssertNotEqual(run.status, 0)
        XCTAssertLessThan(run.seconds, 40, "the 3 s timeout fired")
        XCTAssertTrue(run.output.contains("dist.allReduce did not complete within 3 s"), run.output)
    }

    // MARK: In-process (no MPI needed)

    func testMissingMPIIsATypedErrorNamingThePackages() {
        setenv("SWIFTTORCH_MPI_LIBRARY", "/nonexistent/libmpi.so", 1)
        defer { unsetenv("SWIFTTORCH_MPI_LIBRARY") }
        XCTAssertThrowsError(try dist.initProcessGroup(backend: .mpi)) { error in
            guard case DistributedError.mpiNotFound = error else { return XCTFail("\(error)") }
            XCTAssertTrue("\(error)".contains("libopenmpi-dev openmpi-bin"), "\(error)")
        }
        XCTAssertFalse(dist.isInitialized())
    }

    func testPostAccumulateGradHookSeesTheAccumulatedGradient() {
        let w = torch.tensor([1.0, 2.0], requiresGrad: true)
        var seen: [[Double]] = []
        let handle = w.registerPostAccumulateGradHook { p in seen.append(p.grad!.toArray(as: Double.self)) }
        (w * w).sum().backward()
        (w * 3).sum().backward()
        XCTAssertEqual(seen, [[2, 4], [5, 7]])
        handle.remove()
        w.sum().backward()
        XCTAssertEqual(seen.count, 2)
        // autograd.grad does not touch .grad, so the hook does not run.
        _ = torch.autograd.grad([(w * w).sum()], [w])
        XCTAssertEqual(seen.count, 2)
    }
}
