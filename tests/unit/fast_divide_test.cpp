// gpu/fast_divide.h against integer division: every divisor up to 5000 on sampled and edge numerators, the
// powers of two and their neighbours up to 2^31 - 1, and random pairs; the pixel split against / and %.
#include "gpu/fast_divide.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

using dlakit::gpu::FastDivide;
using dlakit::gpu::PixelSplit;

namespace {

constexpr uint32_t kMaxIndex = 0x7fffffffu;

void expect_divides(uint32_t d, uint32_t n) {
  ASSERT_EQ(FastDivide(d).quotient(n), n / d) << n << " / " << d;
}

std::vector<uint32_t> edge_numerators(uint32_t d) {
  std::vector<uint32_t> n = {0, 1, kMaxIndex, kMaxIndex - 1};
  for (uint64_t k : {uint64_t(1), uint64_t(2), uint64_t(1000), uint64_t(kMaxIndex / d)})
    for (int64_t delta = -1; delta <= 1; ++delta) {
      const int64_t v = int64_t(k * d) + delta;
      if (v >= 0 && v <= kMaxIndex) n.push_back(uint32_t(v));
    }
  return n;
}

TEST(FastDivide, SmallDivisorsOnEdgeAndSampledNumerators) {
  std::mt19937 gen(7);
  std::uniform_int_distribution<uint32_t> any(0, kMaxIndex);
  for (uint32_t d = 1; d <= 5000; ++d) {
    for (uint32_t n : edge_numerators(d)) expect_divides(d, n);
    for (int i = 0; i < 200; ++i) expect_divides(d, any(gen));
  }
}

TEST(FastDivide, PowersOfTwoTheirNeighboursAndRandomPairs) {
  for (int bit = 1; bit <= 31; ++bit)
    for (int64_t delta = -1; delta <= 1; ++delta) {
      const int64_t d = (int64_t(1) << bit) + delta;
      if (d < 1 || d > kMaxIndex) continue;
      for (uint32_t n : edge_numerators(uint32_t(d))) expect_divides(uint32_t(d), n);
    }
  std::mt19937 gen(8);
  std::uniform_int_distribution<uint32_t> any(1, kMaxIndex);
  for (int i = 0; i < 1000000; ++i) expect_divides(any(gen), any(gen) - 1);
}

TEST(FastDivide, PixelSplitMatchesDivisionAndRemainder) {
  for (int64_t OW : {1, 7, 56, 224, 1000})
    for (int64_t OH : {1, 3, 56, 112})
      for (uint32_t p = 0; p < 300000; p += 7) {
        int n, oh, ow;
        PixelSplit(OW, OH).split(p, n, oh, ow);
        ASSERT_EQ(ow, int(p % OW));
        ASSERT_EQ(oh, int(p / OW % OH));
        ASSERT_EQ(n, int(p / (OW * OH)));
      }
}

}  // namespace
