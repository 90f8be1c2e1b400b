import XCTest
@testable import Torch

/// Every generated kernel module compiles with NVRTC for sm_80 (A100) and sm_90 (H100/H200), so a kernel that
/// does not compile fails CI. NVRTC loads without a GPU (`pip install nvidia-cuda-nvrtc`); where it is missing
/// the test skips and says so.
final class CUDAKernelCompileTests: XCTestCase {
    func testEveryModuleCompilesWithNVRTC() throws {
        do { try KernelCompiler.loadNVRTC() } catch {
            throw XCTSkip("NVRTC not found (pip install nvidia-cuda-nvrtc to run this check): \(error)")
        }
        let version = try XCTUnwrap(KernelCompiler.nvrtcVersion)
        var compiled = 0
        var familiesCompiled: Set<String> = []
        for arch in [80, 90] {
            for family in KernelFamily.allCases {
                for d in DType.allCases {
                    let m = KernelCatalog.module(family, d)
                    if m.functions.isEmpty { continue }
                    let source = KernelCatalog.source(m, family: family, host: false)
                    do {
                        let image = try KernelCompiler.compileForDevice(source, name: m.name, architecture: arch)
                        XCTAssertEqual(Array(image.prefix(4)), [0x7f, 0x45, 0x4c, 0x46], "\(m.name) sm_\(arch): not an ELF cubin")
                        compiled += 1
                        familiesCompiled.insert(family.name)
                    } catch {
                        XCTFail("\(m.name) for sm_\(arch) with NVRTC \(version): \(error)")
                    }
                }
            }
        }
        XCTAssertGreaterThan(compiled, 60)
        // Every family has kernels and they compile (a new family, such as `resample` for `F.interpolate`, is
        // listed in `KernelFamily` and so checked here).
        XCTAssertEqual(familiesCompiled, Set(KernelFamily.allCases.map(\.name)))
    }

    /// The resampling kernels (`F.interpolate` on CUDA) exist for the floating types it computes in and not for
    /// the others, which it converts first.
    func testResampleModulesCoverTheFloatingTypes() {
        for d in DType.allCases {
            let names = Set(KernelCatalog.module(.resample, d).functions.values)
            let expected: Set<String> = d == .float32 || d == .float64
                ? Set(ResampleKernelOp.allCases.map { "resample_\($0.name)_\(KernelPrelude.tag(d))" }) : []
            XCTAssertEqual(names, expected, "resample module for \(d)")
        }
    }

    /// The fused row-wise kernels (softmax, cross-entropy, layer/batch norm) exist for the floating types, the
    /// median/mode picks of sorted rows for every dtype; the NVRTC test above compiles each of these modules.
    func testFusedModulesCoverTheirDTypes() {
        for d in DType.allCases {
            let names = Set(KernelCatalog.module(.fused, d).functions.values)
            let expected = Set(FusedKernelOp.allCases.filter { $0.supports(d) }.map { "fused_\($0.name)_\(KernelPrelude.tag(d))" })
            XCTAssertEqual(names, expected, "fused module for \(d)")
            XCTAssertEqual(names.count, d.isFloatingPoint ? FusedKernelOp.allCases.count : 2, "fused module for \(d)")
        }
    }

    func testDiskCacheKeyDependsOnSourceAndArchitecture() {
        let a = KernelCompiler.fingerprint(["x", "90"]), b = KernelCompiler.fingerprint(["x", "80"])
        XCTAssertNotEqual(a, b)
        XCTAssertEqual(a, KernelCompiler.fingerprint(["x", "90"]))
        XCTAssertNotEqual(KernelCompiler.fingerprint(["ab", "c"]), KernelCompiler.fingerprint(["a", "bc"]))
    }
}
