// The x86 instruction sets dlakit's kernels are built for, each as a target attribute and the check that
// this CPU runs it, side by side: a kernel compiled with DLAKIT_TARGET_X runs only where cpu::x() holds.
#pragma once

#if defined(__x86_64__)
#define DLAKIT_TARGET_AVX2 __attribute__((target("avx2")))
#define DLAKIT_TARGET_AVX2_FMA __attribute__((target("avx2,fma")))
#define DLAKIT_TARGET_F16C __attribute__((target("avx,f16c")))
#define DLAKIT_TARGET_AVX512 __attribute__((target("avx512f")))
#define DLAKIT_TARGET_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))

namespace dlakit::cpu {
bool avx2();         // DLAKIT_TARGET_AVX2
bool avx2_fma();     // DLAKIT_TARGET_AVX2_FMA, and gemm_avx2.cpp (-mavx2 -mfma)
bool f16c();         // DLAKIT_TARGET_F16C
bool avx512();       // DLAKIT_TARGET_AVX512, and gemm_avx512.cpp (-mavx512f -mfma: every AVX-512 CPU has FMA)
bool avx512_vnni();  // DLAKIT_TARGET_AVX512_VNNI
}  // namespace dlakit::cpu
#endif
