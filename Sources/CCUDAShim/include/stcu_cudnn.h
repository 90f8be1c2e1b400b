// The cuDNN 9 calls SwiftTorch's convolutions use: the legacy (v7-style) convolution API, which cuDNN 9 still
// ships (libcudnn.so.9 forwards it to libcudnn_cnn.so.9). Bound at run time from the libcudnn.so.9 that
// stcu_load_cudnn (ccudashim.h) opened; no cuDNN header is included. Types, constants and signatures are
// cuDNN 9's (cudnn_graph.h, cudnn_ops.h, cudnn_cnn.h of cuDNN 9.x, checked against 9.26); enums are int-sized
// in the C ABI, so they are declared as int with the header's values.
//
// Each wrapper is `stcu_` + the cuDNN name with the documented signature. Called before cuDNN loaded, or
// when its symbol was missing, it returns STCU_CUDNN_NOT_LOADED (CUDNN_STATUS_NOT_INITIALIZED).
#ifndef STCU_CUDNN_H
#define STCU_CUDNN_H

#include "ccudashim.h"
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// MARK: Types (cudnn_graph.h, cudnn_ops.h, cudnn_cnn.h)

typedef struct cudnnContext *cudnnHandle_t;
typedef struct cudnnTensorStruct *cudnnTensorDescriptor_t;
typedef struct cudnnFilterStruct *cudnnFilterDescriptor_t;
typedef struct cudnnConvolutionStruct *cudnnConvolutionDescriptor_t;
typedef int cudnnDataType_t;
typedef int cudnnTensorFormat_t;
typedef int cudnnMathType_t;
typedef int cudnnConvolutionMode_t;
typedef int cudnnDeterminism_t;
typedef int cudnnConvolutionFwdAlgo_t;
typedef int cudnnConvolutionBwdDataAlgo_t;
typedef int cudnnConvolutionBwdFilterAlgo_t;

/// cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionBwdDataAlgoPerf_t and cudnnConvolutionBwdFilterAlgoPerf_t
/// are field for field the same struct (cudnn_cnn.h); one declaration serves all three.
typedef struct {
    int algo;                       ///< the direction's algorithm enum
    cudnnStatus_t status;           ///< CUDNN_STATUS_SUCCESS when the algorithm applies
    float time;                     ///< milliseconds (Find only; -1 from the heuristics)
    size_t memory;                  ///< workspace bytes
    cudnnDeterminism_t determinism; ///< CUDNN_DETERMINISTIC or CUDNN_NON_DETERMINISTIC
    cudnnMathType_t mathType;       ///< the math type the algorithm runs with
    int reserved[3];
} stcu_cudnnAlgoPerf;
typedef stcu_cudnnAlgoPerf cudnnConvolutionFwdAlgoPerf_t;
typedef stcu_cudnnAlgoPerf cudnnConvolutionBwdDataAlgoPerf_t;
typedef stcu_cudnnAlgoPerf cudnnConvolutionBwdFilterAlgoPerf_t;

// MARK: Constants (cuDNN 9's values)

#define CUDNN_STATUS_NOT_SUPPORTED 3000

#define CUDNN_DATA_FLOAT 0
#define CUDNN_DATA_DOUBLE 1
#define CUDNN_DATA_HALF 2
#define CUDNN_DATA_BFLOAT16 9

#define CUDNN_TENSOR_NCHW 0

#define CUDNN_DEFAULT_MATH 0
#define CUDNN_TENSOR_OP_MATH 1
#define CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION 2
#define CUDNN_FMA_MATH 3

#define CUDNN_CROSS_CORRELATION 1

#define CUDNN_DETERMINISTIC 1

/// How many algorithms each direction has (the enums' *_ALGO_COUNT).
#define CUDNN_CONVOLUTION_FWD_ALGO_COUNT 8
#define CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT 6
#define CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT 7

// MARK: Binding (called by stcu_load_cudnn)

/// Binds every call below from the opened libcudnn.so.9 `lib`. Returns 1, or 0 with the first missing symbol
/// named in `err` (and every pointer unbound).
int stcu_cudnn_bind(void *lib, char *err, size_t errlen);
/// How many calls this header binds, and the exported name of each (for tests and diagnostics).
int stcu_cudnn_symbol_count(void);
const char *stcu_cudnn_symbol_name(int i);
/// Whether call `i` is bound.
int stcu_cudnn_symbol_bound(int i);

// MARK: Handle and descriptors

cudnnStatus_t stcu_cudnnCreate(cudnnHandle_t *handle);
cudnnStatus_t stcu_cudnnDestroy(cudnnHandle_t handle);
/// `stream` is the driver's CUstream; cuDNN's cudaStream_t is the same object.
cudnnStatus_t stcu_cudnnSetStream(cudnnHandle_t handle, CUstream stream);

cudnnStatus_t stcu_cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *tensorDesc);
cudnnStatus_t stcu_cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType, int nbDims,
                                              const int dimA[], const int strideA[]);
cudnnStatus_t stcu_cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t tensorDesc);

cudnnStatus_t stcu_cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *filterDesc);
cudnnStatus_t stcu_cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType,
                                              cudnnTensorFormat_t format, int nbDims, const int filterDimA[]);
cudnnStatus_t stcu_cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t filterDesc);

cudnnStatus_t stcu_cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *convDesc);
cudnnStatus_t stcu_cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t convDesc, int arrayLength,
                                                   const int padA[], const int filterStrideA[], const int dilationA[],
                                                   cudnnConvolutionMode_t mode, cudnnDataType_t computeType);
cudnnStatus_t stcu_cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc, int groupCount);
cudnnStatus_t stcu_cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t mathType);
cudnnStatus_t stcu_cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t convDesc);

// MARK: Forward: y = conv(x, w)

cudnnStatus_t stcu_cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t handle, cudnnTensorDescriptor_t xDesc,
                                                          cudnnFilterDescriptor_t wDesc,
                                                          cudnnConvolutionDescriptor_t convDesc,
                                                          cudnnTensorDescriptor_t yDesc, int requestedAlgoCount,
                                                          int *returnedAlgoCount,
                                                          cudnnConvolutionFwdAlgoPerf_t *perfResults);
cudnnStatus_t stcu_cudnnFindConvolutionForwardAlgorithmEx(cudnnHandle_t handle, cudnnTensorDescriptor_t xDesc,
                                                          const void *x, cudnnFilterDescriptor_t wDesc, const void *w,
                                                          cudnnConvolutionDescriptor_t convDesc,
                                                          cudnnTensorDescriptor_t yDesc, void *y,
                                                          int requestedAlgoCount, int *returnedAlgoCount,
                                                          cudnnConvolutionFwdAlgoPerf_t *perfResults, void *workSpace,
                                                          size_t workSpaceSizeInBytes);
cudnnStatus_t stcu_cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t handle, cudnnTensorDescriptor_t xDesc,
                                                           cudnnFilterDescriptor_t wDesc,
                                                           cudnnConvolutionDescriptor_t convDesc,
                                                           cudnnTensorDescriptor_t yDesc,
                                                           cudnnConvolutionFwdAlgo_t algo, size_t *sizeInBytes);
cudnnStatus_t stcu_cudnnConvolutionForward(cudnnHandle_t handle, const void *alpha, cudnnTensorDescriptor_t xDesc,
                                           const void *x, cudnnFilterDescriptor_t wDesc, const void *w,
                                           cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo,
                                           void *workSpace, size_t workSpaceSizeInBytes, const void *beta,
                                           cudnnTensorDescriptor_t yDesc, void *y);

// MARK: Backward data: dx = convᵀ(dy, w) (also the transposed convolution's forward)

cudnnStatus_t stcu_cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t handle, cudnnFilterDescriptor_t wDesc,
                                                               cudnnTensorDescriptor_t dyDesc,
                                                               cudnnConvolutionDescriptor_t convDesc,
                                                               cudnnTensorDescriptor_t dxDesc, int requestedAlgoCount,
                                                               int *returnedAlgoCount,
                                                               cudnnConvolutionBwdDataAlgoPerf_t *perfResults);
cudnnStatus_t stcu_cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t handle, cudnnFilterDescriptor_t wDesc, const void *w, cudnnTensorDescriptor_t dyDesc, const void *dy,
    cudnnConvolutionDescriptor_t convDesc, cudnnTensorDescriptor_t dxDesc, void *dx, int requestedAlgoCount,
    int *returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t *perfResults, void *workSpace,
    size_t workSpaceSizeInBytes);
cudnnStatus_t stcu_cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t handle, cudnnFilterDescriptor_t wDesc,
                                                                cudnnTensorDescriptor_t dyDesc,
                                                                cudnnConvolutionDescriptor_t convDesc,
                                                                cudnnTensorDescriptor_t dxDesc,
                                                                cudnnConvolutionBwdDataAlgo_t algo,
                                                                size_t *sizeInBytes);
cudnnStatus_t stcu_cudnnConvolutionBackwardData(cudnnHandle_t handle, const void *alpha, cudnnFilterDescriptor_t wDesc,
                                                const void *w, cudnnTensorDescriptor_t dyDesc, const void *dy,
                                                cudnnConvolutionDescriptor_t convDesc,
                                                cudnnConvolutionBwdDataAlgo_t algo, void *workSpace,
                                                size_t workSpaceSizeInBytes, const void *beta,
                                                cudnnTensorDescriptor_t dxDesc, void *dx);

// MARK: Backward filter: dw = Σ dy ⋆ x

cudnnStatus_t stcu_cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnnHandle_t handle, cudnnTensorDescriptor_t srcDesc,
                                                                 cudnnTensorDescriptor_t diffDesc,
                                                                 cudnnConvolutionDescriptor_t convDesc,
                                                                 cudnnFilterDescriptor_t gradDesc,
                                                                 int requestedAlgoCount, int *returnedAlgoCount,
                                                                 cudnnConvolutionBwdFilterAlgoPerf_t *perfResults);
cudnnStatus_t stcu_cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t handle, cudnnTensorDescriptor_t xDesc, const void *x, cudnnTensorDescriptor_t dyDesc, const void *y,
    cudnnConvolutionDescriptor_t convDesc, cudnnFilterDescriptor_t dwDesc, void *dw, int requestedAlgoCount,
    int *returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t *perfResults, void *workSpace,
    size_t workSpaceSizeInBytes);
cudnnStatus_t stcu_cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t handle, cudnnTensorDescriptor_t xDesc,
                                                                  cudnnTensorDescriptor_t dyDesc,
                                                                  cudnnConvolutionDescriptor_t convDesc,
                                                                  cudnnFilterDescriptor_t gradDesc,
                                                                  cudnnConvolutionBwdFilterAlgo_t algo,
                                                                  size_t *sizeInBytes);
cudnnStatus_t stcu_cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void *alpha,
                                                  cudnnTensorDescriptor_t xDesc, const void *x,
                                                  cudnnTensorDescriptor_t dyDesc, const void *dy,
                                                  cudnnConvolutionDescriptor_t convDesc,
                                                  cudnnConvolutionBwdFilterAlgo_t algo, void *workSpace,
                                                  size_t workSpaceSizeInBytes, const void *beta,
                                                  cudnnFilterDescriptor_t dwDesc, void *dw);

#ifdef __cplusplus
}
#endif
#endif
