import CTorchKernels

extension torch {
    /// SwiftTorch's version (`torch.__version__`).
    public static let version = "0.1.0"

    /// PyTorch's `torch.backends`: what the backends chose at run time, and their switches.
    public enum backends {
        public enum cpu {
            /// The vector instruction set the SIMD kernels use (`torch.backends.cpu.get_cpu_capability()`):
            /// `"AVX512"`, `"AVX2"` or `"DEFAULT"`, as PyTorch names them. The `CTORCH_ISA` environment
            /// variable (`baseline`, `avx2`, `avx512`) can lower it.
            public static func getCPUCapability() -> String {
                switch String(cString: ct_isa_name()) {
                case "avx512": return "AVX512"
                case "avx2": return "AVX2"
                default: return "DEFAULT"
                }
            }
        }

        /// PyTorch's `torch.backends.cudnn`: whether CUDA convolutions go through cuDNN 9 (loaded at run time,
        /// like the other CUDA libraries) and how it picks their algorithms. Without cuDNN, with `enabled` false,
        /// on the CUDA emulator, or for a problem cuDNN does not take, they run as im2col + cuBLAS.
        ///
        /// ```swift
        /// torch.backends.cudnn.benchmark = true      // time every algorithm once per shape, keep the fastest
        /// torch.backends.cudnn.allowTF32 = false     // full float32 products (PyTorch's default is true)
        /// ```
        public enum cudnn {
            /// Use cuDNN for convolutions when it is available (default true, as in PyTorch).
            nonisolated(unsafe) public static var enabled = true
            /// Choose each convolution's algorithm by timing all of them the first time a shape is seen
            /// (`cudnnFind…AlgorithmEx`), instead of cuDNN's heuristics. Default false, as in PyTorch. Either
            /// way the choice is cached per shape, dtype and settings.
            nonisolated(unsafe) public static var benchmark = false
            /// Only algorithms cuDNN reports as deterministic (bit-identical results run to run). Default false.
            nonisolated(unsafe) public static var deterministic = false
            /// Lets float32 convolutions use TF32 tensor cores (10-bit mantissa products). True by default, as
            /// PyTorch's `torch.backends.cudnn.allow_tf32` (unlike `torch.backends.cuda.matmul.allowTF32`);
            /// set it false for float32 results that match the CPU's and the im2col path's.
            nonisolated(unsafe) public static var allowTF32 = true

            /// Whether cuDNN 9 loads (libcudnn.so.9 with every call SwiftTorch uses). Needs no GPU.
            public static func isAvailable() -> Bool { CUDNNConvolution.isLoaded }
            /// cuDNN's version as PyTorch reports it (`MAJOR·10000 + MINOR·100 + PATCH`, e.g. 91400 for 9.14.0),
            /// or nil when it does not load.
            public static func version() -> Int? { CUDNNConvolution.version }
        }
    }
}
