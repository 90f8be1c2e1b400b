// Direct convolution for few channels (see direct_conv_kernel.inc), instantiated per ISA. Tile sizes follow the
// register file: AVX-512's 32 registers hold 14 x 2 forward accumulators (plus two input vectors and a weight)
// and 4 x 6 weight-gradient ones; AVX2's and SSE's 16 hold 6 x 2 and 3 x 4.
#include "ct_internal.h"

#if CT_X86
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,fma,avx2"))), apply_to = function)
#define CT_SFX avx512
#define CT_VBYTES 64
#define CT_HAS_FMA 1
#define CT_DC_MB 14
#define CT_DC_CB 4
#define CT_DC_TB 6
#include "direct_conv_kernel.inc"
#pragma clang attribute pop

#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#define CT_SFX avx2
#define CT_VBYTES 32
#define CT_HAS_FMA 1
#define CT_DC_MB 6
#define CT_DC_CB 3
#define CT_DC_TB 4
#include "direct_conv_kernel.inc"
#pragma clang attribute pop
#endif

#define CT_SFX base
#define CT_VBYTES 16
#define CT_HAS_FMA 0
#define CT_DC_MB 6
#define CT_DC_CB 3
#define CT_DC_TB 4
#include "direct_conv_kernel.inc"

int64_t ct_direct_conv_block_f32(int64_t cout) { return CT_PICK(dc_block)(cout); }

int64_t ct_direct_conv_width_f32(void) { return CT_PICK(dc_width)(); }

void ct_direct_conv_f32(const float *x, int64_t cin, int64_t plane, const int64_t *off, int64_t taps,
                        const float *wp, const float *bias, int64_t cout, float *y, int64_t ystride, int64_t nj) {
  CT_PICK(dc_fwd)(x, cin, plane, off, taps, wp, bias, cout, y, ystride, nj);
}

void ct_direct_conv_wgrad_f32(const float *dy, int64_t dystride, int64_t cout, const float *x, int64_t cin,
                              int64_t plane, const int64_t *off, int64_t taps, int64_t nj, float *dw_lanes) {
  CT_PICK(dc_wgrad)(dy, dystride, cout, x, cin, plane, off, taps, nj, dw_lanes);
}

void ct_direct_conv_wgrad_reduce_f32(const float *dw_lanes, int64_t count, float *dw) {
  CT_PICK(dc_wgrad_reduce)(dw_lanes, count, dw);
}
