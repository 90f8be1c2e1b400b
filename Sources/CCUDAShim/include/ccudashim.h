// CCUDAShim: the CUDA driver, NVRTC, cuBLAS(Lt) and cuDNN calls SwiftTorch's CUDA backend uses,
// resolved at run time from libraries loaded with dlopen, so the package builds and tests with no
// CUDA toolkit, header or library installed. Only the types, constants and calls the backend uses
// are declared here, written from the documented signatures (no CUDA header is included).
//
// Each wrapper is `stcu_` + the CUDA name without any `_v2` suffix and has the documented signature;
// the shim binds whichever versioned symbol the real ABI exports (cuMemAlloc_v2, cublasSgemm_v2, ...).
// A wrapper called before its library is loaded, or whose symbol was missing, returns the
// STCU_*_NOT_LOADED status of its library instead of crashing.
#ifndef CCUDASHIM_H
#define CCUDASHIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// MARK: Driver types and constants (cuda.h)

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
/// CUdevice_attribute (an enum in cuda.h; int-sized in the C ABI).
typedef int CUdevice_attribute;
/// CUfunction_attribute (an enum in cuda.h; int-sized in the C ABI).
typedef int CUfunction_attribute;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraphNode_st *CUgraphNode;
/// CUstreamCaptureMode and CUstreamCaptureStatus (enums in cuda.h; int-sized in the C ABI).
typedef int CUstreamCaptureMode;
typedef int CUstreamCaptureStatus;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_NOT_SUPPORTED 801
#define CUDA_ERROR_ILLEGAL_STATE 401
/// cudaErrorStreamCaptureUnsupported's driver twin: "operation not permitted when stream is capturing".
#define CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED 900
/// The capture was invalidated by an earlier refused operation; cuStreamEndCapture returns it.
#define CUDA_ERROR_STREAM_CAPTURE_INVALIDATED 901

#define CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK 1
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76

#define CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK 0
#define CU_FUNC_ATTRIBUTE_NUM_REGS 4

#define CU_MEMHOSTALLOC_PORTABLE 1
#define CU_EVENT_DEFAULT 0
#define CU_EVENT_DISABLE_TIMING 2
#define CU_STREAM_NON_BLOCKING 1

#define CU_STREAM_CAPTURE_MODE_GLOBAL 0
#define CU_STREAM_CAPTURE_MODE_THREAD_LOCAL 1
#define CU_STREAM_CAPTURE_MODE_RELAXED 2
#define CU_STREAM_CAPTURE_STATUS_NONE 0
#define CU_STREAM_CAPTURE_STATUS_ACTIVE 1
#define CU_STREAM_CAPTURE_STATUS_INVALIDATED 2

// MARK: NVRTC types and constants (nvrtc.h)

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

#define NVRTC_SUCCESS 0
#define NVRTC_ERROR_COMPILATION 6
#define NVRTC_ERROR_BUILTIN_OPERATION_FAILURE 7

// MARK: cuBLAS types and constants (cublas_api.h, library_types.h)

typedef int cublasStatus_t;
typedef struct cublasContext *cublasHandle_t;
typedef int cublasOperation_t;
typedef int cublasMath_t;
typedef int cudaDataType;
typedef int cublasComputeType_t;
typedef int cublasGemmAlgo_t;

#define CUBLAS_STATUS_SUCCESS 0
#define CUBLAS_STATUS_NOT_INITIALIZED 1

#define CUBLAS_OP_N 0
#define CUBLAS_OP_T 1
#define CUBLAS_OP_C 2

#define CUBLAS_DEFAULT_MATH 0
#define CUBLAS_TF32_TENSOR_OP_MATH 3
#define CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION 16

#define CUDA_R_32F 0
#define CUDA_R_64F 1
#define CUDA_R_16F 2
#define CUDA_R_16BF 14

#define CUBLAS_COMPUTE_32F 68
#define CUBLAS_COMPUTE_32F_FAST_TF32 77
#define CUBLAS_COMPUTE_64F 70

#define CUBLAS_GEMM_DEFAULT (-1)

// MARK: cuDNN types (cudnn_graph.h)

typedef int cudnnStatus_t;
#define CUDNN_STATUS_SUCCESS 0
#define CUDNN_STATUS_NOT_INITIALIZED 1001

// MARK: What a wrapper returns when its library is not loaded or its symbol was missing

#define STCU_CUDA_NOT_LOADED CUDA_ERROR_NOT_INITIALIZED
#define STCU_NVRTC_NOT_LOADED NVRTC_ERROR_BUILTIN_OPERATION_FAILURE
#define STCU_CUBLAS_NOT_LOADED CUBLAS_STATUS_NOT_INITIALIZED
#define STCU_CUDNN_NOT_LOADED CUDNN_STATUS_NOT_INITIALIZED

// MARK: Loading

enum { STCU_LIB_DRIVER = 0, STCU_LIB_NVRTC = 1, STCU_LIB_CUBLAS = 2, STCU_LIB_CUBLASLT = 3, STCU_LIB_CUDNN = 4 };

/// Loads libcuda.so.1 through the loader only (it must match the kernel module) and binds the
/// driver calls. Returns 0, or non-zero with a one-line reason in `err` (always NUL-terminated when
/// errlen > 0). Idempotent and thread-safe: later calls return the first call's result and reason.
int stcu_load_driver(char *err, size_t errlen);
/// Loads libnvrtc.so.13, else .so.12, searching (1) each folder of SWIFTTORCH_CUDA_PATH
/// (colon-separated), (2) the loader's paths, (3) /usr/local/cuda/lib64,
/// /usr/local/cuda/targets/x86_64-linux/lib, /usr/lib/x86_64-linux-gnu, (4) pip's nvidia/*/lib
/// folders under the usual site-packages roots; in each place the newer soname first.
/// Same contract as stcu_load_driver.
int stcu_load_nvrtc(char *err, size_t errlen);
/// Loads libcublas.so.13, else .so.12, after libcublasLt of the same version from the same place
/// (RTLD_GLOBAL, so libcublas's dependency resolves off the loader's paths). Search as NVRTC's.
int stcu_load_cublas(char *err, size_t errlen);
/// Loads libcudnn.so.9 (search as NVRTC's) and binds cudnnGetVersion, cudnnGetErrorString and the
/// convolution calls of stcu_cudnn.h (all required).
int stcu_load_cudnn(char *err, size_t errlen);
/// The full path of the library actually loaded (STCU_LIB_*), or NULL when it is not loaded.
const char *stcu_library_path(int which);

/// "CUDA_ERROR_OUT_OF_MEMORY: out of memory" through cuGetErrorName/cuGetErrorString when the
/// driver is loaded and knows the code, else "CUDA error <r>". Always NUL-terminated when n > 0.
void stcu_error_name(CUresult r, char *buf, size_t n);
/// "CUBLAS_STATUS_..." for a cuBLAS status: cublasGetStatusString when bound, else the shim's own
/// table of the documented codes, else "cuBLAS status <s>" (in a thread-local buffer).
const char *stcu_cublas_status_name(cublasStatus_t s);

// MARK: Driver (libcuda.so.1)

CUresult stcu_cuInit(unsigned int flags);
CUresult stcu_cuDriverGetVersion(int *driverVersion);
CUresult stcu_cuDeviceGetCount(int *count);
CUresult stcu_cuDeviceGet(CUdevice *device, int ordinal);
CUresult stcu_cuDeviceGetName(char *name, int len, CUdevice dev);
CUresult stcu_cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev);
CUresult stcu_cuDeviceTotalMem(size_t *bytes, CUdevice dev);
CUresult stcu_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
CUresult stcu_cuDevicePrimaryCtxRelease(CUdevice dev);
CUresult stcu_cuCtxSetCurrent(CUcontext ctx);
CUresult stcu_cuCtxGetCurrent(CUcontext *pctx);
CUresult stcu_cuCtxSynchronize(void);
CUresult stcu_cuStreamCreate(CUstream *phStream, unsigned int flags);
CUresult stcu_cuStreamSynchronize(CUstream hStream);
CUresult stcu_cuStreamDestroy(CUstream hStream);
CUresult stcu_cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int flags);
CUresult stcu_cuMemAlloc(CUdeviceptr *dptr, size_t bytesize);
CUresult stcu_cuMemFree(CUdeviceptr dptr);
CUresult stcu_cuMemGetInfo(size_t *free, size_t *total);
CUresult stcu_cuMemAllocHost(void **pp, size_t bytesize);
CUresult stcu_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags);
CUresult stcu_cuMemFreeHost(void *p);
CUresult stcu_cuMemHostRegister(void *p, size_t bytesize, unsigned int flags);
CUresult stcu_cuMemHostUnregister(void *p);
CUresult stcu_cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost, size_t byteCount, CUstream hStream);
CUresult stcu_cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t byteCount, CUstream hStream);
CUresult stcu_cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t byteCount, CUstream hStream);
CUresult stcu_cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
                                size_t byteCount, CUstream hStream);
CUresult stcu_cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev);
CUresult stcu_cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int flags);
CUresult stcu_cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t n, CUstream hStream);
CUresult stcu_cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t n, CUstream hStream);
CUresult stcu_cuModuleLoadData(CUmodule *module, const void *image);
CUresult stcu_cuModuleUnload(CUmodule hmod);
CUresult stcu_cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name);
CUresult stcu_cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                             unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                             unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra);
CUresult stcu_cuEventCreate(CUevent *phEvent, unsigned int flags);
CUresult stcu_cuEventRecord(CUevent hEvent, CUstream hStream);
CUresult stcu_cuEventSynchronize(CUevent hEvent);
/// cuEventElapsedTime_v2 where the driver has it (CUDA 12.8+; the only one in CUDA 13), else cuEventElapsedTime.
CUresult stcu_cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
CUresult stcu_cuEventDestroy(CUevent hEvent);
CUresult stcu_cuGetErrorName(CUresult error, const char **pStr);
CUresult stcu_cuGetErrorString(CUresult error, const char **pStr);
CUresult stcu_cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc);

// MARK: Driver: CUDA graphs (optional symbols; see stcu_graphs_supported)

/// cuStreamBeginCapture_v2 (the form with a capture mode, CUDA 10.1+).
CUresult stcu_cuStreamBeginCapture(CUstream hStream, CUstreamCaptureMode mode);
CUresult stcu_cuStreamEndCapture(CUstream hStream, CUgraph *phGraph);
CUresult stcu_cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus);
/// cuGraphInstantiateWithFlags (CUDA 11.4+); on an older driver cuGraphInstantiate_v2 (no error node or log
/// kept), which takes no flags: `flags` must then be 0.
CUresult stcu_cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags);
CUresult stcu_cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream);
CUresult stcu_cuGraphExecDestroy(CUgraphExec hGraphExec);
CUresult stcu_cuGraphDestroy(CUgraph hGraph);
/// Sets the calling thread's capture interaction mode, returning the old one in *mode (CUDA 10.1+).
CUresult stcu_cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode);
/// 1 when the driver is loaded and exports the calls CUDA graphs need, else 0 with the missing symbol in `err`
/// (always NUL-terminated when errlen > 0).
int stcu_graphs_supported(char *err, size_t errlen);

// MARK: NVRTC (libnvrtc.so.13 / .so.12)

nvrtcResult stcu_nvrtcVersion(int *major, int *minor);
/// The library's message, or "NVRTC is not loaded" before stcu_load_nvrtc succeeded.
const char *stcu_nvrtcGetErrorString(nvrtcResult result);
nvrtcResult stcu_nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name, int numHeaders,
                                    const char *const *headers, const char *const *includeNames);
nvrtcResult stcu_nvrtcDestroyProgram(nvrtcProgram *prog);
nvrtcResult stcu_nvrtcCompileProgram(nvrtcProgram prog, int numOptions, const char *const *options);
nvrtcResult stcu_nvrtcGetProgramLogSize(nvrtcProgram prog, size_t *logSizeRet);
nvrtcResult stcu_nvrtcGetProgramLog(nvrtcProgram prog, char *log);
nvrtcResult stcu_nvrtcGetCUBINSize(nvrtcProgram prog, size_t *cubinSizeRet);
nvrtcResult stcu_nvrtcGetCUBIN(nvrtcProgram prog, char *cubin);
nvrtcResult stcu_nvrtcGetPTXSize(nvrtcProgram prog, size_t *ptxSizeRet);
nvrtcResult stcu_nvrtcGetPTX(nvrtcProgram prog, char *ptx);
nvrtcResult stcu_nvrtcGetNumSupportedArchs(int *numArchs);
nvrtcResult stcu_nvrtcGetSupportedArchs(int *supportedArchs);

// MARK: cuBLAS (libcublas.so.13 / .so.12)

cublasStatus_t stcu_cublasCreate(cublasHandle_t *handle);
cublasStatus_t stcu_cublasDestroy(cublasHandle_t handle);
cublasStatus_t stcu_cublasSetStream(cublasHandle_t handle, CUstream streamId);
cublasStatus_t stcu_cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
cublasStatus_t stcu_cublasGetVersion(cublasHandle_t handle, int *version);
cublasStatus_t stcu_cublasSetWorkspace(cublasHandle_t handle, void *workspace, size_t workspaceSizeInBytes);
cublasStatus_t stcu_cublasSgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                int n, int k, const float *alpha, const float *A, int lda, const float *B, int ldb,
                                const float *beta, float *C, int ldc);
cublasStatus_t stcu_cublasDgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                int n, int k, const double *alpha, const double *A, int lda, const double *B,
                                int ldb, const double *beta, double *C, int ldc);
cublasStatus_t stcu_cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                 int n, int k, const void *alpha, const void *A, cudaDataType Atype, int lda,
                                 const void *B, cudaDataType Btype, int ldb, const void *beta, void *C,
                                 cudaDataType Ctype, int ldc, cublasComputeType_t computeType, cublasGemmAlgo_t algo);
cublasStatus_t stcu_cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                              cublasOperation_t transb, int m, int n, int k, const float *alpha,
                                              const float *A, int lda, long long strideA, const float *B, int ldb,
                                              long long strideB, const float *beta, float *C, int ldc,
                                              long long strideC, int batchCount);
cublasStatus_t stcu_cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                              cublasOperation_t transb, int m, int n, int k, const double *alpha,
                                              const double *A, int lda, long long strideA, const double *B, int ldb,
                                              long long strideB, const double *beta, double *C, int ldc,
                                              long long strideC, int batchCount);
cublasStatus_t stcu_cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                               cublasOperation_t transb, int m, int n, int k, const void *alpha,
                                               const void *A, cudaDataType Atype, int lda, long long strideA,
                                               const void *B, cudaDataType Btype, int ldb, long long strideB,
                                               const void *beta, void *C, cudaDataType Ctype, int ldc,
                                               long long strideC, int batchCount, cublasComputeType_t computeType,
                                               cublasGemmAlgo_t algo);
/// The library's string when the symbol exists (optional; cuBLAS 11.4.2+), else NULL.
const char *stcu_cublasGetStatusString(cublasStatus_t status);

// MARK: cuDNN (libcudnn.so.9)

/// cudnnGetVersion(), or 0 before stcu_load_cudnn succeeded.
size_t stcu_cudnnGetVersion(void);
/// The library's message, or "cuDNN is not loaded" before stcu_load_cudnn succeeded.
const char *stcu_cudnnGetErrorString(cudnnStatus_t status);

#ifdef __cplusplus
}
#endif
#endif
