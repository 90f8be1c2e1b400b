// Instantiates a kernel file once per ISA. The includer defines CT_ISA_KERNEL as the quoted file name; the file is
// compiled for AVX-512 (F, VL, DQ, BW) with FMA and for AVX2 with FMA (x86-64 only, each inside a
// `#pragma clang attribute` that sets the target), then for the baseline, and reads three parameters: CT_SFX (the
// name suffix its CT_FN names get), CT_VBYTES (vector width in bytes) and CT_HAS_FMA. CT_PICK then chooses an
// instantiation at run time from what the CPU reports (isa.c).
#if CT_X86
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,fma,avx2"))), apply_to = function)
#define CT_SFX avx512
#define CT_VBYTES 64
#define CT_HAS_FMA 1
#include CT_ISA_KERNEL
#undef CT_SFX
#undef CT_VBYTES
#undef CT_HAS_FMA
#pragma clang attribute pop

#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#define CT_SFX avx2
#define CT_VBYTES 32
#define CT_HAS_FMA 1
#include CT_ISA_KERNEL
#undef CT_SFX
#undef CT_VBYTES
#undef CT_HAS_FMA
#pragma clang attribute pop
#endif

#define CT_SFX base
#define CT_VBYTES 16
#define CT_HAS_FMA 0
#include CT_ISA_KERNEL
#undef CT_SFX
#undef CT_VBYTES
#undef CT_HAS_FMA
#undef CT_ISA_KERNEL
