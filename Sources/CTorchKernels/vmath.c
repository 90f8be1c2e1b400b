// Vectorized float math (exp, log, tanh, sigmoid, sum): the kernels are
// written once in vmath_kernel.inc and instantiated per ISA here.
#include "ct_internal.h"
#include <stdlib.h>
#if CT_X86
#include <immintrin.h>
#endif

#define CT_ISA_KERNEL "vmath_kernel.inc"
#include "ct_per_isa.h"


void ct_vexp_f32(const float *x, float *y, int64_t n) { CT_PICK_SIZED(vexp, n * 4)(x, y, n); }
void ct_vlog_f32(const float *x, float *y, int64_t n) { CT_PICK_SIZED(vlog, n * 4)(x, y, n); }
void ct_vtanh_f32(const float *x, float *y, int64_t n) { CT_PICK_SIZED(vtanh, n * 4)(x, y, n); }
void ct_vsigmoid_f32(const float *x, float *y, int64_t n) { CT_PICK_SIZED(vsigmoid, n * 4)(x, y, n); }
float ct_vsum_f32(const float *x, int64_t n) { return CT_PICK_SIZED(vsum, n * 4)(x, n); }

void ct_prefetch_ahead(const void *w, size_t wbytes, const void *r1, size_t r1bytes, const void *r2,
                       size_t r2bytes) {
  const char *pw = (const char *)w + CT_PREFETCH_DISTANCE;
  const char *p1 = (const char *)r1 + CT_PREFETCH_DISTANCE;
  for (size_t o = 0; o < wbytes; o += 64) ct_prefetch_write(pw + o);
  for (size_t o = 0; o < r1bytes; o += 64) ct_prefetch(p1 + o);
  if (r2) {
    const char *p2 = (const char *)r2 + CT_PREFETCH_DISTANCE;
    for (size_t o = 0; o < r2bytes; o += 64) ct_prefetch(p2 + o);
  }
}
