import CTorchKernels

extension torch {
    /// SwiftTorch's version (`torch.__version__`).
    public static let version = "0.1.0"

    /// PyTorch's `torch.backends`: what the CPU backend chose at run time.
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
    }
}
