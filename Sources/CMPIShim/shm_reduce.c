// The arithmetic of SwiftTorch's shared-memory all-reduce (Sources/Torch/Distributed/SharedMemoryAllReduce.swift):
// one rank's slice of the sum of every rank's segment. Kept in C so the loops vectorise (Swift's SIMD types
// compile to calls without target flags: docs/performance.md, "Why the SIMD kernels are in C") and run at
// memory speed.
#include "cmpishim.h"
#include <string.h>

// 1024 elements (4 or 8 KB) per block: the accumulator stays in L1 while every rank's segment is streamed
// through it once, and the result is stored once per destination.
#define STMPI_SUM_BLOCK 1024

#define DEFINE_SUM(NAME, T)                                                                          \
    void NAME(T *out1, T *out2, const T *const *srcs, int nsrc, size_t count) {                     \
        T acc[STMPI_SUM_BLOCK] __attribute__((aligned(64)));                                         \
        for (size_t i0 = 0; i0 < count; i0 += STMPI_SUM_BLOCK) {                                     \
            size_t n = count - i0 < STMPI_SUM_BLOCK ? count - i0 : STMPI_SUM_BLOCK;                  \
            const T *a = srcs[0] + i0;                                                               \
            if (nsrc > 1) {                                                                          \
                const T *b = srcs[1] + i0;                                                           \
                for (size_t j = 0; j < n; j++) acc[j] = a[j] + b[j];                                 \
            } else {                                                                                 \
                for (size_t j = 0; j < n; j++) acc[j] = a[j];                                        \
            }                                                                                        \
            for (int k = 2; k < nsrc; k++) {                                                         \
                const T *s = srcs[k] + i0;                                                           \
                for (size_t j = 0; j < n; j++) acc[j] += s[j];                                       \
            }                                                                                        \
            if (out1) memcpy(out1 + i0, acc, n * sizeof(T));                                         \
            if (out2) memcpy(out2 + i0, acc, n * sizeof(T));                                         \
        }                                                                                            \
    }

DEFINE_SUM(stmpi_sum_f32, float)
DEFINE_SUM(stmpi_sum_f64, double)
