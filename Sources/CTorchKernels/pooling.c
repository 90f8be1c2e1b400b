// The inner loop of max pooling: one output row, each output the maximum of its window and the window
// element's in-plane index (the first maximum in scan order; NaN wins, as in PyTorch). On real data
// `v > best` is a coin toss, and compilers turn a scalar float select into a branch (clang does even from
// bit-mask code), which then mispredicts about once per element: ~60 cycles per 2x2 window on AMD Zen 4.
// The 2x2 stride-2 row, every CNN's pooling, therefore runs four windows at a time on SSE2 masks.
#include "ct_internal.h"
#include <math.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

// Max pooling without indices (inference): the maximum is associative, so a row of outputs is the column-wise
// maximum over the window rows (contiguous, vectorised) followed by the maximum over each window's columns.
// The column maxima are laid out with -inf in the padding, so every window has `kernel` columns and both
// passes are loops over outputs the vectoriser turns into compare-and-blend — no data-dependent branch.
// NaN propagates (any NaN in a window gives NaN), as with indices. The stride-1 and stride-2 horizontal passes
// get constant strides (contiguous or two-way interleaved loads); other strides gather element by element.
#define CT_MAXPOOL_VALUES_ROW(T, NAME)                                                                       \
  static inline __attribute__((always_inline)) void NAME##_columns(const T *cm, int64_t stride, int64_t dilation, \
                                                                   int64_t kernel, int64_t outw, T *y) {      \
    for (int64_t ow = 0; ow < outw; ow++) y[ow] = cm[ow * stride];                                          \
    for (int64_t j = 1; j < kernel; j++) {                                                                 \
      const T *c = cm + j * dilation;                                                                      \
      for (int64_t ow = 0; ow < outw; ow++) {                                                              \
        T v = c[ow * stride], m = y[ow];                                                                   \
        int take = (v > m) | (v != v);                                                                     \
        y[ow] = take ? v : m;                                                                              \
      }                                                                                                    \
    }                                                                                                      \
  }                                                                                                        \
  void NAME(const T *x, const int64_t *row_base, int64_t nrows, int64_t width, int64_t pad_left,            \
            int64_t stride, int64_t dilation, int64_t kernel, int64_t outw, T *colmax, int64_t colmax_len,  \
            T *y) {                                                                                        \
    if (nrows == 0 || kernel == 0) {                                                                       \
      for (int64_t ow = 0; ow < outw; ow++) y[ow] = -INFINITY;                                              \
      return;                                                                                              \
    }                                                                                                      \
    for (int64_t c = 0; c < pad_left; c++) colmax[c] = -INFINITY;                                          \
    for (int64_t c = pad_left + width; c < colmax_len; c++) colmax[c] = -INFINITY;                         \
    T *cm = colmax + pad_left;                                                                             \
    const T *r0 = x + row_base[0];                                                                         \
    for (int64_t c = 0; c < width; c++) cm[c] = r0[c];                                                     \
    for (int64_t r = 1; r < nrows; r++) {                                                                  \
      const T *row = x + row_base[r];                                                                      \
      for (int64_t c = 0; c < width; c++) {                                                                \
        T v = row[c], m = cm[c];                                                                           \
        int take = (v > m) | (v != v);                                                                     \
        cm[c] = take ? v : m;                                                                              \
      }                                                                                                    \
    }                                                                                                      \
    if (stride == 1)                                                                                       \
      NAME##_columns(colmax, 1, dilation, kernel, outw, y);                                                \
    else if (stride == 2)                                                                                  \
      NAME##_columns(colmax, 2, dilation, kernel, outw, y);                                                \
    else                                                                                                   \
      NAME##_columns(colmax, stride, dilation, kernel, outw, y);                                           \
  }

CT_MAXPOOL_VALUES_ROW(float, ct_maxpool_values_row_f32)
CT_MAXPOOL_VALUES_ROW(double, ct_maxpool_values_row_f64)

// Non-overlapping 2-wide windows over two rows: output ow is the maximum of r0[2ow], r0[2ow + 1], r1[2ow],
// r1[2ow + 1] (in that scan order), whose in-plane indices are i0 + 2ow, i0 + 2ow + 1, i1 + 2ow, i1 + 2ow + 1.
// Indices must fit in 31 bits.
void ct_maxpool_row2x2_f32(const float *r0, const float *r1, int64_t i0, int64_t i1, int64_t outw, float *y,
                           int64_t *indices) {
  int64_t ow = 0;
#if defined(__SSE2__)
  const __m128i lanes = _mm_set_epi32(6, 4, 2, 0), one = _mm_set1_epi32(1), zero = _mm_setzero_si128();
  // Four windows at a time; a row whose width is not a multiple of 4 ends with the last four windows again
  // (the same values rewritten) rather than up to three scalar ones: LeNet's and the Fashion-MNIST CNN's 14-
  // and 7-wide outputs spent a third of their windows in the scalar loop.
  for (; outw >= 4 && ow < outw; ow += 4) {
    if (ow + 4 > outw) ow = outw - 4;
    __m128 a0 = _mm_loadu_ps(r0 + 2 * ow), a1 = _mm_loadu_ps(r0 + 2 * ow + 4);
    __m128 b0 = _mm_loadu_ps(r1 + 2 * ow), b1 = _mm_loadu_ps(r1 + 2 * ow + 4);
    __m128 v[4] = {_mm_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0)), _mm_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1)),
                   _mm_shuffle_ps(b0, b1, _MM_SHUFFLE(2, 0, 2, 0)), _mm_shuffle_ps(b0, b1, _MM_SHUFFLE(3, 1, 3, 1))};
    __m128i base0 = _mm_add_epi32(_mm_set1_epi32((int)(i0 + 2 * ow)), lanes);
    __m128i base1 = _mm_add_epi32(_mm_set1_epi32((int)(i1 + 2 * ow)), lanes);
    __m128i idx[4] = {base0, _mm_add_epi32(base0, one), base1, _mm_add_epi32(base1, one)};
    __m128 best = v[0];
    __m128i best_index = idx[0];
    for (int k = 1; k < 4; k++) {
      __m128 take = _mm_or_ps(_mm_cmpgt_ps(v[k], best), _mm_cmpunord_ps(v[k], v[k]));
      __m128i take_i = _mm_castps_si128(take);
      best = _mm_or_ps(_mm_and_ps(take, v[k]), _mm_andnot_ps(take, best));
      best_index = _mm_or_si128(_mm_and_si128(take_i, idx[k]), _mm_andnot_si128(take_i, best_index));
    }
    _mm_storeu_ps(y + ow, best);
    _mm_storeu_si128((__m128i *)(indices + ow), _mm_unpacklo_epi32(best_index, zero));
    _mm_storeu_si128((__m128i *)(indices + ow + 2), _mm_unpackhi_epi32(best_index, zero));
  }
#endif
  for (; ow < outw; ow++) {
    const float v[4] = {r0[2 * ow], r0[2 * ow + 1], r1[2 * ow], r1[2 * ow + 1]};
    const int64_t idx[4] = {i0 + 2 * ow, i0 + 2 * ow + 1, i1 + 2 * ow, i1 + 2 * ow + 1};
    float best = v[0];
    int64_t best_index = idx[0];
    for (int k = 1; k < 4; k++) {
      if (v[k] > best || v[k] != v[k]) {
        best = v[k];
        best_index = idx[k];
      }
    }
    y[ow] = best;
    indices[ow] = best_index;
  }
}
