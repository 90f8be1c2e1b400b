// Run-time ISA selection (docs/architecture.md §5). Every SIMD kernel is compiled three
// times (AVX-512, AVX2+FMA, baseline) via __attribute__((target)); this picks
// one from CPUID, overridable with CTORCH_ISA=baseline|avx2|avx512 (a request
// above what the CPU supports is clamped down).
#include "ct_internal.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>
#if CT_X86
#include <cpuid.h>
#endif

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

int ct_set_isa_level(int level) {
  int old = ct_isa_level(), hw = detect_hw();
  if (level < CT_ISA_BASELINE) level = CT_ISA_BASELINE;
  if (level > hw) level = hw;
  atomic_store_explicit(&g_level, level, memory_order_relaxed);
  return old;
}

const char *ct_isa_name(void) {
  switch (ct_isa_level()) {
  case CT_ISA_AVX512: return "avx512";
  case CT_ISA_AVX2: return "avx2";
  default: return "baseline";
  }
}

static _Atomic int64_t g_l2_bytes = -1;  // -1: not asked yet

int64_t ct__l2_cache_bytes(void) {
  int64_t v = atomic_load_explicit(&g_l2_bytes, memory_order_relaxed);
  if (v >= 0) return v;
  long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  v = l2 > 0 ? (int64_t)l2 : 0;
  atomic_store_explicit(&g_l2_bytes, v, memory_order_relaxed);
  return v;
}

// Software prefetch policy for streaming elementwise loops.
//
// Measured with prefetch forced on and off through CTORCH_PREFETCH_MIN_BYTES:
// - Intel Sapphire Rapids (2 MB L2 per core, mesh L3): prefetching streams larger than half the
//   L2 gave +15-30 % on 16 MB add/exp: the L2 streamer alone does not cover the mesh's L3/DRAM
//   latency at one core's demand rate. In cache it costs a little.
// - AMD EPYC family 23 (512 KB L2 per core; `.build/release/Benchmarks --quick --threads 1 --filter
//   add_4M --filter exp_4M --filter sum_4M`, 3 runs each way): sum over 16 MB 14.6-15.0 GB/s plain
//   vs 13.0-13.6 prefetching (-10 %), add 11.4-11.9 vs 11.6-12.0 and exp 4.63-4.66 vs 4.68-4.73
//   (noise): the hardware prefetchers already keep up and the extra instructions only cost. The
//   issue's Zen 4 figures (add 0.75x, sum 0.92x PyTorch with prefetch on) point the same way.
//   So AMD and unknown vendors keep the plain loop unless the
//   streams exceed the last-level cache, where the data comes from DRAM either way and the
//   instructions are noise next to the memory time.
// Half the L2 on Intel, the L3 elsewhere; a CPU that reports no sizes gets 1 MB / 32 MB.
static size_t detect_prefetch_min_bytes(void) {
  int64_t l2 = ct__l2_cache_bytes();
  long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
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

size_t ct_set_prefetch_min_bytes(size_t bytes) {
  size_t old = ct_prefetch_min_bytes();
  atomic_store_explicit(&g_prefetch_min, bytes ? bytes : 1, memory_order_relaxed);
  return old;
}

// Smallest call (bytes of its main operand) that runs a 512-bit instantiation when AVX-512 is selected; smaller
// calls of the kernels that ask (CT_PICK_SIZED: the vector math and sums, ops of their own that often are a
// step's only 512-bit work) run the AVX2 one.
//
// Intel Skylake-SP/-X, Cascade Lake and Cooper Lake (family 6, model 0x55) lower the core's clock while they run
// 512-bit floating-point instructions (the "AVX-512 license") and keep it lowered for about half a millisecond
// after the last one, so a short 512-bit burst slows all the scalar and Swift code around it. Measured on a Cascade
// Lake (Xeon @ 2.5 GHz, 2 vCPUs, thread CPU time): a 10-float exp or sum between ~4 us of scalar work made the loop
// 1.15x slower than with the AVX2 kernels, as did Benchmarks' mul_sum_backward_10 (1.15x) and maxpool2d_fwdbwd
// (1.14x), whose only 512-bit work is one sum per step. A call pays for the lowered clock when it saves more than
// ~15 % of that half millisecond (~100 us): AVX-512 exp, log, tanh and sigmoid save ~0.75 ns a float over AVX2
// (measured at 1K-128K floats), which breaks even at ~0.5 MB of floats, so 1 MB with a margin; sums save at most
// ~17 % of a load-bound loop and are memory-bound above 1 MB. Convolution, GEMM, batch-norm and LSTM-cell kernels stay 512-bit: the first two gain 1.6-2x on
// their own long calls (LeNet-5's step spends half its time there), far more than the clock costs the rest, and
// the others run between them, when the clock is lowered already.
// Zero (512-bit whenever AVX-512 is selected) elsewhere: AMD Zen 4 runs 512-bit instructions as two 256-bit halves
// at an unchanged clock, and Ice Lake and later Intel cores lower it little or not at all.
static size_t detect_avx512_min_bytes(void) {
#if CT_X86
  unsigned eax, ebx, ecx, edx;
  __builtin_cpu_init();
  if (__builtin_cpu_is("intel") && __get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
    unsigned family = (eax >> 8) & 0xf, model = ((eax >> 4) & 0xf) | (((eax >> 16) & 0xf) << 4);
    if (family == 6 && model == 0x55) return (size_t)1 << 20;
  }
#endif
  return 0;
}

static _Atomic size_t g_avx512_min = SIZE_MAX;  // SIZE_MAX: not decided yet

size_t ct_avx512_min_bytes(void) {
  size_t v = atomic_load_explicit(&g_avx512_min, memory_order_relaxed);
  if (v != SIZE_MAX) return v;
  v = detect_avx512_min_bytes();
  const char *env = getenv("CTORCH_AVX512_MIN_BYTES");
  if (env && *env) {
    char *end = NULL;
    unsigned long long want = strtoull(env, &end, 10);
    if (end && *end == 0 && want < SIZE_MAX) v = (size_t)want;
  }
  atomic_store_explicit(&g_avx512_min, v, memory_order_relaxed);
  return v;
}

size_t ct_set_avx512_min_bytes(size_t bytes) {
  size_t old = ct_avx512_min_bytes();
  atomic_store_explicit(&g_avx512_min, bytes == SIZE_MAX ? SIZE_MAX - 1 : bytes, memory_order_relaxed);
  return old;
}
