// The INT8 convolution on cuBLASLt (ConvInt8Gemm) against the plain CUDA path (quantize_i8, conv_int8: one
// thread per output, int64 sums, then apply_store), bit for bit, on float inputs that exercise the
// quantization (ties both ways, saturation, NaN) and odd geometries: filters not a multiple of 4 or 32,
// pixels not a multiple of 32 and more than the im2col takes in one pass, stride 2, padding, dilation, batch
// 3, 1x1 and 7x7 windows, both roundings. And its int32 sums against sums computed here, where they pass 2^24
// (a float anywhere in the product would lose them). Skips without a GPU; fails with DLAKIT_REQUIRE_GPU=1,
// also when cuBLASLt cannot take these shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>

#include "../common/require_gpu.h"

#if DLAKIT_WITH_CUDA
#include <cuda_runtime.h>

#include "conv_test_data.h"
#include "gpu/conv_int8_gemm.h"
#include "gpu/gpu.h"
#include "gpu/kernels.h"
#include "gpu/program_engine.h"
#include "kernels/int8_atoms.h"
#include "numerics/quantize.h"
#include "runtime/io_format.h"

using namespace dlakit;
using gpu::ConvInt8Gemm;
using gpu::k::ConvGeom;
using test_conv::geom;

namespace {

struct Case {
  const char* name;
  ConvGeom g;
  int rounding;
};

// Every axis its own (geom() makes them equal): a 3 x 5 window, strides 2 and 1, dilations 1 and 2, padding
// 1 above and 2 below, 3 left and 1 right; K = 75, so the last 16-tap chunk is partial.
ConvGeom uneven() {
  ConvGeom g;
  g.N = 2, g.C = 5, g.H = 19, g.W = 23, g.M = 36, g.KH = 3, g.KW = 5, g.SH = 2, g.SW = 1, g.DH = 1, g.DW = 2;
  g.PT = 1, g.PL = 3;
  g.OH = (g.H + 1 + 2 - ((g.KH - 1) * g.DH + 1)) / g.SH + 1;
  g.OW = (g.W + 3 + 1 - ((g.KW - 1) * g.DW + 1)) / g.SW + 1;
  return g;
}

std::vector<Case> cases() {
  return {{"c5_m36_3x5_s2x1_d1x2_uneven_pads", uneven(), 0},
          // K = 540: two of the im2col's 512-tap groups, the second ending in a partial chunk
          {"c60_m40_3x3_p1_k540", geom(1, 60, 9, 40, 3, 1, 1, 1), 1},
          {"c3_m80_7x7_s2_p3", geom(1, 3, 29, 80, 7, 2, 3, 1), 0},
          {"c45_m17_1x1_even", geom(1, 45, 13, 17, 1, 1, 0, 1), 1},
          {"c17_m96_3x3_p1_n3", geom(3, 17, 11, 96, 3, 1, 1, 1), 0},
          {"c256_m130_3x3_s2_p1", geom(1, 256, 15, 130, 3, 2, 1, 1), 0},
          {"c40_m64_3x3_d2_p2", geom(1, 40, 17, 64, 3, 1, 2, 2), 0},
          {"c64_m1000_1x1", geom(1, 64, 1, 1000, 1, 1, 0, 1), 0},
          // 65884 pixels: more than the im2col's 2048 blocks of 32 take in one pass
          {"c3_m24_7x7_s2_p3_n2_wide", geom(2, 3, 361, 24, 7, 2, 3, 1), 1}};
}

void* scratch(size_t bytes, std::vector<gpu::DeviceBuffer>& keep) {
  keep.emplace_back(std::max<size_t>(bytes, 4));
  return keep.back().data();
}

class ConvInt8GemmTest : public ::testing::TestWithParam<Case> {};

TEST_P(ConvInt8GemmTest, EqualsThePlainKernelBitForBit) {
  REQUIRE_GPU();
  const ConvGeom g = GetParam().g;
  const int rounding = GetParam().rounding;
  const int64_t k_padded = ConvInt8Gemm::depth(g);
  const std::shared_ptr<const ConvInt8Gemm> gemm = ConvInt8Gemm::plan(g, k_padded);
  ASSERT_TRUE(gemm) << "cuBLASLt took no int8 algorithm for this shape (or libcublasLt.so.13 is missing)";
  std::mt19937 gen(11);
  // Inputs in levels of 1/32 (exact in float), a quarter of them on a tie, some beyond the int8 range,
  // some NaN: the quantization into the im2col matrix must round, saturate and zero as quantize_i8 does.
  const float s_in = 1.f / 32;
  std::uniform_int_distribution<int> level(-140, 140), kind(0, 15), wlevel(-128, 127);
  std::vector<float> x(size_t(g.N * g.C * g.H * g.W));
  for (float& v : x) {
    const int k = kind(gen);
    v = k == 0 ? std::numeric_limits<float>::quiet_NaN()
               : (float(level(gen)) + (k < 5 ? 0.5f : 0.25f)) * s_in;
  }
  std::vector<int8_t> w(size_t(g.M * g.C * g.KH * g.KW));
  for (auto& v : w) v = int8_t(wlevel(gen));
  const auto [mult, bias, bq] =
      random_int8_epilogue(g.M, std::sqrt(double(g.C * g.KH * g.KW)) * 74.0 * 74.0, gen);
  const gpu::k::ActParams act{gpu::k::Act::kClip, -6.f, 6.f};
  // The store the epilogue applies: int8 levels of 6/127 (the other kinds share its code, kernels.cu).
  gpu::k::StoreRule store;
  store.kind = gpu::k::StoreRule::Kind::kInt8, store.scale = 6.f / 127, store.rounding = rounding;
  std::vector<gpu::DeviceBuffer> keep;
  const float* xd = to_device(x, keep);
  const int8_t* wd = to_device(w, keep);
  const int8_t* wpd = to_device(gemm->weights(g, w.data()), keep);
  const float* md = to_device(mult, keep);
  const float* bd = to_device(bias, keep);
  const double* bqd = to_device(bq, keep);
  const size_t count = size_t(g.N * g.M * g.OH * g.OW);
  std::vector<float> fill(count, 12345.f);
  float* plain = to_device(fill, keep);
  float* fast = to_device(fill, keep);
  auto* xq = static_cast<int8_t*>(scratch(x.size(), keep));
  gpu::k::quantize_i8(xd, xq, int64_t(x.size()), s_in, rounding, nullptr);
  gpu::k::conv_int8(g, xq, wd, md, bqd, bd, act, plain, nullptr);
  gpu::k::apply_store(store, plain, int64_t(count), nullptr);
  // Scratch filled with garbage first: nothing may depend on it starting at zero.
  void* cols = scratch(gemm->cols_bytes(), keep);
  void* sums = scratch(gemm->sums_bytes(), keep);
  ASSERT_EQ(cudaMemset(cols, 0x5a, gemm->cols_bytes()), cudaSuccess);
  ASSERT_EQ(cudaMemset(sums, 0x5a, gemm->sums_bytes()), cudaSuccess);
  gemm->run(xd, s_in, rounding, wpd, md, bqd, bd, act, store, fast, cols, sums,
            scratch(gemm->workspace_bytes(), keep), nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> want(count), got(count);
  ASSERT_EQ(cudaMemcpy(want.data(), plain, count * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(got.data(), fast, count * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  size_t clipped = 0, differ = 0, first = count;
  for (float v : want) clipped += std::abs(v) == 6.f;
  EXPECT_LT(clipped, count / 2) << "the outputs are mostly clipped: the comparison would show little";
  for (size_t i = 0; i < count; ++i)
    if (std::memcmp(&want[i], &got[i], 4) != 0 && differ++ == 0) first = i;
  EXPECT_EQ(differ, 0u) << "of " << count << "; first at " << first << ": " << got[first] << " vs "
                        << want[first];
}

INSTANTIATE_TEST_SUITE_P(Geometries, ConvInt8GemmTest, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return std::string(info.param.name); });

// ResNet-50's widest 3x3 layer (K = 4608) on inputs and weights near the top of the range: its sums pass
// 2^24, where a float accumulator or epilogue would round them. They must equal int64 sums made here.
TEST(ConvInt8GemmSums, StayExactPast2To24) {
  REQUIRE_GPU();
  const ConvGeom g = geom(1, 512, 5, 36, 3, 1, 1, 1);
  const int64_t k_padded = ConvInt8Gemm::depth(g), k = g.C * 9;
  const std::shared_ptr<const ConvInt8Gemm> gemm = ConvInt8Gemm::plan(g, k_padded);
  ASSERT_TRUE(gemm);
  std::mt19937 gen(3);
  std::uniform_int_distribution<int> high(120, 127), sign(0, 9);
  std::vector<float> x(size_t(g.C * g.H * g.W));
  for (float& v : x) v = float(high(gen));  // s_in = 1: the value is the level
  std::vector<int8_t> w(size_t(g.M * k));
  for (auto& v : w) v = int8_t(sign(gen) == 0 ? -high(gen) : high(gen));
  std::vector<gpu::DeviceBuffer> keep;
  const std::vector<float> ones(size_t(g.M), 1.f), zeros(size_t(g.M), 0.f);
  float* y = static_cast<float*>(scratch(size_t(g.M * g.OH * g.OW) * 4, keep));
  void* sums = scratch(gemm->sums_bytes(), keep);
  gemm->run(to_device(x, keep), 1.f, 0, to_device(gemm->weights(g, w.data()), keep), to_device(ones, keep),
            to_device(std::vector<double>(size_t(g.M), 0.0), keep), to_device(zeros, keep), {}, {}, y,
            scratch(gemm->cols_bytes(), keep), sums, scratch(gemm->workspace_bytes(), keep), nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const int64_t pixels = g.OH * g.OW;
  std::vector<int32_t> got(size_t(pixels * gemm->filters_padded()));
  ASSERT_EQ(cudaMemcpy(got.data(), sums, got.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  int64_t largest = 0;
  size_t differ = 0;
  for (int64_t p = 0; p < pixels; ++p)
    for (int64_t m = 0; m < g.M; ++m) {
      const int64_t oh = p / g.OW, ow = p % g.OW;
      int64_t want = 0;
      for (int64_t c = 0; c < g.C; ++c)
        for (int64_t kh = 0; kh < 3; ++kh)
          for (int64_t kw = 0; kw < 3; ++kw) {
            const int64_t ih = oh - 1 + kh, iw = ow - 1 + kw;
            if (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W)
              want +=
                  int64_t(x[size_t((c * g.H + ih) * g.W + iw)]) * w[size_t(m * k + (c * 3 + kh) * 3 + kw)];
          }
      largest = std::max(largest, std::abs(want));
      differ += got[size_t(p * gemm->filters_padded() + m)] != want;
    }
  EXPECT_GT(largest, int64_t(1) << 24) << "the sums do not reach the range this test is for";
  EXPECT_EQ(differ, 0u);
}

// Between int8 chw32 surfaces (run_on_atoms): the same bytes as unpack, run() and pack, with an input
// scale unlike the surface's (levels through the table), channels and filters not multiples of 32, both
// store roundings with and without fp16 first, an output surface at the store rule's scale (quantized
// once) and at another, with each activation and without (negative levels, saturation at -128). The same
// bytes from the float input (run_to_atoms). And with a residual Add fused (AtomAdd): the bytes of the CPU's
// atom Add of that output and another surface, with and without ReLU, the three surfaces in three layouts,
// the convolution's own surface left as it was. Each filter has its own numbers, one none (its bias alone);
// the two other layouts' lines end in tails (one and two atoms) that no one writes. Two geometries: a small
// one (im2col + cuBLASLt: no tile fills a GPU) and a ResNet-like 256-channel 3x3 layer on 28 x 31 images at
// batch 4, whose case with identity levels (the input scale the surface's) takes the implicit GEMM
// (conv_atoms_mma) on any GPU of up to 220 multiprocessors (its 64 x 64 tiles; an H100 has 132) unless
// DLAKIT_CUDA_IMPLICIT_GEMM=0; the other cases go through im2col + cuBLASLt (conv_atoms_mma_test.cpp covers
// the kernel's other stores directly).
class ConvInt8GemmAtoms : public ::testing::TestWithParam<test_conv::NamedGeom> {};

TEST_P(ConvInt8GemmAtoms, EqualUnpackRunAndPack) {
  REQUIRE_GPU();
  const ConvGeom g = GetParam().g;
  const float s_surface = 0.043f, s_out = 0.05f;
  const rt::TensorDesc in_desc =
      rt::make_desc("x", {g.N, g.C, g.H, g.W}, {DType::kI8, rt::IoFormat::kChw32}, 64);
  const rt::TensorDesc out_desc =
      rt::make_desc("y", {g.N, g.M, g.OH, g.OW}, {DType::kI8, rt::IoFormat::kChw32}, 64);
  gpu::k::SurfaceGeom in_geom = gpu::surface_geom(in_desc), out_geom = gpu::surface_geom(out_desc);
  in_geom.scale = s_surface, out_geom.scale = s_out;
  std::mt19937 gen(9);
  std::uniform_int_distribution<int> level(-128, 127);
  // Random levels in every byte: the real channels hold the input, the padding channels must not matter.
  std::vector<int8_t> in_bytes(in_desc.size);
  for (auto& v : in_bytes) v = int8_t(level(gen));
  std::vector<int8_t> w(size_t(g.M * g.C * 9));
  for (auto& v : w) v = int8_t(level(gen));
  const double spread = std::sqrt(double(g.C * 9)) * 74.0 * 74.0;
  std::vector<float> mult(size_t(g.M)), bias(size_t(g.M));
  std::vector<double> bq(size_t(g.M));
  for (int64_t m = 0; m < g.M; ++m) {
    mult[size_t(m)] = m == 37 ? 0.f : float((0.5 + 0.03 * double(m)) / spread);
    bias[size_t(m)] = 0.25f - 0.01f * float(m);
    bq[size_t(m)] = 3.0 - 0.5 * double(m % 13);
  }
  gpu::k::StoreRule store;
  store.kind = gpu::k::StoreRule::Kind::kInt8, store.scale = s_out;
  // The residual Add's other operand (random levels in every byte) and its result, each in a layout of its
  // own: line tails of one and two atoms, gaps between atom groups and images (strides in bytes).
  const int64_t groups = (g.M + 31) / 32;
  auto layout = [&](int64_t tail, int64_t gap) {
    Int8Atoms a;
    a.line = g.OW * 32 + tail, a.group = a.line * g.OH + gap, a.batch = a.group * groups + 2 * gap;
    return a;
  };
  const Int8Atoms other_layout = layout(32, 0), sum_layout = layout(64, 48);
  const size_t other_bytes_n = size_t(other_layout.batch * g.N), sum_bytes_n = size_t(sum_layout.batch * g.N);
  std::vector<int8_t> other_bytes(other_bytes_n);
  for (auto& v : other_bytes) v = int8_t(level(gen));
  const float s_other = 0.061f, s_sum = 0.09f;

  const std::shared_ptr<const ConvInt8Gemm> plain = ConvInt8Gemm::plan(g, ConvInt8Gemm::depth(g));
  const std::shared_ptr<const ConvInt8Gemm> atoms = ConvInt8Gemm::plan(g, ConvInt8Gemm::atom_depth(g));
  ASSERT_TRUE(plain && atoms);
  std::vector<gpu::DeviceBuffer> keep;
  auto* in_d = to_device(in_bytes, keep);
  const float* md = to_device(mult, keep);
  const float* bd = to_device(bias, keep);
  const double* bqd = to_device(bq, keep);
  auto sized = [&](const ConvInt8Gemm& c) {
    return std::make_tuple(scratch(c.cols_bytes(), keep), scratch(c.sums_bytes(), keep),
                           scratch(c.workspace_bytes(), keep));
  };
  auto* x = static_cast<float*>(scratch(size_t(g.N * g.C * g.H * g.W) * 4, keep));
  auto* y = static_cast<float*>(scratch(size_t(g.N * g.M * g.OH * g.OW) * 4, keep));
  auto* want_d = static_cast<uint8_t*>(scratch(out_desc.size, keep));
  auto* got_d = static_cast<uint8_t*>(scratch(out_desc.size, keep));
  auto* other_d = to_device(other_bytes, keep);
  auto* sum_d = static_cast<uint8_t*>(scratch(sum_bytes_n, keep));
  auto [cols, sums, work] = sized(*plain);
  auto [cols2, sums2, work2] = sized(*atoms);
  const int8_t* plain_w = to_device(plain->weights(g, w.data()), keep);
  const int8_t* atom_w = to_device(atoms->atom_weights(g, w.data()), keep);
  const Int8Atoms in_atoms{in_d, int64_t(in_desc.stride[3]), int64_t(in_desc.stride[2]),
                           int64_t(in_desc.stride[1]), s_surface};
  // An input scale unlike the surface's (levels through the table), then the surface's own (the table is
  // the identity: the bytes are copied).
  using gpu::k::Act;
  // Every activation the epilogue is instantiated for (Clip to [-1.5, 2], LeakyRelu with slope 0.1).
  for (const auto& [s_in, rounding, half_first, act] :
       {std::tuple{0.05f, 0, false, gpu::k::ActParams{Act::kRelu, 0, 0}},
        std::tuple{s_surface, 0, false, gpu::k::ActParams{Act::kRelu, 0, 0}},
        std::tuple{0.05f, 1, true, gpu::k::ActParams{Act::kRelu, 0, 0}},
        std::tuple{0.05f, 0, false, gpu::k::ActParams{Act::kNone, 0, 0}},
        std::tuple{0.05f, 0, false, gpu::k::ActParams{Act::kClip, -1.5f, 2.f}},
        std::tuple{0.05f, 1, false, gpu::k::ActParams{Act::kLeakyRelu, 0.1f, 0}}}) {
    store.rounding = rounding, store.half_first = half_first;
    const Act act_kind = act.act;
    // Expected: unpack, run(), pack.
    gpu::k::unpack_surface(in_geom, reinterpret_cast<const uint8_t*>(in_d), x, nullptr);
    plain->run(x, s_in, 0, plain_w, md, bqd, bd, act, store, y, cols, sums, work, nullptr);
    // The table run() implies: level q of the surface at the input scale.
    std::vector<int8_t> levels(256);
    bool identity = true;
    for (int q = -128; q < 128; ++q) {
      levels[size_t(q + 128)] =
          quant::quantize(float(q) * s_surface, s_in, quant::Rounding::kHalfAwayFromZero);
      identity = identity && levels[size_t(q + 128)] == q;
    }
    EXPECT_EQ(identity, s_in == s_surface);
    const int8_t* levels_d = to_device(levels, keep);
    // The output surface at the store rule's scale (its levels are the bytes), then at another scale. Both
    // outputs start as garbage: every byte, padding channels too, must be written.
    for (float s_pack : {s_out, 0.07f}) {
      SCOPED_TRACE("input scale " + std::to_string(s_in) + ", output surface scale " +
                   std::to_string(s_pack) + ", store rounding " + std::to_string(rounding) +
                   (half_first ? ", fp16 first" : "") + ", activation " + std::to_string(int(act_kind)));
      out_geom.scale = s_pack;
      ASSERT_EQ(cudaMemset(want_d, 0x5a, out_desc.size), cudaSuccess);
      ASSERT_EQ(cudaMemset(got_d, 0x5a, out_desc.size), cudaSuccess);
      gpu::k::pack_surface(out_geom, y, want_d, nullptr);
      const Int8Atoms out_atoms{reinterpret_cast<int8_t*>(got_d), int64_t(out_desc.stride[3]),
                                int64_t(out_desc.stride[2]), int64_t(out_desc.stride[1]), s_pack};
      ASSERT_TRUE(ConvInt8Gemm::atoms_fit(g, in_atoms, out_atoms));
      EXPECT_EQ(ConvInt8Gemm::quantize_once(store, s_pack), s_pack == s_out);
      atoms->run_on_atoms(in_atoms, levels_d, identity, atom_w, md, bqd, bd, act, store, out_atoms, nullptr,
                          cols2, sums2, work2, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<uint8_t> want(out_desc.size), got(out_desc.size);
      ASSERT_EQ(cudaMemcpy(want.data(), want_d, want.size(), cudaMemcpyDeviceToHost), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(got.data(), got_d, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
      size_t differ = 0, nonzero = 0, negative = 0;
      for (size_t i = 0; i < want.size(); ++i)
        differ += want[i] != got[i], nonzero += want[i] != 0, negative += int8_t(want[i]) < 0;
      EXPECT_GT(nonzero, want.size() / 4) << "mostly zero outputs would show little";
      if (act_kind == Act::kNone) {
        EXPECT_GT(negative, want.size() / 8);
      }
      EXPECT_EQ(differ, 0u) << "of " << want.size() << " bytes";

      // From the float input to the surface (run_to_atoms, the path of a first layer): the same bytes.
      ASSERT_EQ(cudaMemset(got_d, 0x5a, out_desc.size), cudaSuccess);
      plain->run_to_atoms(x, s_in, 0, plain_w, md, bqd, bd, act, store, out_atoms, cols, sums, work, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(got.data(), got_d, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
      size_t from_float_differ = 0;
      for (size_t i = 0; i < want.size(); ++i) from_float_differ += want[i] != got[i];
      EXPECT_EQ(from_float_differ, 0u) << "run_to_atoms, of " << want.size() << " bytes";

      // The fused Add against the CPU's atom Add of the output just checked and the other surface.
      for (bool relu : {false, true}) {
        SCOPED_TRACE(relu ? "fused Add + ReLU" : "fused Add");
        auto at = [](Int8Atoms layout, void* bytes, float scale) {
          layout.data = static_cast<int8_t*>(bytes), layout.scale = scale;
          return layout;
        };
        const Int8Atoms out_layout{nullptr, int64_t(out_desc.stride[3]), int64_t(out_desc.stride[2]),
                                   int64_t(out_desc.stride[1]), 0};
        std::vector<uint8_t> want_sum(sum_bytes_n, 0x5a), got_sum(sum_bytes_n), own(out_desc.size);
        add_int8_atoms(g.N, g.M, g.OH, g.OW, at(out_layout, want.data(), s_pack),
                       at(other_layout, other_bytes.data(), s_other), relu,
                       at(sum_layout, want_sum.data(), s_sum));
        ASSERT_EQ(cudaMemset(sum_d, 0x5a, sum_bytes_n), cudaSuccess);
        ASSERT_EQ(cudaMemset(got_d, 0x33, out_desc.size), cudaSuccess);
        gpu::AtomAdd add;
        add.other = at(other_layout, other_d, s_other), add.y = at(sum_layout, sum_d, s_sum);
        add.relu = relu;
        atoms->run_on_atoms(in_atoms, levels_d, identity, atom_w, md, bqd, bd, act, store, out_atoms, &add,
                            cols2, sums2, work2, nullptr);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(got_sum.data(), sum_d, got_sum.size(), cudaMemcpyDeviceToHost), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(own.data(), got_d, own.size(), cudaMemcpyDeviceToHost), cudaSuccess);
        EXPECT_EQ(std::count(own.begin(), own.end(), uint8_t(0x33)), std::ptrdiff_t(own.size()))
            << "the convolution's own surface is written although the Add is fused";
        size_t sum_differ = 0, sum_nonzero = 0;
        for (size_t i = 0; i < want_sum.size(); ++i)
          sum_differ += want_sum[i] != got_sum[i], sum_nonzero += want_sum[i] != 0;
        EXPECT_GT(sum_nonzero, want_sum.size() / 4);
        EXPECT_EQ(sum_differ, 0u) << "of " << want_sum.size() << " bytes";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvInt8GemmAtoms,
    ::testing::Values(test_conv::NamedGeom{"c45_m70_3x3_s2_n2", geom(2, 45, 7, 70, 3, 2, 1, 1)},
                      test_conv::NamedGeom{"c256_m256_28x31_n4", geom(4, 256, 28, 256, 3, 1, 1, 1)}),
    [](const ::testing::TestParamInfo<test_conv::NamedGeom>& info) { return info.param.name; });

TEST(ConvInt8GemmPlan, DeclinesGroupedAndDepthwiseConvolutions) {
  REQUIRE_GPU();
  // The same shape with one group is planned: the declines below are for the groups, not for the shape or a
  // cuBLASLt that plans nothing.
  const ConvGeom plain = geom(1, 48, 9, 48, 3, 1, 1, 1);
  ASSERT_TRUE(ConvInt8Gemm::plan(plain, ConvInt8Gemm::depth(plain)));
  ConvGeom grouped = plain;
  grouped.G = 2;
  EXPECT_FALSE(ConvInt8Gemm::plan(grouped, ConvInt8Gemm::depth(grouped) / 2));
  ConvGeom depthwise = geom(1, 32, 9, 32, 3, 1, 1, 1);
  depthwise.G = 32;
  EXPECT_FALSE(ConvInt8Gemm::plan(depthwise, gpu::k::kMmaK));
}

}  // namespace

#endif  // DLAKIT_WITH_CUDA
