import CCUDAShim

/// The text every generated kernel module starts with: storage types, half-precision conversions, math
/// overloads for float and double, and the launch-argument structs (from the C header, so the layouts the
/// host writes and the kernels read are one declaration).
///
/// Two flavours: NVRTC's (device code) and the host emulator's (plain C++ compiled by the system compiler,
/// where `threadIdx` and friends read the emulator's state and `__syncthreads` yields to the next fiber).
enum KernelPrelude {
    /// C storage type of each dtype in kernel sources.
    static func storageType(_ d: DType) -> String {
        switch d {
        case .float32: return "float"
        case .float64: return "double"
        case .float16: return "st_f16"
        case .bfloat16: return "st_bf16"
        case .int64: return "long long"
        case .int32: return "int"
        case .uint8: return "unsigned char"
        case .bool: return "bool"
        }
    }

    /// The type arithmetic runs in: float for the half types (PyTorch's opmath), the storage type otherwise.
    static func mathType(_ d: DType) -> String {
        switch d {
        case .float16, .bfloat16: return "float"
        default: return storageType(d)
        }
    }

    /// Short dtype tag for kernel names: f32, f64, f16, bf16, i64, i32, u8, b8.
    static func tag(_ d: DType) -> String {
        switch d {
        case .float32: return "f32"
        case .float64: return "f64"
        case .float16: return "f16"
        case .bfloat16: return "bf16"
        case .int64: return "i64"
        case .int32: return "i32"
        case .uint8: return "u8"
        case .bool: return "b8"
        }
    }

    /// An expression converting storage value `v` of dtype `d` to the math type `math`.
    static func load(_ v: String, _ d: DType, as math: String) -> String {
        switch d {
        case .float16: return "(\(math))st_f16_to_f32(\(v))"
        case .bfloat16: return "(\(math))st_bf16_to_f32(\(v))"
        default: return "(\(math))(\(v))"
        }
    }

    /// An expression converting math value `v` to storage dtype `d`.
    static func store(_ v: String, _ d: DType) -> String {
        switch d {
        case .float16: return "st_f32_to_f16((float)(\(v)))"
        case .bfloat16: return "st_f32_to_bf16((float)(\(v)))"
        case .bool: return "((\(v)) != 0)"
        // Narrow integers through int64, as PyTorch's casts do: a float converted straight to an unsigned char
        // is undefined below 0 (the GPU saturates to 0, x86 wraps), while via int64 -6.0 becomes 250 everywhere.
        case .uint8, .int32: return "(\(storageType(d)))(long long)(\(v))"
        default: return "(\(storageType(d)))(\(v))"
        }
    }

    /// Math functions with float and double overloads (`st_exp(x)` for either), from one table.
    private static let mathFunctions: [(name: String, float: String, double: String)] = [
        ("exp", "expf", "exp"), ("log", "logf", "log"), ("log1p", "log1pf", "log1p"), ("expm1", "expm1f", "expm1"),
        ("sin", "sinf", "sin"), ("cos", "cosf", "cos"), ("tan", "tanf", "tan"), ("asin", "asinf", "asin"),
        ("acos", "acosf", "acos"), ("atan", "atanf", "atan"), ("sinh", "sinhf", "sinh"), ("cosh", "coshf", "cosh"),
        ("tanh", "tanhf", "tanh"), ("sqrt", "sqrtf", "sqrt"), ("erf", "erff", "erf"), ("floor", "floorf", "floor"),
        ("ceil", "ceilf", "ceil"), ("trunc", "truncf", "trunc"), ("rint", "rintf", "rint"), ("fabs", "fabsf", "fabs"),
    ]
    private static let mathFunctions2: [(name: String, float: String, double: String)] = [
        ("pow", "powf", "pow"), ("atan2", "atan2f", "atan2"), ("fmod", "fmodf", "fmod"),
    ]

    private static var mathOverloads: String {
        var s = ""
        for f in mathFunctions {
            s += "ST_DEVICE float st_\(f.name)(float x) { return \(f.float)(x); }\n"
            s += "ST_DEVICE double st_\(f.name)(double x) { return \(f.double)(x); }\n"
        }
        for f in mathFunctions2 {
            s += "ST_DEVICE float st_\(f.name)(float x, float y) { return \(f.float)(x, y); }\n"
            s += "ST_DEVICE double st_\(f.name)(double x, double y) { return \(f.double)(x, y); }\n"
        }
        return s
    }

    /// Helpers shared by the op expressions (written once for every type through templates).
    private static let helpers = """
    template <typename T> ST_DEVICE T st_max_nan(T a, T b) { return (a != a || a > b) ? a : ((b != b) ? b : (a == b ? a : b)); }
    template <typename T> ST_DEVICE T st_min_nan(T a, T b) { return (a != a || a < b) ? a : ((b != b) ? b : (a == b ? a : b)); }
    template <typename T> ST_DEVICE T st_remainder(T a, T b) { T r = st_fmod(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
    template <typename T> ST_DEVICE T st_floor_divide(T a, T b) {
        if (b == 0) return a / b;
        T mod = st_fmod(a, b);
        T div = (a - mod) / b;
        if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
        if (div == 0) return (a / b) < 0 || (a / b == 0 && st_signbit(a / b)) ? (T)-0.0 : (T)0.0;
        T q = st_floor(div);
        if (div - q > (T)0.5) q += 1;
        return q;
    }
    template <typename T> ST_DEVICE T st_int_remainder(T a, T b) { T r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
    template <typename T> ST_DEVICE T st_int_floor_divide(T a, T b) { T q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
    template <typename T> ST_DEVICE T st_int_pow(T base, T e) {
        if (e < 0) return base == 1 ? 1 : 0;
        T r = 1;
        while (e > 0) { if (e & 1) r = r * base; base = base * base; e >>= 1; }
        return r;
    }
    template <typename T, int N> struct alignas(sizeof(T) * N) st_vec { T v[N]; };
    // An atomic read-modify-write of a 1- or 2-byte value: compare-and-swap on the aligned 32-bit word
    // holding it (CUDA has no narrower atomics for these types).
    template <typename T, typename F> ST_DEVICE void st_atomic_narrow(T *p, F f) {
        unsigned *word = (unsigned *)((unsigned long long)p & ~3ull);
        const unsigned shift = (unsigned)((unsigned long long)p & 3ull) * 8u;
        const unsigned mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
        unsigned old = *word, assumed;
        do {
            assumed = old;
            const T next = f((T)((assumed & mask) >> shift));
            old = atomicCAS(word, assumed, (assumed & ~mask) | (((unsigned)next << shift) & mask));
        } while (assumed != old);
    }

    """

    private static let deviceHeader = """
    #define ST_DEVICE __device__ __forceinline__
    typedef unsigned short st_f16;
    typedef unsigned short st_bf16;
    ST_DEVICE float st_f16_to_f32(st_f16 h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
    ST_DEVICE st_f16 st_f32_to_f16(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
    ST_DEVICE float st_bits_to_float(unsigned u) { return __uint_as_float(u); }
    ST_DEVICE unsigned st_float_to_bits(float f) { return __float_as_uint(f); }
    ST_DEVICE bool st_signbit(float x) { return signbit(x); }
    ST_DEVICE bool st_signbit(double x) { return signbit(x); }
    #define ST_BARRIER_KERNEL(name)
    #define ST_INF __int_as_float(0x7f800000)

    """

    /// The emulator's header: CUDA's built-ins in terms of the emulator's state (stcu_device.h).
    private static let hostHeader = """
    #include <math.h>
    #include <string.h>
    #include <stdint.h>
    #include <stdio.h>
    #include <stdlib.h>
    #define __global__
    #define __device__
    #define __forceinline__ inline
    #define __shared__ static
    #define __restrict__
    #define ST_DEVICE static inline
    typedef unsigned short st_f16;
    typedef unsigned short st_bf16;
    typedef struct { unsigned x, y, z; } st_dim3;
    typedef struct st_state { st_dim3 thread_idx, block_idx, block_dim, grid_dim; void (*barrier)(struct st_state *); unsigned long long *exchange; } st_state;
    static st_state *st_current;
    #define threadIdx (st_current->thread_idx)
    #define blockIdx (st_current->block_idx)
    #define blockDim (st_current->block_dim)
    #define gridDim (st_current->grid_dim)
    static inline void __syncthreads(void) { st_current->barrier(st_current); }
    static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
    static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
    static inline float st_bits_to_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
    static inline unsigned st_float_to_bits(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
    static inline bool st_signbit(float x) { return signbit(x); }
    static inline bool st_signbit(double x) { return signbit(x); }
    static inline float st_f16_to_f32(st_f16 h) {
        unsigned sign = (unsigned)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
        if (exp == 0x1f) return st_bits_to_float(sign | 0x7f800000u | (man << 13));
        if (exp == 0) { float v = ldexpf((float)man, -24); return sign ? -v : v; }
        return st_bits_to_float(sign | ((exp + 112) << 23) | (man << 13));
    }
    static inline st_f16 st_f32_to_f16(float f) {
        unsigned u = st_float_to_bits(f), sign = (u >> 16) & 0x8000;
        float a = fabsf(f);
        if (a != a) return (st_f16)(sign | 0x7e00);
        if (a >= 65520.0f) return (st_f16)(sign | 0x7c00);
        if (a < 6.103515625e-05f) return (st_f16)(sign | (unsigned)rintf(a * 16777216.0f));
        unsigned v = st_float_to_bits(a);
        unsigned r = v + 0xfff + ((v >> 13) & 1);
        return (st_f16)(sign | (((r >> 13) - (112 << 10)) & 0x7fff));
    }
    template <typename T> static inline T __shfl_down_sync(unsigned mask, T v, unsigned delta) {
        (void)mask;
        unsigned t = threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;
        memcpy(&st_current->exchange[t], &v, sizeof(T));
        __syncthreads();
        unsigned lane = t % 32, src = t + delta;
        unsigned count = blockDim.x * blockDim.y * blockDim.z;
        T r = v;
        if (lane + delta < 32 && src < count) memcpy(&r, &st_current->exchange[src], sizeof(T));
        __syncthreads();
        return r;
    }
    template <typename T> static inline T atomicAdd(T *p, T v) { T old = *p; *p = old + v; return old; }
    static inline unsigned atomicCAS(unsigned *p, unsigned expected, unsigned v) { unsigned old = *p; if (old == expected) *p = v; return old; }
    static inline void __assertfail(const char *message, const char *file, unsigned line, const char *function, size_t) {
        fprintf(stderr, "%s:%u: %s: device-side assertion `%s` failed.\\n", file, line, function, message);
        abort();
    }
    #define ST_BARRIER_KERNEL(name) extern "C" void __emu_barrier_##name(void) {}
    #define ST_INF INFINITY

    """

    /// The emulator entry point of kernel `name` (every kernel takes one argument struct of `argsType`).
    static func emulatorEntry(_ name: String, argsType: String) -> String {
        "extern \"C\" void __emu_\(name)(const void *a, st_state *s) { st_current = s; \(name)(*(const \(argsType) *)a); }\n"
    }

    /// The prelude for NVRTC (`host == false`) or the emulator.
    static func text(host: Bool) -> String {
        (host ? hostHeader : deviceHeader) + """
        ST_DEVICE float st_bf16_to_f32(st_bf16 h) { return st_bits_to_float(((unsigned)h) << 16); }
        ST_DEVICE st_bf16 st_f32_to_bf16(float f) {
            unsigned u = st_float_to_bits(f);
            if ((u & 0x7fffffffu) > 0x7f800000u) return (st_bf16)0x7fc0;
            u += 0x7fffu + ((u >> 16) & 1u);
            return (st_bf16)(u >> 16);
        }

        """ + mathOverloads + "ST_DEVICE float st_rsqrt(float x) { return rsqrtf(x); }\nST_DEVICE double st_rsqrt(double x) { return rsqrt(x); }\n"
            + helpers + String(cString: stcu_kernel_args_source()) + "\n"
    }
}
