// Batch-norm channel reductions (sums in double over float data), written once in batchnorm_kernel.inc and
// instantiated per ISA here.
#include "ct_internal.h"

#define CT_ISA_KERNEL "batchnorm_kernel.inc"
#include "ct_per_isa.h"

void ct_bn_stats_f32(const float *x, int64_t rows, int64_t stride, int64_t l, float *mean, double *m2) {
  const int64_t count = rows * l;
  const float m = count > 0 ? (float)(CT_PICK(bn_sum)(x, rows, stride, l) / (double)count) : 0.0f;
  *mean = m;
  *m2 = CT_PICK(bn_sq_dev)(x, rows, stride, l, m);
}

void ct_bn_grad_sums_f32(const float *g, const float *x, int64_t rows, int64_t stride, int64_t l, float mean,
                         double *sum, double *dot) {
  CT_PICK(bn_grad_sums)(g, x, rows, stride, l, mean, sum, dot);
}
