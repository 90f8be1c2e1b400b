// Run-time ISA selection (DESIGN.md §5). Every SIMD kernel is compiled three
// times (AVX-512, AVX2+FMA, baseline) via __attribute__((target)); this picks
// one from CPUID, overridable with CTORCH_ISA=baseline|avx2|avx512 (a request
// above what the CPU supports is clamped down).
#include "ct_internal.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

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
