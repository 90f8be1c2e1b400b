// Private helpers shared by the CTorchKernels sources (not part of the API).
#ifndef CT_INTERNAL_H
#define CT_INTERNAL_H

#include "ctorch_kernels.h"

#if defined(__x86_64__) && defined(__clang__)
#define CT_X86 1
#else
#define CT_X86 0
#endif

enum { CT_ISA_BASELINE = 0, CT_ISA_AVX2 = 1, CT_ISA_AVX512 = 2 };

// Token pasting used to give each per-ISA / per-type instantiation of a
// kernel template (.inc file) its own names: CT_FN(pack) -> pack_<CT_SFX>.
#define CT_CAT_(a, b) a##b
#define CT_CAT(a, b) CT_CAT_(a, b)
#define CT_FN(name) CT_CAT(CT_CAT(name, _), CT_SFX)

// The instantiation of kernel template NAME (NAME_avx512 / NAME_avx2 / NAME_base) for the ISA level chosen
// at run time (ct_isa_level: CPUID, lowered by CTORCH_ISA).
#if CT_X86
#define CT_PICK(NAME)                                                  \
  (ct_isa_level() == CT_ISA_AVX512 ? NAME##_avx512                     \
   : ct_isa_level() == CT_ISA_AVX2 ? NAME##_avx2                       \
                                   : NAME##_base)
#else
#define CT_PICK(NAME) NAME##_base
#endif

// CT_PICK for kernels whose call works on `bytes` bytes: the AVX2 instantiation instead of the AVX-512 one
// below ct_avx512_min_bytes() (CPUs whose clock drops for 512-bit code; isa.c).
#if CT_X86
#define CT_PICK_SIZED(NAME, bytes)                                                                    \
  (ct_isa_level() == CT_ISA_AVX512 && (size_t)(bytes) >= ct_avx512_min_bytes() ? NAME##_avx512       \
   : ct_isa_level() >= CT_ISA_AVX2                                              ? NAME##_avx2         \
                                                                                : NAME##_base)
#else
#define CT_PICK_SIZED(NAME, bytes) NAME##_base
#endif

#define CT_INLINE static inline __attribute__((always_inline))
#define CT_ALIGN 64

// 64-byte aligned scratch owned by the calling thread (grown on demand, freed
// at thread exit). `slot` selects one of a few independent buffers.
void *ct__scratch(int slot, size_t bytes);

// Bytes of one core's L2 cache as the CPU reports it (sysconf, asked once), 0 when it reports none; each caller
// picks its own fallback.
int64_t ct__l2_cache_bytes(void);

// Cache-line prefetches for the streaming loops (see ct_prefetch_min_bytes).
static inline void ct_prefetch(const void *p) { __builtin_prefetch(p, 0, 3); }
// x86 PREFETCHW: the line arrives exclusive, so the later store needs no ownership request
// (a no-op on x86 CPUs without it).
static inline void ct_prefetch_write(const void *p) {
#if defined(__x86_64__)
  __asm__ volatile("prefetchw (%0)" : : "r"(p));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

#endif
