// Depthwise convolution forward planes (see depthwise_kernel.inc), instantiated per ISA.
#include "ct_internal.h"

#define CT_DW_MAX_KH 32
// The padded scratch plane of small planes: 16 KB, half the 32 KB L1 data cache of x86 cores since Core 2 and Zen
// (48 KB on newer Intel cores), so it and the output row stay in L1 while the plane is computed. On the stack.
#define CT_DW_PAD_FLOATS 4096

#define CT_ISA_KERNEL "depthwise_kernel.inc"
#include "ct_per_isa.h"

int64_t ct_depthwise_max_kernel_rows(void) { return CT_DW_MAX_KH; }

void ct_depthwise_plane_f32(const float *x, int64_t ih, int64_t iw, const float *w, int64_t kh, int64_t kw,
                            int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, float bias,
                            float *y, int64_t oh, int64_t ow) {
  CT_PICK(dw_plane)(x, ih, iw, w, kh, kw, sh, sw, ph, pw, dh, dw, bias, y, oh, ow);
}
