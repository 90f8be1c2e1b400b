// Batch-norm channel reductions (sums in double over float data), written once in batchnorm_kernel.inc and
// instantiated per ISA here.
#include "ct_internal.h"
#include <unistd.h>

#define CT_ISA_KERNEL "batchnorm_kernel.inc"
#include "ct_per_isa.h"

// Bytes of the L2 data cache per core as the CPU reports it (512 KB when it reports none).
static int64_t ct__bn_l2_bytes(void) {
  static _Atomic int64_t cached = 0;
  int64_t v = cached;
  if (!v) {
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    v = l2 > 0 ? (int64_t)l2 : (int64_t)512 << 10;
    cached = v;
  }
  return v;
}

void ct_bn_stats_f32(const float *x, int64_t rows, int64_t stride, int64_t l, int64_t channels, float *mean,
                     double *m2) {
  const int64_t count = rows * l;
  // Channels in blocks whose values fill at most half the L2: the second pass (squared deviations from the
  // mean) then reads them from there instead of memory.
  const int64_t bytes = count * (int64_t)sizeof(float);
  int64_t block = bytes > 0 ? ct__bn_l2_bytes() / 2 / bytes : channels;
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
