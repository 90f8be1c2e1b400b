// Run-time binding of cuDNN 9's legacy convolution API (see include/stcu_cudnn.h). stcu_load_cudnn
// (ccudashim.c) opens libcudnn.so.9 and calls stcu_cudnn_bind with it; the wrappers call through the bound
// pointers, or return STCU_CUDNN_NOT_LOADED while a pointer is unbound.
#include "stcu_cudnn.h"

#include <dlfcn.h>
#include <stdio.h>

// The ABI the perf structs must have for cudnn_cnn.h's arrays to line up (LP64: 4+4+4+pad+8+4+4+12 = 48).
_Static_assert(sizeof(stcu_cudnnAlgoPerf) == 48, "cudnnConvolution*AlgoPerf_t is 48 bytes on LP64");

// Each entry: X(name, (parameters), (arguments)); the exported symbol is the name itself (cuDNN 9 has no
// versioned aliases for these).
#define STCU_CUDNN_CALLS(X)                                                                                    \
    X(cudnnCreate, (cudnnHandle_t * handle), (handle))                                                         \
    X(cudnnDestroy, (cudnnHandle_t handle), (handle))                                                          \
    X(cudnnSetStream, (cudnnHandle_t handle, CUstream stream), (handle, stream))                               \
    X(cudnnCreateTensorDescriptor, (cudnnTensorDescriptor_t * tensorDesc), (tensorDesc))                       \
    X(cudnnSetTensorNdDescriptor,                                                                              \
      (cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType, int nbDims, const int dimA[],             \
       const int strideA[]),                                                                                   \
      (tensorDesc, dataType, nbDims, dimA, strideA))                                                           \
    X(cudnnDestroyTensorDescriptor, (cudnnTensorDescriptor_t tensorDesc), (tensorDesc))                        \
    X(cudnnCreateFilterDescriptor, (cudnnFilterDescriptor_t * filterDesc), (filterDesc))                       \
    X(cudnnSetFilterNdDescriptor,                                                                              \
      (cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType, cudnnTensorFormat_t format, int nbDims,   \
       const int filterDimA[]),                                                                                \
      (filterDesc, dataType, format, nbDims, filterDimA))                                                      \
    X(cudnnDestroyFilterDescriptor, (cudnnFilterDescriptor_t filterDesc), (filterDesc))                        \
    X(cudnnCreateConvolutionDescriptor, (cudnnConvolutionDescriptor_t * convDesc), (convDesc))                 \
    X(cudnnSetConvolutionNdDescriptor,                                                                         \
      (cudnnConvolutionDescriptor_t convDesc, int arrayLength, const int padA[], const int filterStrideA[],    \
       const int dilationA[], cudnnConvolutionMode_t mode, cudnnDataType_t computeType),                       \
      (convDesc, arrayLength, padA, filterStrideA, dilationA, mode, computeType))                              \
    X(cudnnSetConvolutionGroupCount, (cudnnConvolutionDescriptor_t convDesc, int groupCount),                  \
      (convDesc, groupCount))                                                                                  \
    X(cudnnSetConvolutionMathType, (cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t mathType),          \
      (convDesc, mathType))                                                                                    \
    X(cudnnDestroyConvolutionDescriptor, (cudnnConvolutionDescriptor_t convDesc), (convDesc))                  \
    X(cudnnGetConvolutionForwardAlgorithm_v7,                                                                  \
      (cudnnHandle_t handle, cudnnTensorDescriptor_t xDesc, cudnnFilterDescriptor_t wDesc,                     \
       cudnnConvolutionDescriptor_t convDesc, cudnnTensorDescriptor_t yDesc, int requestedAlgoCount,           \
       int *returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t *perfResults),                                    \
      (handle, xDesc, wDesc, convDesc, yDesc, requestedAlgoCount, returnedAlgoCount, perfResults))             \
    X(cudnnFindConvolutionForwardAlgorithmEx,                                                                  \
      (cudnnHandle_t handle, cudnnTensorDescriptor_t xDesc, const void *x, cudnnFilterDescriptor_t wDesc,      \
       const void *w, cudnnConvolutionDescriptor_t convDesc, cudnnTensorDescriptor_t yDesc, void *y,           \
       int requestedAlgoCount, int *returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t *perfResults,             \
       void *workSpace, size_t workSpaceSizeInBytes),                                                          \
      (handle, xDesc, x, wDesc, w, convDesc, yDesc, y, requestedAlgoCount, returnedAlgoCount, perfResults,     \
       workSpace, workSpaceSizeInBytes))                                                                       \
    X(cudnnGetConvolutionForwardWorkspaceSize,                                                                 \
      (cudnnHandle_t handle, cudnnTensorDescriptor_t xDesc, cudnnFilterDescriptor_t wDesc,                     \
       cudnnConvolutionDescriptor_t convDesc, cudnnTensorDescriptor_t yDesc, cudnnConvolutionFwdAlgo_t algo,   \
       size_t *sizeInBytes),                                                                                   \
      (handle, xDesc, wDesc, convDesc, yDesc, algo, sizeInBytes))                                              \
    X(cudnnConvolutionForward,                                                                                 \
      (cudnnHandle_t handle, const void *alpha, cudnnTensorDescriptor_t xDesc, const void *x,                  \
       cudnnFilterDescriptor_t wDesc, const void *w, cudnnConvolutionDescriptor_t convDesc,                    \
       cudnnConvolutionFwdAlgo_t algo, void *workSpace, size_t workSpaceSizeInBytes, const void *beta,         \
       cudnnTensorDescriptor_t yDesc, void *y),                                                                \
      (handle, alpha, xDesc, x, wDesc, w, convDesc, algo, workSpace, workSpaceSizeInBytes, beta, yDesc, y))    \
    X(cudnnGetConvolutionBackwardDataAlgorithm_v7,                                                             \
      (cudnnHandle_t handle, cudnnFilterDescriptor_t wDesc, cudnnTensorDescriptor_t dyDesc,                    \
       cudnnConvolutionDescriptor_t convDesc, cudnnTensorDescriptor_t dxDesc, int requestedAlgoCount,          \
       int *returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t *perfResults),                                \
      (handle, wDesc, dyDesc, convDesc, dxDesc, requestedAlgoCount, returnedAlgoCount, perfResults))           \
    X(cudnnFindConvolutionBackwardDataAlgorithmEx,                                                             \
      (cudnnHandle_t handle, cudnnFilterDescriptor_t wDesc, const void *w, cudnnTensorDescriptor_t dyDesc,     \
       const void *dy, cudnnConvolutionDescriptor_t convDesc, cudnnTensorDescriptor_t dxDesc, void *dx,        \
       int requestedAlgoCount, int *returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t *perfResults,         \
       void *workSpace, size_t workSpaceSizeInBytes),                                                          \
      (handle, wDesc, w, dyDesc, dy, convDesc, dxDesc, dx, requestedAlgoCount, returnedAlgoCount, perfResults, \
       workSpace, workSpaceSizeInBytes))                                                                       \
    X(cudnnGetConvolutionBackwardDataWorkspaceSize,                                                            \
      (cudnnHandle_t handle, cudnnFilterDescriptor_t wDesc, cudnnTensorDescriptor_t dyDesc,                    \
       cudnnConvolutionDescriptor_t convDesc, cudnnTensorDescriptor_t dxDesc,                                  \
       cudnnConvolutionBwdDataAlgo_t algo, size_t *sizeInBytes),                                               \
      (handle, wDesc, dyDesc, convDesc, dxDesc, algo, sizeInBytes))                                            \
    X(cudnnConvolutionBackwardData,                                                                            \
      (cudnnHandle_t handle, const void *alpha, cudnnFilterDescriptor_t wDesc, const void *w,                  \
       cudnnTensorDescriptor_t dyDesc, const void *dy, cudnnConvolutionDescriptor_t convDesc,                  \
       cudnnConvolutionBwdDataAlgo_t algo, void *workSpace, size_t workSpaceSizeInBytes, const void *beta,     \
       cudnnTensorDescriptor_t dxDesc, void *dx),                                                              \
      (handle, alpha, wDesc, w, dyDesc, dy, convDesc, algo, workSpace, workSpaceSizeInBytes, beta, dxDesc, dx)) \
    X(cudnnGetConvolutionBackwardFilterAlgorithm_v7,                                                           \
      (cudnnHandle_t handle, cudnnTensorDescriptor_t srcDesc, cudnnTensorDescriptor_t diffDesc,                \
       cudnnConvolutionDescriptor_t convDesc, cudnnFilterDescriptor_t gradDesc, int requestedAlgoCount,        \
       int *returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t *perfResults),                              \
      (handle, srcDesc, diffDesc, convDesc, gradDesc, requestedAlgoCount, returnedAlgoCount, perfResults))     \
    X(cudnnFindConvolutionBackwardFilterAlgorithmEx,                                                           \
      (cudnnHandle_t handle, cudnnTensorDescriptor_t xDesc, const void *x, cudnnTensorDescriptor_t dyDesc,     \
       const void *y, cudnnConvolutionDescriptor_t convDesc, cudnnFilterDescriptor_t dwDesc, void *dw,         \
       int requestedAlgoCount, int *returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t *perfResults,       \
       void *workSpace, size_t workSpaceSizeInBytes),                                                          \
      (handle, xDesc, x, dyDesc, y, convDesc, dwDesc, dw, requestedAlgoCount, returnedAlgoCount, perfResults,  \
       workSpace, workSpaceSizeInBytes))                                                                       \
    X(cudnnGetConvolutionBackwardFilterWorkspaceSize,                                                          \
      (cudnnHandle_t handle, cudnnTensorDescriptor_t xDesc, cudnnTensorDescriptor_t dyDesc,                    \
       cudnnConvolutionDescriptor_t convDesc, cudnnFilterDescriptor_t gradDesc,                                \
       cudnnConvolutionBwdFilterAlgo_t algo, size_t *sizeInBytes),                                             \
      (handle, xDesc, dyDesc, convDesc, gradDesc, algo, sizeInBytes))                                          \
    X(cudnnConvolutionBackwardFilter,                                                                          \
      (cudnnHandle_t handle, const void *alpha, cudnnTensorDescriptor_t xDesc, const void *x,                  \
       cudnnTensorDescriptor_t dyDesc, const void *dy, cudnnConvolutionDescriptor_t convDesc,                  \
       cudnnConvolutionBwdFilterAlgo_t algo, void *workSpace, size_t workSpaceSizeInBytes, const void *beta,   \
       cudnnFilterDescriptor_t dwDesc, void *dw),                                                              \
      (handle, alpha, xDesc, x, dyDesc, dy, convDesc, algo, workSpace, workSpaceSizeInBytes, beta, dwDesc, dw))

#define STCU_CUDNN_POINTER(name, params, args) static cudnnStatus_t(*p_##name) params;
STCU_CUDNN_CALLS(STCU_CUDNN_POINTER)

#define STCU_CUDNN_WRAPPER(name, params, args) \
    cudnnStatus_t stcu_##name params { return p_##name ? p_##name args : STCU_CUDNN_NOT_LOADED; }
STCU_CUDNN_CALLS(STCU_CUDNN_WRAPPER)

// MARK: - Symbol table

struct stcu_cudnn_symbol {
    const char *name;
    void **slot;
};

#define STCU_CUDNN_ENTRY(name, params, args) {#name, (void **)&p_##name},
static const struct stcu_cudnn_symbol cudnn_calls[] = {STCU_CUDNN_CALLS(STCU_CUDNN_ENTRY)};
#define STCU_CUDNN_COUNT ((int)(sizeof cudnn_calls / sizeof *cudnn_calls))

int stcu_cudnn_bind(void *lib, char *err, size_t errlen) {
    for (int i = 0; i < STCU_CUDNN_COUNT; i++) {
        void *f = lib ? dlsym(lib, cudnn_calls[i].name) : NULL;
        if (!f) {
            if (err && errlen > 0) snprintf(err, errlen, "libcudnn.so.9 missing symbol %s", cudnn_calls[i].name);
            for (int j = 0; j < STCU_CUDNN_COUNT; j++) *cudnn_calls[j].slot = NULL;
            return 0;
        }
        *cudnn_calls[i].slot = f;
    }
    return 1;
}

int stcu_cudnn_symbol_count(void) { return STCU_CUDNN_COUNT; }

const char *stcu_cudnn_symbol_name(int i) { return i >= 0 && i < STCU_CUDNN_COUNT ? cudnn_calls[i].name : NULL; }

int stcu_cudnn_symbol_bound(int i) { return i >= 0 && i < STCU_CUDNN_COUNT && *cudnn_calls[i].slot != NULL; }
