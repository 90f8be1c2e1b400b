import CCUDAShim
import XCTest
@testable import Torch
#if canImport(Glibc)
import Glibc
#endif

/// cuDNN's side of CUDA convolutions without a GPU: the descriptions cuDNN gets (dims, strides, types, math
/// types), the routing between cuDNN and im2col, the plan cache's keys, the algorithm filter, the
/// `torch.backends.cudnn` switches, and — where pip's cuDNN 9 wheel is installed — that every call the shim binds
/// resolves in the real libcudnn.so.9. Running convolutions through cuDNN needs a GPU: `cuda-check` does that.
final class CUDNNBindingTests: XCTestCase {
    /// The shim loads cuDNN once per process: where pip's wheel is installed off the loader's paths, point
    /// SWIFTTORCH_CUDA_PATH at it for that one load (then put it back), before any test asks.
    override class func setUp() {
        super.setUp()
        guard let folder = cudnnWheelFolder(), getenv("SWIFTTORCH_CUDA_PATH") == nil else { return }
        setenv("SWIFTTORCH_CUDA_PATH", folder, 1)
        _ = CUDNNConvolution.isLoaded
        unsetenv("SWIFTTORCH_CUDA_PATH")
    }

    /// A 3-D geometry as `torch.convolution` builds it (leading 1s for fewer spatial dims, padding 0).
    private func geometry(big: [Int], small: [Int], kernel: [Int], stride: [Int] = [1, 1, 1], padding: [Int] = [0, 0, 0],
                          dilation: [Int] = [1, 1, 1], groups: Int = 1, bigChannels: Int, smallChannels: Int) -> ConvGeometry {
        ConvGeometry(big: big, small: small, kernel: kernel, stride: stride, padding: padding, dilation: dilation, groups: groups,
                     bigChannels: bigChannels, smallChannels: smallChannels)
    }

    /// conv2d 6→8, 3×3, stride 2, padding 1, dilation 2, groups 2 on 17×15 images.
    private var conv2d: ConvGeometry {
        geometry(big: [1, 17, 15], small: [1, 8, 7], kernel: [1, 3, 3], stride: [1, 2, 2], padding: [0, 1, 1],
                 dilation: [1, 2, 2], groups: 2, bigChannels: 6, smallChannels: 8)
    }

    func testConv2dDescriptionHasNCHWDimsContiguousStridesAndGroupedFilter() throws {
        let d = try XCTUnwrap(CUDNNConvolutionDescription(conv2d, batch: 4, spatialDims: 2, dtype: .float32, allowTF32: true))
        XCTAssertEqual(d.bigDims, [4, 6, 17, 15])
        XCTAssertEqual(d.smallDims, [4, 8, 8, 7])
        XCTAssertEqual(d.filterDims, [8, 3, 3, 3])
        XCTAssertEqual(d.padding, [1, 1])
        XCTAssertEqual(d.stride, [2, 2])
        XCTAssertEqual(d.dilation, [2, 2])
        XCTAssertEqual(d.groups, 2)
        XCTAssertEqual(CUDNNConvolutionDescription.contiguousStrides(d.bigDims), [1530, 255, 15, 1])
        XCTAssertEqual(d.dataType, CUDNN_DATA_FLOAT)
        XCTAssertEqual(d.computeType, CUDNN_DATA_FLOAT)
    }

    func testConv1dBecomesA2dProblemOfHeightOneAndConv3dKeepsFiveDims() throws {
        let g1 = geometry(big: [1, 1, 40], small: [1, 1, 19], kernel: [1, 1, 3], stride: [1, 1, 2], padding: [0, 0, 1],
                          dilation: [1, 1, 3], bigChannels: 4, smallChannels: 5)
        let d1 = try XCTUnwrap(CUDNNConvolutionDescription(g1, batch: 3, spatialDims: 1, dtype: .float32, allowTF32: false))
        XCTAssertEqual(d1.bigDims, [3, 4, 1, 40])
        XCTAssertEqual(d1.smallDims, [3, 5, 1, 19])
        XCTAssertEqual(d1.filterDims, [5, 4, 1, 3])
        XCTAssertEqual(d1.padding, [0, 1])
        XCTAssertEqual(d1.stride, [1, 2])
        XCTAssertEqual(d1.dilation, [1, 3])
        let g3 = geometry(big: [6, 7, 5], small: [6, 7, 5], kernel: [3, 3, 3], padding: [1, 1, 1], bigChannels: 2, smallChannels: 3)
        let d3 = try XCTUnwrap(CUDNNConvolutionDescription(g3, batch: 2, spatialDims: 3, dtype: .float64, allowTF32: true))
        XCTAssertEqual(d3.bigDims, [2, 2, 6, 7, 5])
        XCTAssertEqual(d3.filterDims, [3, 2, 3, 3, 3])
        XCTAssertEqual(d3.padding, [1, 1, 1])
        XCTAssertEqual(CUDNNConvolutionDescription.contiguousStrides(d3.smallDims), [630, 210, 35, 5, 1])
    }

    func testDataComputeAndMathTypesFollowPyTorch() throws {
        func describe(_ dtype: DType, tf32: Bool) -> CUDNNConvolutionDescription? {
            CUDNNConvolutionDescription(conv2d, batch: 1, spatialDims: 2, dtype: dtype, allowTF32: tf32)
        }
        XCTAssertEqual(describe(.float32, tf32: true)?.mathType, CUDNN_DEFAULT_MATH)
        XCTAssertEqual(describe(.float32, tf32: false)?.mathType, CUDNN_FMA_MATH)
        XCTAssertEqual(describe(.float32, tf32: false)?.fmaOnly, true)
        XCTAssertEqual(describe(.float32, tf32: true)?.fmaOnly, false)
        let half = try XCTUnwrap(describe(.float16, tf32: false))
        XCTAssertEqual([half.dataType, half.computeType, half.mathType], [CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH])
        let bf16 = try XCTUnwrap(describe(.bfloat16, tf32: true))
        XCTAssertEqual([bf16.dataType, bf16.computeType, bf16.mathType], [CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH])
        let double = try XCTUnwrap(describe(.float64, tf32: false))
        XCTAssertEqual([double.dataType, double.computeType, double.mathType], [CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE, CUDNN_DEFAULT_MATH])
        XCTAssertFalse(double.fmaOnly)
        for dtype in [DType.int64, .int32, .uint8, .bool] { XCTAssertNil(describe(dtype, tf32: true), "\(dtype)") }
    }

    func testProblemsCuDNNCannotTakeGoToIm2col() {
        XCTAssertNil(CUDNNConvolutionDescription(conv2d, batch: 0, spatialDims: 2, dtype: .float32, allowTF32: true), "empty batch")
        // 2^31 elements in one tensor: beyond the legacy API's 32-bit counts.
        let huge = geometry(big: [1, 1 << 14, 1 << 14], small: [1, 1 << 14, 1 << 14], kernel: [1, 1, 1], bigChannels: 8, smallChannels: 1)
        XCTAssertNil(CUDNNConvolutionDescription(huge, batch: 1, spatialDims: 2, dtype: .float32, allowTF32: true))
        var large = huge
        large.bigChannels = 4   // 2^30 elements: still within them
        XCTAssertNotNil(CUDNNConvolutionDescription(large, batch: 1, spatialDims: 2, dtype: .float32, allowTF32: true))
        for dims in [0, 4] {
            XCTAssertNil(CUDNNConvolutionDescription(conv2d, batch: 1, spatialDims: dims, dtype: .float32, allowTF32: true))
        }
    }

    func testRoutingNeedsCuDNNEnabledAndAvailable() {
        func route(enabled: Bool, available: Bool, dtype: DType = .float32) -> Bool {
            CUDNNConvolution.route(conv2d, batch: 2, spatialDims: 2, dtype: dtype, enabled: enabled, available: available,
                                   allowTF32: false) != nil
        }
        XCTAssertTrue(route(enabled: true, available: true))
        XCTAssertFalse(route(enabled: false, available: true), "torch.backends.cudnn.enabled = false runs im2col")
        XCTAssertFalse(route(enabled: true, available: false), "no cuDNN: im2col")
        XCTAssertTrue(route(enabled: true, available: true, dtype: .bfloat16))
        XCTAssertFalse(route(enabled: true, available: true, dtype: .int64))
        let routed = CUDNNConvolution.route(conv2d, batch: 2, spatialDims: 2, dtype: .float32, enabled: true, available: true,
                                            allowTF32: true)
        XCTAssertEqual(routed, CUDNNConvolutionDescription(conv2d, batch: 2, spatialDims: 2, dtype: .float32, allowTF32: true))
    }

    func testPlanKeysSeparateShapesDirectionsDevicesAndSettings() throws {
        let d = try XCTUnwrap(CUDNNConvolutionDescription(conv2d, batch: 4, spatialDims: 2, dtype: .float32, allowTF32: false))
        let base = CUDNNPlanKey(direction: .forward, device: 0, description: d, benchmark: false, deterministic: false)
        XCTAssertEqual(base, CUDNNPlanKey(direction: .forward, device: 0, description: d, benchmark: false, deterministic: false))
        XCTAssertEqual(base.hashValue, CUDNNPlanKey(direction: .forward, device: 0, description: d, benchmark: false,
                                                    deterministic: false).hashValue)
        var variants: [CUDNNPlanKey] = [base]
        for direction in [CUDNNDirection.backwardData, .backwardFilter] { var k = base; k.direction = direction; variants.append(k) }
        do { var k = base; k.device = 1; variants.append(k) }
        do { var k = base; k.benchmark = true; variants.append(k) }
        do { var k = base; k.deterministic = true; variants.append(k) }
        let others: [CUDNNConvolutionDescription?] = [
            CUDNNConvolutionDescription(conv2d, batch: 4, spatialDims: 2, dtype: .float32, allowTF32: true),   // TF32
            CUDNNConvolutionDescription(conv2d, batch: 5, spatialDims: 2, dtype: .float32, allowTF32: false),  // batch
            CUDNNConvolutionDescription(conv2d, batch: 4, spatialDims: 2, dtype: .float16, allowTF32: false),  // dtype
        ]
        for o in others { var k = base; k.description = try XCTUnwrap(o); variants.append(k) }
        var padded = conv2d
        padded.padding = [0, 2, 2]
        padded.small = [1, 10, 9]
        do { var k = base; k.description = try XCTUnwrap(CUDNNConvolutionDescription(padded, batch: 4, spatialDims: 2, dtype: .float32, allowTF32: false)); variants.append(k) }
        XCTAssertEqual(Set(variants).count, variants.count, "every variant is its own cache entry")
    }

    func testAlgorithmFilterKeepsCuDNNsOrderAndDropsWhatMayNotRun() {
        func perf(_ algo: Int32, status: Int32 = 0, deterministic: Bool = true, math: Int32 = CUDNN_DEFAULT_MATH,
                  memory: Int = 0) -> stcu_cudnnAlgoPerf {
            var p = stcu_cudnnAlgoPerf()
            p.algo = algo
            p.status = status
            p.determinism = deterministic ? CUDNN_DETERMINISTIC : 0
            p.mathType = math
            p.memory = memory
            return p
        }
        let ranked = [perf(6, status: CUDNN_STATUS_NOT_SUPPORTED), perf(1, deterministic: false, memory: 100),
                      perf(7, math: CUDNN_TENSOR_OP_MATH), perf(5, memory: 1 << 31), perf(0, math: CUDNN_FMA_MATH),
                      perf(2, math: CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)]
        func algos(deterministic: Bool, fmaOnly: Bool, limit: Int = 1 << 30) -> [Int32] {
            eligibleCUDNNAlgorithms(ranked, deterministic: deterministic, fmaOnly: fmaOnly, workspaceLimit: limit).map { $0.algo }
        }
        XCTAssertEqual(algos(deterministic: false, fmaOnly: false), [1, 7, 0, 2])
        XCTAssertEqual(algos(deterministic: true, fmaOnly: false), [7, 0, 2])
        XCTAssertEqual(algos(deterministic: false, fmaOnly: true), [1, 0], "no tensor-core algorithm for float32 without TF32")
        XCTAssertEqual(algos(deterministic: true, fmaOnly: true), [0])
        XCTAssertEqual(algos(deterministic: false, fmaOnly: false, limit: 0), [7, 0, 2], "workspace limit")
        XCTAssertEqual(MemoryLayout<stcu_cudnnAlgoPerf>.size, 48, "cudnnConvolution*AlgoPerf_t's size on LP64")
    }

    func testBackendSwitchesHavePyTorchsDefaults() {
        XCTAssertTrue(torch.backends.cudnn.enabled)
        XCTAssertFalse(torch.backends.cudnn.benchmark)
        XCTAssertFalse(torch.backends.cudnn.deterministic)
        XCTAssertTrue(torch.backends.cudnn.allowTF32, "PyTorch's torch.backends.cudnn.allow_tf32 defaults to True")
        XCTAssertEqual(torch.backends.cudnn.isAvailable(), torch.backends.cudnn.version() != nil)
    }

    func testEveryBoundCuDNNCallResolvesInPipsLibrary() throws {
        guard let folder = Self.cudnnWheelFolder() else {
            throw XCTSkip("libcudnn.so.9 not found (pip install nvidia-cudnn-cu13 or -cu12 to run this check; looked in "
                          + "SWIFTTORCH_CUDA_PATH, VIRTUAL_ENV, ~/*/lib/python3*/site-packages and the system's site-packages)")
        }
        // The shim's names against the library itself, whatever the process loaded before.
        let lib = try XCTUnwrap(dlopen(folder + "/libcudnn.so.9", RTLD_NOW | RTLD_LOCAL), String(cString: dlerror()))
        defer { dlclose(lib) }
        let count = Int(stcu_cudnn_symbol_count())
        XCTAssertGreaterThanOrEqual(count, 24)
        for i in 0..<count {
            let name = String(cString: stcu_cudnn_symbol_name(Int32(i)))
            XCTAssertNotNil(dlsym(lib, name), "\(name) missing from \(folder)/libcudnn.so.9")
        }
        // And through the shim's loader (class setUp pointed it at the wheel).
        XCTAssertTrue(torch.backends.cudnn.isAvailable(), CUDNNConvolution.unavailableReason)
        let version = try XCTUnwrap(torch.backends.cudnn.version())
        XCTAssertTrue((90000..<100000).contains(version), "cuDNN 9's version, got \(version)")
        for i in 0..<count { XCTAssertEqual(stcu_cudnn_symbol_bound(Int32(i)), 1, String(cString: stcu_cudnn_symbol_name(Int32(i)))) }
    }

    func testCuDNNAcceptsTheDescriptorsOfEveryKindOfConvolution() throws {
        guard torch.backends.cudnn.isAvailable() else { throw XCTSkip("cuDNN 9 does not load: \(CUDNNConvolution.unavailableReason)") }
        let g1 = geometry(big: [1, 1, 40], small: [1, 1, 13], kernel: [1, 1, 3], stride: [1, 1, 3], padding: [0, 0, 2],
                          dilation: [1, 1, 2], groups: 2, bigChannels: 4, smallChannels: 6)
        let g3 = geometry(big: [6, 7, 5], small: [3, 4, 3], kernel: [3, 3, 3], stride: [2, 2, 2], padding: [1, 1, 1],
                          bigChannels: 2, smallChannels: 3)
        let depthwise = geometry(big: [1, 17, 15], small: [1, 17, 15], kernel: [1, 5, 5], padding: [0, 2, 2], groups: 6,
                                 bigChannels: 6, smallChannels: 6)
        for (name, g, dims) in [("conv1d", g1, 1), ("conv2d", conv2d, 2), ("conv3d", g3, 3), ("depthwise", depthwise, 2)] {
            for dtype in [DType.float32, .float64, .float16, .bfloat16] {
                for tf32 in [false, true] {
                    let d = try XCTUnwrap(CUDNNConvolutionDescription(g, batch: 3, spatialDims: dims, dtype: dtype, allowTF32: tf32))
                    XCTAssertTrue(CUDNNPlan.descriptorsAccepted(d), "\(name) \(dtype) TF32 \(tf32): \(d.shapes)")
                }
            }
        }
        var negative = try XCTUnwrap(CUDNNConvolutionDescription(conv2d, batch: 1, spatialDims: 2, dtype: .float32, allowTF32: true))
        negative.padding = [-1, 1]
        XCTAssertFalse(CUDNNPlan.descriptorsAccepted(negative), "cuDNN checks what it is given")
    }

    /// The lib folder of pip's cuDNN 9 wheel, where one is installed.
    static func cudnnWheelFolder() -> String? {
        let env = ProcessInfo.processInfo.environment
        var patterns = (env["SWIFTTORCH_CUDA_PATH"] ?? "").split(separator: ":").map(String.init)
        let site = "lib/python3*/site-packages/nvidia/cudnn/lib"
        if let v = env["VIRTUAL_ENV"] { patterns.append("\(v)/\(site)") }
        if let home = env["HOME"] { patterns += ["\(home)/.local/\(site)", "\(home)/*/\(site)"] }
        patterns += ["/usr/local/lib/python3*/dist-packages/nvidia/cudnn/lib", "/usr/local/\(site)", "/opt/conda/\(site)"]
        for pattern in patterns {
            var g = glob_t()
            defer { globfree(&g) }
            guard glob(pattern, 0, nil, &g) == 0 else { continue }
            for i in 0..<Int(g.gl_pathc) {
                guard let p = g.gl_pathv[i] else { continue }
                let folder = String(cString: p)
                if access(folder + "/libcudnn.so.9", F_OK) == 0 { return folder }
            }
        }
        return nil
    }
}

/// Under the CUDA emulator cuDNN never runs: convolutions take the im2col path (CUDAEmulatorConvolutionTests
/// checks their values).
final class CUDNNEmulatorRoutingTests: CUDAEmulatorTestCase {
    func testTheEmulatorHasNoCuDNNHandleAndRunsIm2col() throws {
        try XCTSkipUnless(CUDARuntime.isEmulated, "a real GPU was already in use, so the emulator did not start")
        XCTAssertNil(CUDNNConvolution.handle(0))
        let x = torch.randn(2, 3, 6, 6).cuda(), w = torch.randn(4, 3, 3, 3).cuda()
        let g = ConvGeometry(big: [1, 6, 6], small: [1, 4, 4], kernel: [1, 3, 3], stride: [1, 1, 1], padding: [0, 0, 0],
                             dilation: [1, 1, 1], groups: 1, bigChannels: 3, smallChannels: 4)
        XCTAssertNil(CUDNNConvolution.smallFromBig(x, w, bias: nil, g, outShape: [2, 4, 4, 4]))
        XCTAssertEqual(F.conv2d(x, w).shape, [2, 4, 4, 4])
        XCTAssertEqual(CUDNNConvolution.unavailableReason, "the CUDA emulator has no cuDNN")
    }
}
