// Winograd F(2x2, 3x3) tile transforms (see Torch's WinogradKernels.swift for the algorithm), written once
// in winograd_kernel.inc and instantiated per ISA: the transforms are adds and subtracts over rows of tiles,
// memory-bound at the vector width, and Swift's baseline x86-64 build would vectorise them 4 floats wide.
#include "ct_internal.h"

// Tiles per band of a plane transform: a band's scratch (about 28 floats a tile for the input transform) then
// stays within 8-9 KB, a quarter of the smallest L1 data cache of the x86 cores we target (32 KB), next to the
// 16 output streams.
#define WINO_BAND_TILES 64

// Tile rows per band for planes tw tiles wide (at least one).
static inline int64_t ct__wino_band_rows(int64_t tw) { return tw >= WINO_BAND_TILES ? 1 : WINO_BAND_TILES / tw; }

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


int64_t ct_winograd_scratch_f32(int64_t tw) {
  const int64_t bh = ct__wino_band_rows(tw), S = tw + 1;
  const int64_t input = 12 * ((bh + 1) * S + 8) + 16 * bh * S, output = 4 * bh * tw;
  return input > output ? input : output;
}

void ct_winograd_input_plane_f32(const float *plane, int64_t height, int64_t width, int64_t padh, int64_t padw,
                                 int64_t th, int64_t tw, float *v, int64_t vstride, float *scratch) {
  CT_PICK(wino_input_plane)(plane, height, width, padh, padw, th, tw, v, vstride, scratch);
}

void ct_winograd_output_plane_f32(const float *m, int64_t mstride, int64_t th, int64_t tw, float bias, float *out,
                                  int64_t oh, int64_t ow, float *scratch) {
  CT_PICK(wino_output_plane)(m, mstride, th, tw, bias, out, oh, ow, scratch);
}

void ct_winograd_grad_plane_f32(const float *dy, int64_t oh, int64_t ow, int64_t th, int64_t tw, float *z,
                                int64_t zstride, float *scratch) {
  CT_PICK(wino_grad_plane)(dy, oh, ow, th, tw, z, zstride, scratch);
}
