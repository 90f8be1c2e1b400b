// Winograd F(2x2, 3x3) tile transforms (see Torch's WinogradKernels.swift for the algorithm), written once
// in winograd_kernel.inc and instantiated per ISA: the transforms are adds and subtracts over rows of tiles,
// memory-bound at the vector width, and Swift's baseline x86-64 build would vectorise them 4 floats wide.
#include "ct_internal.h"

// Tiles per band of the output and weight-gradient transforms: a band's scratch (4 floats a tile) then stays
// within 1-4 KB of the L1 next to the 16 streams they read or write.
#define WINO_BAND_TILES 64

// Tile rows per band of those transforms for planes tw tiles wide (at least one).
static inline int64_t ct__wino_band_rows(int64_t tw) { return tw >= WINO_BAND_TILES ? 1 : WINO_BAND_TILES / tw; }

// Floats per zero-padded input row of the input transform: the columns its steps of eight tiles read (16 each
// and the next step's first two).
static inline int64_t ct__wino_padded_row(int64_t tw) { return 16 * ((tw + 7) / 8) + 8; }

// Tile rows per band of the input transform: the band's 2 nb + 2 padded rows stay within 8 KB, a quarter of the
// smallest L1 data cache of the x86 cores we target (32 KB), next to the 16 store streams.
static inline int64_t ct__wino_input_band(int64_t tw) {
  const int64_t rows = 2048 / ct__wino_padded_row(tw);
  return rows >= 4 ? (rows - 2) / 2 : 1;
}

#define CT_ISA_KERNEL "winograd_kernel.inc"
#include "ct_per_isa.h"

int64_t ct_winograd_scratch_f32(int64_t tw) {
  const int64_t input = (2 * ct__wino_input_band(tw) + 2) * ct__wino_padded_row(tw);
  const int64_t others = 4 * ct__wino_band_rows(tw) * tw;
  return input > others ? input : others;
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
