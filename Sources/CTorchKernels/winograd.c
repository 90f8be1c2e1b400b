// Winograd F(2x2, 3x3) tile transforms (see Torch's WinogradKernels.swift for the algorithm), written once
// in winograd_kernel.inc and instantiated per ISA: the transforms are adds and subtracts over rows of tiles,
// memory-bound at the vector width, and Swift's baseline x86-64 build would vectorise them 4 floats wide.
#include "ct_internal.h"

#if CT_X86
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,fma,avx2"))), apply_to = function)
#define CT_SFX avx512
#include "winograd_kernel.inc"
#undef CT_SFX
#pragma clang attribute pop

#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#define CT_SFX avx2
#include "winograd_kernel.inc"
#undef CT_SFX
#pragma clang attribute pop
#endif

#define CT_SFX base
#include "winograd_kernel.inc"
#undef CT_SFX


void ct_winograd_input_row_f32(const float *const rows[4], int64_t width, int64_t padw, int64_t tw, float *v,
                               int64_t vstride, float *scratch) {
  CT_PICK(wino_input_row)(rows, width, padw, tw, v, vstride, scratch);
}

void ct_winograd_output_row_f32(const float *m, int64_t mstride, int64_t tw, float bias, float *row0, float *row1,
                                int64_t ow, float *scratch) {
  CT_PICK(wino_output_row)(m, mstride, tw, bias, row0, row1, ow, scratch);
}

void ct_winograd_grad_row_f32(const float *row0, const float *row1, int64_t ow, int64_t tw, float *z, int64_t zstride,
                              float *scratch) {
  CT_PICK(wino_grad_row)(row0, row1, ow, tw, z, zstride, scratch);
}
