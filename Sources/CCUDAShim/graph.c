// CUDA graphs in the device layer (stcu_device.h): stream capture on the driver (cuStreamBeginCapture_v2,
// cuStreamEndCapture, cuGraphInstantiateWithFlags, cuGraphLaunch), and on the emulator a recording of the
// operations issued on the capturing stream, replayed in order. Both keep a table of the capturing streams, so
// device.c can refuse what a graph cannot hold (see stcu_dev_capture_begin) before it reaches the driver.
#define _GNU_SOURCE
#include "graph.h"
#include "emulator.h"
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct stcu_graph {
    CUgraphExec exec;      // the driver's executable graph (NULL on the emulator)
    stcu_graph_op *ops;    // the emulator's recording, in issue order
    size_t count, capacity;
};

#define STCU_MAX_CAPTURES 16

/// The streams capturing now and, on the emulator, what each has recorded.
static struct {
    CUstream stream;
    stcu_graph_t recording;
} captures[STCU_MAX_CAPTURES];
static int capture_count;
static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;

int stcu_graph_any_capture(void) { return __atomic_load_n(&capture_count, __ATOMIC_RELAXED); }

/// The table index of `s`, or -1 (under capture_lock, or for a quick look when a stale answer is harmless).
static int find_capture(CUstream s) {
    for (int i = 0; i < STCU_MAX_CAPTURES; i++)
        if (captures[i].recording && captures[i].stream == s) return i;
    return -1;
}

int stcu_graph_capturing(CUstream s) {
    if (!stcu_graph_any_capture()) return 0;
    pthread_mutex_lock(&capture_lock);
    int found = find_capture(s) >= 0;
    pthread_mutex_unlock(&capture_lock);
    return found;
}

int stcu_graph_record(CUstream s, const stcu_graph_op *op) {
    pthread_mutex_lock(&capture_lock);
    int i = find_capture(s);
    if (i < 0) {
        pthread_mutex_unlock(&capture_lock);
        return CUDA_ERROR_ILLEGAL_STATE;
    }
    stcu_graph_t g = captures[i].recording;
    if (g->count == g->capacity) {
        size_t capacity = g->capacity ? 2 * g->capacity : 64;
        stcu_graph_op *ops = realloc(g->ops, capacity * sizeof *ops);
        if (!ops) {
            pthread_mutex_unlock(&capture_lock);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        g->ops = ops;
        g->capacity = capacity;
    }
    stcu_graph_op copy = *op;
    if (op->kind == STCU_GRAPH_OP_LAUNCH) {
        // The kernel reads its argument struct when it runs, so the graph keeps the values of capture time.
        void *arg = malloc(op->arg_size ? op->arg_size : 1);
        if (!arg) {
            pthread_mutex_unlock(&capture_lock);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        memcpy(arg, op->arg, op->arg_size);
        copy.arg = arg;
    }
    g->ops[g->count++] = copy;
    pthread_mutex_unlock(&capture_lock);
    return CUDA_SUCCESS;
}

// MARK: - the device layer's graph calls

int stcu_dev_graphs_supported(char *err, size_t errlen) {
    if (stcu_dev_is_emulated()) {
        if (err && errlen > 0) err[0] = '\0';
        return 1;
    }
    return stcu_graphs_supported(err, errlen);
}

int stcu_dev_capture_begin(CUstream s, int mode) {
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        return 1; // CUDA_ERROR_INVALID_VALUE
    stcu_graph_t g = calloc(1, sizeof *g);
    if (!g) return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&capture_lock);
    int slot = -1;
    for (int i = 0; i < STCU_MAX_CAPTURES && slot < 0; i++)
        if (!captures[i].recording) slot = i;
    int r = find_capture(s) >= 0 ? CUDA_ERROR_ILLEGAL_STATE : slot < 0 ? CUDA_ERROR_NOT_SUPPORTED : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS && !stcu_dev_is_emulated()) r = stcu_cuStreamBeginCapture(s, mode);
    if (r == CUDA_SUCCESS) {
        captures[slot].stream = s;
        captures[slot].recording = g;
        __atomic_add_fetch(&capture_count, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&capture_lock);
    if (r != CUDA_SUCCESS) free(g);
    return r;
}

int stcu_dev_capture_end(CUstream s, stcu_graph_t *graph) {
    *graph = NULL;
    pthread_mutex_lock(&capture_lock);
    int i = find_capture(s);
    if (i < 0) {
        pthread_mutex_unlock(&capture_lock);
        return CUDA_ERROR_ILLEGAL_STATE; // what cuStreamEndCapture says for a stream that is not capturing
    }
    stcu_graph_t g = captures[i].recording;
    captures[i].recording = NULL;
    captures[i].stream = NULL;
    __atomic_sub_fetch(&capture_count, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&capture_lock);
    if (stcu_dev_is_emulated()) {
        *graph = g;
        return CUDA_SUCCESS;
    }
    CUgraph captured = NULL;
    int r = stcu_cuStreamEndCapture(s, &captured);
    if (r == CUDA_SUCCESS) {
        // The executable graph does not depend on the graph it was made from, so that is destroyed at once.
        r = stcu_cuGraphInstantiate(&g->exec, captured, 0);
    }
    if (captured) (void)stcu_cuGraphDestroy(captured);
    if (r != CUDA_SUCCESS) {
        free(g);
        return r;
    }
    *graph = g;
    return CUDA_SUCCESS;
}

int stcu_dev_is_capturing(CUstream s) { return stcu_graph_capturing(s); }

/// Runs one recorded operation on the emulator.
static int replay_op(const stcu_graph_op *op) {
    switch (op->kind) {
    case STCU_GRAPH_OP_LAUNCH:
        return stcu_emu_launch(op->function, op->grid[0], op->grid[1], op->grid[2], op->block[0], op->block[1],
                               op->block[2], op->arg);
    case STCU_GRAPH_OP_MEMSET:
        memset((void *)(uintptr_t)op->dst, op->value, op->bytes);
        return CUDA_SUCCESS;
    case STCU_GRAPH_OP_DTOD:
        memmove((void *)(uintptr_t)op->dst, (const void *)(uintptr_t)op->src, op->bytes);
        return CUDA_SUCCESS;
    case STCU_GRAPH_OP_GEMM:
        return stcu_emu_gemm_batched(op->transa, op->transb, op->m, op->n, op->k, op->alpha, op->A, op->lda,
                                     op->stride_a, op->B, op->ldb, op->stride_b, op->beta, op->C, op->ldc, op->stride_c,
                                     op->batch, op->element);
    }
    return 1; // CUDA_ERROR_INVALID_VALUE
}

int stcu_dev_graph_launch(stcu_graph_t g, CUstream s) {
    if (!g) return 1; // CUDA_ERROR_INVALID_VALUE
    // CUDA would nest the graph in the capture; SwiftTorch keeps captures flat, on the driver as on the emulator.
    if (stcu_graph_capturing(s)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (!stcu_dev_is_emulated()) return stcu_cuGraphLaunch(g->exec, s);
    for (size_t i = 0; i < g->count; i++) {
        int r = replay_op(&g->ops[i]);
        if (r != CUDA_SUCCESS) return r;
    }
    return CUDA_SUCCESS;
}

void stcu_dev_graph_destroy(stcu_graph_t g) {
    if (!g) return;
    if (g->exec) (void)stcu_cuGraphExecDestroy(g->exec);
    for (size_t i = 0; i < g->count; i++)
        if (g->ops[i].kind == STCU_GRAPH_OP_LAUNCH) free((void *)g->ops[i].arg);
    free(g->ops);
    free(g);
}
