// The inner loop of max pooling: one output row, each output the maximum of its window and the window
// element's in-plane index, NaN winning as in PyTorch. The selects are written as ternaries so that the
// compiler emits conditional moves: on real data `v > best` is a coin toss, and Swift's loop compiled it
// to a branch that mispredicted about once per element (10x its load cost, perf on AMD Zen 4).
#include "ct_internal.h"
#include <math.h>

#define CT_MAXPOOL_ROW(T, NAME)                                                                              \
  void NAME(const T *x, const int64_t *row_base, int64_t nrows, const int64_t *first, const int64_t *count,  \
            int64_t step, int64_t outw, T *y, int64_t *indices) {                                          \
    for (int64_t ow = 0; ow < outw; ow++) {                                                                \
      int64_t c = count[ow], f = first[ow];                                                                \
      if (nrows == 0 || c == 0) {                                                                          \
        y[ow] = -INFINITY;                                                                                 \
        indices[ow] = 0;                                                                                   \
        continue;                                                                                          \
      }                                                                                                    \
      int64_t best_index = row_base[0] + f;                                                                \
      T best = x[best_index];                                                                              \
      for (int64_t r = 0; r < nrows; r++) {                                                                \
        int64_t base = row_base[r] + f;                                                                    \
        for (int64_t j = 0; j < c; j++) {                                                                  \
          int64_t i = base + j * step;                                                                     \
          T v = x[i];                                                                                      \
          int take = (v > best) | (v != v);                                                                \
          best = take ? v : best;                                                                          \
          best_index = take ? i : best_index;                                                              \
        }                                                                                                  \
      }                                                                                                    \
      y[ow] = best;                                                                                        \
      indices[ow] = best_index;                                                                            \
    }                                                                                                      \
  }

CT_MAXPOOL_ROW(float, ct_maxpool_row_f32)
CT_MAXPOOL_ROW(double, ct_maxpool_row_f64)
