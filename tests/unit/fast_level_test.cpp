// numerics/fast_level.h against the arithmetic it replaces: IEEE division, quantize() (both roundings),
// int8 and int32 conversions, bit for bit, on random values over wide ranges of magnitude, every tie and
// its neighbours, and the special values. The CUDA epilogues run the same source.
#include "numerics/fast_level.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "../common/ties.h"
#include "numerics/quantize.h"

using namespace dlakit;
using numerics::fast_level;
using numerics::quotient;
using numerics::usable_inverse;

namespace {

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Both roundings of quantize() against fast_level, through the byte as the kernels store it.
void expect_same_level(float x, float scale, size_t& checked) {
  const float inv = usable_inverse(scale);
  for (int rounding : {0, 1}) {
    const quant::Rounding r =
        rounding == 0 ? quant::Rounding::kHalfAwayFromZero : quant::Rounding::kHalfToEven;
    const int8_t want = quant::quantize(x, scale, r);
    const float level = fast_level(x, scale, inv, rounding);
    ASSERT_EQ(level, float(want)) << "x " << x << " scale " << scale << " rounding " << rounding;
    ASSERT_EQ(numerics::level_byte(level), want);
  }
  ++checked;
}

TEST(FastLevel, QuotientIsIeeeDivisionOverWideRanges) {
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> mantissa(1.f, 2.f);
  std::uniform_int_distribution<int> scale_exp(-126, 127), ratio_exp(-40, 21), sign(0, 1);
  size_t checked = 0;
  for (int i = 0; i < 4000000; ++i) {
    const float scale = std::ldexp(mantissa(gen), scale_exp(gen));
    const float x = (sign(gen) ? -1.f : 1.f) * scale * std::ldexp(mantissa(gen), ratio_exp(gen));
    const float inv = usable_inverse(scale);
    if (inv == 0.f) continue;  // outside the fast path's range: the callers divide
    const float want = x / scale;
    if (!(std::fabs(want) < 4194304.f) || std::fabs(x) < 0x1p-100f) continue;  // quotient()'s range
    ASSERT_EQ(bits(quotient(x, scale, inv)), bits(want)) << x << " / " << scale;
    ++checked;
  }
  EXPECT_GT(checked, 2500000u);
}

TEST(FastLevel, QuantizesAsQuantizeOnRandomValuesTiesAndTheirNeighbours) {
  std::mt19937 gen(4);
  std::uniform_real_distribution<float> mantissa(1.f, 2.f), value(-300.f, 300.f);
  std::uniform_int_distribution<int> scale_exp(-126, 120);
  size_t checked = 0;
  for (int i = 0; i < 20000; ++i) {
    const float scale = std::ldexp(mantissa(gen), scale_exp(gen));
    for (int j = 0; j < 20; ++j) expect_same_level(value(gen) * scale, scale, checked);
    // every tie k + 0.5 of the level range and beyond it, as x = tie * scale rounds, and its neighbours
    for (float x : test_data::ties_and_neighbours(scale, -131, 130, (i % 7) + 1))
      expect_same_level(x, scale, checked);
  }
  EXPECT_GT(checked, 1000000u);
}

// The shortcut's edge: quotients about kTieMargin from a half-integer, on both sides of the margin and within
// it, where the product x * inv alone decides. A margin narrower than the product's error (which reaches
// 2^-16) fails here from 2^-18 down, as does the ties test above.
TEST(FastLevel, QuotientsAtTheShortcutsMarginRoundAsQuantize) {
  std::mt19937 gen(6);
  std::uniform_real_distribution<float> mantissa(1.f, 2.f);
  std::uniform_int_distribution<int> scale_exp(-99, 100);
  size_t checked = 0;
  for (int i = 0; i < 4000; ++i) {
    const float scale = std::ldexp(mantissa(gen), scale_exp(gen));
    for (int k = -130; k <= 129; k += (i % 5) + 1)
      for (float offset : {0.25f, 0.5f, 0.9f, 1.f, 1.1f, 2.f})
        for (float side : {-1.f, 1.f}) {
          float x = (float(k) + 0.5f + side * offset * numerics::kTieMargin) * scale;
          for (int step = 0; step < 2; ++step) x = std::nextafter(x, -INFINITY);
          for (int step = 0; step < 5; ++step, x = std::nextafter(x, INFINITY))
            expect_same_level(x, scale, checked);
        }
  }
  EXPECT_GT(checked, 1000000u);
}

TEST(FastLevel, SpecialValuesAndScalesWithoutAUsableInverse) {
  size_t checked = 0;
  const float specials[] = {0.f,           -0.f,   NAN,  INFINITY, -INFINITY, FLT_MAX, -FLT_MAX, FLT_MIN,
                            -FLT_TRUE_MIN, 1e-30f, 0.5f, -0.5f,    127.5f,    -128.5f, 1e9f};
  for (float scale : {1.f / 127, 0.023f, 3.5f, 0x1p-100f, 0x1.fffffep-101f, 1e-37f, 1e-39f, 2e36f, 1e38f,
                      INFINITY, 0.f, -1.f, NAN})
    for (float x : specials) expect_same_level(x, scale, checked);
  EXPECT_EQ(usable_inverse(1e-39f), 0.f);  // subnormal
  EXPECT_EQ(usable_inverse(1e38f), 0.f);   // its inverse would be subnormal
  EXPECT_EQ(usable_inverse(0.f), 0.f);
  EXPECT_EQ(usable_inverse(NAN), 0.f);
  EXPECT_EQ(usable_inverse(0.25f), 4.f);
}

// Ties at scales near 2^-126 where the residual x - q * scale is subnormal: the fast path must not take
// them (found by a review: fast_level gave 48 and 5 where quantize gives 49 and 6).
TEST(FastLevel, TinyScalesDivideInstead) {
  size_t checked = 0;
  expect_same_level(0x1.4dbe3p-120f, 0x1.b8672ep-126f, checked);
  expect_same_level(0x1.0a9ed6p-120f, 0x1.83cfc4p-123f, checked);
  EXPECT_EQ(usable_inverse(0x1.7fffecp-110f), 0.f);
}

TEST(FastLevel, BytesAndIntegersConvertExactly) {
  for (int q = -128; q <= 127; ++q) {
    EXPECT_EQ(numerics::level_byte(float(q)), int8_t(q));
    EXPECT_EQ(numerics::byte_value(int8_t(q)), float(q));
  }
  std::mt19937 gen(5);
  std::uniform_int_distribution<int32_t> any(std::numeric_limits<int32_t>::min(),
                                             std::numeric_limits<int32_t>::max());
  for (int32_t acc : {0, 1, -1, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()})
    EXPECT_EQ(numerics::int_value(acc), double(acc));
  for (int i = 0; i < 100000; ++i) {
    const int32_t acc = any(gen);
    ASSERT_EQ(numerics::int_value(acc), double(acc));
  }
}

}  // namespace
