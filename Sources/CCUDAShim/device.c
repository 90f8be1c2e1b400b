// SwiftTorch's device operations (include/stcu_device.h): the CUDA driver, or the host emulator.
#define _GNU_SOURCE
//
// While a stream is capturing a CUDA graph (graph.c), the operations a graph can hold are recorded on the
// emulator (the driver records them itself), and the ones it cannot hold are refused on both: see
// stcu_dev_capture_begin in stcu_device.h.
#include "stcu_device.h"
#include "emulator.h"
#include "graph.h"
#include <stdlib.h>
#include <string.h>

#define STCU_STRINGIFY(...) #__VA_ARGS__
#define STCU_EXPAND_STRINGIFY(...) STCU_STRINGIFY(__VA_ARGS__)
#define STCU_DECLARE(name, fields) "typedef struct { " STCU_EXPAND_STRINGIFY(fields) " } " #name ";\n"

const char *stcu_kernel_args_source(void) {
    // STCU_DECLARE's argument is macro-expanded before STCU_STRINGIFY turns it into text, so the kernels
    // get exactly the fields the host compiled.
    static const char text[] =
        "#define STCU_MAX_DIMS 8\n#define STCU_MAX_OPERANDS 4\n"
        "#define STCU_OPT_TENSORS " STCU_EXPAND_STRINGIFY(STCU_OPT_TENSORS) "\n"
        STCU_DECLARE(stcu_ew_args, STCU_EW_FIELDS)
        STCU_DECLARE(stcu_red_args, STCU_RED_FIELDS)
        STCU_DECLARE(stcu_opt_args, STCU_OPT_FIELDS)
        STCU_DECLARE(stcu_conv_args, STCU_CONV_FIELDS)
        STCU_DECLARE(stcu_pool_args, STCU_POOL_FIELDS)
        STCU_DECLARE(stcu_resample_args, STCU_RESAMPLE_FIELDS)
        STCU_DECLARE(stcu_fused_args, STCU_FUSED_FIELDS);
    return text;
}

static int emulated;

void stcu_dev_use_emulator(int on) { emulated = on; }
int stcu_dev_is_emulated(void) { return emulated; }

int stcu_dev_bind(CUcontext ctx) {
    static __thread CUcontext bound;
    if (emulated || bound == ctx) return 0;
    int r = stcu_cuCtxSetCurrent(ctx);
    if (r == 0) bound = ctx;
    return r;
}

int stcu_dev_alloc(CUdeviceptr *p, size_t bytes) {
    if (emulated) return stcu_emu_alloc(p, bytes);
    if (!stcu_graph_any_capture()) return stcu_cuMemAlloc(p, bytes);
    // cuMemAlloc is not stream-ordered, so a capture does not record it, but a "global" or "thread_local" capture
    // may refuse it as potentially unsafe: this thread is relaxed for the one call (what
    // cuThreadExchangeStreamCaptureMode is for). The caching allocator asks only when its graph pool and
    // cache have no block of the size.
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    int exchanged = stcu_cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS;
    int r = stcu_cuMemAlloc(p, bytes);
    if (exchanged) (void)stcu_cuThreadExchangeStreamCaptureMode(&mode);
    return r;
}

int stcu_dev_free(CUdeviceptr p) { return emulated ? stcu_emu_free(p) : stcu_cuMemFree(p); }

int stcu_dev_htod(CUdeviceptr dst, const void *src, size_t bytes, CUstream s) {
    if (stcu_graph_capturing(s)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (emulated) { memcpy((void *)(uintptr_t)dst, src, bytes); return 0; }
    return stcu_cuMemcpyHtoDAsync(dst, src, bytes, s);
}

int stcu_dev_dtoh(void *dst, CUdeviceptr src, size_t bytes, CUstream s) {
    if (stcu_graph_capturing(s)) {
        memset(dst, 0, bytes); // the caller may go on before it learns the capture failed: zeros, not garbage
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (emulated) { memcpy(dst, (const void *)(uintptr_t)src, bytes); return 0; }
    return stcu_cuMemcpyDtoHAsync(dst, src, bytes, s);
}

int stcu_dev_dtod(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) {
    if (emulated) {
        if (stcu_graph_capturing(s)) {
            stcu_graph_op op = {.kind = STCU_GRAPH_OP_DTOD, .dst = dst, .src = src, .bytes = bytes};
            return stcu_graph_record(s, &op);
        }
        memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
        return 0;
    }
    return stcu_cuMemcpyDtoDAsync(dst, src, bytes, s);
}

int stcu_dev_peer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t bytes, CUstream s) {
    if (stcu_graph_capturing(s)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (emulated) {
        memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
        return 0;
    }
    return stcu_cuMemcpyPeerAsync(dst, dst_ctx, src, src_ctx, bytes, s);
}

int stcu_dev_can_access_peer(int *can, int dev, int peer) {
    if (emulated) { *can = dev != peer; return 0; }
    CUdevice d = 0, p = 0;
    int r = stcu_cuDeviceGet(&d, dev);
    if (r == 0) r = stcu_cuDeviceGet(&p, peer);
    if (r == 0) r = stcu_cuDeviceCanAccessPeer(can, d, p);
    return r;
}

int stcu_dev_enable_peer(CUcontext peer_ctx) {
    if (emulated) return 0;
    int r = stcu_cuCtxEnablePeerAccess(peer_ctx, 0);
    // Already enabled (704), too many peers (711) or unsupported (217): the copy still works, staged by the driver.
    return r == 704 || r == 711 || r == 217 ? 0 : r;
}

int stcu_dev_memset8(CUdeviceptr dst, unsigned char value, size_t bytes, CUstream s) {
    if (emulated) {
        if (stcu_graph_capturing(s)) {
            stcu_graph_op op = {.kind = STCU_GRAPH_OP_MEMSET, .dst = dst, .bytes = bytes, .value = value};
            return stcu_graph_record(s, &op);
        }
        memset((void *)(uintptr_t)dst, value, bytes);
        return 0;
    }
    return stcu_cuMemsetD8Async(dst, value, bytes, s);
}

int stcu_dev_module_load(CUmodule *m, const void *image) {
    return emulated ? stcu_emu_module_load(m, (const char *)image) : stcu_cuModuleLoadData(m, image);
}

int stcu_dev_get_function(CUfunction *f, CUmodule m, const char *name) {
    return emulated ? stcu_emu_get_function(f, m, name) : stcu_cuModuleGetFunction(f, m, name);
}

int stcu_dev_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                    unsigned bz, CUstream s, const void *arg, size_t arg_size) {
    if (emulated) {
        if (stcu_graph_capturing(s)) {
            stcu_graph_op op = {.kind = STCU_GRAPH_OP_LAUNCH, .function = f, .grid = {gx, gy, gz}, .block = {bx, by, bz},
                                .arg = arg, .arg_size = arg_size};
            return stcu_graph_record(s, &op);
        }
        return stcu_emu_launch(f, gx, gy, gz, bx, by, bz, arg);
    }
    void *params[1] = {(void *)arg};
    return stcu_cuLaunchKernel(f, gx, gy, gz, bx, by, bz, 0, s, params, NULL);
}

int stcu_dev_sync(CUstream s) {
    if (stcu_graph_capturing(s)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    return emulated ? 0 : stcu_cuStreamSynchronize(s);
}

/// cublasGemmEx's data type for a half-precision STCU_GEMM_* element.
static cudaDataType half_type(int element) { return element == STCU_GEMM_BF16 ? CUDA_R_16BF : CUDA_R_16F; }

int stcu_dev_gemm(cublasHandle_t h, int transa, int transb, int m, int n, int k, double alpha, unsigned long long A,
                  int lda, unsigned long long B, int ldb, double beta, unsigned long long C, int ldc, int element) {
    if (emulated && stcu_graph_capturing(STCU_EMULATED_STREAM)) {
        stcu_graph_op op = {.kind = STCU_GRAPH_OP_GEMM, .transa = transa, .transb = transb, .m = m, .n = n, .k = k,
                            .alpha = alpha, .A = A, .lda = lda, .B = B, .ldb = ldb, .beta = beta, .C = C, .ldc = ldc,
                            .batch = 1, .element = element};
        return stcu_graph_record(STCU_EMULATED_STREAM, &op);
    }
    if (emulated)
        return stcu_emu_gemm(transa, transb, m, n, k, alpha, (const void *)(uintptr_t)A, lda, (const void *)(uintptr_t)B,
                             ldb, beta, (void *)(uintptr_t)C, ldc, element);
    if (element == STCU_GEMM_F64)
        return stcu_cublasDgemm(h, transa, transb, m, n, k, &alpha, (const double *)(uintptr_t)A, lda,
                                (const double *)(uintptr_t)B, ldb, &beta, (double *)(uintptr_t)C, ldc);
    float a = (float)alpha, b = (float)beta;
    if (element == STCU_GEMM_F32)
        return stcu_cublasSgemm(h, transa, transb, m, n, k, &a, (const float *)(uintptr_t)A, lda,
                                (const float *)(uintptr_t)B, ldb, &b, (float *)(uintptr_t)C, ldc);
    cudaDataType t = half_type(element);
    return stcu_cublasGemmEx(h, transa, transb, m, n, k, &a, (const void *)(uintptr_t)A, t, lda,
                             (const void *)(uintptr_t)B, t, ldb, &b, (void *)(uintptr_t)C, t, ldc, CUBLAS_COMPUTE_32F,
                             CUBLAS_GEMM_DEFAULT);
}

int stcu_dev_gemm_batched(cublasHandle_t h, int transa, int transb, int m, int n, int k, double alpha,
                          unsigned long long A, int lda, long long stride_a, unsigned long long B, int ldb,
                          long long stride_b, double beta, unsigned long long C, int ldc, long long stride_c, int batch,
                          int element) {
    if (emulated && stcu_graph_capturing(STCU_EMULATED_STREAM)) {
        stcu_graph_op op = {.kind = STCU_GRAPH_OP_GEMM, .transa = transa, .transb = transb, .m = m, .n = n, .k = k,
                            .alpha = alpha, .A = A, .lda = lda, .stride_a = stride_a, .B = B, .ldb = ldb,
                            .stride_b = stride_b, .beta = beta, .C = C, .ldc = ldc, .stride_c = stride_c,
                            .batch = batch, .element = element};
        return stcu_graph_record(STCU_EMULATED_STREAM, &op);
    }
    if (emulated)
        return stcu_emu_gemm_batched(transa, transb, m, n, k, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc,
                                     stride_c, batch, element);
    if (element == STCU_GEMM_F64)
        return stcu_cublasDgemmStridedBatched(h, transa, transb, m, n, k, &alpha, (const double *)(uintptr_t)A, lda,
                                              stride_a, (const double *)(uintptr_t)B, ldb, stride_b, &beta,
                                              (double *)(uintptr_t)C, ldc, stride_c, batch);
    float a = (float)alpha, b = (float)beta;
    if (element == STCU_GEMM_F32)
        return stcu_cublasSgemmStridedBatched(h, transa, transb, m, n, k, &a, (const float *)(uintptr_t)A, lda, stride_a,
                                              (const float *)(uintptr_t)B, ldb, stride_b, &b, (float *)(uintptr_t)C, ldc,
                                              stride_c, batch);
    cudaDataType t = half_type(element);
    return stcu_cublasGemmStridedBatchedEx(h, transa, transb, m, n, k, &a, (const void *)(uintptr_t)A, t, lda, stride_a,
                                           (const void *)(uintptr_t)B, t, ldb, stride_b, &b, (void *)(uintptr_t)C, t,
                                           ldc, stride_c, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

int stcu_dev_mem_info(size_t *free_bytes, size_t *total_bytes) {
    return emulated ? stcu_emu_mem_info(free_bytes, total_bytes) : stcu_cuMemGetInfo(free_bytes, total_bytes);
}
