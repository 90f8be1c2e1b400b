// CUDA graph capture as the device layer sees it (graph.c): which streams are capturing, and, on the emulator,
// the recording of the operations a graph holds. Private to CCUDAShim (device.c and graph.c).
#ifndef STCU_GRAPH_H
#define STCU_GRAPH_H

#include "stcu_device.h"

/// The emulated device's one stream: the Swift side gives the emulator no stream, and cuBLAS calls (whose
/// stream lives in a handle the emulator does not have) run on it too.
#define STCU_EMULATED_STREAM ((CUstream)0)

/// What an emulated graph replays: one device operation with its arguments as they were at capture.
typedef enum { STCU_GRAPH_OP_LAUNCH, STCU_GRAPH_OP_MEMSET, STCU_GRAPH_OP_DTOD, STCU_GRAPH_OP_GEMM } stcu_graph_op_kind;

typedef struct {
    stcu_graph_op_kind kind;
    // STCU_GRAPH_OP_LAUNCH: the function, its geometry and its by-value argument (`arg` is copied when recorded).
    CUfunction function;
    unsigned grid[3], block[3];
    const void *arg;
    size_t arg_size;
    // STCU_GRAPH_OP_MEMSET (dst, value, bytes) and STCU_GRAPH_OP_DTOD (dst, src, bytes).
    CUdeviceptr dst, src;
    size_t bytes;
    unsigned char value;
    // STCU_GRAPH_OP_GEMM: stcu_dev_gemm_batched's arguments (a single GEMM is a batch of 1).
    int transa, transb, m, n, k, lda, ldb, ldc, batch, element;
    double alpha, beta;
    unsigned long long A, B, C;
    long long stride_a, stride_b, stride_c;
} stcu_graph_op;

/// Number of streams capturing now (a relaxed read: the hot paths test it before anything else).
int stcu_graph_any_capture(void);
/// 1 when `s` is capturing.
int stcu_graph_capturing(CUstream s);
/// Appends `op` to the emulated capture of `s` (copying a launch's argument). Returns a CUresult.
int stcu_graph_record(CUstream s, const stcu_graph_op *op);

#endif
