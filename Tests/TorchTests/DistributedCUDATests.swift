import Foundation
import XCTest
@testable import Torch

/// `dist` and `DistributedDataParallel` on CUDA tensors across processes, on the host emulator with two devices
/// (each rank takes `cuda:(local rank % 2)`, as on a two-GPU node): with the MPI backend, whose buffers go
/// through pinned host memory, and with the NCCL backend, which the emulator stands in for with MPI on the
/// devices' memory (so these check the routing and the device buffers, not NCCL itself: that runs in
/// `scripts/device-cuda-check` on a GPU).
final class DistributedCUDATests: MPITestCase {
    static let twoEmulatedDevices = ["SWIFTTORCH_CUDA_EMULATOR": "1", "SWIFTTORCH_CUDA_EMULATOR_DEVICES": "2"]

    func testCollectivesOnCUDATensorsWithEitherBackend() throws {
        for mode in ["cuda", "nccl"] {
            let run = try mpirun(2, ["collectives", mode], environment: Self.twoEmulatedDevices)
            XCTAssertEqual(run.status, 0, run.output)
            let r = try XCTUnwrap(run.result("collectives"), run.output)
            XCTAssertEqual(r["failures"], "0", run.output)
            XCTAssertGreaterThan(Int(r["checks"] ?? "0")!, 1000)
            XCTAssertEqual(r["device"], "cuda:0")
            XCTAssertEqual(r["backend"], mode == "nccl" ? "nccl" : "mpi")
        }
    }

    /// 2 ranks on two devices × batch 32 reach the weights of 1 CPU process × batch 64 after 50 SGD-momentum
    /// steps, with one bucket and several, gradients copied and as bucket views. Tolerances as the CPU test's
    /// (float64 1e-12); float32 1e-5 (weights ~0.3).
    func testDDPOnTwoDevicesMatchesOneProcessWithTheDoubleBatch() throws {
        for (mode, model, dtype, bucket, gradients, tol) in [
            ("cuda", "mlp", "float64", "0.001", "copy", 1e-12), ("cuda", "cnn", "float32", "25", "view", 1e-5),
            ("nccl", "mlp", "float32", "25", "copy", 1e-5), ("nccl", "cnn", "float64", "0.0005", "view-keep", 1e-12),
        ] {
            let run = try mpirun(2, ["equivalence", model, dtype, bucket, gradients, mode], environment: Self.twoEmulatedDevices)
            XCTAssertEqual(run.status, 0, run.output)
            let r = try XCTUnwrap(run.result("equivalence"), run.output)
            let what = "\(mode) \(model) \(dtype) \(gradients)"
            XCTAssertEqual(r["device"], "cuda:0", what)
            XCTAssertEqual(r["backend"], mode == "nccl" ? "nccl" : "mpi", what)
            XCTAssertLessThanOrEqual(Double(r["maxAbsDiff"]!)!, tol, "\(what): \(run.output)")
            XCTAssertEqual(Double(r["rankSpread"]!)!, 0, "ranks hold identical weights (\(what))")
            if bucket != "25" { XCTAssertGreaterThan(Int(r["buckets"]!)!, 1, "several buckets exercised (\(what))") }
        }
    }

    /// `initProcessGroup(backend: .nccl)` without a GPU is a typed error that says why (and MPI never started);
    /// with the emulator it starts and an all-reduce works.
    func testNCCLBackendNeedsAGPU() throws {
        let none = try mpirun(1, ["nccl-check"], environment: ["SWIFTTORCH_CUDA_EMULATOR": "0", "CUDA_VISIBLE_DEVICES": ""])
        XCTAssertEqual(none.status, 0, none.output)
        let r = try XCTUnwrap(none.result("nccl-check"), none.output)
        if r["init"] == "ok" { throw XCTSkip("a real GPU and libnccl are present: the no-GPU error cannot be seen here") }
        XCTAssertEqual(r["available"], "false", none.output)
        XCTAssertTrue(none.output.contains("dist.initProcessGroup(backend: .nccl): CUDA is not available"), none.output)

        let emulated = try mpirun(2, ["nccl-check"], environment: Self.twoEmulatedDevices)
        XCTAssertEqual(emulated.status, 0, emulated.output)
        let e = try XCTUnwrap(emulated.result("nccl-check"), emulated.output)
        XCTAssertEqual(e["init"], "ok", emulated.output)
        XCTAssertEqual(e["backend"], "nccl")
        XCTAssertEqual(e["allReduce"], "ok")
    }

    /// SWIFTTORCH_NCCL_LIBRARY picks the libnccl: one that is not there gives no version (and no crash); a real
    /// one (SWIFTTORCH_TEST_NCCL_LIBRARY, e.g. pip's nvidia/nccl/lib/libnccl.so.2) binds and reports NCCL 2.x,
    /// which needs no GPU.
    func testNCCLLibraryIsLoadedFromSWIFTTORCH_NCCL_LIBRARY() throws {
        let missing = try mpirun(1, ["nccl-check"], environment: ["SWIFTTORCH_NCCL_LIBRARY": "/nonexistent/libnccl.so.2"])
        XCTAssertEqual(missing.status, 0, missing.output)
        XCTAssertEqual(try XCTUnwrap(missing.result("nccl-check"), missing.output)["version"], "none", missing.output)

        guard let library = ProcessInfo.processInfo.environment["SWIFTTORCH_TEST_NCCL_LIBRARY"] else {
            throw XCTSkip("set SWIFTTORCH_TEST_NCCL_LIBRARY to a libnccl.so.2 (pip install nvidia-nccl-cu13) to check the binding")
        }
        let found = try mpirun(1, ["nccl-check"], environment: ["SWIFTTORCH_NCCL_LIBRARY": library])
        XCTAssertEqual(found.status, 0, found.output)
        let version = try XCTUnwrap(found.result("nccl-check")?["version"], found.output)
        XCTAssertTrue(version.hasPrefix("2."), "NCCL 2.x: \(found.output)")
    }

    /// `swifttorch train --distributed --device cuda`: each rank on its own emulated device, rank 0 alone prints.
    func testCLITrainsDistributedOnTwoDevices() throws {
        let run = try mpirun(2, ["train", "--distributed", "--device", "cuda", "--epochs", "2"], program: "swifttorch",
                             environment: Self.twoEmulatedDevices)
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertEqual(run.output.components(separatedBy: "final test accuracy").count - 1, 1, run.output)
        XCTAssertTrue(run.output.contains("device cuda:0"), run.output)
    }

    /// The launcher's local rank, in PyTorch's order of precedence, with its errors.
    func testNodeLocalRankFromTheLaunchers() throws {
        func rank(_ env: [String: String], fallback: Int? = nil) throws -> Int {
            try dist.nodeLocalRank(environment: { env[$0] }, fallbackRank: fallback)
        }
        XCTAssertEqual(try rank(["LOCAL_RANK": "3", "OMPI_COMM_WORLD_LOCAL_RANK": "1"]), 3, "torchrun's first")
        XCTAssertEqual(try rank(["OMPI_COMM_WORLD_LOCAL_RANK": "1"]), 1)
        XCTAssertEqual(try rank(["MPI_LOCALRANKID": "2"]), 2)
        XCTAssertEqual(try rank(["SLURM_LOCALID": "5"]), 5)
        XCTAssertEqual(try rank([:], fallback: 4), 4)
        XCTAssertThrowsError(try rank([:])) { error in
            XCTAssertTrue("\(error)".contains("none of LOCAL_RANK"), "\(error)")
        }
        XCTAssertThrowsError(try rank(["LOCAL_RANK": "-1"], fallback: 0)) { error in
            XCTAssertEqual(error as? DistributedError, .localRankUnknown(reason: "LOCAL_RANK='-1' is not a non-negative integer"))
        }
    }
}
