// Batch-norm channel reductions (sums in double over float data), written once in batchnorm_kernel.inc and
// instantiated per ISA here.
#include "ct_internal.h"

#define CT_ISA_KERNEL "batchnorm_kernel.inc"
#include "ct_per_isa.h"

void ct_bn_stats_f32(const float *x, int64_t rows, int64_t stride, int64_t l, int64_t channels, float *mean,
                     double *m2) {
  const int64_t count = rows * l;
  // Channels in blocks whose values fill at most half the L2 (512 KB assumed when the CPU reports none): the
  // second pass (squared deviations from the mean) then reads them from there instead of memory.
  const int64_t bytes = count * (int64_t)sizeof(float), l2 = ct__l2_cache_bytes();
  int64_t block = bytes > 0 ? (l2 > 0 ? l2 : (int64_t)512 << 10) / 2 / bytes : channels;
  if (block < 1) block = 1;
  for (int64_t j0 = 0; j0 < channels; j0 += block) {
    const int64_t w = channels - j0 < block ? channels - j0 : block;
    const float *xb = x + j0 * l;
    CT_PICK(bn_sum)(xb, rows, stride, l, w, m2 + j0);  // m2 holds the sums until the second pass
    for (int64_t j = 0; j < w; j++) mean[j0 + j] = count > 0 ? (float)(m2[j0 + j] / (double)count) : 0.0f;
    CT_PICK(bn_sq_dev)(xb, rows, stride, l, w, mean + j0, m2 + j0);
  }
}

void ct_bn_grad_sums_f32(const float *g, const float *x, int64_t rows, int64_t stride, int64_t l, int64_t channels,
                         const float *mean, double *sum, double *dot) {
  CT_PICK(bn_grad_sums)(g, x, rows, stride, l, channels, mean, sum, dot);
}
