// numerics/exp_float.h, the exponential that Softmax uses on the CPU and on the GPU alike: within an ulp of
// e^x (correctly rounded from double) over the floats where e^x is neither 0 nor infinite, and the special
// values as std::exp gives them; and the reference Softmax's arithmetic, which the CUDA kernel repeats. The
// GPU's bits are compared with the CPU's in tests/gpu.
#include "numerics/exp_float.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/engine.h"
#include "kernels/registry.h"

using namespace dlakit;
using numerics::exp_float;

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
  // Not correctly rounded: one ulp off on 0.46 % of these floats (measured). A regression guard at 1 %, not a
  // target: about twice the measured share, so that a cruder method shows.
  EXPECT_LT(off_by_one, checked / 100);
}

TEST(ExpFloat, SpecialValues) {
  EXPECT_EQ(exp_float(0.f), 1.f);
  EXPECT_EQ(exp_float(-0.f), 1.f);
  EXPECT_EQ(exp_float(INFINITY), INFINITY);
  EXPECT_EQ(exp_float(-INFINITY), 0.f);
  EXPECT_TRUE(std::isnan(exp_float(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(exp_float(88.7228394f), INFINITY);  // the first float whose e^x rounds past FLT_MAX
  EXPECT_EQ(exp_float(88.7228317f), float(std::exp(double(88.7228317f))));
  EXPECT_EQ(exp_float(-104.f), 0.f);
  EXPECT_EQ(exp_float(-100.f), float(std::exp(-100.0)));  // a subnormal (26 x 2^-149), rounded once
  EXPECT_EQ(exp_float(1.f), float(M_E));
}

// The reference Softmax (ref/normalization.cpp) is the row's maximum, exp_float of each value minus it, the
// sum of those in double in the row's order and each exponential times float(1 / sum): the order the CUDA
// kernel repeats (ref/softmax.h). Its rows run in a clone built for AVX2/FMA where the CPU has them
// (DLAKIT_FMA_CLONES) and this test's exp_float in the baseline ISA (fmaf a library call): the same bits.
TEST(ExpFloat, TheReferenceSoftmaxIsItsDocumentedArithmetic) {
  const Shape shape = {3, 6625};  // PP-OCRv4 rec's classes
  Graph g;
  Node n;
  n.op = OpKind::Softmax;
  n.name = "softmax";
  n.opset = 13;
  n.inputs = {g.add_value("x", {DType::kF32, shape})};
  n.outputs = {g.add_value("y", {DType::kF32, shape})};
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> spread(-40.f, 40.f);
  Tensor x(DType::kF32, shape);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = spread(rng);
  const Tensor got = run_node(g, n, {&x})[0];
  int64_t differ = 0;
  for (int64_t row = 0; row < shape[0]; ++row) {
    const float* in = x.data<float>() + row * shape[1];
    float max = -INFINITY;
    for (int64_t a = 0; a < shape[1]; ++a) max = std::max(max, in[a]);
    std::vector<float> e(static_cast<size_t>(shape[1]));
    double sum = 0;
    for (int64_t a = 0; a < shape[1]; ++a) sum += e[size_t(a)] = exp_float(in[a] - max);
    const float inverse = float(1.0 / sum);
    for (int64_t a = 0; a < shape[1]; ++a) {
      const float want = e[size_t(a)] * inverse;
      differ += std::memcmp(&want, got.data<float>() + row * shape[1] + a, 4) != 0;
    }
  }
  EXPECT_EQ(differ, 0);
}
