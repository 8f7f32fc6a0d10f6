// The tensor-core INT8 convolution (conv_int8_mma) against the plain CUDA kernel (conv_int8, one thread per
// output, int64 sums), bit for bit, on random levels over the whole int8 range and odd geometries: channels
// not a multiple of 32, filters not a multiple of 64, stride 2, padding, dilation, groups, batch 2, 1x1 and
// 7x7 windows, channels without a scale. Skips without a GPU; fails with DLAKIT_REQUIRE_GPU=1.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "../common/require_gpu.h"

#if DLAKIT_WITH_CUDA
#include <cuda_runtime.h>

#include "conv_test_data.h"
#include "gpu/gpu.h"
#include "gpu/kernels.h"

using namespace dlakit;
using gpu::k::ConvGeom;
using test_conv::geom;

namespace {

using Case = test_conv::NamedGeom;

std::vector<Case> cases() {
  return {{"c3_m80_7x7_s2_p3", geom(1, 3, 29, 80, 7, 2, 3, 1, 1)},
          {"c45_m17x1_1x1", geom(1, 45, 13, 17, 1, 1, 0, 1, 1)},
          {"c17_m96_3x3_p1_n2", geom(2, 17, 11, 96, 3, 1, 1, 1, 1)},
          {"c256_m130_3x3_s2_p1", geom(1, 256, 15, 130, 3, 2, 1, 1, 1)},
          {"c40_m64_3x3_d2_p2", geom(1, 40, 17, 64, 3, 1, 2, 2, 1)},
          {"c48_m48_g2_3x3_p1", geom(1, 48, 9, 48, 3, 1, 1, 1, 2)},
          {"c64_m1000_1x1", geom(1, 64, 1, 1000, 1, 1, 0, 1, 1)}};
}

class ConvInt8Mma : public ::testing::TestWithParam<Case> {};

TEST_P(ConvInt8Mma, EqualsThePlainKernelBitForBit) {
  REQUIRE_GPU();
  const ConvGeom g = GetParam().g;
  ASSERT_TRUE(gpu::k::conv_int8_mma_fits(g));
  std::mt19937 gen(5);
  std::uniform_int_distribution<int> level(-128, 127);
  std::vector<int8_t> x(size_t(g.N * g.C * g.H * g.W)), w(size_t(g.M * (g.C / g.G) * g.KH * g.KW));
  for (auto& v : x) v = int8_t(level(gen));
  for (auto& v : w) v = int8_t(level(gen));
  const auto [mult, bias, bq] =
      random_int8_epilogue(g.M, std::sqrt(double((g.C / g.G) * g.KH * g.KW)) * 74.0 * 74.0, gen);
  const gpu::k::ActParams act{gpu::k::Act::kClip, -6.f, 6.f};
  const gpu::k::MmaConvOperands mo = gpu::k::conv_int8_mma_operands(g, w.data());
  std::vector<gpu::DeviceBuffer> keep;
  const int8_t* xd = to_device(x, keep);
  const int8_t* wd = to_device(w, keep);
  const int8_t* wpd = to_device(mo.weights, keep);
  const int32_t* td = to_device(mo.taps, keep);
  const float* md = to_device(mult, keep);
  const float* bd = to_device(bias, keep);
  const double* bqd = to_device(bq, keep);
  const size_t count = size_t(g.N * g.M * g.OH * g.OW);
  std::vector<float> fill(count, 12345.f);
  float* plain = to_device(fill, keep);
  float* fast = to_device(fill, keep);
  int32_t* partial = to_device(std::vector<int32_t>(count, 77), keep);
  gpu::k::conv_int8(g, xd, wd, md, bqd, bd, act, plain, nullptr);
  std::vector<float> want(count), got(count);
  ASSERT_EQ(cudaMemcpy(want.data(), plain, count * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  size_t clipped = 0;
  for (float v : want) clipped += std::abs(v) == 6.f;
  EXPECT_LT(clipped, count / 2) << "the outputs are mostly clipped: the comparison would show little";
  // Whole K in each block, the slices the launch picks, and three slices (an uneven cut of K's steps).
  const int64_t k_steps = mo.k_padded / gpu::k::kMmaK;
  std::vector<int> splits = {1, gpu::k::conv_int8_mma_splits(g, mo.k_padded)};
  if (k_steps >= 3) splits.push_back(3);
  for (int split : splits) {
    SCOPED_TRACE("K in " + std::to_string(split) + " slice(s) of " + std::to_string(k_steps) + " steps");
    ASSERT_EQ(cudaMemcpy(fast, fill.data(), count * 4, cudaMemcpyHostToDevice), cudaSuccess);
    gpu::k::conv_int8_mma(g, mo.k_padded, split, xd, wpd, td, md, bqd, bd, act, fast, partial, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(got.data(), fast, count * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    size_t differ = 0, first = count;
    for (size_t i = 0; i < count; ++i)
      if (std::memcmp(&want[i], &got[i], 4) != 0 && differ++ == 0) first = i;
    EXPECT_EQ(differ, 0u) << "of " << count << "; first at " << first << ": " << got[first] << " vs "
                          << want[first];
  }
}

// Batch 1 on a small image (ResNet-50's last stage: 7x7, 512 filters, 3x3) fills 8 blocks whole; K is cut.
TEST(ConvInt8Mma, SmallOutputsCutKIntoSlices) {
  EXPECT_GT(gpu::k::conv_int8_mma_splits(geom(1, 512, 7, 512, 3, 1, 1, 1, 1), 4608), 8);
  EXPECT_EQ(gpu::k::conv_int8_mma_splits(geom(32, 64, 56, 256, 1, 1, 0, 1, 1), 64), 1);
}

INSTANTIATE_TEST_SUITE_P(Geometries, ConvInt8Mma, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ConvInt8Mma, DepthwiseAndHugeWindowsStayOnThePlainKernel) {
  EXPECT_FALSE(gpu::k::conv_int8_mma_fits(geom(1, 32, 9, 32, 3, 1, 1, 1, 32)));
  // Pads and dilations a loadable may carry (up to 2^31) would wrap the kernel's int offsets.
  ConvGeom huge_pad = geom(1, 32, 9, 32, 3, 1, 1, 1, 1), huge_dilation = huge_pad;
  ASSERT_TRUE(gpu::k::conv_int8_mma_fits(huge_pad));
  huge_pad.PT = huge_pad.PL = (int64_t(1) << 31) - 1;
  huge_dilation.DH = huge_dilation.DW = (int64_t(1) << 31) - 1;
  EXPECT_FALSE(gpu::k::conv_int8_mma_fits(huge_pad));
  EXPECT_FALSE(gpu::k::conv_int8_mma_fits(huge_dilation));
}

}  // namespace

#endif  // DLAKIT_WITH_CUDA
