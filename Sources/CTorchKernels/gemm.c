// GEMM: Goto/BLIS packed panels + register-blocked micro-kernels
// (docs/performance.md "GEMM recipe"). The algorithm lives once in
// gemm_kernel.inc; this file instantiates it per ISA and element type and
// dispatches at run time (isa.c).
//
// Blocking: A blocks (MC x KC) stay in L2, B blocks (KC x NC) in L3, one B
// micro-panel (KC x NR) in L1. A large NC for float matters: A is re-packed
// (an in-register transpose for row-major A) once per NC columns, which cost
// 7% of a 2048^3 sgemm at NC = 512 and 2% at NC = 2048 (perf profile, one
// Sapphire Rapids core; the packed B buffer is KC x NC = 2 MiB per thread).
//
// Register blocks (rows x columns of C per micro-kernel):
//   AVX-512: 14 x 32 float, 14 x 16 double (28 zmm accumulators)
//   AVX2:     6 x 16 float,  6 x  8 double (12 ymm accumulators)
//   baseline: 6 x  8 float,  6 x  4 double (12 xmm accumulators, no FMA)
#include "ct_internal.h"
#include <pthread.h>
#include <stdlib.h>

// MARK: - per-thread scratch (packing buffers)

#define CT_SCRATCH_SLOTS 4
typedef struct {
  void *p[CT_SCRATCH_SLOTS];
  size_t cap[CT_SCRATCH_SLOTS];
} ct_scratch_t;

static _Thread_local ct_scratch_t tl_scratch;
static pthread_key_t g_scratch_key;
static pthread_once_t g_scratch_once = PTHREAD_ONCE_INIT;

static void ct_scratch_free(void *arg) {
  ct_scratch_t *s = (ct_scratch_t *)arg;
  for (int i = 0; i < CT_SCRATCH_SLOTS; i++) {
    free(s->p[i]);
    s->p[i] = NULL;
    s->cap[i] = 0;
  }
}
static void ct_scratch_key_init(void) { pthread_key_create(&g_scratch_key, ct_scratch_free); }

void *ct__scratch(int slot, size_t bytes) {
  ct_scratch_t *s = &tl_scratch;
  if (bytes <= s->cap[slot]) return s->p[slot];
  pthread_once(&g_scratch_once, ct_scratch_key_init);
  pthread_setspecific(g_scratch_key, s);  // frees the buffers at thread exit
  free(s->p[slot]);
  size_t cap = (bytes + 4095) & ~(size_t)4095;
  if (cap < s->cap[slot] * 2) cap = s->cap[slot] * 2;
  void *p = NULL;
  if (posix_memalign(&p, CT_ALIGN, cap) != 0) abort();
  s->p[slot] = p;
  s->cap[slot] = cap;
  return p;
}

// MARK: - instantiations

// Below this many multiply-adds a GEMM stays on the calling thread.
#define CT_PAR_MNK ((int64_t)512 * 1024)

#if CT_X86
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,fma,avx2"))), apply_to = function)
#define CT_T float
#define CT_DOUBLE 0
#define CT_SFX avx512_s
#define CT_VBYTES 64
#define CT_HAS_FMA 1
#define CT_MR 14
#define CT_KC 256
#define CT_MC 168
#define CT_NC 2048
#include "gemm_kernel.inc"
#define CT_T double
#define CT_DOUBLE 1
#define CT_SFX avx512_d
#define CT_VBYTES 64
#define CT_HAS_FMA 1
#define CT_MR 14
#define CT_KC 256
#define CT_MC 168
#define CT_NC 256
#include "gemm_kernel.inc"
#pragma clang attribute pop

#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#define CT_T float
#define CT_DOUBLE 0
#define CT_SFX avx2_s
#define CT_VBYTES 32
#define CT_HAS_FMA 1
#define CT_MR 6
#define CT_KC 256
#define CT_MC 144
#define CT_NC 2048
#include "gemm_kernel.inc"
#define CT_T double
#define CT_DOUBLE 1
#define CT_SFX avx2_d
#define CT_VBYTES 32
#define CT_HAS_FMA 1
#define CT_MR 6
#define CT_KC 256
#define CT_MC 96
#define CT_NC 256
#include "gemm_kernel.inc"
#pragma clang attribute pop
#endif

#define CT_T float
#define CT_DOUBLE 0
#define CT_SFX base_s
#define CT_VBYTES 16
#define CT_HAS_FMA 0
#define CT_MR 6
#define CT_KC 256
#define CT_MC 96
#define CT_NC 512
#include "gemm_kernel.inc"
#define CT_T double
#define CT_DOUBLE 1
#define CT_SFX base_d
#define CT_VBYTES 16
#define CT_HAS_FMA 0
#define CT_MR 6
#define CT_KC 256
#define CT_MC 96
#define CT_NC 256
#include "gemm_kernel.inc"

// MARK: - API

void ct_sgemm(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t rsa,
              int64_t csa, const float *B, int64_t rsb, int64_t csb, float beta, float *C,
              int64_t rsc) {
  switch (ct_isa_level()) {
#if CT_X86
  case CT_ISA_AVX512: gemm_avx512_s(M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta, C, rsc); return;
  case CT_ISA_AVX2: gemm_avx2_s(M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta, C, rsc); return;
#endif
  default: gemm_base_s(M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta, C, rsc); return;
  }
}

void ct_sgemm_pack_a(int64_t M, int64_t K, const float *A, int64_t rsa, int64_t csa, float *packed) {
  switch (ct_isa_level()) {
#if CT_X86
  case CT_ISA_AVX512: pack_a_avx512_s(M, K, A, rsa, csa, packed); return;
  case CT_ISA_AVX2: pack_a_avx2_s(M, K, A, rsa, csa, packed); return;
#endif
  default: pack_a_base_s(M, K, A, rsa, csa, packed); return;
  }
}

void ct_sgemm_prepacked(int64_t M, int64_t N, int64_t K, float alpha, const float *packed_a,
                        const float *B, int64_t rsb, int64_t csb, float beta, float *C, int64_t rsc) {
  switch (ct_isa_level()) {
#if CT_X86
  case CT_ISA_AVX512: gemm_prepacked_avx512_s(M, N, K, alpha, packed_a, B, rsb, csb, beta, C, rsc); return;
  case CT_ISA_AVX2: gemm_prepacked_avx2_s(M, N, K, alpha, packed_a, B, rsb, csb, beta, C, rsc); return;
#endif
  default: gemm_prepacked_base_s(M, N, K, alpha, packed_a, B, rsb, csb, beta, C, rsc); return;
  }
}

void ct_dgemm(int64_t M, int64_t N, int64_t K, double alpha, const double *A, int64_t rsa,
              int64_t csa, const double *B, int64_t rsb, int64_t csb, double beta, double *C,
              int64_t rsc) {
  switch (ct_isa_level()) {
#if CT_X86
  case CT_ISA_AVX512: gemm_avx512_d(M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta, C, rsc); return;
  case CT_ISA_AVX2: gemm_avx2_d(M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta, C, rsc); return;
#endif
  default: gemm_base_d(M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta, C, rsc); return;
  }
}
