// A host emulator of the few driver operations SwiftTorch's CUDA backend uses, so its logic (allocation,
// copies, dispatch, the generated kernels' index arithmetic, reductions with barriers and warp shuffles)
// runs in CI on machines without a GPU. Kernels are the same generated sources compiled for the host with
// the emulation prelude (see Torch's KernelCompiler); each exports `__emu_<name>(arg, state)`.
//
// Threads of a block run one after another. Kernels that call __syncthreads (or a warp shuffle, which the
// prelude builds on the barrier) run as cooperative fibers (ucontext): each fiber runs to the barrier, and
// the block resumes once every live thread has arrived. Kernels without barriers never switch.
#define _GNU_SOURCE
#include "emulator.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

typedef void (*stcu_emu_entry)(const void *arg, stcu_emu_state *state);

typedef struct {
    stcu_emu_entry entry;
    int uses_barrier;
} emu_function;

static size_t emu_live_bytes;

int stcu_emu_alloc(CUdeviceptr *p, size_t bytes) {
    void *q = NULL;
    // Over-allocate a little so vectorised tails that read a whole aligned vector stay inside the block.
    if (posix_memalign(&q, 256, bytes + 64) != 0) return 2; // CUDA_ERROR_OUT_OF_MEMORY
    memset(q, 0xA5, bytes + 64);   // like fresh device memory: not zero, so missing writes show
    __atomic_fetch_add(&emu_live_bytes, bytes, __ATOMIC_RELAXED); // devices may run on several host threads
    *p = (CUdeviceptr)(uintptr_t)q;
    return 0;
}

int stcu_emu_free(CUdeviceptr p) {
    free((void *)(uintptr_t)p);
    return 0;
}

int stcu_emu_mem_info(size_t *free_bytes, size_t *total_bytes) {
    *total_bytes = (size_t)16 << 30;
    size_t live = __atomic_load_n(&emu_live_bytes, __ATOMIC_RELAXED);
    *free_bytes = *total_bytes > live ? *total_bytes - live : 0;
    return 0;
}

int stcu_emu_module_load(CUmodule *m, const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) return 200; // CUDA_ERROR_INVALID_IMAGE
    *m = (CUmodule)h;
    return 0;
}

int stcu_emu_get_function(CUfunction *f, CUmodule m, const char *name) {
    char sym[512];
    snprintf(sym, sizeof sym, "__emu_%s", name);
    void *entry = dlsym((void *)m, sym);
    if (!entry) return 500; // CUDA_ERROR_NOT_FOUND
    snprintf(sym, sizeof sym, "__emu_barrier_%s", name);
    emu_function *fn = malloc(sizeof *fn);
    fn->entry = (stcu_emu_entry)entry;
    fn->uses_barrier = dlsym((void *)m, sym) != NULL;
    *f = (CUfunction)fn;
    return 0;
}

// MARK: fibers for kernels with barriers

#define EMU_STACK (256 * 1024)

typedef struct {
    ucontext_t scheduler;
    ucontext_t *fibers;
    char *stacks;
    int *done;
    int count;
    int current;
    const void *arg;
    stcu_emu_entry entry;
    stcu_emu_state *state;
} emu_block;

static __thread emu_block *active_block;

static void emu_barrier(stcu_emu_state *state) {
    (void)state;
    emu_block *b = active_block;
    swapcontext(&b->fibers[b->current], &b->scheduler);
}

static void emu_fiber_main(void) {
    emu_block *b = active_block;
    b->entry(b->arg, b->state);
    b->done[b->current] = 1;
    // returning switches to uc_link (the scheduler)
}

static void emu_set_thread(stcu_emu_state *st, int t) {
    st->thread_idx.x = (unsigned)t % st->block_dim.x;
    st->thread_idx.y = ((unsigned)t / st->block_dim.x) % st->block_dim.y;
    st->thread_idx.z = (unsigned)t / (st->block_dim.x * st->block_dim.y);
}

static void emu_run_block_fibers(emu_block *b) {
    int live = b->count;
    memset(b->done, 0, sizeof(int) * (size_t)b->count);
    for (int t = 0; t < b->count; t++) {
        getcontext(&b->fibers[t]);
        b->fibers[t].uc_stack.ss_sp = b->stacks + (size_t)t * EMU_STACK;
        b->fibers[t].uc_stack.ss_size = EMU_STACK;
        b->fibers[t].uc_link = &b->scheduler;
        makecontext(&b->fibers[t], emu_fiber_main, 0);
    }
    while (live > 0) {
        for (int t = 0; t < b->count; t++) {
            if (b->done[t]) continue;
            b->current = t;
            emu_set_thread(b->state, t);
            swapcontext(&b->scheduler, &b->fibers[t]);
        }
        live = 0;
        for (int t = 0; t < b->count; t++) live += !b->done[t];
    }
}

// Kernels compiled for the emulator keep the running block's state and its __shared__ arrays in statics of their
// module, so two host threads (emulated devices driven at once, as nn.DataParallel does) must not run kernels at
// the same time: launches take turns, the copies and GEMMs (which keep no such state) do not.
static pthread_mutex_t emu_launch_lock = PTHREAD_MUTEX_INITIALIZER;

static int emu_launch(emu_function *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                      unsigned bz, const void *arg);

int stcu_emu_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                    unsigned bz, const void *arg) {
    pthread_mutex_lock(&emu_launch_lock);
    int r = emu_launch((emu_function *)f, gx, gy, gz, bx, by, bz, arg);
    pthread_mutex_unlock(&emu_launch_lock);
    return r;
}

static int emu_launch(emu_function *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                      unsigned bz, const void *arg) {
    int threads = (int)(bx * by * bz);
    if (threads <= 0 || threads > 1024) return 1; // CUDA_ERROR_INVALID_VALUE
    stcu_emu_state st;
    memset(&st, 0, sizeof st);
    st.block_dim = (stcu_emu_dim3){bx, by, bz};
    st.grid_dim = (stcu_emu_dim3){gx, gy, gz};
    st.barrier = emu_barrier;
    unsigned long long *exchange = calloc((size_t)threads, sizeof *exchange);
    st.exchange = exchange;
    emu_block block = {0};
    if (fn->uses_barrier) {
        block.fibers = calloc((size_t)threads, sizeof(ucontext_t));
        block.stacks = malloc((size_t)threads * EMU_STACK);
        block.done = calloc((size_t)threads, sizeof(int));
        block.count = threads;
        block.arg = arg;
        block.entry = fn->entry;
        block.state = &st;
    }
    emu_block *saved = active_block;
    active_block = &block;
    for (unsigned z = 0; z < gz; z++)
        for (unsigned y = 0; y < gy; y++)
            for (unsigned x = 0; x < gx; x++) {
                st.block_idx = (stcu_emu_dim3){x, y, z};
                if (fn->uses_barrier) {
                    emu_run_block_fibers(&block);
                } else {
                    for (int t = 0; t < threads; t++) {
                        emu_set_thread(&st, t);
                        fn->entry(arg, &st);
                    }
                }
            }
    active_block = saved;
    free(block.fibers);
    free(block.stacks);
    free(block.done);
    free(exchange);
    return 0;
}

// MARK: GEMM with cuBLAS's column-major argument convention

/// An element of an STCU_GEMM_* matrix as a double (float16 through the compiler's _Float16, bfloat16 as the top
/// half of a float).
static double gemm_load(const void *p, long long i, int element) {
    switch (element) {
    case STCU_GEMM_F64: return ((const double *)p)[i];
    case STCU_GEMM_F32: return ((const float *)p)[i];
    case STCU_GEMM_F16: return (double)((const _Float16 *)p)[i];
    default: {
        uint32_t bits = (uint32_t)((const uint16_t *)p)[i] << 16;
        float f;
        memcpy(&f, &bits, 4);
        return f;
    }
    }
}

/// Stores `v` rounded to the element type (bfloat16: round to nearest even, as cuBLAS's epilogue does).
static void gemm_store(void *p, long long i, int element, double v) {
    switch (element) {
    case STCU_GEMM_F64: ((double *)p)[i] = v; return;
    case STCU_GEMM_F32: ((float *)p)[i] = (float)v; return;
    case STCU_GEMM_F16: ((_Float16 *)p)[i] = (_Float16)(float)v; return;
    default: {
        float f = (float)v;
        uint32_t bits;
        memcpy(&bits, &f, 4);
        if ((bits & 0x7fffffffu) > 0x7f800000u) { ((uint16_t *)p)[i] = (uint16_t)((bits >> 16) | 0x40); return; }
        bits += 0x7fffu + ((bits >> 16) & 1);
        ((uint16_t *)p)[i] = (uint16_t)(bits >> 16);
    }
    }
}

int stcu_emu_gemm(int transa, int transb, int m, int n, int k, double alpha, const void *A, int lda, const void *B,
                  int ldb, double beta, void *C, int ldc, int element) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double acc = 0;
            for (int p = 0; p < k; p++) {
                long long ia = transa ? (long long)i * lda + p : (long long)p * lda + i;   // op(A)[i, p]
                long long ib = transb ? (long long)p * ldb + j : (long long)j * ldb + p;   // op(B)[p, j]
                acc += gemm_load(A, ia, element) * gemm_load(B, ib, element);
            }
            long long ic = (long long)j * ldc + i;
            // Half types accumulate in float32 on the GPU (CUBLAS_COMPUTE_32F); the sum is rounded to it here too.
            if (element == STCU_GEMM_F16 || element == STCU_GEMM_BF16) acc = (float)acc;
            gemm_store(C, ic, element, alpha * acc + (beta == 0 ? 0 : beta * gemm_load(C, ic, element)));
        }
    return 0;
}

int stcu_emu_gemm_batched(int transa, int transb, int m, int n, int k, double alpha, unsigned long long A, int lda,
                          long long stride_a, unsigned long long B, int ldb, long long stride_b, double beta,
                          unsigned long long C, int ldc, long long stride_c, int batch, int element) {
    const unsigned long long item = element == STCU_GEMM_F64 ? 8 : element == STCU_GEMM_F32 ? 4 : 2;
    for (int i = 0; i < batch; i++) {
        const unsigned long long a = A + item * (unsigned long long)(i * stride_a);
        const unsigned long long b = B + item * (unsigned long long)(i * stride_b);
        const unsigned long long c = C + item * (unsigned long long)(i * stride_c);
        int r = stcu_emu_gemm(transa, transb, m, n, k, alpha, (const void *)(uintptr_t)a, lda, (const void *)(uintptr_t)b,
                              ldb, beta, (void *)(uintptr_t)c, ldc, element);
        if (r != 0) return r;
    }
    return 0;
}
