// The device operations SwiftTorch's CUDA backend performs, each one call: allocation, copies, modules,
// launches, synchronisation. They go to the CUDA driver bound by ccudashim.h, or, once
// stcu_dev_use_emulator(1) was called, to a host emulator that runs kernels compiled for the host (by a
// C++ compiler, with the emulation prelude) on CPU threads: how CI checks the backend's logic without a GPU.
#ifndef STCU_DEVICE_H
#define STCU_DEVICE_H

#include "ccudashim.h"
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// MARK: launch arguments shared by the host and the kernels
//
// Every SwiftTorch kernel takes exactly one struct by value. The fields are written once here; the kernel
// sources get the same declaration as text from stcu_kernel_args_source(), so the layouts cannot drift.
#define STCU_MAX_DIMS 8
#define STCU_MAX_OPERANDS 4
#define STCU_EW_FIELDS                                                                                    \
    long long n;                                                                                          \
    int rank;                                                                                             \
    int flags;                                                                                            \
    long long shape[STCU_MAX_DIMS];                                                                       \
    long long strides[STCU_MAX_OPERANDS][STCU_MAX_DIMS];                                                  \
    unsigned long long ptr[STCU_MAX_OPERANDS];                                                            \
    double f[4];                                                                                          \
    long long i[4];
/// Elementwise launches: operand 0 is the output; `rank` 0 means every operand is contiguous with `n`
/// elements; otherwise `shape`/`strides` (elements) describe the iteration. An input whose `ptr` is 0 is a
/// scalar held in f[k]/i[k] (k = operand - 1). f and i also carry op parameters (clamp bounds, alpha).
typedef struct { STCU_EW_FIELDS } stcu_ew_args;

#define STCU_RED_FIELDS                                                                                   \
    long long outer;                                                                                      \
    long long length;                                                                                     \
    long long inner;                                                                                      \
    long long partials;                                                                                   \
    unsigned long long in;                                                                                \
    unsigned long long out;                                                                               \
    unsigned long long index_out;                                                                         \
    double f[2];
/// Reductions over the middle axis of a contiguous [outer, length, inner] input into [outer, inner].
/// `partials` > 1 splits each row over that many blocks (a first pass writes partial results).
typedef struct { STCU_RED_FIELDS } stcu_red_args;

#define STCU_OPT_TENSORS 32
#define STCU_OPT_FIELDS                                                                                   \
    long long flags;                                                                                      \
    long long tensors;                                                                                    \
    long long chunk;                                                                                      \
    long long n[STCU_OPT_TENSORS];                                                                        \
    long long block_start[STCU_OPT_TENSORS];                                                              \
    long long tensor_flags[STCU_OPT_TENSORS];                                                             \
    unsigned long long ptr[5][STCU_OPT_TENSORS];                                                          \
    double tf[3][STCU_OPT_TENSORS];                                                                       \
    double f[8];
/// Multi-tensor optimizer updates (PyTorch's multi_tensor_apply): one launch updates up to STCU_OPT_TENSORS
/// contiguous tensors, all passed by value (no pointer table in device memory, so a CUDA graph can capture it;
/// 2,904 bytes, under the driver's 4 KB by-value parameter limit). Tensor t has `n[t]` elements; `ptr[k][t]`
/// its parameter, gradient and state buffers (0 = absent); `tf[k][t]` its own scalars (those that follow its
/// own step count: bias corrections, step sizes); `tensor_flags[t]` its own flags (SGD's first step), ORed
/// with the shared `flags`; `f` the shared scalars. Blocks map to (tensor, chunk of `chunk` elements):
/// tensor t owns blocks block_start[t] ..< block_start[t + 1] (the grid's size after the last), and a block
/// finds its t by a binary search of that increasing by-value table. Each kernel's source says what the
/// pointers, scalars and flags mean.
typedef struct { STCU_OPT_FIELDS } stcu_opt_args;

#define STCU_CONV_FIELDS                                                                                  \
    long long n;                                                                                          \
    long long channels;                                                                                   \
    long long images;                                                                                     \
    long long big[3];                                                                                     \
    long long small[3];                                                                                   \
    long long kernel[3];                                                                                  \
    long long stride[3];                                                                                  \
    long long padding[3];                                                                                 \
    long long dilation[3];                                                                                \
    unsigned long long in;                                                                                \
    unsigned long long out;
/// Convolution layout kernels (im2col and its adjoint) over `n` work items: `images` images of `channels`
/// channels, the 3-D geometry of the big (input) and small (output) planes, and the two buffers.
typedef struct { STCU_CONV_FIELDS } stcu_conv_args;

#define STCU_POOL_FIELDS                                                                                  \
    long long n;                                                                                          \
    long long in_size[3];                                                                                 \
    long long out_size[3];                                                                                \
    long long step[3];                                                                                    \
    long long count_include_pad;                                                                          \
    long long divisor;                                                                                    \
    unsigned long long table;                                                                             \
    unsigned long long in;                                                                                \
    unsigned long long out;                                                                               \
    unsigned long long indices;
/// Pooling kernels over `n` outputs: the 3-D input and output planes, the window step (dilation) per axis,
/// average pooling's divisor rules (`divisor` > 0 overrides), the int64 window table (per axis: first input
/// index, element count and padded count of each output's window) and the buffers.
typedef struct { STCU_POOL_FIELDS } stcu_pool_args;

#define STCU_RESAMPLE_FIELDS                                                                              \
    long long n;                                                                                          \
    long long in_size;                                                                                    \
    long long out_size;                                                                                   \
    long long inner;                                                                                      \
    long long taps;                                                                                       \
    unsigned long long table;                                                                             \
    unsigned long long weight;                                                                            \
    unsigned long long in;                                                                                \
    unsigned long long out;
/// Separable resampling kernels (`F.interpolate`) over `n` outputs of a contiguous [outer, out_size, inner]
/// `out` from a contiguous [outer, in_size, inner] `in`: `taps` taps per output, the int64 `table` (the
/// forward's tap-major input indices, or the adjoint's per-position entry lists) and their `weight`s.
typedef struct { STCU_RESAMPLE_FIELDS } stcu_resample_args;

#define STCU_FUSED_FIELDS                                                                                 \
    long long outer;                                                                                      \
    long long length;                                                                                     \
    long long inner;                                                                                      \
    long long flags;                                                                                      \
    long long index;                                                                                      \
    unsigned long long ptr[8];                                                                            \
    double f[4];
/// Fused row-wise kernels (softmax, cross-entropy, layer/batch norm, picks from sorted rows) over a
/// [outer, length, inner] geometry: `ptr` the operands (0 = absent), `flags` options, `index` an integer
/// parameter (cross-entropy's ignore_index), `f` scalars. FusedKernelSource documents each kernel's use.
typedef struct { STCU_FUSED_FIELDS } stcu_fused_args;

/// C declarations of the argument structs above, for the kernel sources.
const char *stcu_kernel_args_source(void);

// MARK: device operations (0 = success, else a CUresult)

/// Routes every stcu_dev_* call to the host emulator (1) or the driver (0). Set it before any other call.
void stcu_dev_use_emulator(int on);
int stcu_dev_is_emulated(void);
/// Makes `ctx` current on the calling thread when it is not already (a thread-local check; no-op emulated).
int stcu_dev_bind(CUcontext ctx);
int stcu_dev_alloc(CUdeviceptr *p, size_t bytes);
int stcu_dev_free(CUdeviceptr p);
int stcu_dev_htod(CUdeviceptr dst, const void *src, size_t bytes, CUstream s);
int stcu_dev_dtoh(void *dst, CUdeviceptr src, size_t bytes, CUstream s);
int stcu_dev_dtod(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s);
/// Copies between two devices' memory on `s` (the destination's stream): cuMemcpyPeerAsync, which goes directly over
/// NVLink or PCIe where peer access is on and through the host otherwise. Not capturable in a CUDA graph.
int stcu_dev_peer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t bytes, CUstream s);
/// Whether device `dev` can map device `peer`'s memory (cuDeviceCanAccessPeer; 1 between emulated devices).
int stcu_dev_can_access_peer(int *can, int dev, int peer);
/// Lets the current context access `peer_ctx`'s memory directly (cuCtxEnablePeerAccess). Already enabled, too many
/// peers and unsupported count as success: peer copies then go through the driver's staging.
int stcu_dev_enable_peer(CUcontext peer_ctx);
int stcu_dev_memset8(CUdeviceptr dst, unsigned char value, size_t bytes, CUstream s);
/// Loads a module: a CUBIN image for the driver, or the NUL-terminated path of a host shared object
/// for the emulator.
int stcu_dev_module_load(CUmodule *m, const void *image);
int stcu_dev_get_function(CUfunction *f, CUmodule m, const char *name);
/// Launches `f` with one by-value argument of `arg_size` bytes.
int stcu_dev_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                    unsigned bz, CUstream s, const void *arg, size_t arg_size);
int stcu_dev_sync(CUstream s);
int stcu_dev_mem_info(size_t *free_bytes, size_t *total_bytes);
/// The element types of stcu_dev_gemm: cublasSgemm, cublasDgemm, and cublasGemmEx on float16/bfloat16
/// operands and output with float32 accumulation (CUBLAS_COMPUTE_32F: the tensor cores).
#define STCU_GEMM_F32 0
#define STCU_GEMM_F64 1
#define STCU_GEMM_F16 2
#define STCU_GEMM_BF16 3

/// Column-major GEMM with cuBLAS's arguments (C = alpha op(A) op(B) + beta C; `element` is an STCU_GEMM_*).
/// The emulator runs a plain loop with the same argument meaning, so the host's row-major-to-cuBLAS mapping is
/// checked without a GPU. Returns a cublasStatus_t.
int stcu_dev_gemm(cublasHandle_t h, int transa, int transb, int m, int n, int k, double alpha, unsigned long long A,
                  int lda, unsigned long long B, int ldb, double beta, unsigned long long C, int ldc, int element);
/// `batch` GEMMs as stcu_dev_gemm, the i-th on A + i·stride_a, B + i·stride_b, C + i·stride_c (elements; a
/// zero stride repeats one matrix): cublas[SD]gemmStridedBatched, one launch for a whole bmm.
int stcu_dev_gemm_batched(cublasHandle_t h, int transa, int transb, int m, int n, int k, double alpha,
                          unsigned long long A, int lda, long long stride_a, unsigned long long B, int ldb,
                          long long stride_b, double beta, unsigned long long C, int ldc, long long stride_c, int batch,
                          int element);

// MARK: CUDA graphs (stream capture)
//
// Between stcu_dev_capture_begin(s) and stcu_dev_capture_end(s), the operations issued on `s` are recorded into
// a graph instead of running: kernel launches (with their argument struct as it was then), memsets,
// device-to-device copies and GEMMs. stcu_dev_graph_launch replays them in order, as often as wanted. On the
// driver this is CUDA's stream capture; on the emulator a recording replayed by the host.
//
// Refused while `s` captures, with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and without running (on both):
// stcu_dev_dtoh and stcu_dev_sync (the host would wait for work that has not run; a refused dtoh zeroes `dst`),
// stcu_dev_htod (a graph would read the host source again at every replay, and SwiftTorch's sources are
// temporary buffers freed after the call), and stcu_dev_graph_launch (no nested graphs). The capture itself
// goes on and ends normally; the caller decides what a refused operation means (SwiftTorch's CUDAGraph throws).
// On the driver, stcu_dev_alloc during a capture relaxes the calling thread's capture mode for its cuMemAlloc.

/// The executable graph a capture produced.
typedef struct stcu_graph *stcu_graph_t;

/// 1 when graphs can be used (always on the emulator; on the driver when libcuda exports the graph calls), else
/// 0 with the reason in `err` (always NUL-terminated when errlen > 0).
int stcu_dev_graphs_supported(char *err, size_t errlen);
/// Starts capturing `s` in `mode` (CU_STREAM_CAPTURE_MODE_GLOBAL, _THREAD_LOCAL or _RELAXED: which
/// potentially unsafe calls the driver refuses meanwhile, and from which threads). A stream already capturing
/// gives CUDA_ERROR_ILLEGAL_STATE.
int stcu_dev_capture_begin(CUstream s, int mode);
/// Ends the capture of `s` and instantiates what it recorded into `*graph` (NULL on failure).
int stcu_dev_capture_end(CUstream s, stcu_graph_t *graph);
/// 1 while `s` is capturing.
int stcu_dev_is_capturing(CUstream s);
/// Replays `g` on `s`, asynchronously like any launch.
int stcu_dev_graph_launch(stcu_graph_t g, CUstream s);
/// Frees `g` (a replay still queued on the driver completes first: cuGraphExecDestroy's contract).
void stcu_dev_graph_destroy(stcu_graph_t g);

// MARK: emulation state seen by host-compiled kernels (the prelude's threadIdx etc. read it)
typedef struct { unsigned x, y, z; } stcu_emu_dim3;
typedef struct stcu_emu_state {
    stcu_emu_dim3 thread_idx, block_idx, block_dim, grid_dim;
    void (*barrier)(struct stcu_emu_state *);
    unsigned long long *exchange;   // one 8-byte slot per thread of the block, for warp shuffles
} stcu_emu_state;

#ifdef __cplusplus
}
#endif
#endif
