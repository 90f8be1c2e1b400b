// Run-time ISA selection (DESIGN.md §5). Every SIMD kernel is compiled three
// times (AVX-512, AVX2+FMA, baseline) via __attribute__((target)); this picks
// one from CPUID, overridable with CTORCH_ISA=baseline|avx2|avx512 (a request
// above what the CPU supports is clamped down).
#include "ct_internal.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>

static int detect_hw(void) {
#if CT_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return CT_ISA_AVX512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return CT_ISA_AVX2;
#endif
  return CT_ISA_BASELINE;
}

static atomic_int g_level = -1;

int ct_isa_level(void) {
  int l = atomic_load_explicit(&g_level, memory_order_relaxed);
  if (l >= 0) return l;
  l = detect_hw();
  const char *env = getenv("CTORCH_ISA");
  if (env) {
    int want = l;
    if (!strcmp(env, "baseline")) want = CT_ISA_BASELINE;
    else if (!strcmp(env, "avx2")) want = CT_ISA_AVX2;
    else if (!strcmp(env, "avx512")) want = CT_ISA_AVX512;
    if (want < l) l = want;
  }
  atomic_store_explicit(&g_level, l, memory_order_relaxed);
  return l;
}

const char *ct_isa_name(void) {
  switch (ct_isa_level()) {
  case CT_ISA_AVX512: return "avx512";
  case CT_ISA_AVX2: return "avx2";
  default: return "baseline";
  }
}

// Software prefetch policy for streaming elementwise loops.
//
// Measured (scripts/compare --filter add_4M,exp_4M,sum_4M, prefetch forced on and off with
// CTORCH_PREFETCH_MIN_BYTES):
// - Intel Sapphire Rapids (2 MB L2 per core, mesh L3): prefetching streams larger than half the
//   L2 gave +15-30 % on 16 MB add/exp: the L2 streamer alone does not cover the mesh's L3/DRAM
//   latency at one core's demand rate. In cache it costs a little.
// - AMD Zen (L2 512 KB-1 MB per core, low-latency L3 per CCX): the hardware prefetchers already
//   keep up; the extra prefetch instructions and the chunked loop only cost (see the figures in
//   the README's benchmark notes). So AMD and unknown vendors keep the plain loop unless the
//   streams exceed the last-level cache, where the data comes from DRAM either way and the
//   instructions are noise next to the memory time.
// Half the L2 on Intel, the L3 elsewhere; a CPU that reports no sizes gets 1 MB / 32 MB.
static size_t detect_prefetch_min_bytes(void) {
  long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE), l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l2 <= 0) l2 = 2L << 20;
  if (l3 <= 0) l3 = 32L << 20;
#if CT_X86
  __builtin_cpu_init();
  if (__builtin_cpu_is("intel")) return (size_t)l2 / 2;
#endif
  return (size_t)l3;
}

static _Atomic size_t g_prefetch_min = 0;  // 0: not decided yet

size_t ct_prefetch_min_bytes(void) {
  size_t v = atomic_load_explicit(&g_prefetch_min, memory_order_relaxed);
  if (v) return v;
  v = detect_prefetch_min_bytes();
  const char *env = getenv("CTORCH_PREFETCH_MIN_BYTES");
  if (env && *env) {
    if (!strcmp(env, "off")) v = SIZE_MAX;
    else {
      char *end = NULL;
      unsigned long long want = strtoull(env, &end, 10);
      if (end && *end == 0) v = want ? (size_t)want : 1;
    }
  }
  atomic_store_explicit(&g_prefetch_min, v, memory_order_relaxed);
  return v;
}
