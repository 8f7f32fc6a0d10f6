// The exact INT8 convolution (kernels/conv_int8) against plain integer loops written here: int64 sums of
// level products, then the requantization formula, on random levels with odd shapes (channels not a
// multiple of 4 or 16, widths not a multiple of the 12-pixel tile, stride, padding, dilation, groups,
// 1x1 and 7x7). Every kernel the CPU runs (AVX-512 VNNI, AVX2, the plain loops) runs each case, on planar
// input and on the same levels in an int8 chw32 surface's layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ostream>
#include <random>
#include <vector>

#include "kernels/conv_int8.h"
#include "numerics/quantize.h"

using namespace dlakit;

namespace {

struct Case {
  const char* name;
  Int8ConvGeometry g;  // OH, OW filled in by the test
  int64_t N, pb, pr;   // batch; bottom and right padding
  GemmEpilogue::Act act = GemmEpilogue::Act::kNone;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// The fused activations as the separate nodes compute them (Relu, Clip(-0.5, 0.75), LeakyRelu(0.1)).
float activate(GemmEpilogue::Act act, float v) {
  switch (act) {
    case GemmEpilogue::Act::kRelu:
      return v > 0.f ? v : 0.f;
    case GemmEpilogue::Act::kClip:
      return std::min(std::max(v, -0.5f), 0.75f);
    case GemmEpilogue::Act::kLeakyRelu:
      return v >= 0.f ? v : v * 0.1f;
    case GemmEpilogue::Act::kNone:
      break;
  }
  return v;
}

int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1) {
  return (in + p0 + p1 - ((k - 1) * d + 1)) / s + 1;
}

std::vector<float> reference(const Int8ConvGeometry& g, int64_t N, const std::vector<int8_t>& x,
                             const std::vector<float>& w, const Int8Requant& rq, GemmEpilogue::Act act) {
  const int64_t Cg = g.C / g.groups, Mg = g.M / g.groups, plane = g.OH * g.OW;
  std::vector<float> y(size_t(N * g.M * plane));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < g.M; ++m)
      for (int64_t oh = 0; oh < g.OH; ++oh)
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          int64_t sum = 0;
          const int64_t grp = m / Mg;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t kh = 0; kh < g.KH; ++kh)
              for (int64_t kw = 0; kw < g.KW; ++kw) {
                const int64_t ih = oh * g.sh - g.pt + kh * g.dh, iw = ow * g.sw - g.pl + kw * g.dw;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                sum += int64_t(x[size_t(((n * g.C + grp * Cg + c) * g.H + ih) * g.W + iw)]) *
                       int64_t(w[size_t(((m * Cg + c) * g.KH + kh) * g.KW + kw)]);
              }
          y[size_t(((n * g.M + m) * g.OH + oh) * g.OW + ow)] =
              activate(act, rq.mult[m] > 0 ? float(double(sum) + rq.bias_q[m]) * rq.mult[m] : rq.bias[m]);
        }
  return y;
}

class ConvInt8 : public ::testing::TestWithParam<Case> {};

TEST_P(ConvInt8, BothKernelsEqualPlainIntegerLoops) {
  Case c = GetParam();
  Int8ConvGeometry& g = c.g;
  g.OH = out_size(g.H, g.KH, g.sh, g.dh, g.pt, c.pb);
  g.OW = out_size(g.W, g.KW, g.sw, g.dw, g.pl, c.pr);
  const int64_t Cg = g.C / g.groups;
  ASSERT_TRUE(int8_conv_supported(g.M, Cg, g.groups, g.KH, g.KW));
  std::mt19937 gen(7);
  std::uniform_int_distribution<int> level(-128, 127), wlevel(-128, 127);
  std::vector<int8_t> x(size_t(c.N * g.C * g.H * g.W));
  for (auto& v : x) v = int8_t(level(gen));
  std::vector<float> w(size_t(g.M * Cg * g.KH * g.KW));
  for (auto& v : w) v = float(wlevel(gen));
  std::vector<float> mult(size_t(g.M)), bias(size_t(g.M));
  std::vector<double> bias_q(size_t(g.M));
  std::uniform_real_distribution<float> unit(0.5f, 2.f);
  for (int64_t m = 0; m < g.M; ++m) {
    mult[size_t(m)] = m % 5 == 3 ? 0.f : unit(gen) * 1e-5f;  // some channels without a scale keep the bias
    bias[size_t(m)] = unit(gen) - 1.f;
    bias_q[size_t(m)] = double(int64_t(gen() % 20001) - 10000);
  }
  Int8Requant rq{mult.data(), bias_q.data(), bias.data(), {}};
  rq.act.act = c.act, rq.act.lo = -0.5f, rq.act.hi = 0.75f, rq.act.alpha = 0.1f;
  const std::vector<float> want = reference(g, c.N, x, w, rq, c.act);
  // The same levels in an int8 chw32 surface's layout, with a line stride longer than the row.
  const int64_t groups32 = (g.C + 31) / 32, line = g.W * 32 + 64, group = line * g.H,
                batch = group * groups32;
  std::vector<int8_t> atoms(size_t(c.N * batch), int8_t(99));
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t ch = 0; ch < g.C; ++ch)
      for (int64_t h = 0; h < g.H; ++h)
        for (int64_t w = 0; w < g.W; ++w)
          atoms[size_t(n * batch + ch / 32 * group + h * line + w * 32 + ch % 32)] =
              x[size_t(((n * g.C + ch) * g.H + h) * g.W + w)];
  const Int8Input layouts[] = {Int8Input::planar(x.data(), g.C, g.H, g.W),
                               Int8Input::atoms(atoms.data(), 32, batch, group, line)};
  // Weights are packed under the kernel that runs them (the AVX2 kernel reads a 16-bit copy).
  auto packed_for = [&](Int8Kernel k) {
    const Int8Kernel before = int8_kernel_use(k);
    auto packed = pack_int8_conv(g.M, Cg, g.groups, g.KH, g.KW, w.data());
    int8_kernel_use(before);
    return packed;
  };
  for (Int8Kernel k : int8_kernels())
    for (const Int8Input& in : layouts) {
      const auto packed = packed_for(k);
      const Int8Kernel before = int8_kernel_use(k);
      std::vector<float> y(want.size(), -7.f);
      Int8Output to;
      to.y = y.data();
      conv_int8_exact(*packed, g, c.N, in, rq, to);
      int8_kernel_use(before);
      size_t differ = 0;
      for (size_t i = 0; i < y.size(); ++i) differ += y[i] != want[i];  // bit for bit
      EXPECT_EQ(differ, 0u) << c.name << " with the " << int8_kernel_name(k) << " kernel on "
                            << (in.lane == 1 ? "chw32 atoms" : "planar input") << ": " << differ << " of "
                            << y.size() << " values differ";
    }
  // Straight into an int8 chw32 surface: each byte is what quantizing the float output gives (ties away
  // from zero), the last atom's padding channels are zero, and bytes past a line's pixels are not touched.
  const int64_t out_groups = (g.M + 31) / 32, out_line = g.OW * 32 + 32, out_group = out_line * g.OH;
  float amax = 0.f;
  for (float v : want) amax = std::max(amax, std::fabs(v));
  const float out_scale = amax / 100.f;  // levels spread over most of the int8 range
  for (Int8Kernel k : int8_kernels())
    for (const Int8Input& in : layouts) {
      std::vector<int8_t> surface(size_t(c.N * out_group * out_groups), int8_t(0x55));
      Int8Output to;
      to.atoms = surface.data(), to.batch = out_group * out_groups, to.group = out_group, to.line = out_line;
      to.scale = out_scale;
      const auto packed = packed_for(k);
      const Int8Kernel before = int8_kernel_use(k);
      conv_int8_exact(*packed, g, c.N, in, rq, to);
      int8_kernel_use(before);
      size_t wrong = 0, untouched = 0;
      for (int64_t n = 0; n < c.N; ++n)
        for (int64_t m = 0; m < out_groups * 32; ++m)
          for (int64_t oh = 0; oh < g.OH; ++oh) {
            for (int64_t ow = 0; ow < g.OW; ++ow) {
              const int8_t expect =
                  m < g.M ? quant::quantize(want[size_t(((n * g.M + m) * g.OH + oh) * g.OW + ow)], out_scale,
                                            quant::Rounding::kHalfAwayFromZero)
                          : int8_t(0);
              wrong += *to.atom_at(n, m, oh, ow) != expect;
            }
            untouched += m % 32 == 0 && *to.atom_at(n, m, oh, g.OW) == int8_t(0x55);
          }
      EXPECT_EQ(wrong, 0u) << c.name << " into an int8 surface with the " << int8_kernel_name(k)
                           << " kernel from " << (in.lane == 1 ? "chw32 atoms" : "planar input");
      EXPECT_EQ(untouched, size_t(c.N * out_groups * g.OH))
          << c.name << ": bytes past the lines were written";
    }
}

Int8ConvGeometry geom(int64_t C, int64_t H, int64_t W, int64_t M, int64_t groups, int64_t K, int64_t s,
                      int64_t d, int64_t p) {
  Int8ConvGeometry g;
  g.C = C, g.H = H, g.W = W, g.M = M, g.groups = groups, g.KH = K, g.KW = K;
  g.sh = g.sw = s, g.dh = g.dw = d, g.pt = g.pl = p;
  return g;
}

INSTANTIATE_TEST_SUITE_P(
    OddShapes, ConvInt8,
    ::testing::Values(
        Case{"3x3_c37_m45_w29_relu", geom(37, 11, 29, 45, 1, 3, 1, 1, 1), 1, 1, 1, GemmEpilogue::Act::kRelu},
        Case{"3x3_stride2_c5_m17", geom(5, 13, 27, 17, 1, 3, 2, 1, 1), 2, 0, 1},
        Case{"1x1_c3_m33_w40_clip", geom(3, 6, 40, 33, 1, 1, 1, 1, 0), 1, 0, 0, GemmEpilogue::Act::kClip},
        Case{"7x7_stride2_pad3_c3_m24", geom(3, 23, 31, 24, 1, 7, 2, 1, 3), 1, 3, 3},
        Case{"3x3_dilation2_c21_m16", geom(21, 15, 17, 16, 1, 3, 1, 2, 2), 1, 2, 2},
        Case{"grouped_g2_c20_m48_blocks_cross_atoms", geom(20, 7, 15, 48, 2, 3, 1, 1, 1), 1, 1, 1},
        Case{"grouped_g3_c18_m48_leaky", geom(18, 9, 14, 48, 3, 3, 1, 1, 1), 1, 1, 1,
             GemmEpilogue::Act::kLeakyRelu},
        Case{"depthwise_3x3_c21_w37_clip", geom(21, 9, 37, 21, 21, 3, 1, 1, 1), 2, 1, 1,
             GemmEpilogue::Act::kClip},
        Case{"depthwise_3x3_stride2_c19_w45_relu", geom(19, 12, 45, 19, 19, 3, 2, 1, 1), 1, 1, 1,
             GemmEpilogue::Act::kRelu},
        Case{"depthwise_5x5_dilation2_c5", geom(5, 14, 23, 5, 5, 5, 1, 2, 4), 1, 4, 4},
        Case{"5x5_asymmetric_pad_c9_m31", geom(9, 10, 25, 31, 1, 5, 1, 1, 2), 1, 0, 1},
        // 10 outputs per group: groups start at channels 10, 20, 30, so 8-channel halves cross an atom.
        Case{"grouped_g4_c12_m40_halves_cross_atoms", geom(12, 6, 11, 40, 4, 3, 1, 1, 1), 1, 1, 1},
        // 70 channels: the surface path's channel blocks in three atoms.
        Case{"depthwise_3x3_c70_three_atoms", geom(70, 7, 13, 70, 70, 3, 1, 1, 1), 1, 1, 1,
             GemmEpilogue::Act::kRelu}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(ConvInt8Limits, SumsThatCouldPassInt32AndNarrowGroupsStayOnTheReferencePath) {
  EXPECT_TRUE(int8_conv_supported(64, 512, 1, 3, 3));
  EXPECT_TRUE(int8_conv_supported(32, 1, 32, 3, 3));  // depthwise
  // taps * C4 * 255 * 128 >= 2^31: (level + 128) * w summed over 66000 inputs could pass int32.
  EXPECT_FALSE(int8_conv_supported(64, 66000, 1, 1, 1));
  EXPECT_FALSE(int8_conv_supported(32, 2, 16, 3, 3));  // 2 outputs per group: a 16-channel block each
}

TEST(ConvInt8Limits, ExtremeLevelsSumExactly) {
  // Over 3x3x512, the largest sums the DLA sees (about 7.5e7 in magnitude): every input at -128 with every
  // weight at -127 (the stored input, level + 128, is 0: the sum is all compensation), and every input at
  // 127 with every weight at -128 (stored 255: the largest products and pair sums of the 16-bit kernel).
  Int8ConvGeometry g = geom(512, 3, 3, 16, 1, 3, 1, 1, 0);
  g.OH = g.OW = 1;
  const struct {
    int8_t x;
    float w;
  } extremes[] = {{-128, -127.f}, {127, -128.f}};
  std::vector<float> mult(16, 1.f), bias(16, 0.f);
  std::vector<double> bias_q(16, 0.0);
  for (const auto& e : extremes)
    for (Int8Kernel k : int8_kernels()) {
      std::vector<int8_t> x(size_t(512 * 9), e.x);
      std::vector<float> w(size_t(16 * 512 * 9), e.w);
      const Int8Kernel before = int8_kernel_use(k);
      const auto packed = pack_int8_conv(16, 512, 1, 3, 3, w.data());
      std::vector<float> y(16);
      conv_int8_exact(*packed, g, 1, Int8Input::planar(x.data(), 512, 3, 3),
                      {mult.data(), bias_q.data(), bias.data(), {}},
                      Int8Output{y.data(), nullptr, 0, 0, 0, 0});
      int8_kernel_use(before);
      for (float v : y)
        EXPECT_EQ(v, float(double(e.x) * double(e.w) * 512 * 9))
            << int8_kernel_name(k) << " input " << int(e.x);
    }
}

}  // namespace
