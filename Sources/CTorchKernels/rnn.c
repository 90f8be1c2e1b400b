// Fused recurrent-cell kernels (float32): the LSTM gate activations and cell
// update of one time step, and their backward, in one pass per row. Written
// once in rnn_kernel.inc and instantiated per ISA here, next to the inline
// exp/tanh/sigmoid of vmath_kernel.inc (included again for this translation
// unit; its array drivers are unused here).
#include "ct_internal.h"
#if CT_X86
#include <immintrin.h>
#endif

#pragma clang diagnostic ignored "-Wunused-function"

#if CT_X86
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,fma,avx2"))), apply_to = function)
#define CT_SFX avx512
#define CT_VBYTES 64
#define CT_HAS_FMA 1
#include "vmath_kernel.inc"
#define CT_SFX avx512
#define CT_VBYTES 64
#define CT_HAS_FMA 1
#include "rnn_kernel.inc"
#pragma clang attribute pop

#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#define CT_SFX avx2
#define CT_VBYTES 32
#define CT_HAS_FMA 1
#include "vmath_kernel.inc"
#define CT_SFX avx2
#define CT_VBYTES 32
#define CT_HAS_FMA 1
#include "rnn_kernel.inc"
#pragma clang attribute pop
#endif

#define CT_SFX base
#define CT_VBYTES 16
#define CT_HAS_FMA 0
#include "vmath_kernel.inc"
#define CT_SFX base
#define CT_VBYTES 16
#define CT_HAS_FMA 0
#include "rnn_kernel.inc"


void ct_lstm_cell_fwd_f32(int64_t rows, int64_t h, float *gates, const float *bias,
                          const float *c_prev, float *c, float *tc, float *h_out) {
  CT_PICK(lstm_fwd)(rows, h, gates, bias, c_prev, c, tc, h_out);
}

void ct_lstm_cell_bwd_f32(int64_t rows, int64_t h, const float *gates, const float *tc,
                          const float *c_prev, const float *dh, float *dc, float *dgates,
                          float *dbias) {
  CT_PICK(lstm_bwd)(rows, h, gates, tc, c_prev, dh, dc, dgates, dbias);
}
