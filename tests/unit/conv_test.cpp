// Conv's fast paths (direct position tiles along rows or flat over padded rows, direct channel tiles,
// implicit-im2col sgemm, pointwise, depthwise, fused activations in the store epilogue) against a plain
// direct convolution, on random data, over strides, dilations, pads, groups, multipliers and odd sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>

#include "../common/cpu_isas.h"
#include "base/cpu.h"
#include "base/threadpool.h"
#include "engine/engine.h"
#include "kernels/conv_direct.h"
#include "kernels/registry.h"

using namespace dlakit;

namespace {

Tensor random_tensor(const Shape& s, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  Tensor t(DType::kF32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(g);
  return t;
}

// y[n,m,oh,ow] = b[m] + sum_{c,kh,kw} x[n, g*Cg + c, oh*s - p + kh*d, ow*s - p + kw*d] * w[m, c, kh, kw]
Tensor direct_conv(const Tensor& x, const Tensor& w, const Tensor& b, int64_t stride, int64_t pad,
                   int64_t dil, int64_t group) {
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), M = w.dim(0), K = w.dim(2);
  const int64_t OH = (H + 2 * pad - (K - 1) * dil - 1) / stride + 1,
                OW = (W + 2 * pad - (K - 1) * dil - 1) / stride + 1;
  const int64_t Cg = C / group, Mg = M / group;
  Tensor y(DType::kF32, {N, M, OH, OW});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = b.data<float>()[m];
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t kh = 0; kh < K; ++kh)
              for (int64_t kw = 0; kw < K; ++kw) {
                const int64_t ih = oh * stride - pad + kh * dil, iw = ow * stride - pad + kw * dil;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += double(x.data<float>()[((n * C + (m / Mg) * Cg + c) * H + ih) * W + iw]) *
                       w.data<float>()[((m * Cg + c) * K + kh) * K + kw];
              }
          y.data<float>()[((n * M + m) * OH + oh) * OW + ow] = float(acc);
        }
  return y;
}

}  // namespace

TEST(Conv, FastPathsMatchDirectConvolution) {
  struct Case {
    int64_t N, C, H, W, M, K, stride, pad, dil, group;
    const char* act = nullptr;  // fused activation ("dlakit_activation"), applied to the oracle after
  };
  // The comments name the kernel each case takes with AVX-512 tiles; AVX2 and generic tiles choose
  // differently for some (all three kernels are reached with each, asserted below).
  const Case cases[] = {
      {1, 3, 17, 19, 8, 3, 1, 1, 1, 1},                // position tiles, flat over padded rows
      {2, 8, 12, 12, 16, 3, 2, 1, 1, 2},               // grouped, strided, batch 2: im2col + gemm
      {1, 16, 20, 20, 32, 1, 1, 0, 1, 1},              // pointwise: the GEMM reads the input in place
      {1, 12, 15, 15, 12, 3, 1, 1, 1, 12},             // depthwise
      {1, 12, 16, 16, 12, 5, 2, 2, 1, 12},             // depthwise 5x5 stride 2
      {1, 6, 14, 14, 12, 3, 1, 2, 2, 6},               // depthwise with multiplier 2, dilation 2
      {1, 5, 9, 37, 15, 3, 1, 1, 1, 5},                // multiplier 3: threads start inside a channel's group
      {1, 4, 9, 9, 6, 3, 1, 3, 3, 1},                  // dilation 3
      {1, 96, 40, 160, 24, 3, 1, 1, 1, 1},             // position tiles along long rows
      {1, 67, 7, 7, 37, 3, 1, 1, 1, 1, "Relu"},        // position tiles flat over short rows, M % 8 != 0
      {2, 19, 30, 64, 13, 3, 2, 1, 1, 1, "Clip"},      // position tiles at stride 2 (phase-split rows)
      {1, 5, 33, 40, 11, 5, 1, 2, 2, 1, "LeakyRelu"},  // position tiles, dilation 2, 5x5
      {1, 300, 9, 11, 21, 3, 2, 0, 1, 1},              // stride 2 on short rows: channel tiles
      {1, 9, 23, 41, 10, 7, 2, 3, 1, 1},               // 7x7 stride 2 (a network's first layer)
      {1, 33, 13, 13, 17, 1, 1, 0, 1, 1, "Relu"},      // pointwise with a fused activation
      {1, 16, 29, 31, 16, 3, 2, 1, 1, 16, "Relu"},     // depthwise stride 2, fused activation
      {1, 24, 5, 70, 24, 3, 1, 1, 1, 24},              // depthwise, rows longer than four vectors
      {1, 10, 11, 75, 10, 3, 1, 1, 1, 10, "HardSigmoidMul"},  // depthwise, hard swish on every store
      {1, 23, 12, 17, 29, 3, 1, 1, 1, 1, "HardSigmoidMul"},   // channel tiles, hard swish
      {1, 33, 13, 13, 17, 1, 1, 0, 1, 1, "HardSigmoidMul"},   // pointwise, hard swish
      {1, 2, 270, 270, 3, 3, 1, 0, 120, 1},  // position tiles with taps 240 columns apart: the buffer's slack
      {1, 64, 7, 7, 64, 3, 1, 1, 1, 1, "Relu"},             // channel tiles: ResNet's last stage
      {1, 40, 14, 14, 64, 3, 2, 1, 1, 2, "Clip"},           // channel tiles, grouped, stride 2
      {1, 192, 7, 7, 64, 1, 1, 0, 1, 1, "HardSigmoidMul"},  // pointwise on channel tiles, read in place
      {1, 72, 14, 15, 64, 1, 2, 0, 1, 1, "Relu"},           // 1x1 stride 2: gathered, then the GEMM
      {1, 250, 27, 27, 500, 1, 2, 0, 1, 1, "Relu"},  // the same, on the channel tiles (ResNet's downsampling)
      {2, 21, 17, 23, 40, 1, 3, 0, 1, 1},            // 1x1 stride 3, batch 2: gathered, then the GEMM
  };
  uint32_t seed = 10;
  // The planar, non-depthwise cases' kernels with each ISA's tiles (this CPU runs one of them below).
  const std::pair<const char*, const gemm_isa::TileShapes*> isa_tiles[] = {
      {"avx512", &gemm_isa::tile_shapes_avx512},
      {"avx2", &gemm_isa::tile_shapes_avx2},
      {"generic", &gemm_isa::tile_shapes_generic}};
  std::map<std::string, std::set<ConvKernel>> kernels_taken;
  for (const Case& c : cases) {
    if (c.group < c.C) {
      const int64_t OH = (c.H + 2 * c.pad - (c.K - 1) * c.dil - 1) / c.stride + 1,
                    OW = (c.W + 2 * c.pad - (c.K - 1) * c.dil - 1) / c.stride + 1;
      // A 1x1 layer without padding reads [C][OH][OW] in place at stride 1 (gathered first if strided).
      const bool in_place = c.K == 1 && c.pad == 0;
      const int64_t Wq = conv_direct_layout((OW - 1) * c.stride + (c.K - 1) * c.dil + 1, c.stride);
      for (const auto& [isa, tiles] : isa_tiles)
        kernels_taken[isa].insert(
            conv_choose_kernel({c.M / c.group, c.C / c.group * c.K * c.K, OH, OW, in_place ? OW : Wq,
                                in_place ? 1 : c.stride, in_place ? 1 : c.stride, in_place},
                               *tiles));
    }
    Graph g;
    int x = g.add_value("x", {DType::kF32, {c.N, c.C, c.H, c.W}});
    g.inputs.push_back(x);
    Tensor w = random_tensor({c.M, c.C / c.group, c.K, c.K}, seed++), b = random_tensor({c.M}, seed++);
    int wi = g.add_constant("w", w), bi = g.add_constant("b", b);
    Node n;
    n.op = OpKind::Conv;
    n.name = "conv";
    n.opset = 13;
    n.inputs = {x, wi, bi};
    n.attrs["strides"] = std::vector<int64_t>{c.stride, c.stride};
    n.attrs["pads"] = std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad};
    n.attrs["dilations"] = std::vector<int64_t>{c.dil, c.dil};
    n.attrs["group"] = c.group;
    if (c.act) {
      n.attrs["dlakit_activation"] = std::string(c.act);
      if (std::string(c.act) == "Clip")
        n.attrs["dlakit_activation_params"] = std::vector<float>{-0.5f, 0.75f};
      if (std::string(c.act) == "LeakyRelu") n.attrs["dlakit_activation_params"] = std::vector<float>{0.1f};
      if (std::string(c.act) == "HardSigmoidMul")
        n.attrs["dlakit_activation_params"] = std::vector<float>{0.2f, 0.5f};
    }
    auto types = op_impl(OpKind::Conv).infer(InferContext(g, n));
    int y = g.add_value("y", types[0]);
    n.outputs = {y};
    g.nodes.push_back(n);
    g.outputs.push_back(y);
    g.relink();
    Tensor xin = random_tensor({c.N, c.C, c.H, c.W}, seed++);
    Tensor got = ReferenceEngine(g).run({{"x", xin}}).at("y");
    Tensor want = direct_conv(xin, w, b, c.stride, c.pad, c.dil, c.group);
    const std::string act = c.act ? c.act : "";
    for (int64_t i = 0; i < want.numel(); ++i) {
      float& v = want.data<float>()[i];
      if (act == "Relu") v = std::max(v, 0.f);
      if (act == "Clip") v = std::min(std::max(v, -0.5f), 0.75f);
      if (act == "LeakyRelu") v = v >= 0 ? v : 0.1f * v;
      if (act == "HardSigmoidMul") v = v * std::max(0.f, std::min(1.f, 0.2f * v + 0.5f));
    }
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < got.numel(); ++i)
      ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-4 * std::sqrt(double(c.C * c.K * c.K)))
          << "case C=" << c.C << " M=" << c.M << " K=" << c.K << " group=" << c.group << " at " << i;
  }
  for (const auto& isa : isa_tiles)  // every ISA, so that no entry can be missing unnoticed
    EXPECT_EQ(kernels_taken[isa.first].size(), 3u)
        << "with " << isa.first << " tiles the cases no longer reach all three kernels";
}

// ConvTranspose against its definition: y[n, m, o] = b[m] + the sum of x[n, c, i] * w[c, m, k] over every
// input i and tap k that land on o = i * s - p + k * d. Strides beyond the kernel's reach take the path that
// writes each output once (nothing overlaps; gaps get the bias alone); the others accumulate. The data are
// small integers, so every sum is exact in float in any order and both paths must give the definition's
// bits (signed zeros included); 1-D, 2-D and 3-D.
TEST(ConvTranspose, BothPathsGiveTheDefinitionsBits) {
  struct Case {
    Shape spatial;  // input size per spatial axis
    int64_t N, C, M, K, stride, pad, dil, group, out_pad;
    bool bias;
  };
  const Case cases[] = {
      {{9, 11}, 1, 24, 24, 2, 2, 0, 1, 1, 0, true},  // PP-OCRv4 det's upsampling: disjoint
      {{6, 7}, 1, 5, 1, 2, 2, 0, 1, 1, 0, false},    // one output channel, no bias: disjoint
      {{5, 6}, 2, 4, 6, 2, 3, 0, 1, 2, 1, true},     // gaps between taps, groups, batch 2, output padding
      {{7, 5}, 1, 3, 4, 3, 3, 1, 1, 1, 0, true},     // pads crop the disjoint taps
      {{5, 6}, 1, 3, 2, 2, 3, 0, 2, 1, 0, true},     // dilation 2 < stride 3: still disjoint
      {{6, 6}, 1, 4, 5, 3, 2, 1, 1, 1, 0, true},     // overlapping taps: the accumulating path
      {{13}, 1, 3, 4, 2, 2, 0, 1, 1, 0, true},       // 1-D, disjoint
      {{3, 4, 5}, 1, 2, 3, 2, 2, 0, 1, 1, 0, true},  // 3-D, disjoint
      {{3, 4, 5}, 1, 2, 3, 3, 2, 0, 1, 1, 0, true},  // 3-D, overlapping
  };
  std::mt19937 gen(40);
  std::uniform_int_distribution<int> small(-4, 4);
  auto integers = [&](const Shape& shape) {
    Tensor t(DType::kF32, shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float(small(gen));
    return t;
  };
  for (const Case& c : cases) {
    const size_t ns = c.spatial.size();
    Shape xs{c.N, c.C}, ws{c.C, c.M / c.group};
    for (int64_t v : c.spatial) xs.push_back(v);
    for (size_t a = 0; a < ns; ++a) ws.push_back(c.K);
    Graph g;
    const int x = g.add_value("x", {DType::kF32, xs});
    g.inputs.push_back(x);
    const Tensor w = integers(ws), b = integers({c.M}), xin = integers(xs);
    Node n;
    n.op = OpKind::ConvTranspose;
    n.name = "deconv";
    n.opset = 13;
    n.inputs = {x, g.add_constant("w", w)};
    if (c.bias) n.inputs.push_back(g.add_constant("b", b));
    n.attrs["strides"] = std::vector<int64_t>(ns, c.stride);
    n.attrs["pads"] = std::vector<int64_t>(2 * ns, c.pad);
    n.attrs["dilations"] = std::vector<int64_t>(ns, c.dil);
    n.attrs["group"] = c.group;
    n.attrs["output_padding"] = std::vector<int64_t>(ns, c.out_pad);
    n.outputs = {g.add_value("y", op_impl(OpKind::ConvTranspose).infer(InferContext(g, n))[0])};
    g.nodes.push_back(n);
    g.outputs.push_back(n.outputs[0]);
    g.relink();
    const Tensor got = ReferenceEngine(g).run({{"x", xin}}).at("y");
    // The definition, the spatial axes padded to three (leading ones of size 1).
    std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, k{1, 1, 1};
    for (size_t a = 0; a < ns; ++a) {
      in[3 - ns + a] = c.spatial[a];
      out[3 - ns + a] = got.dim(int(2 + a));
      k[3 - ns + a] = c.K;
    }
    const int64_t Mg = c.M / c.group, Cg = c.C / c.group, ivol = in[0] * in[1] * in[2],
                  ovol = out[0] * out[1] * out[2], kvol = k[0] * k[1] * k[2];
    std::vector<double> want(size_t(got.numel()));
    for (int64_t n0 = 0; n0 < c.N; ++n0)
      for (int64_t m = 0; m < c.M; ++m) {
        double* ym = want.data() + (n0 * c.M + m) * ovol;
        for (int64_t i = 0; i < ovol; ++i) ym[i] = 0.0 + (c.bias ? b.data<float>()[m] : 0.0);
        for (int64_t ci = 0; ci < Cg; ++ci)
          for (int64_t i = 0; i < ivol; ++i)
            for (int64_t t = 0; t < kvol; ++t) {
              const int64_t id[3] = {i / (in[1] * in[2]), (i / in[2]) % in[1], i % in[2]};
              const int64_t kk[3] = {t / (k[1] * k[2]), (t / k[2]) % k[1], t % k[2]};
              int64_t o = 0;
              bool inside = true;
              for (int a = 0; a < 3; ++a) {
                const int64_t pad = a < int(3 - ns) ? 0 : c.pad, s = a < int(3 - ns) ? 1 : c.stride,
                              d = a < int(3 - ns) ? 1 : c.dil;
                const int64_t oa = id[a] * s - pad + kk[a] * d;
                inside = inside && oa >= 0 && oa < out[size_t(a)];
                o = o * out[size_t(a)] + oa;
              }
              if (!inside) continue;
              const int64_t cin = (m / Mg) * Cg + ci;
              ym[o] += double(xin.data<float>()[(n0 * c.C + cin) * ivol + i]) *
                       w.data<float>()[(cin * Mg + m % Mg) * kvol + t];
            }
      }
    for (int64_t i = 0; i < got.numel(); ++i) {
      const float expect = float(want[size_t(i)]);
      ASSERT_EQ(std::memcmp(&got.data<float>()[i], &expect, sizeof(float)), 0)
          << "case " << shape_str(c.spatial) << " K=" << c.K << " stride=" << c.stride << " at " << i << ": "
          << got.data<float>()[i] << ", want " << expect;
    }
  }
}

namespace {

// One convolution for the direct kernels' tests: random data, its padded layout, and the plain convolution's
// result (with the epilogue the tests use: + a random residual, then ReLU).
struct DirectCase {
  int64_t C, H, W, M, K, stride, pad;
  bool epilogue, bias;
  int64_t OH() const { return (H + 2 * pad - K) / stride + 1; }
  int64_t OW() const { return (W + 2 * pad - K) / stride + 1; }
  int64_t Hp() const { return (OH() - 1) * stride + K; }
  int64_t Wq() const { return conv_direct_layout((OW() - 1) * stride + K, stride); }
};
struct DirectData {
  Tensor x, w, b, res, want;
  std::vector<float> padded;
  GemmEpilogue epilogue;
};
DirectData direct_data(const DirectCase& c, uint32_t& seed) {
  DirectData d;
  d.x = random_tensor({1, c.C, c.H, c.W}, seed++);
  d.w = random_tensor({c.M, c.C, c.K, c.K}, seed++);
  d.b = c.bias ? random_tensor({c.M}, seed++) : Tensor(DType::kF32, {c.M});
  d.res = random_tensor({1, c.M, c.OH(), c.OW()}, seed++);
  d.want = direct_conv(d.x, d.w, d.b, c.stride, c.pad, 1, 1);
  if (c.epilogue) {
    for (int64_t i = 0; i < d.want.numel(); ++i)
      d.want.data<float>()[i] = std::max(d.want.data<float>()[i] + d.res.data<float>()[i], 0.f);
    d.epilogue.act = GemmEpilogue::Act::kRelu, d.epilogue.residual = d.res.data<float>();
    d.epilogue.ldr = c.OH() * c.OW();
  }
  d.padded.resize(size_t(conv_direct_buffer_size(c.C, c.Hp(), c.stride, c.Wq())));
  conv_direct_pad_input(d.x.data<float>(), c.C, c.H, c.W, c.pad, c.pad, c.Hp(), c.stride, c.Wq(),
                        d.padded.data());
  return d;
}

}  // namespace

// The direct kernel of every ISA this CPU runs (the engine uses only the widest), on tiles that end inside a
// vector: flat tiles over short padded rows, row tiles with a partial last tile, stride 2, with and without
// the epilogue (residual + ReLU, applied in registers to the stored lanes only). AVX2 and AVX-512 compute
// each output as the same chain of FMAs, so they must agree bit for bit; the generic kernel (no FMA) and both
// against the plain convolution within rounding.
TEST(ConvDirect, EveryIsaOnThisCpuAgrees) {
  struct Kernels {
    void (*pack)(PackedA&, const float*);
    void (*conv)(const ConvDirectArgs&);
  };
  const auto isas = test_isa::usable(Kernels{gemm_isa::conv_pack_generic, gemm_isa::conv_direct_generic},
                                     Kernels{gemm_isa::conv_pack_avx2, gemm_isa::conv_direct_avx2},
                                     Kernels{gemm_isa::conv_pack_avx512, gemm_isa::conv_direct_avx512});
  const DirectCase cases[] = {
      {19, 7, 7, 21, 3, 1, 1, true, true},   // flat: every tile ends rows inside a vector
      {5, 13, 11, 9, 3, 1, 1, false, true},  // flat, no epilogue
      {7, 6, 30, 13, 3, 1, 1, true, true},   // row tiles (flat would take as many), a partial last one
      {6, 15, 71, 10, 3, 2, 1, true, true},  // stride 2 (phase-split rows), row tiles
      {4, 9, 40, 17, 5, 1, 2, false, true},  // 5x5
  };
  uint32_t seed = 500;
  for (const DirectCase& c : cases) {
    const DirectData d = direct_data(c, seed);
    const int64_t OH = c.OH(), OW = c.OW();
    std::vector<std::vector<float>> got;
    for (const auto& isa : isas) {
      SCOPED_TRACE(std::string(isa.name) + " C=" + std::to_string(c.C) + " W=" + std::to_string(c.W));
      PackedA packed;
      packed.M = c.M, packed.K = c.C * c.K * c.K;
      isa.fn.pack(packed, d.w.data<float>());
      std::vector<float> y(size_t(c.M * OH * OW), std::nanf(""));  // every output must be written
      isa.fn.conv({d.padded.data(), c.C, c.Hp(), c.stride, c.Wq(), c.K, c.K, 1, 1, c.stride, OH, OW, &packed,
                   d.b.data<float>(), y.data(), d.epilogue});
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_NEAR(y[i], d.want.data<float>()[i], 1e-4 * std::sqrt(double(c.C * c.K * c.K))) << "at " << i;
      if (isa.fma) got.push_back(y);
    }
    if (got.size() == 2) {
      EXPECT_EQ(got[0], got[1]) << "AVX2 and AVX-512 differ, C=" << c.C << " W=" << c.W;
    }
  }
}

// The depthwise kernel of every ISA this CPU runs, on rows that end inside a vector (7, 14, 29 and 61
// outputs), stride 1 and 2, with the epilogue (residual + ReLU on the stored lanes) and without.
TEST(ConvDirect, EveryIsaDepthwiseAgrees) {
  const auto isas =
      test_isa::usable(gemm_isa::depthwise_generic, gemm_isa::depthwise_avx2, gemm_isa::depthwise_avx512);
  struct Case {
    int64_t C, H, W, stride;
    bool epilogue;
  };
  const Case cases[] = {
      {5, 9, 7, 1, true}, {6, 8, 14, 1, false}, {3, 11, 29, 1, true}, {4, 10, 122, 2, true}};
  uint32_t seed = 700;
  for (const Case& c : cases) {
    const int64_t K = 3, pad = 1, OH = (c.H + 2 * pad - K) / c.stride + 1,
                  OW = (c.W + 2 * pad - K) / c.stride + 1;
    const int64_t Hp = (OH - 1) * c.stride + K, Wq = conv_direct_layout((OW - 1) * c.stride + K, c.stride);
    const Tensor x = random_tensor({1, c.C, c.H, c.W}, seed++), w = random_tensor({c.C, 1, K, K}, seed++),
                 b = random_tensor({c.C}, seed++), res = random_tensor({1, c.C, OH, OW}, seed++);
    Tensor want = direct_conv(x, w, b, c.stride, pad, 1, c.C);
    if (c.epilogue)
      for (int64_t i = 0; i < want.numel(); ++i)
        want.data<float>()[i] = std::max(want.data<float>()[i] + res.data<float>()[i], 0.f);
    std::vector<std::vector<float>> got;
    for (const auto& isa : isas) {
      SCOPED_TRACE(std::string(isa.name) + " W=" + std::to_string(c.W));
      std::vector<float> y(size_t(c.C * OH * OW), std::nanf(""));
      GemmEpilogue e;
      if (c.epilogue) e.act = GemmEpilogue::Act::kRelu, e.residual = res.data<float>(), e.ldr = OH * OW;
      isa.fn({x.data<float>(),
              c.C,
              c.C,
              c.H,
              c.W,
              pad,
              pad,
              Hp,
              c.stride,
              Wq,
              K,
              K,
              1,
              1,
              c.stride,
              OH,
              OW,
              w.data<float>(),
              b.data<float>(),
              y.data(),
              e});
      for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], want.data<float>()[i], 1e-4) << "at " << i;
      if (isa.fma) got.push_back(y);
    }
    if (got.size() == 2) {
      EXPECT_EQ(got[0], got[1]) << "AVX2 and AVX-512 differ, W=" << c.W;
    }
  }
}

// The depthwise kernel with channels in the lanes (AVX-512) bit for bit against the planar one, and near a
// plain loop: channel counts around the 16 lanes (a last group of 5, exactly 16, 17), a channel multiplier,
// horizontal strides 1 and 2 with vertical strides 1, 2 and longer than the window (a top padding the
// window never reaches), asymmetric pads, an input wider than the window reads, 5x5 (more taps than
// lanes), dilation 2, one output column, rows of 7 and 17 outputs, and every epilogue. Both kernels sum
// with FMAs (the planar one's contracted by GCC at -O2, as every build here compiles).
TEST(ConvDirect, DepthwiseLanesMatchPlanarBitForBit) {
  if (!cpu::avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  using Act = GemmEpilogue::Act;
  struct Case {
    int64_t C, mult, H, W, K, sh, sw, pt, pb, pl, pr, dil;
    Act act;
    bool residual, bias;
  };
  const Case cases[] = {
      {37, 1, 7, 7, 3, 1, 1, 1, 1, 1, 1, 1, Act::kRelu, true, true},      // 7x7: groups of 16, 16 and 5
      {20, 1, 14, 14, 3, 2, 2, 1, 1, 1, 1, 1, Act::kClip, false, false},  // stride 2 -> 7x7, no bias
      {16, 1, 9, 11, 5, 1, 1, 2, 2, 2, 2, 1, Act::kLeakyRelu, false, true},
      {17, 1, 8, 8, 3, 1, 1, 2, 2, 2, 2, 2, Act::kNone, false, true},    // dilation 2
      {9, 2, 7, 6, 3, 1, 1, 1, 1, 1, 1, 1, Act::kNone, true, true},      // channel multiplier 2: 18 outputs
      {6, 1, 5, 1, 3, 1, 1, 1, 1, 1, 1, 1, Act::kRelu, false, true},     // one output column
      {19, 1, 6, 33, 3, 2, 2, 1, 1, 1, 1, 1, Act::kClip, true, true},    // stride 2, 17 outputs a row
      {33, 1, 13, 13, 3, 2, 2, 0, 0, 0, 0, 1, Act::kNone, false, true},  // stride 2 without padding: 6x6
      {18, 1, 12, 9, 3, 2, 1, 0, 2, 1, 0, 1, Act::kHardSigmoidMul, true, true},  // vertical stride only
      {21, 1, 7, 12, 3, 1, 2, 2, 0, 0, 1, 1, Act::kRelu, false, true},           // horizontal stride only
      {16, 1, 6, 10, 3, 1, 2, 1, 1, 0, 0, 1, Act::kNone, false, true},  // the last input column unread
      {16, 1, 1, 1, 1, 10001, 1, 5000, 5000, 0, 0, 1, Act::kClip, true,
       true},  // top padding below every window
  };
  uint32_t seed = 1300;
  for (const Case& c : cases) {
    const int64_t M = c.C * c.mult, span = (c.K - 1) * c.dil + 1;
    const int64_t OH = (c.H + c.pt + c.pb - span) / c.sh + 1, OW = (c.W + c.pl + c.pr - span) / c.sw + 1;
    const int64_t Hp = (OH - 1) * c.sh + span, Wq = conv_direct_layout((OW - 1) * c.sw + span, c.sw);
    SCOPED_TRACE("C=" + std::to_string(c.C) + " mult=" + std::to_string(c.mult) + " " + std::to_string(c.H) +
                 "x" + std::to_string(c.W) + " K=" + std::to_string(c.K) + " strides " +
                 std::to_string(c.sh) + "," + std::to_string(c.sw));
    const Tensor x = random_tensor({1, c.C, c.H, c.W}, seed++), w = random_tensor({M, 1, c.K, c.K}, seed++),
                 b = random_tensor({M}, seed++), res = random_tensor({1, M, OH, OW}, seed++);
    GemmEpilogue e;
    e.act = c.act, e.lo = -0.5f, e.hi = 0.75f, e.alpha = c.act == Act::kLeakyRelu ? 0.1f : 0.2f,
    e.beta = 0.5f;
    if (c.residual) e.residual = res.data<float>(), e.ldr = OH * OW;
    DepthwiseArgs args{x.data<float>(),
                       c.C,
                       M,
                       c.H,
                       c.W,
                       c.pt,
                       c.pl,
                       Hp,
                       c.sw,
                       Wq,
                       c.K,
                       c.K,
                       c.dil,
                       c.dil,
                       c.sh,
                       OH,
                       OW,
                       w.data<float>(),
                       c.bias ? b.data<float>() : nullptr,
                       nullptr,
                       e};
    std::vector<float> planar(size_t(M * OH * OW), std::nanf("")), lanes = planar;
    args.y = planar.data();
    gemm_isa::depthwise_avx512(args);
    args.y = lanes.data();
    gemm_isa::depthwise_lanes_avx512(args);
    // The plain loop, then the epilogue.
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double sum = c.bias ? b.data<float>()[m] : 0.0;
          for (int64_t kh = 0; kh < c.K; ++kh)
            for (int64_t kw = 0; kw < c.K; ++kw) {
              const int64_t ih = oh * c.sh - c.pt + kh * c.dil, iw = ow * c.sw - c.pl + kw * c.dil;
              if (ih >= 0 && ih < c.H && iw >= 0 && iw < c.W)
                sum += double(w.data<float>()[(m * c.K + kh) * c.K + kw]) *
                       x.data<float>()[((m / c.mult) * c.H + ih) * c.W + iw];
            }
          const int64_t at = (m * OH + oh) * OW + ow;
          double v = sum + (c.residual ? res.data<float>()[at] : 0.f);
          if (c.act == Act::kRelu) v = std::max(v, 0.0);
          if (c.act == Act::kClip) v = std::min(std::max(v, double(e.lo)), double(e.hi));
          if (c.act == Act::kLeakyRelu && v < 0) v *= e.alpha;
          if (c.act == Act::kHardSigmoidMul) v *= std::max(0.0, std::min(1.0, e.alpha * v + e.beta));
          ASSERT_NEAR(lanes[size_t(at)], v, 1e-4) << "at " << at;
        }
    EXPECT_EQ(lanes, planar);
  }
}

// The channel tiles (conv_direct_channels) of every ISA this CPU runs against the plain convolution, and bit
// for bit against the same ISA's position tiles: both sum each output as one chain over input channels and
// taps, bias last, so the engine may pick either for a layer without changing its output. Rows that split
// into unequal tiles (13 = 7 + 6 on AVX-512, 5 + 5 + 3 on AVX2 and generic), a last panel with few channels,
// stride 2, 5x5, no bias, one output column, and a 1x1 convolution read in place (the input is its own
// layout, with no slack past it).
TEST(ConvDirect, ChannelTilesMatchPositionTilesOnEveryIsa) {
  struct Kernels {
    void (*pack)(PackedA&, const float*);
    void (*conv)(const ConvDirectArgs&);
    void (*channels_pack)(PackedA&, const float*);
    void (*channels)(const ConvDirectArgs&);
  };
  using namespace gemm_isa;
  const auto isas = test_isa::usable(
      Kernels{conv_pack_generic, conv_direct_generic, conv_channels_pack_generic, conv_channels_generic},
      Kernels{conv_pack_avx2, conv_direct_avx2, conv_channels_pack_avx2, conv_channels_avx2},
      Kernels{conv_pack_avx512, conv_direct_avx512, conv_channels_pack_avx512, conv_channels_avx512});
  const DirectCase cases[] = {
      {19, 7, 7, 37, 3, 1, 1, true, true},    // 7x7: one tile a row; 37 = a panel and 5 channels
      {6, 5, 13, 70, 3, 1, 1, false, true},   // 13 columns: tiles of unequal width
      {11, 14, 14, 33, 3, 2, 1, true, true},  // stride 2 (phase-split rows), 7 outputs a row
      {4, 9, 11, 9, 5, 1, 2, true, false},    // 5x5, no bias
      {7, 6, 1, 40, 3, 1, 1, true, true},     // one output column
      {23, 7, 9, 45, 1, 1, 0, true, true},    // pointwise, read in place
  };
  uint32_t seed = 900;
  for (const DirectCase& c : cases) {
    const DirectData d = direct_data(c, seed);
    const int64_t OH = c.OH(), OW = c.OW();
    // A 1x1 input without padding in place: exactly its own values (the kernel must read nothing past them).
    const bool in_place = c.K == 1 && c.pad == 0;
    const std::vector<float> own(d.x.data<float>(), d.x.data<float>() + d.x.numel());
    std::vector<std::vector<float>> channel_outputs;
    for (const auto& isa : isas) {
      SCOPED_TRACE(std::string(isa.name) + " C=" + std::to_string(c.C) + " W=" + std::to_string(c.W) +
                   " K=" + std::to_string(c.K) + " stride=" + std::to_string(c.stride));
      auto run = [&](void (*pack)(PackedA&, const float*), void (*conv)(const ConvDirectArgs&),
                     const float* input) {
        PackedA packed;
        packed.M = c.M, packed.K = c.C * c.K * c.K;
        pack(packed, d.w.data<float>());
        std::vector<float> y(size_t(c.M * OH * OW), std::nanf(""));  // every output must be written
        const float* bias = c.bias ? d.b.data<float>() : nullptr;
        if (input == own.data())  // [C][H][W] as its own layout
          conv({input, c.C, c.H, 1, c.W, 1, 1, 1, 1, 1, OH, OW, &packed, bias, y.data(), d.epilogue});
        else
          conv({input, c.C, c.Hp(), c.stride, c.Wq(), c.K, c.K, 1, 1, c.stride, OH, OW, &packed, bias,
                y.data(), d.epilogue});
        return y;
      };
      const std::vector<float> positions = run(isa.fn.pack, isa.fn.conv, d.padded.data());
      // The channel tiles on two threads and on one: their two task orders give the same bits. One thread
      // takes the panels first; two take the rows first where the weights are at most twice the input (here
      // the 1x1 case, and the stride-2 case on AVX2 and generic), else the panels too.
      const int threads = num_threads();
      set_num_threads(2);
      const std::vector<float> channels =
          run(isa.fn.channels_pack, isa.fn.channels, in_place ? own.data() : d.padded.data());
      set_num_threads(1);
      const std::vector<float> one_thread =
          run(isa.fn.channels_pack, isa.fn.channels, in_place ? own.data() : d.padded.data());
      set_num_threads(threads);
      for (size_t i = 0; i < channels.size(); ++i)
        ASSERT_NEAR(channels[i], d.want.data<float>()[i], 1e-4 * std::sqrt(double(c.C * c.K * c.K)))
            << "at " << i;
      EXPECT_EQ(channels, positions);
      EXPECT_EQ(one_thread, channels);
      if (isa.fma) channel_outputs.push_back(channels);
    }
    if (channel_outputs.size() == 2) {
      EXPECT_EQ(channel_outputs[0], channel_outputs[1]) << "AVX2 and AVX-512 differ";
    }
  }
}

// What lets a fused residual move a layer between the GEMM and the channel tiles (conv_choose_kernel): with
// K within one of the GEMM's k-blocks both sum each output as one chain from zero in k order, then the bias,
// the residual and the activation, so a pointwise layer read in place gives the same bits on either, on
// every ISA (partial tiles included: 37 channels, 9 x 9 positions).
TEST(ConvDirect, GemmAndChannelTilesAgreeBitForBitWithinOneKBlock) {
  struct Kernels {
    void (*gemm)(const GemmArgs&);
    void (*gemm_pack)(PackedA&, const float*, int64_t, int64_t);
    void (*channels)(const ConvDirectArgs&);
    void (*channels_pack)(PackedA&, const float*);
  };
  using namespace gemm_isa;
  const auto isas = test_isa::usable(
      Kernels{sgemm_generic, pack_a_generic, conv_channels_generic, conv_channels_pack_generic},
      Kernels{sgemm_avx2, pack_a_avx2, conv_channels_avx2, conv_channels_pack_avx2},
      Kernels{sgemm_avx512, pack_a_avx512, conv_channels_avx512, conv_channels_pack_avx512});
  const int64_t M = 37, H = 9, N = H * H;
  std::mt19937 gen(41);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  for (int64_t K : {64, 255, 256}) {
    std::vector<float> x(size_t(K * N)), w(size_t(M * K)), b(static_cast<size_t>(M)), res(size_t(M * N));
    for (auto* v : {&x, &w, &b, &res})
      for (float& f : *v) f = d(gen);
    GemmEpilogue e;
    e.act = GemmEpilogue::Act::kRelu, e.residual = res.data(), e.ldr = N;
    for (const auto& isa : isas) {
      SCOPED_TRACE(std::string(isa.name) + " K=" + std::to_string(K));
      PackedA a, c;
      a.M = c.M = M, a.K = c.K = K;
      isa.fn.gemm_pack(a, w.data(), K, 1);
      isa.fn.channels_pack(c, w.data());
      std::vector<float> by_gemm(size_t(M * N)), by_tiles(size_t(M * N), std::nanf(""));
      isa.fn.gemm(
          {M, N, K, w.data(), K, 1, x.data(), N, 1, by_gemm.data(), N, false, b.data(), &a, nullptr, e});
      isa.fn.channels({x.data(), K, H, 1, H, 1, 1, 1, 1, 1, H, H, &c, b.data(), by_tiles.data(), e});
      EXPECT_EQ(std::memcmp(by_gemm.data(), by_tiles.data(), by_gemm.size() * 4), 0);
    }
  }
}

// A residual read transposed makes the channel tiles dearer: ResNet-50's block ends at 14x14 (256 -> 1024, K
// within one of the GEMM's k-blocks, so both give the same bits) go to the GEMM when the residual is fused.
// With K beyond a k-block the fused residual never moves a layer between the GEMM and a direct kernel.
TEST(ConvDirect, FusedResidualChangesTheKernelOnlyWhereBitsAgree) {
  const gemm_isa::TileShapes& tiles = gemm_isa::tile_shapes_avx512;
  ConvShape2d block_end{1024, 256, 14, 14, 14, 1, 1, true};
  EXPECT_EQ(conv_choose_kernel(block_end, tiles), ConvKernel::kDirectChannels);
  block_end.residual = true;
  EXPECT_EQ(conv_choose_kernel(block_end, tiles), ConvKernel::kGemm);
  int checked = 0;
  for (int64_t M : {64, 128, 256, 512, 1024, 2048})
    for (int64_t C : {64, 128, 256, 512, 1024})
      for (int64_t H : {7, 14, 28, 56})
        for (int64_t K : {1, 3}) {
          ConvShape2d s{M, C * K * K, H, H, K == 1 ? H : H + 2, 1, 1, K == 1};
          if (s.K <= tiles.gemm_kc) continue;
          const ConvKernel plain = conv_choose_kernel(s, tiles);
          s.residual = true;
          const ConvKernel fused = conv_choose_kernel(s, tiles);
          EXPECT_TRUE(fused == plain || (fused != ConvKernel::kGemm && plain != ConvKernel::kGemm))
              << M << " " << C << " " << H << " " << K;
          ++checked;
        }
  EXPECT_GT(checked, 100);
}
