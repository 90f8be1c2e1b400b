// Run-time binding of the CUDA driver, NVRTC, cuBLAS(Lt) and cuDNN for SwiftTorch's CUDA backend
// (see include/ccudashim.h). Each library has a table of the symbols it must export; its loader
// finds the file (search order below), binds the table and remembers the outcome, so that a second
// call returns the first result. The wrappers call through the bound pointers, or return the
// library's "not loaded" status while a pointer is unbound.
#define _GNU_SOURCE
#include "ccudashim.h"
#include "stcu_cudnn.h"
#include "stcu_nccl.h"

#include <dlfcn.h>
#include <glob.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// MARK: - Bound pointers and wrappers
//
// Each list entry: X(name, symbol, alternative symbol or NULL, (parameters), (arguments)). `symbol`
// is what the CUDA 12/13 headers map the plain name to (cuda.h: cuMemAlloc -> cuMemAlloc_v2, ...;
// cublas_v2.h: cublasCreate -> cublasCreate_v2, ...); `alternative` is tried when it is absent.

#define STCU_DRIVER_CALLS(X)                                                                                   \
    X(cuInit, "cuInit", NULL, (unsigned int flags), (flags))                                                   \
    X(cuDriverGetVersion, "cuDriverGetVersion", NULL, (int *driverVersion), (driverVersion))                   \
    X(cuDeviceGetCount, "cuDeviceGetCount", NULL, (int *count), (count))                                       \
    X(cuDeviceGet, "cuDeviceGet", NULL, (CUdevice * device, int ordinal), (device, ordinal))                   \
    X(cuDeviceGetName, "cuDeviceGetName", NULL, (char *name, int len, CUdevice dev), (name, len, dev))         \
    X(cuDeviceGetAttribute, "cuDeviceGetAttribute", NULL, (int *pi, CUdevice_attribute attrib, CUdevice dev),  \
      (pi, attrib, dev))                                                                                       \
    X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", NULL, (size_t * bytes, CUdevice dev), (bytes, dev))             \
    X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL, (CUcontext * pctx, CUdevice dev), (pctx, dev)) \
    X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", NULL, (CUdevice dev), (dev))                  \
    X(cuCtxSetCurrent, "cuCtxSetCurrent", NULL, (CUcontext ctx), (ctx))                                        \
    X(cuCtxGetCurrent, "cuCtxGetCurrent", NULL, (CUcontext * pctx), (pctx))                                    \
    X(cuCtxSynchronize, "cuCtxSynchronize", NULL, (void), ())                                                  \
    X(cuStreamCreate, "cuStreamCreate", NULL, (CUstream * phStream, unsigned int flags), (phStream, flags))    \
    X(cuStreamSynchronize, "cuStreamSynchronize", NULL, (CUstream hStream), (hStream))                         \
    X(cuStreamDestroy, "cuStreamDestroy_v2", NULL, (CUstream hStream), (hStream))                              \
    X(cuStreamWaitEvent, "cuStreamWaitEvent", NULL, (CUstream hStream, CUevent hEvent, unsigned int flags),    \
      (hStream, hEvent, flags))                                                                                \
    X(cuMemAlloc, "cuMemAlloc_v2", NULL, (CUdeviceptr * dptr, size_t bytesize), (dptr, bytesize))              \
    X(cuMemFree, "cuMemFree_v2", NULL, (CUdeviceptr dptr), (dptr))                                             \
    X(cuMemGetInfo, "cuMemGetInfo_v2", NULL, (size_t * free, size_t * total), (free, total))                   \
    X(cuMemAllocHost, "cuMemAllocHost_v2", NULL, (void **pp, size_t bytesize), (pp, bytesize))                 \
    X(cuMemHostAlloc, "cuMemHostAlloc", NULL, (void **pp, size_t bytesize, unsigned int flags),                \
      (pp, bytesize, flags))                                                                                   \
    X(cuMemFreeHost, "cuMemFreeHost", NULL, (void *p), (p))                                                    \
    X(cuMemHostRegister, "cuMemHostRegister_v2", NULL, (void *p, size_t bytesize, unsigned int flags),         \
      (p, bytesize, flags))                                                                                    \
    X(cuMemHostUnregister, "cuMemHostUnregister", NULL, (void *p), (p))                                        \
    X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", NULL,                                                         \
      (CUdeviceptr dstDevice, const void *srcHost, size_t byteCount, CUstream hStream),                        \
      (dstDevice, srcHost, byteCount, hStream))                                                                \
    X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", NULL,                                                         \
      (void *dstHost, CUdeviceptr srcDevice, size_t byteCount, CUstream hStream),                              \
      (dstHost, srcDevice, byteCount, hStream))                                                                \
    X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", NULL,                                                         \
      (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t byteCount, CUstream hStream),                      \
      (dstDevice, srcDevice, byteCount, hStream))                                                              \
    X(cuMemcpyPeerAsync, "cuMemcpyPeerAsync", NULL,                                                            \
      (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, size_t byteCount, \
       CUstream hStream),                                                                                      \
      (dstDevice, dstContext, srcDevice, srcContext, byteCount, hStream))                                      \
    X(cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer", NULL, (int *canAccessPeer, CUdevice dev, CUdevice peerDev), \
      (canAccessPeer, dev, peerDev))                                                                           \
    X(cuCtxEnablePeerAccess, "cuCtxEnablePeerAccess", NULL, (CUcontext peerContext, unsigned int flags),       \
      (peerContext, flags))                                                                                    \
    X(cuMemsetD8Async, "cuMemsetD8Async", NULL,                                                                \
      (CUdeviceptr dstDevice, unsigned char uc, size_t n, CUstream hStream), (dstDevice, uc, n, hStream))      \
    X(cuMemsetD32Async, "cuMemsetD32Async", NULL,                                                              \
      (CUdeviceptr dstDevice, unsigned int ui, size_t n, CUstream hStream), (dstDevice, ui, n, hStream))       \
    X(cuModuleLoadData, "cuModuleLoadData", NULL, (CUmodule * module, const void *image), (module, image))     \
    X(cuModuleUnload, "cuModuleUnload", NULL, (CUmodule hmod), (hmod))                                         \
    X(cuModuleGetFunction, "cuModuleGetFunction", NULL, (CUfunction * hfunc, CUmodule hmod, const char *name), \
      (hfunc, hmod, name))                                                                                     \
    X(cuLaunchKernel, "cuLaunchKernel", NULL,                                                                  \
      (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,                      \
       unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes,    \
       CUstream hStream, void **kernelParams, void **extra),                                                   \
      (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,              \
       kernelParams, extra))                                                                                   \
    X(cuEventCreate, "cuEventCreate", NULL, (CUevent * phEvent, unsigned int flags), (phEvent, flags))         \
    X(cuEventRecord, "cuEventRecord", NULL, (CUevent hEvent, CUstream hStream), (hEvent, hStream))             \
    X(cuEventSynchronize, "cuEventSynchronize", NULL, (CUevent hEvent), (hEvent))                              \
    X(cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime",                                       \
      (float *pMilliseconds, CUevent hStart, CUevent hEnd), (pMilliseconds, hStart, hEnd))                     \
    X(cuEventDestroy, "cuEventDestroy_v2", NULL, (CUevent hEvent), (hEvent))                                   \
    X(cuGetErrorName, "cuGetErrorName", NULL, (CUresult error, const char **pStr), (error, pStr))              \
    X(cuGetErrorString, "cuGetErrorString", NULL, (CUresult error, const char **pStr), (error, pStr))          \
    X(cuFuncGetAttribute, "cuFuncGetAttribute", NULL, (int *pi, CUfunction_attribute attrib, CUfunction hfunc), \
      (pi, attrib, hfunc))

// The CUDA-graph calls: bound when present but not required, so a driver without one still runs everything
// else and stcu_graphs_supported() names what is missing. cuStreamBeginCapture_v2 is the form with a capture
// mode (the unversioned symbol is CUDA 10.0's, without it, so it is no alternative).
#define STCU_GRAPH_CALLS(X)                                                                                    \
    X(cuStreamBeginCapture, "cuStreamBeginCapture_v2", NULL, (CUstream hStream, CUstreamCaptureMode mode),     \
      (hStream, mode))                                                                                         \
    X(cuStreamEndCapture, "cuStreamEndCapture", NULL, (CUstream hStream, CUgraph * phGraph), (hStream, phGraph)) \
    X(cuStreamIsCapturing, "cuStreamIsCapturing", NULL,                                                        \
      (CUstream hStream, CUstreamCaptureStatus * captureStatus), (hStream, captureStatus))                     \
    X(cuGraphLaunch, "cuGraphLaunch", NULL, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream)) \
    X(cuGraphExecDestroy, "cuGraphExecDestroy", NULL, (CUgraphExec hGraphExec), (hGraphExec))                  \
    X(cuGraphDestroy, "cuGraphDestroy", NULL, (CUgraph hGraph), (hGraph))                                      \
    X(cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode", NULL, (CUstreamCaptureMode * mode), \
      (mode))

#define STCU_NVRTC_CALLS(X)                                                                                    \
    X(nvrtcVersion, "nvrtcVersion", NULL, (int *major, int *minor), (major, minor))                            \
    X(nvrtcCreateProgram, "nvrtcCreateProgram", NULL,                                                          \
      (nvrtcProgram * prog, const char *src, const char *name, int numHeaders, const char *const *headers,     \
       const char *const *includeNames),                                                                       \
      (prog, src, name, numHeaders, headers, includeNames))                                                    \
    X(nvrtcDestroyProgram, "nvrtcDestroyProgram", NULL, (nvrtcProgram * prog), (prog))                         \
    X(nvrtcCompileProgram, "nvrtcCompileProgram", NULL,                                                        \
      (nvrtcProgram prog, int numOptions, const char *const *options), (prog, numOptions, options))            \
    X(nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", NULL, (nvrtcProgram prog, size_t *logSizeRet),         \
      (prog, logSizeRet))                                                                                      \
    X(nvrtcGetProgramLog, "nvrtcGetProgramLog", NULL, (nvrtcProgram prog, char *log), (prog, log))             \
    X(nvrtcGetCUBINSize, "nvrtcGetCUBINSize", NULL, (nvrtcProgram prog, size_t *cubinSizeRet),                 \
      (prog, cubinSizeRet))                                                                                    \
    X(nvrtcGetCUBIN, "nvrtcGetCUBIN", NULL, (nvrtcProgram prog, char *cubin), (prog, cubin))                   \
    X(nvrtcGetPTXSize, "nvrtcGetPTXSize", NULL, (nvrtcProgram prog, size_t *ptxSizeRet), (prog, ptxSizeRet))   \
    X(nvrtcGetPTX, "nvrtcGetPTX", NULL, (nvrtcProgram prog, char *ptx), (prog, ptx))                           \
    X(nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs", NULL, (int *numArchs), (numArchs))               \
    X(nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs", NULL, (int *supportedArchs), (supportedArchs))

#define STCU_CUBLAS_CALLS(X)                                                                                   \
    X(cublasCreate, "cublasCreate_v2", NULL, (cublasHandle_t * handle), (handle))                              \
    X(cublasDestroy, "cublasDestroy_v2", NULL, (cublasHandle_t handle), (handle))                              \
    X(cublasSetStream, "cublasSetStream_v2", NULL, (cublasHandle_t handle, CUstream streamId), (handle, streamId)) \
    X(cublasSetMathMode, "cublasSetMathMode", NULL, (cublasHandle_t handle, cublasMath_t mode), (handle, mode)) \
    X(cublasGetVersion, "cublasGetVersion_v2", NULL, (cublasHandle_t handle, int *version), (handle, version)) \
    X(cublasSetWorkspace, "cublasSetWorkspace_v2", NULL,                                                       \
      (cublasHandle_t handle, void *workspace, size_t workspaceSizeInBytes), (handle, workspace, workspaceSizeInBytes)) \
    X(cublasSgemm, "cublasSgemm_v2", NULL,                                                                     \
      (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,         \
       const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta, float *C,      \
       int ldc),                                                                                               \
      (handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))                                  \
    X(cublasDgemm, "cublasDgemm_v2", NULL,                                                                     \
      (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,         \
       const double *alpha, const double *A, int lda, const double *B, int ldb, const double *beta, double *C, \
       int ldc),                                                                                               \
      (handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))                                  \
    X(cublasGemmEx, "cublasGemmEx", NULL,                                                                      \
      (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,         \
       const void *alpha, const void *A, cudaDataType Atype, int lda, const void *B, cudaDataType Btype,       \
       int ldb, const void *beta, void *C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType,       \
       cublasGemmAlgo_t algo),                                                                                 \
      (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType, \
       algo))                                                                                                  \
    X(cublasSgemmStridedBatched, "cublasSgemmStridedBatched", NULL,                                            \
      (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,         \
       const float *alpha, const float *A, int lda, long long strideA, const float *B, int ldb,                \
       long long strideB, const float *beta, float *C, int ldc, long long strideC, int batchCount),            \
      (handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC,        \
       batchCount))                                                                                            \
    X(cublasDgemmStridedBatched, "cublasDgemmStridedBatched", NULL,                                            \
      (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,         \
       const double *alpha, const double *A, int lda, long long strideA, const double *B, int ldb,             \
       long long strideB, const double *beta, double *C, int ldc, long long strideC, int batchCount),          \
      (handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC,        \
       batchCount))                                                                                            \
    X(cublasGemmStridedBatchedEx, "cublasGemmStridedBatchedEx", NULL,                                          \
      (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,         \
       const void *alpha, const void *A, cudaDataType Atype, int lda, long long strideA, const void *B,        \
       cudaDataType Btype, int ldb, long long strideB, const void *beta, void *C, cudaDataType Ctype, int ldc,  \
       long long strideC, int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo),             \
      (handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype, \
       ldc, strideC, batchCount, computeType, algo))

#define STCU_POINTER(type, name, params) static type(*p_##name) params;
#define STCU_DRIVER_POINTER(name, sym, alt, params, args) STCU_POINTER(CUresult, name, params)
#define STCU_NVRTC_POINTER(name, sym, alt, params, args) STCU_POINTER(nvrtcResult, name, params)
#define STCU_CUBLAS_POINTER(name, sym, alt, params, args) STCU_POINTER(cublasStatus_t, name, params)
STCU_DRIVER_CALLS(STCU_DRIVER_POINTER)
STCU_GRAPH_CALLS(STCU_DRIVER_POINTER)
STCU_NVRTC_CALLS(STCU_NVRTC_POINTER)
STCU_CUBLAS_CALLS(STCU_CUBLAS_POINTER)
static const char *(*p_nvrtcGetErrorString)(nvrtcResult);
// cuGraphInstantiateWithFlags (CUDA 11.4+), else CUDA 11's cuGraphInstantiate_v2 with its error-node and log
// arguments: two signatures, so bound separately and chosen in stcu_cuGraphInstantiate.
static CUresult (*p_cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
static CUresult (*p_cuGraphInstantiateLegacy)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t);
static const char *(*p_cublasGetStatusString)(cublasStatus_t);
static size_t (*p_cudnnGetVersion)(void);
static const char *(*p_cudnnGetErrorString)(cudnnStatus_t);

#define STCU_WRAPPER(type, unloaded, name, params, args) \
    type stcu_##name params { return p_##name ? p_##name args : (unloaded); }
#define STCU_DRIVER_WRAPPER(name, sym, alt, params, args) \
    STCU_WRAPPER(CUresult, STCU_CUDA_NOT_LOADED, name, params, args)
#define STCU_NVRTC_WRAPPER(name, sym, alt, params, args) \
    STCU_WRAPPER(nvrtcResult, STCU_NVRTC_NOT_LOADED, name, params, args)
#define STCU_CUBLAS_WRAPPER(name, sym, alt, params, args) \
    STCU_WRAPPER(cublasStatus_t, STCU_CUBLAS_NOT_LOADED, name, params, args)
STCU_DRIVER_CALLS(STCU_DRIVER_WRAPPER)
STCU_GRAPH_CALLS(STCU_DRIVER_WRAPPER)
STCU_NVRTC_CALLS(STCU_NVRTC_WRAPPER)
STCU_CUBLAS_CALLS(STCU_CUBLAS_WRAPPER)

CUresult stcu_cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags) {
    if (p_cuGraphInstantiateWithFlags) return p_cuGraphInstantiateWithFlags(phGraphExec, hGraph, flags);
    if (p_cuGraphInstantiateLegacy) {
        if (flags != 0) return CUDA_ERROR_NOT_SUPPORTED;
        return p_cuGraphInstantiateLegacy(phGraphExec, hGraph, NULL, NULL, 0);
    }
    return STCU_CUDA_NOT_LOADED;
}

const char *stcu_nvrtcGetErrorString(nvrtcResult result) {
    return p_nvrtcGetErrorString ? p_nvrtcGetErrorString(result) : "NVRTC is not loaded";
}
const char *stcu_cublasGetStatusString(cublasStatus_t status) {
    return p_cublasGetStatusString ? p_cublasGetStatusString(status) : NULL;
}
size_t stcu_cudnnGetVersion(void) { return p_cudnnGetVersion ? p_cudnnGetVersion() : 0; }
const char *stcu_cudnnGetErrorString(cudnnStatus_t status) {
    return p_cudnnGetErrorString ? p_cudnnGetErrorString(status) : "cuDNN is not loaded";
}

// MARK: - Symbol tables

struct stcu_symbol {
    const char *name;        // tried first
    const char *alternative; // tried when `name` is absent (NULL: none)
    void **slot;
    int optional;
};

#define STCU_ENTRY(name, sym, alt, params, args) {sym, alt, (void **)&p_##name, 0},
static const struct stcu_symbol driver_symbols[] = {STCU_DRIVER_CALLS(STCU_ENTRY)};
#define STCU_OPTIONAL_ENTRY(name, sym, alt, params, args) {sym, alt, (void **)&p_##name, 1},
static const struct stcu_symbol graph_symbols[] = {
    STCU_GRAPH_CALLS(STCU_OPTIONAL_ENTRY){"cuGraphInstantiateWithFlags", NULL, (void **)&p_cuGraphInstantiateWithFlags, 1},
    {"cuGraphInstantiate_v2", NULL, (void **)&p_cuGraphInstantiateLegacy, 1},
};
static const struct stcu_symbol nvrtc_symbols[] = {
    STCU_NVRTC_CALLS(STCU_ENTRY){"nvrtcGetErrorString", NULL, (void **)&p_nvrtcGetErrorString, 0},
};
static const struct stcu_symbol cublas_symbols[] = {
    STCU_CUBLAS_CALLS(STCU_ENTRY){"cublasGetStatusString", NULL, (void **)&p_cublasGetStatusString, 1},
};
static const struct stcu_symbol cudnn_symbols[] = {
    {"cudnnGetVersion", NULL, (void **)&p_cudnnGetVersion, 0},
    {"cudnnGetErrorString", NULL, (void **)&p_cudnnGetErrorString, 0},
};
#define STCU_COUNT(a) (sizeof(a) / sizeof *(a))

static void unbind(const struct stcu_symbol *table, size_t n) {
    for (size_t i = 0; i < n; i++) *table[i].slot = NULL;
}

/// Binds every entry of `table` from `lib`; on a missing required symbol, unbinds the table and says
/// which in `err`.
static int bind_symbols(void *lib, const char *soname, const struct stcu_symbol *table, size_t n, char *err, size_t errlen) {
    for (size_t i = 0; i < n; i++) {
        void *f = dlsym(lib, table[i].name);
        if (!f && table[i].alternative) f = dlsym(lib, table[i].alternative);
        *table[i].slot = f;
        if (!f && !table[i].optional) {
            if (table[i].alternative)
                snprintf(err, errlen, "%s missing symbol %s (and %s)", soname, table[i].name, table[i].alternative);
            else
                snprintf(err, errlen, "%s missing symbol %s", soname, table[i].name);
            unbind(table, n);
            return 0;
        }
    }
    return 1;
}

// MARK: - Library state

struct stcu_library {
    pthread_once_t once;
    int status;      // 0 = loaded
    char err[1024];  // the first call's reason, handed to later calls
    char path[4096]; // what was loaded ("" when not)
    void *handle;
};

static struct stcu_library lib_driver = {PTHREAD_ONCE_INIT, 1, "", "", NULL};
static struct stcu_library lib_nvrtc = {PTHREAD_ONCE_INIT, 1, "", "", NULL};
static struct stcu_library lib_cublas = {PTHREAD_ONCE_INIT, 1, "", "", NULL};
static struct stcu_library lib_cudnn = {PTHREAD_ONCE_INIT, 1, "", "", NULL};
static struct stcu_library lib_nccl = {PTHREAD_ONCE_INIT, 1, "", "", NULL};
static char cublaslt_path[4096];

/// The path the loader resolved for `handle` (a soname lookup yields the file it found).
static void record_path(void *handle, char *out, size_t outlen) {
    struct link_map *map = NULL;
    out[0] = '\0';
    if (handle && dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && map->l_name[0]) {
        snprintf(out, outlen, "%s", map->l_name);
        char *resolved = realpath(out, NULL);
        if (resolved) {
            snprintf(out, outlen, "%s", resolved);
            free(resolved);
        }
    }
}

static int result(struct stcu_library *lib, char *err, size_t errlen) {
    if (err && errlen > 0) snprintf(err, errlen, "%s", lib->status == 0 ? "" : lib->err);
    return lib->status;
}

// MARK: - Search
//
// Places, in order: (1) each folder of SWIFTTORCH_CUDA_PATH; (2) the loader by bare soname
// (LD_LIBRARY_PATH, ld.so.cache); (3) $CUDA_HOME/lib64, $CUDA_PATH/lib64, /usr/local/cuda/lib64,
// /usr/local/cuda/targets/<arch>-linux/lib, the distribution's multiarch folder, $CONDA_PREFIX/lib;
// (4) pip's NVIDIA wheels: nvidia/*/lib under the usual site-packages roots (CUDA 13 wheels'
// nvidia/cu13/lib, CUDA 12 wheels' nvidia/cuda_nvrtc/lib, nvidia/cublas/lib, nvidia/cudnn/lib).

#if defined(__aarch64__)
#define STCU_TARGET_LIB "/usr/local/cuda/targets/sbsa-linux/lib"
#define STCU_MULTIARCH_LIB "/usr/lib/aarch64-linux-gnu"
#else
#define STCU_TARGET_LIB "/usr/local/cuda/targets/x86_64-linux/lib"
#define STCU_MULTIARCH_LIB "/usr/lib/x86_64-linux-gnu"
#endif

/// Tries to open the library in one place (`dir` NULL: through the loader by soname). Returns 1 when
/// it is open. A file that exists but fails to open leaves the loader's message in `diag` (the first
/// such message is kept).
typedef int (*stcu_opener)(const char *dir, void *ctx, char *diag, size_t diaglen);

static void note_failure(char *diag, size_t diaglen) {
    const char *e = dlerror();
    if (diag[0] == '\0' && e && !strstr(e, "No such file or directory")) snprintf(diag, diaglen, "%s", e);
}

/// dlopen of `name` in `dir` (or by soname), silently skipping a file that is not there.
static void *open_in(const char *dir, const char *name, int flags, char *diag, size_t diaglen) {
    char path[4096];
    if (dir) {
        if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) return NULL;
        if (access(path, F_OK) != 0) return NULL;
    }
    void *h = dlopen(dir ? path : name, flags);
    if (!h) note_failure(diag, diaglen);
    return h;
}

static int try_glob(const char *pattern, stcu_opener open, void *ctx, char *diag, size_t diaglen) {
    glob_t g;
    int found = 0;
    if (glob(pattern, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc && !found; i++) found = open(g.gl_pathv[i], ctx, diag, diaglen);
    }
    globfree(&g);
    return found;
}

/// Tries `folder` + `suffix` when the environment variable `var` is set and non-empty.
static int try_env_folder(const char *var, const char *suffix, int is_glob, stcu_opener open, void *ctx, char *diag,
                          size_t diaglen) {
    const char *base = getenv(var);
    char dir[4096];
    if (!base || !base[0]) return 0;
    if (snprintf(dir, sizeof dir, "%s%s", base, suffix) >= (int)sizeof dir) return 0;
    return is_glob ? try_glob(dir, open, ctx, diag, diaglen) : open(dir, ctx, diag, diaglen);
}

static int search(stcu_opener open, void *ctx, char *diag, size_t diaglen) {
    diag[0] = '\0';
    // 1. SWIFTTORCH_CUDA_PATH.
    const char *user = getenv("SWIFTTORCH_CUDA_PATH");
    if (user) {
        const char *p = user;
        while (*p) {
            const char *end = strchr(p, ':');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            if (len > 0 && len < 4096) {
                char dir[4096];
                memcpy(dir, p, len);
                dir[len] = '\0';
                if (open(dir, ctx, diag, diaglen)) return 1;
            }
            if (!end) break;
            p = end + 1;
        }
    }
    // 2. The loader's own paths.
    if (open(NULL, ctx, diag, diaglen)) return 1;
    // 3. The toolkit's and the distribution's folders.
    if (try_env_folder("CUDA_HOME", "/lib64", 0, open, ctx, diag, diaglen)) return 1;
    if (try_env_folder("CUDA_PATH", "/lib64", 0, open, ctx, diag, diaglen)) return 1;
    static const char *const fixed[] = {"/usr/local/cuda/lib64", STCU_TARGET_LIB, STCU_MULTIARCH_LIB};
    for (size_t i = 0; i < STCU_COUNT(fixed); i++)
        if (open(fixed[i], ctx, diag, diaglen)) return 1;
    if (try_env_folder("CONDA_PREFIX", "/lib", 0, open, ctx, diag, diaglen)) return 1;
    // 4. pip's NVIDIA wheels.
    static const struct { const char *var, *suffix; } env_roots[] = {
        {"VIRTUAL_ENV", "/lib/python3*/site-packages/nvidia/*/lib"},
        {"CONDA_PREFIX", "/lib/python3*/site-packages/nvidia/*/lib"},
        {"HOME", "/.local/lib/python3*/site-packages/nvidia/*/lib"},
        {"HOME", "/.pyenv/versions/*/lib/python3*/site-packages/nvidia/*/lib"},
    };
    for (size_t i = 0; i < STCU_COUNT(env_roots); i++)
        if (try_env_folder(env_roots[i].var, env_roots[i].suffix, 1, open, ctx, diag, diaglen)) return 1;
    static const char *const fixed_roots[] = {
        "/usr/local/lib/python3*/dist-packages/nvidia/*/lib",
        "/usr/local/lib/python3*/site-packages/nvidia/*/lib",
        "/usr/lib/python3/dist-packages/nvidia/*/lib",
        "/opt/conda/lib/python3*/site-packages/nvidia/*/lib",
    };
    for (size_t i = 0; i < STCU_COUNT(fixed_roots); i++)
        if (try_glob(fixed_roots[i], open, ctx, diag, diaglen)) return 1;
    return 0;
}

#define STCU_PLACES "SWIFTTORCH_CUDA_PATH, the loader's paths, /usr/local/cuda/lib64 or pip's nvidia/*/lib folders"

/// One library of a few sonames, newest first: the opener of NVRTC and cuDNN.
struct stcu_single {
    const char *const *sonames;
    size_t count;
    void *handle;
    const char *soname; // the one that opened
};

static int open_single(const char *dir, void *ctx, char *diag, size_t diaglen) {
    struct stcu_single *s = ctx;
    for (size_t i = 0; i < s->count; i++) {
        void *h = open_in(dir, s->sonames[i], RTLD_NOW | RTLD_LOCAL, diag, diaglen);
        if (h) {
            s->handle = h;
            s->soname = s->sonames[i];
            return 1;
        }
    }
    return 0;
}

/// Loads with `s`, binds `table` and fills `lib`. `what` names the sonames in messages.
static void load_single(struct stcu_library *lib, struct stcu_single *s, const char *what,
                        const struct stcu_symbol *table, size_t n) {
    char diag[768]; // leaves room in lib->err for the text around it
    if (!search(open_single, s, diag, sizeof diag)) {
        if (diag[0])
            snprintf(lib->err, sizeof lib->err, "%s could not be loaded: %s", what, diag);
        else
            snprintf(lib->err, sizeof lib->err, "%s not found in %s", what, STCU_PLACES);
        return;
    }
    if (!bind_symbols(s->handle, s->soname, table, n, lib->err, sizeof lib->err)) {
        dlclose(s->handle);
        return;
    }
    lib->handle = s->handle;
    record_path(s->handle, lib->path, sizeof lib->path);
    lib->status = 0;
}

/// Closes a library that loaded but lacks calls the backend needs (its message stays in `lib->err`).
static void unload(struct stcu_library *lib) {
    dlclose(lib->handle);
    lib->handle = NULL;
    lib->path[0] = '\0';
    lib->status = 1;
}

// MARK: - Driver

static void load_driver_once(void) {
    struct stcu_library *lib = &lib_driver;
    // Only through the loader: the user-space driver must match the kernel module.
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        if (!e || strstr(e, "No such file or directory"))
            snprintf(lib->err, sizeof lib->err, "libcuda.so.1 not found (the NVIDIA driver is not installed)");
        else
            snprintf(lib->err, sizeof lib->err, "libcuda.so.1 could not be loaded: %s", e);
        return;
    }
    if (!bind_symbols(h, "libcuda.so.1", driver_symbols, STCU_COUNT(driver_symbols), lib->err, sizeof lib->err)) {
        dlclose(h);
        return;
    }
    char ignored[8]; // every graph symbol is optional: binding cannot fail
    (void)bind_symbols(h, "libcuda.so.1", graph_symbols, STCU_COUNT(graph_symbols), ignored, sizeof ignored);
    lib->handle = h;
    record_path(h, lib->path, sizeof lib->path);
    lib->status = 0;
}

int stcu_load_driver(char *err, size_t errlen) {
    pthread_once(&lib_driver.once, load_driver_once);
    return result(&lib_driver, err, errlen);
}

int stcu_graphs_supported(char *err, size_t errlen) {
    char why[1100];
    why[0] = '\0';
    if (stcu_load_driver(why, sizeof why) != 0) {
        if (err && errlen > 0) snprintf(err, errlen, "%s", why);
        return 0;
    }
    const char *missing = NULL;
    for (size_t i = 0; i < STCU_COUNT(graph_symbols) && !missing; i++) {
        // cuThreadExchangeStreamCaptureMode only widens what may run during capture; the instantiation has two forms.
        if (graph_symbols[i].slot == (void **)&p_cuThreadExchangeStreamCaptureMode) continue;
        if (graph_symbols[i].slot == (void **)&p_cuGraphInstantiateWithFlags ||
            graph_symbols[i].slot == (void **)&p_cuGraphInstantiateLegacy) continue;
        if (!*graph_symbols[i].slot) missing = graph_symbols[i].name;
    }
    if (!missing && !p_cuGraphInstantiateWithFlags && !p_cuGraphInstantiateLegacy)
        missing = "cuGraphInstantiateWithFlags (and cuGraphInstantiate_v2)";
    if (err && errlen > 0) {
        if (missing) snprintf(err, errlen, "libcuda.so.1 has no %s (CUDA graphs need a CUDA 11.4+ driver)", missing);
        else err[0] = '\0';
    }
    return missing == NULL;
}

// MARK: - NVRTC

/// NVRTC dlopens libnvrtc-builtins.so.<major>.<minor> by soname when it compiles, which fails when
/// libnvrtc came from a folder off the loader's paths (pip's wheels, SWIFTTORCH_CUDA_PATH). Loading it
/// beforehand from libnvrtc's own folder makes that lookup find the library already loaded.
static void preload_nvrtc_builtins(void) {
    int major = 0, minor = 0;
    char dir[4096], path[4096 + 64];
    if (!p_nvrtcVersion || p_nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return;
    snprintf(dir, sizeof dir, "%s", lib_nvrtc.path);
    char *slash = strrchr(dir, '/');
    if (!slash) return;
    *slash = '\0';
    snprintf(path, sizeof path, "%s/libnvrtc-builtins.so.%d.%d", dir, major, minor);
    if (access(path, F_OK) != 0) return; // not beside libnvrtc: left to the loader's paths
    if (!dlopen(path, RTLD_NOW | RTLD_GLOBAL)) (void)dlerror();
}

static void load_nvrtc_once(void) {
    static const char *const sonames[] = {"libnvrtc.so.13", "libnvrtc.so.12"};
    struct stcu_single s = {sonames, STCU_COUNT(sonames), NULL, NULL};
    load_single(&lib_nvrtc, &s, "libnvrtc.so.13/.so.12", nvrtc_symbols, STCU_COUNT(nvrtc_symbols));
    if (lib_nvrtc.status == 0) preload_nvrtc_builtins();
}

int stcu_load_nvrtc(char *err, size_t errlen) {
    pthread_once(&lib_nvrtc.once, load_nvrtc_once);
    return result(&lib_nvrtc, err, errlen);
}

// MARK: - cuBLAS

struct stcu_cublas_pair {
    void *blas, *lt;
    const char *soname, *lt_soname;
};

/// libcublasLt.so.N from the same place first (RTLD_GLOBAL, so that libcublas.so.N's dependency on
/// it is met even when the folder is not on the loader's paths), then libcublas.so.N.
static int open_cublas(const char *dir, void *ctx, char *diag, size_t diaglen) {
    static const char *const blas[] = {"libcublas.so.13", "libcublas.so.12"};
    static const char *const lt[] = {"libcublasLt.so.13", "libcublasLt.so.12"};
    struct stcu_cublas_pair *pair = ctx;
    for (size_t i = 0; i < STCU_COUNT(blas); i++) {
        void *l = open_in(dir, lt[i], RTLD_NOW | RTLD_GLOBAL, diag, diaglen);
        void *b = open_in(dir, blas[i], RTLD_NOW | RTLD_LOCAL, diag, diaglen);
        if (b) {
            pair->blas = b;
            pair->lt = l;
            pair->soname = blas[i];
            pair->lt_soname = lt[i];
            return 1;
        }
        if (l) dlclose(l);
    }
    return 0;
}

static void load_cublas_once(void) {
    struct stcu_library *lib = &lib_cublas;
    struct stcu_cublas_pair pair = {NULL, NULL, NULL, NULL};
    char diag[768]; // leaves room in lib->err for the text around it
    if (!search(open_cublas, &pair, diag, sizeof diag)) {
        if (diag[0])
            snprintf(lib->err, sizeof lib->err, "libcublas.so.13/.so.12 could not be loaded: %s", diag);
        else
            snprintf(lib->err, sizeof lib->err, "libcublas.so.13/.so.12 not found in %s", STCU_PLACES);
        return;
    }
    if (!bind_symbols(pair.blas, pair.soname, cublas_symbols, STCU_COUNT(cublas_symbols), lib->err, sizeof lib->err)) {
        dlclose(pair.blas);
        if (pair.lt) dlclose(pair.lt);
        return;
    }
    lib->handle = pair.blas;
    record_path(pair.blas, lib->path, sizeof lib->path);
    // The libcublasLt libcublas actually uses (ours, or the one its own dependency lookup found).
    void *lt = dlopen(pair.lt_soname, RTLD_NOW | RTLD_NOLOAD);
    if (lt) {
        record_path(lt, cublaslt_path, sizeof cublaslt_path);
        dlclose(lt); // drops the reference RTLD_NOLOAD took; the library stays loaded
    }
    lib->status = 0;
}

int stcu_load_cublas(char *err, size_t errlen) {
    pthread_once(&lib_cublas.once, load_cublas_once);
    return result(&lib_cublas, err, errlen);
}

// MARK: - cuDNN

static void load_cudnn_once(void) {
    static const char *const sonames[] = {"libcudnn.so.9"};
    struct stcu_single s = {sonames, STCU_COUNT(sonames), NULL, NULL};
    load_single(&lib_cudnn, &s, "libcudnn.so.9", cudnn_symbols, STCU_COUNT(cudnn_symbols));
    // The convolution calls (cudnn.c): a libcudnn.so.9 without them is no use to the backend.
    if (lib_cudnn.status == 0 && !stcu_cudnn_bind(lib_cudnn.handle, lib_cudnn.err, sizeof lib_cudnn.err)) {
        unbind(cudnn_symbols, STCU_COUNT(cudnn_symbols));
        unload(&lib_cudnn);
    }
}

int stcu_load_cudnn(char *err, size_t errlen) {
    pthread_once(&lib_cudnn.once, load_cudnn_once);
    return result(&lib_cudnn, err, errlen);
}

// MARK: - NCCL

/// SWIFTTORCH_NCCL_LIBRARY (a file) when set, else libnccl.so.2 where the CUDA libraries are searched for; pip's
/// nvidia/nccl/lib, where PyTorch's CUDA wheels put it, is one of those places. Loading needs no GPU.
static void load_nccl_once(void) {
    const char *explicit_path = getenv("SWIFTTORCH_NCCL_LIBRARY");
    if (explicit_path && explicit_path[0]) {
        void *h = dlopen(explicit_path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *e = dlerror();
            snprintf(lib_nccl.err, sizeof lib_nccl.err, "SWIFTTORCH_NCCL_LIBRARY=%s could not be loaded: %s", explicit_path,
                     e ? e : "unknown error");
            return;
        }
        if (!stcu_nccl_bind(h, lib_nccl.err, sizeof lib_nccl.err)) {
            dlclose(h);
            return;
        }
        lib_nccl.handle = h;
        record_path(h, lib_nccl.path, sizeof lib_nccl.path);
        lib_nccl.status = 0;
        return;
    }
    static const char *const sonames[] = {"libnccl.so.2"};
    struct stcu_single s = {sonames, STCU_COUNT(sonames), NULL, NULL};
    load_single(&lib_nccl, &s, "libnccl.so.2", NULL, 0);
    if (lib_nccl.status == 0 && !stcu_nccl_bind(lib_nccl.handle, lib_nccl.err, sizeof lib_nccl.err)) unload(&lib_nccl);
}

int stcu_load_nccl(char *err, size_t errlen) {
    pthread_once(&lib_nccl.once, load_nccl_once);
    return result(&lib_nccl, err, errlen);
}

const char *stcu_nccl_path(void) { return lib_nccl.status == 0 && lib_nccl.path[0] ? lib_nccl.path : NULL; }

// MARK: - Paths and messages

const char *stcu_library_path(int which) {
    const char *p = NULL;
    switch (which) {
    case STCU_LIB_DRIVER: p = lib_driver.status == 0 ? lib_driver.path : NULL; break;
    case STCU_LIB_NVRTC: p = lib_nvrtc.status == 0 ? lib_nvrtc.path : NULL; break;
    case STCU_LIB_CUBLAS: p = lib_cublas.status == 0 ? lib_cublas.path : NULL; break;
    case STCU_LIB_CUBLASLT: p = lib_cublas.status == 0 ? cublaslt_path : NULL; break;
    case STCU_LIB_CUDNN: p = lib_cudnn.status == 0 ? lib_cudnn.path : NULL; break;
    default: break;
    }
    return p && p[0] ? p : NULL;
}

void stcu_error_name(CUresult r, char *buf, size_t n) {
    if (!buf || n == 0) return;
    const char *name = NULL, *text = NULL;
    if (p_cuGetErrorName && p_cuGetErrorName(r, &name) == CUDA_SUCCESS && name) {
        if (p_cuGetErrorString && p_cuGetErrorString(r, &text) == CUDA_SUCCESS && text)
            snprintf(buf, n, "%s: %s", name, text);
        else
            snprintf(buf, n, "%s", name);
        return;
    }
    snprintf(buf, n, "CUDA error %d", r);
}

const char *stcu_cublas_status_name(cublasStatus_t s) {
    if (p_cublasGetStatusString) {
        const char *text = p_cublasGetStatusString(s);
        if (text) return text;
    }
    switch (s) { // cublas_api.h's cublasStatus_t
    case 0: return "CUBLAS_STATUS_SUCCESS";
    case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
    case 7: return "CUBLAS_STATUS_INVALID_VALUE";
    case 8: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case 11: return "CUBLAS_STATUS_MAPPING_ERROR";
    case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case 16: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: break;
    }
    static _Thread_local char unknown[32];
    snprintf(unknown, sizeof unknown, "cuBLAS status %d", s);
    return unknown;
}
