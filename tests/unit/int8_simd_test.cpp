// The vector forms of quant::quantize (kernels/int8_simd.h: quantize8 on AVX2, quantize16 on AVX-512)
// against the scalar rule on the values where rounding rules differ: ties on both sides of zero, values
// just off a tie, saturation, infinities, NaN, -0 and subnormals, at several scales. The INT8 kernels
// store through them, so any difference would show up as a wrong level there.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/int8_simd.h"
#include "numerics/quantize.h"

using namespace dlakit;

#if defined(__x86_64__)
namespace {

std::vector<float> awkward_values(float scale) {
  std::vector<float> v = {0.f,
                          -0.f,
                          FLT_MIN,
                          -FLT_MIN,
                          1e-40f,
                          -1e-40f,
                          FLT_MAX,
                          -FLT_MAX,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()};
  for (int k = -130; k <= 130; ++k) {
    const float tie = (float(k) + 0.5f) * scale;
    v.push_back(tie);
    v.push_back(std::nextafter(tie, 0.f));
    v.push_back(std::nextafter(tie, 2.f * tie));
    v.push_back(float(k) * scale);
  }
  while (v.size() % 16) v.push_back(1.f);
  return v;
}

DLAKIT_TARGET_AVX2_FMA void quantize_avx2(const float* x, float scale, int8_t* levels) {
  alignas(16) int8_t out[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(out),
                  simd::quantize8(_mm256_loadu_ps(x), _mm256_set1_ps(scale)));
  for (int i = 0; i < 8; ++i) levels[i] = out[i];
}

DLAKIT_TARGET_AVX512_VNNI void quantize_avx512(const float* x, float scale, int8_t* levels) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(levels),
                   simd::quantize16(_mm512_loadu_ps(x), simd::scale16(scale)));
}

size_t mismatches(const std::vector<float>& v, float scale, int width,
                  void (*vector_form)(const float*, float, int8_t*)) {
  size_t wrong = 0;
  int8_t got[16];
  for (size_t i = 0; i < v.size(); i += size_t(width)) {
    vector_form(v.data() + i, scale, got);
    for (int k = 0; k < width; ++k)
      wrong += got[k] != quant::quantize(v[i + size_t(k)], scale, quant::Rounding::kHalfAwayFromZero);
  }
  return wrong;
}

// Whole vectors of values about numerics::kTieMargin from ties (each side of the margin) and of random
// values: quantize16 takes its shortcut (no corrections) only where no lane is near a tie, so the mixed
// vectors of awkward_values seldom reach it.
std::vector<float> shortcut_values(float scale) {
  std::mt19937 gen(9);
  std::uniform_real_distribution<float> level(-200.f, 200.f);
  std::vector<float> v;
  for (float offset : {0.5f, 0.9f, 1.1f, 2.f, 8.f})
    for (float side : {-1.f, 1.f})
      for (int k = -130; k <= 129; ++k)
        v.push_back((float(k) + 0.5f + side * offset * numerics::kTieMargin) * scale);
  // a few ulps off each tie, without the tie itself (which would send the vector to the corrections): a
  // margin narrower than the product's error (which reaches 2^-16) rounds some of these the wrong way,
  // found here from 2^-18 down
  for (int ulps : {-3, -2, -1, 1, 2, 3})
    for (int k = -130; k <= 129; ++k) {
      float x = (float(k) + 0.5f) * scale;
      for (int step = 0; step < std::abs(ulps); ++step)
        x = std::nextafter(x, ulps < 0 ? -INFINITY : INFINITY);
      v.push_back(x);
    }
  for (int i = 0; i < 4096; ++i) v.push_back(level(gen) * scale);
  // one lane NaN, one infinite, the others far from ties: the shortcut must not take them (a NaN would
  // saturate to -128 there)
  for (float odd : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    while (v.size() % 16) v.push_back(scale);
    v.push_back(odd);
    for (int i = 1; i < 16; ++i) v.push_back(float(i) * scale);
  }
  while (v.size() % 16) v.push_back(scale);
  return v;
}

// Scales with a reciprocal (quantize16's multiply-and-correct quotient) and without (it divides: below
// 2^-100, above 1e36).
const float kScales[] = {1.f, 0.0078125f, 0.013f, 3.7e-5f, 250.f, 0x1.b8672ep-101f, 3e-38f, 2e36f};

}  // namespace

TEST(Int8Simd, Quantize8EqualsTheScalarRule) {
  if (!cpu::avx2_fma()) GTEST_SKIP() << "this CPU has no AVX2";
  for (float scale : kScales)
    EXPECT_EQ(mismatches(awkward_values(scale), scale, 8, quantize_avx2), 0u) << "scale " << scale;
}

TEST(Int8Simd, Quantize16EqualsTheScalarRule) {
  if (!cpu::avx512_vnni()) GTEST_SKIP() << "this CPU has no AVX-512 VNNI";
  for (float scale : kScales)
    EXPECT_EQ(mismatches(awkward_values(scale), scale, 16, quantize_avx512), 0u) << "scale " << scale;
}
TEST(Int8Simd, Quantize16ShortcutRoundsAsTheScalarRule) {
  if (!cpu::avx512_vnni()) GTEST_SKIP() << "this CPU has no AVX-512 VNNI";
  for (float scale : kScales)
    EXPECT_EQ(mismatches(shortcut_values(scale), scale, 16, quantize_avx512), 0u) << "scale " << scale;
}
#endif
