// e^x in float, computed the same way on every executor: the CPU's std::exp (glibc's, nearly always correctly
// rounded) and CUDA's expf (up to 2 ulps off) differ in places, and a layer whose values pass through an
// exponential of arbitrary floats (Softmax) must give the same bits on the CPU and on the GPU.
// The method: x = k ln2 + r with k = rint(x / ln2) and |r| <= ln2 / 2 (ln2 in two parts, so r keeps its
// bits), e^r by its Taylor series to r^7 (the remainder below 0.1 ulp), then times 2^k in two steps so that
// a subnormal result rounds once. Every multiply-add is an explicit fmaf and every other step one IEEE
// operation, so contraction settings cannot change it. Within an ulp of e^x, one ulp off on about 0.5 % of
// floats where glibc is on about 0.01 % (tests/unit/exp_float_test.cpp): the price of one answer everywhere.
#pragma once
#include <math.h>
#include <cstdint>
#include <cstring>

#include "numerics/fast_level.h"  // DLAKIT_HOST_DEVICE

// For a CPU function that calls exp_float in a loop: on x86-64, whose baseline has no FMA, each fmaf is a
// library call (ten times slower than glibc's expf); this adds a clone for AVX2/FMA machines, picked when the
// program loads. fmaf is the same correctly rounded operation either way, so the clones give the same bits.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define DLAKIT_FMA_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define DLAKIT_FMA_CLONES
#endif

namespace dlakit::numerics {

// 2^e as a float, for e in [-126, 127].
DLAKIT_HOST_DEVICE inline float power_of_two(int e) {
  const uint32_t bits = uint32_t(e + 127) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

DLAKIT_HOST_DEVICE inline float exp_float(float x) {
  if (x != x) return x;
  if (x > 89.f) return INFINITY;  // e^88.73 already overflows; the bound keeps k small
  if (x < -104.f) return 0.f;     // e^-104 is below half the smallest subnormal
  const float k = rintf(x * 1.44269504f);
  float r = fmaf(-k, 0.693145752f, x);  // ln2's first 16 bits, then the rest
  r = fmaf(-k, 1.42860677e-6f, r);
  float p = 1.f / 5040;
  p = fmaf(p, r, 1.f / 720);
  p = fmaf(p, r, 1.f / 120);
  p = fmaf(p, r, 1.f / 24);
  p = fmaf(p, r, 1.f / 6);
  p = fmaf(p, r, 0.5f);
  p = fmaf(p, r, 1.f);
  p = fmaf(p, r, 1.f);
  const int e = int(k), half = e / 2;  // e in [-150, 128]: each factor a normal power of two
  return p * power_of_two(half) * power_of_two(e - half);
}

}  // namespace dlakit::numerics
