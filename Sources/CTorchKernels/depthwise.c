// Depthwise convolution forward planes (see depthwise_kernel.inc), instantiated per ISA.
#include "ct_internal.h"

#define CT_DW_MAX_KH 32
// The padded scratch plane of small planes: 16 KB, half the 32 KB L1 data cache of x86 cores since Core 2 and Zen
// (48 KB on newer Intel cores), so it and the output row stay in L1 while the plane is computed. On the stack.
#define CT_DW_PAD_FLOATS 4096

#if CT_X86
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,fma,avx2"))), apply_to = function)
#define CT_SFX avx512
#define CT_VBYTES 64
#define CT_HAS_FMA 1
#include "depthwise_kernel.inc"
#pragma clang attribute pop

#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#define CT_SFX avx2
#define CT_VBYTES 32
#define CT_HAS_FMA 1
#include "depthwise_kernel.inc"
#pragma clang attribute pop
#endif

#define CT_SFX base
#define CT_VBYTES 16
#define CT_HAS_FMA 0
#include "depthwise_kernel.inc"

int64_t ct_depthwise_max_kernel_rows(void) { return CT_DW_MAX_KH; }

void ct_depthwise_plane_f32(const float *x, int64_t ih, int64_t iw, const float *w, int64_t kh, int64_t kw,
                            int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, float bias,
                            float *y, int64_t oh, int64_t ow) {
  CT_PICK(dw_plane)(x, ih, iw, w, kh, kw, sh, sw, ph, pw, dh, dw, bias, y, oh, ow);
}
