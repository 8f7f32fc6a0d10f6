// numerics/exp_float.h, the exponential that Softmax uses on the CPU and on the GPU alike: within an ulp of
// e^x (correctly rounded from double) over the floats where e^x is neither 0 nor infinite, and the special
// values as std::exp gives them. The GPU's bits are compared with the CPU's in tests/gpu.
#include "numerics/exp_float.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

using dlakit::numerics::exp_float;

namespace {

int64_t ordered(float f) {  // the float's place in the order of finite floats (and infinities)
  int32_t b;
  std::memcpy(&b, &f, 4);
  return b < 0 ? -int64_t(b & 0x7fffffff) : int64_t(b);
}

}  // namespace

TEST(ExpFloat, WithinAnUlpOfTheCorrectlyRoundedExponential) {
  // Every 211th bit pattern (odd, so every exponent and many mantissas), then the float range's ends.
  int64_t checked = 0, off_by_one = 0, worst = 0;
  float worst_x = 0;
  auto check = [&](float x) {
    const float want = float(std::exp(double(x))), got = exp_float(x);
    const int64_t ulps = std::llabs(ordered(got) - ordered(want));
    ++checked, off_by_one += ulps == 1;
    if (ulps > worst) worst = ulps, worst_x = x;
  };
  for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 211) {
    float x;
    const uint32_t b = uint32_t(bits);
    std::memcpy(&x, &b, 4);
    if (x >= -105.f && x <= 90.f) check(x);
  }
  for (float x : {-103.972084f, -103.97207f, -87.33655f, -87.3365479f, 88.7228317f, 88.7228394f, 0x1p-30f,
                  -0x1p-30f, 0x1p-149f, 0.34657359f, -0.34657359f})
    check(x);
  EXPECT_LE(worst, 1) << "at x = " << worst_x;
  EXPECT_GT(checked, 9000000);
  // Not correctly rounded: a measured property, bounded so that a regression to a cruder method shows.
  EXPECT_LT(off_by_one, checked / 100);
}

TEST(ExpFloat, SpecialValues) {
  EXPECT_EQ(exp_float(0.f), 1.f);
  EXPECT_EQ(exp_float(-0.f), 1.f);
  EXPECT_EQ(exp_float(INFINITY), INFINITY);
  EXPECT_EQ(exp_float(-INFINITY), 0.f);
  EXPECT_TRUE(std::isnan(exp_float(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(exp_float(88.7228394f), INFINITY);  // the first float whose e^x rounds past FLT_MAX
  EXPECT_EQ(exp_float(88.7228317f), float(std::exp(88.7228317)));
  EXPECT_EQ(exp_float(-104.f), 0.f);
  EXPECT_EQ(exp_float(-100.f), float(std::exp(-100.0)));  // a subnormal (26 x 2^-149), rounded once
  EXPECT_EQ(exp_float(1.f), float(M_E));
}
