// The FP16 convolution's two routes (ConvF16Gemm: im2col + cuBLASLt; conv_half_mma: the implicit GEMM with
// each block tile, K whole or split over 2 or 3 blocks; its epilogue's simple rules (fp16 or fp32 stores,
// ReLU or none) and, with a Clip, its general form) against the plain CUDA path (round_to_half of the input,
// conv_f32: one thread per output, then apply_store) on odd geometries: filters not a multiple of 8 nor of
// the tiles, channels not a multiple of 16, pixels not a multiple of 8 nor of the tiles, stride 2, padding,
// dilation, batch 3, 1x1 and 7x7 windows. The products are exact in both, so only the fp32 sums differ (their
// order, and the tensor cores' rounding): the results must agree within the sums' rounding bound (plus one
// fp16 step where stored in fp16), and with fp16 storage 97 % of them bit for bit. Skips without a GPU; fails
// with DLAKIT_REQUIRE_GPU=1, also when cuBLASLt cannot take these shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>

#include "../common/require_gpu.h"
#include "base/error.h"
#include "base/fp16.h"

#if DLAKIT_WITH_CUDA
#include <cuda_runtime.h>

#include "conv_test_data.h"
#include "gpu/conv_f16_gemm.h"
#include "gpu/conv_half_mma.h"
#include "gpu/gpu.h"
#include "gpu/kernels.h"

using namespace dlakit;
using gpu::ConvF16Gemm;
using gpu::k::ConvGeom;
using test_conv::geom;

namespace {

struct Case {
  const char* name;
  ConvGeom g;
  bool fp16_store;    // the DLA's FP16 layer (fp16 storage) or a fused fp32 result
  bool clip = false;  // a Clip activation (the epilogue's general form) instead of ReLU / none by M's parity
  bool bias = true;   // without one, every epilogue adds nothing (not even +0, which would turn -0 into +0)
};

enum class Route {
  kIm2col,
  kImplicit128x128,
  kImplicit128x64,
  kImplicit64x64,
  kImplicit128x128Split3,
  kImplicit128x64Split2
};
const char* route_name(Route r) {
  const char* names[] = {"im2col",        "implicit128x128",        "implicit128x64",
                         "implicit64x64", "implicit128x128_split3", "implicit128x64_split2"};
  return names[int(r)];
}

// The implicit routes' shapes (im2col has none: ConvF16Gemm runs it).
gpu::MmaShape shape_of(Route r) {
  const gpu::MmaShape shapes[] = {{},
                                  {gpu::MmaTile::k128x128, 1},
                                  {gpu::MmaTile::k128x64, 1},
                                  {gpu::MmaTile::k64x64, 1},
                                  {gpu::MmaTile::k128x128, 3},
                                  {gpu::MmaTile::k128x64, 2}};
  return shapes[int(r)];
}

// NCHW values (on the fp16 grid) as an fp16 chw16 surface: [n][channel atom][pixel][16], zeros past c.
std::vector<uint16_t> surface_of(const std::vector<float>& nchw, int64_t n, int64_t c, int64_t plane) {
  const int64_t atoms = (c + 15) / 16;
  std::vector<uint16_t> out(size_t(n * atoms * plane * 16), 0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < plane; ++p)
        out[size_t(((i * atoms + ch / 16) * plane + p) * 16 + ch % 16)] =
            float_to_half(nchw[size_t((i * c + ch) * plane + p)]);
  return out;
}

class ConvF16GemmTest : public ::testing::TestWithParam<std::tuple<Case, Route>> {};

TEST_P(ConvF16GemmTest, MatchesThePlainKernelWithinTheSumOrder) {
  REQUIRE_GPU();
  const Case& param = std::get<0>(GetParam());
  const Route route = std::get<1>(GetParam());
  const ConvGeom g = param.g;
  std::shared_ptr<const ConvF16Gemm> gemm;
  if (route == Route::kIm2col) {
    gemm = ConvF16Gemm::plan(g, ConvF16Gemm::Route::kIm2col);
    ASSERT_TRUE(gemm) << "cuBLASLt took no fp16 algorithm for this shape (or libcublasLt.so.13 is missing)";
  } else {
    ASSERT_TRUE(gpu::half_atoms_fit(g));
  }
  std::mt19937 gen(5);
  std::normal_distribution<float> normal(0.f, 1.f);
  // The input is not on the fp16 grid: run() must round it as it reads it, as the input rule would.
  std::vector<float> x(size_t(g.N * g.C * g.H * g.W)), w(size_t(g.M * g.C * g.KH * g.KW)), bias(size_t(g.M));
  for (float& v : x) v = normal(gen) * 3.f;
  const float w_spread = 1.f / std::sqrt(float(g.C * g.KH * g.KW));
  for (float& v : w) v = round_to_half(normal(gen) * w_spread);
  for (float& v : bias) v = normal(gen);
  ASSERT_TRUE(ConvF16Gemm::half_values(w.data(), w.size()));
  gpu::k::StoreRule store;
  store.kind = param.fp16_store ? gpu::k::StoreRule::Kind::kFp16 : gpu::k::StoreRule::Kind::kKeep;
  const gpu::k::ActParams act = param.clip
                                    ? gpu::k::ActParams{gpu::k::Act::kClip, -1.5f, 2.f}
                                    : gpu::k::ActParams{g.M % 2 ? gpu::k::Act::kRelu : gpu::k::Act::kNone};

  std::vector<gpu::DeviceBuffer> keep;
  const float* xd = to_device(x, keep);
  const float* wd = to_device(w, keep);
  const float* bd = param.bias ? to_device(bias, keep) : nullptr;
  const std::vector<uint16_t> wh = gemm ? gemm->weights(w.data()) : gpu::half_atoms_weights(g, w.data());
  const uint16_t* whd = to_device(wh, keep);
  const int64_t count = g.N * g.M * g.OH * g.OW;
  std::vector<float> y_init(static_cast<size_t>(count), 1e30f);
  float* want_d = to_device(y_init, keep);
  float* got_d = to_device(y_init, keep);
  float* x_half = to_device(x, keep);
  // stale values, not zeros
  void* cols =
      to_device(std::vector<uint8_t>(gemm ? gemm->cols_bytes() : gpu::half_atoms_bytes(g), 0x7f), keep);
  void* sums =
      to_device(std::vector<uint8_t>(std::max<size_t>(gemm ? gemm->sums_bytes() : 0, 4), 0x7f), keep);
  void* work =
      to_device(std::vector<uint8_t>(std::max<size_t>(gemm ? gemm->workspace_bytes() : 0, 4), 0), keep);
  // a split K: its parts' sums (stale too) and the counts, zero before the first run and after each
  const gpu::MmaShape shape = gemm ? gpu::MmaShape{} : shape_of(route);
  const int64_t arrivals = gpu::split_arrivals(g, shape);
  const gpu::SplitScratch split{
      shape.splits > 1 ? to_device(std::vector<uint8_t>(gpu::split_sums_bytes(g, shape), 0x7f), keep)
                       : nullptr,
      shape.splits > 1 ? to_device(std::vector<unsigned>(size_t(arrivals), 0u), keep) : nullptr};
  auto counts_back_to_zero = [&] {
    std::vector<unsigned> counts(static_cast<size_t>(arrivals));
    EXPECT_EQ(cudaMemcpy(counts.data(), split.arrivals, counts.size() * 4, cudaMemcpyDeviceToHost),
              cudaSuccess);
    EXPECT_EQ(std::count(counts.begin(), counts.end(), 0u), arrivals);
  };

  gpu::k::round_to_half(xd, x_half, int64_t(x.size()), nullptr);
  gpu::k::conv_f32(g, x_half, wd, bd, act, want_d, nullptr);
  gpu::k::apply_store(store, want_d, count, nullptr);
  if (gemm) {
    gemm->run({xd, nullptr}, whd, bd, act, store, nullptr, {got_d, nullptr}, cols, sums, work, nullptr,
              nullptr);
  } else {
    gpu::conv_half_mma(g, shape, {xd, nullptr}, cols, whd, bd, act, store, nullptr, {got_d, nullptr}, split,
                       nullptr);
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  if (arrivals) counts_back_to_zero();
  const size_t n_out = static_cast<size_t>(count);
  std::vector<float> want(n_out), got(n_out);
  ASSERT_EQ(cudaMemcpy(want.data(), want_d, want.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(got.data(), got_d, got.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);

  // The bound on a difference: the rounding of the fp32 sums (at most one float step per addition, each
  // below the sum of the magnitudes of the terms: K * 2^-23 * sum |x w|, for either kernel), then one fp16
  // step at the value where the result is stored in fp16.
  const int64_t taps = g.C * g.KH * g.KW;
  std::vector<float> x_rounded(x.size());
  for (size_t i = 0; i < x.size(); ++i) x_rounded[i] = round_to_half(x[i]);
  size_t equal = 0, nonzero = 0, not_half = 0;
  double worst = 0;
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t m = 0; m < g.M; ++m)
      for (int64_t oh = 0; oh < g.OH; ++oh)
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          double magnitude = param.bias ? std::fabs(bias[size_t(m)]) : 0.0;
          for (int64_t c = 0; c < g.C; ++c)
            for (int64_t kh = 0; kh < g.KH; ++kh)
              for (int64_t kw = 0; kw < g.KW; ++kw) {
                const int64_t ih = oh * g.SH - g.PT + kh * g.DH, iw = ow * g.SW - g.PL + kw * g.DW;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                magnitude += std::fabs(double(x_rounded[size_t(((n * g.C + c) * g.H + ih) * g.W + iw)]) *
                                       w[size_t(((m * g.C + c) * g.KH + kh) * g.KW + kw)]);
              }
          const size_t i = size_t(((n * g.M + m) * g.OH + oh) * g.OW + ow);
          equal += want[i] == got[i], nonzero += want[i] != 0;
          not_half += param.fp16_store && round_to_half(got[i]) != got[i];
          const double sums = 2.0 * double(taps) * 0x1p-23 * magnitude,
                       half_step = param.fp16_store ? std::fabs(double(want[i])) * 0x1p-10 : 0.0;
          worst = std::max(worst, std::fabs(double(want[i]) - double(got[i])) / (sums + half_step + 0x1p-24));
        }
  EXPECT_GT(nonzero, want.size() / 3) << "mostly zero outputs would show little";
  EXPECT_EQ(not_half, 0u) << "results the fp16 store rule left off the fp16 grid";
  EXPECT_LE(worst, 1.0) << "a result further from the plain kernel's than the sums' rounding allows";
  if (param.fp16_store) {
    // the longer the sums, the more of them land on the other side of an fp16 rounding boundary: 98.9 %
    // equal at K = 2304 on an H100 (2026-12-05)
    EXPECT_GE(equal, want.size() * 97 / 100) << "of " << want.size();
  }
  if (route == Route::kIm2col) return;

  // The residual Add (and a ReLU where the convolution has no activation) in the implicit GEMM's epilogue:
  // the same sums, so bit for bit the separate layers' arithmetic on the result above (fp32 sum, fp16
  // stores). Where the convolution keeps its fp32 result and a ReLU follows, the Add keeps its sum for the
  // ReLU too, which alone rounds to fp16 (ResNet's blocks on the DLA).
  std::vector<float> other(n_out);
  for (float& v : other) v = round_to_half(normal(gen) * 2.f);
  gpu::HalfResidual residual;
  residual.other.nchw = to_device(other, keep);
  // the Add's ReLU where the convolution has none, and also after its own ReLU where M % 4 is 1
  residual.relu = act.act == gpu::k::Act::kNone || g.M % 4 == 1;
  const bool add_keeps = !param.fp16_store && residual.relu;
  residual.store.kind = add_keeps ? gpu::k::StoreRule::Kind::kKeep : gpu::k::StoreRule::Kind::kFp16;
  residual.relu_store.kind = gpu::k::StoreRule::Kind::kFp16;
  float* fused_d = to_device(y_init, keep);
  gpu::conv_half_mma(g, shape, {xd, nullptr}, cols, whd, bd, act, store, &residual, {fused_d, nullptr}, split,
                     nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> fused(n_out);
  ASSERT_EQ(cudaMemcpy(fused.data(), fused_d, fused.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  size_t differ = 0, negative_sums = 0;
  for (size_t i = 0; i < n_out; ++i) {
    float sum = got[i] + other[i];
    if (!add_keeps) sum = round_to_half(sum);
    negative_sums += sum < 0;
    if (residual.relu) sum = round_to_half(sum > 0.f ? sum : 0.f);
    differ += std::memcmp(&sum, &fused[i], 4) != 0;
  }
  EXPECT_EQ(differ, 0u) << "of " << n_out;
  EXPECT_GT(negative_sums, n_out / 10) << "the ReLU would show little";

  // fp16 chw16 surfaces in place of float NCHW: the input given as one (no pack), the result and the
  // residual's operand as one: the same values, bit for bit, and zeros in the output's padding channels. A
  // surface result needs the last rule to store fp16: the Add's always here, the layer's own with
  // fp16_store.
  const std::vector<uint16_t> x_atoms = surface_of(x_rounded, g.N, g.C, g.H * g.W),
                              other_atoms = surface_of(other, g.N, g.M, g.OH * g.OW);
  const size_t out_atoms_size = gpu::half_atoms_bytes(g.N, g.M, g.OH * g.OW) / 2;
  ASSERT_EQ(other_atoms.size(), out_atoms_size);
  const uint16_t* x_atoms_d = to_device(x_atoms, keep);
  gpu::HalfResidual surface_residual = residual;
  surface_residual.other = {nullptr, to_device(other_atoms, keep)};
  struct SurfaceRun {
    const char* name;
    bool surface_in;
    const gpu::HalfResidual* residual;
    bool surface_out;
    const std::vector<float>* want;
  };
  const SurfaceRun runs[] = {
      {"surface input, float result", true, nullptr, false, &got},
      {"surface result", false, nullptr, true, &got},
      {"surface result and residual operand", false, &surface_residual, true, &fused},
      {"float result, surface residual operand", true, &surface_residual, false, &fused},
      {"surface result, float residual operand", true, &residual, true, &fused},
  };
  const int64_t atoms_out = (g.M + 15) / 16, plane_out = g.OH * g.OW;
  for (const SurfaceRun& run : runs) {
    if (run.surface_out && !run.residual && !param.fp16_store) continue;  // a surface holds fp16 values only
    uint16_t* y_atoms_d = to_device(std::vector<uint16_t>(out_atoms_size, 0x7e00), keep);  // stale: NaN
    float* y_d = to_device(y_init, keep);
    gpu::conv_half_mma(g, shape,
                       run.surface_in ? gpu::HalfInput{nullptr, x_atoms_d} : gpu::HalfInput{xd, nullptr},
                       cols, whd, bd, act, store, run.residual,
                       run.surface_out ? gpu::HalfOutput{nullptr, y_atoms_d} : gpu::HalfOutput{y_d, nullptr},
                       split, nullptr);
    if (run.surface_out) gpu::unpack_half_atoms(y_atoms_d, g.N, g.M, plane_out, y_d, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << run.name;
    std::vector<float> back(n_out);
    ASSERT_EQ(cudaMemcpy(back.data(), y_d, n_out * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(std::memcmp(back.data(), run.want->data(), n_out * 4), 0) << run.name;
    if (!run.surface_out) continue;
    std::vector<uint16_t> y_atoms(out_atoms_size);
    ASSERT_EQ(cudaMemcpy(y_atoms.data(), y_atoms_d, out_atoms_size * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    // the padding channels past M in the last atom (NaN before: a reader's zero weights would not cancel it)
    size_t padding_not_zero = 0;
    for (int64_t i = 0; i < g.N; ++i)
      for (int64_t ch = g.M; ch < atoms_out * 16; ++ch)
        for (int64_t p = 0; p < plane_out; ++p)
          padding_not_zero +=
              y_atoms[size_t(((i * atoms_out + ch / 16) * plane_out + p) * 16 + ch % 16)] != 0;
    EXPECT_EQ(padding_not_zero, 0u) << run.name;
  }
  if (arrivals) counts_back_to_zero();
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvF16GemmTest,
    ::testing::Combine(
        ::testing::Values(Case{"c3_m80_7x7_s2_p3", geom(1, 3, 29, 80, 7, 2, 3, 1), true},
                          Case{"c45_m17_1x1", geom(1, 45, 13, 17, 1, 1, 0, 1), true},
                          Case{"c17_m96_3x3_p1_n3", geom(3, 17, 11, 96, 3, 1, 1, 1), true},
                          Case{"c256_m130_3x3_s2_p1", geom(1, 256, 15, 130, 3, 2, 1, 1), true},
                          Case{"c40_m64_3x3_d2_p2_fp32", geom(1, 40, 17, 64, 3, 1, 2, 2), false},
                          Case{"c64_m1000_1x1_fp32", geom(1, 64, 1, 1000, 1, 1, 0, 1), false},
                          Case{"c96_m200_1x1_n2", geom(2, 96, 9, 200, 1, 1, 0, 1), true},
                          Case{"c48_m40_3x3_p1_clip", geom(1, 48, 12, 40, 3, 1, 1, 1), true, true},
                          Case{"c24_m35_3x3_p1_n2_nobias", geom(2, 24, 10, 35, 3, 1, 1, 1), true, false,
                               false}),
        ::testing::Values(Route::kIm2col, Route::kImplicit128x128, Route::kImplicit128x64,
                          Route::kImplicit64x64, Route::kImplicit128x128Split3,
                          Route::kImplicit128x64Split2)),
    [](const ::testing::TestParamInfo<std::tuple<Case, Route>>& i) {
      return std::string(std::get<0>(i.param).name) + "_" + route_name(std::get<1>(i.param));
    });

TEST(ConvF16Gemm, TakesOnlyWeightsOnTheFp16Grid) {
  const std::vector<float> on = {1.f, -0.5f, 65504.f, 0x1p-24f, 0.f};
  EXPECT_TRUE(ConvF16Gemm::half_values(on.data(), on.size()));
  for (float off : {1.f + 0x1p-12f, 1e-9f, 70000.f, NAN}) {
    std::vector<float> w = on;
    w.push_back(off);
    EXPECT_FALSE(ConvF16Gemm::half_values(w.data(), w.size())) << off;
  }
}

// ResNet-50's second convolution at batch 32 takes the implicit GEMM (unless DLAKIT_CUDA_IMPLICIT_GEMM=0),
// its first (3 channels: 13 of 16 would be padding) and a forced im2col do not.
TEST(ConvF16Gemm, ChoosesTheImplicitGemmWhereItFillsTheGpu) {
  REQUIRE_GPU();
  const ConvGeom big = geom(32, 64, 56, 64, 3, 1, 1, 1), first = geom(32, 3, 224, 64, 7, 2, 3, 1);
  ASSERT_TRUE(ConvF16Gemm::plan(big) && ConvF16Gemm::plan(first) &&
              ConvF16Gemm::plan(big, ConvF16Gemm::Route::kIm2col));
  EXPECT_EQ(ConvF16Gemm::plan(big)->implicit(), gpu::implicit_gemm_enabled());
  EXPECT_FALSE(ConvF16Gemm::plan(first)->implicit());
  EXPECT_FALSE(ConvF16Gemm::plan(big, ConvF16Gemm::Route::kIm2col)->implicit());
}

// A surface holds fp16 values only: the convolution writes one where its last rule (its own, the fused
// Add's or the ReLU's after it) stores fp16, and, asked otherwise, refuses before it launches anything (no
// GPU needed).
TEST(ConvHalfMma, WritesASurfaceOnlyWhereTheLastRuleStoresFp16) {
  gpu::k::StoreRule half, keep, half_first;
  half.kind = gpu::k::StoreRule::Kind::kFp16;
  half_first.half_first = true;
  gpu::HalfResidual add;
  add.store = half;
  add.relu_store = keep;  // read only with a ReLU
  EXPECT_TRUE(gpu::half_surface_rules(half, nullptr));
  EXPECT_TRUE(gpu::half_surface_rules(half_first, nullptr));
  EXPECT_FALSE(gpu::half_surface_rules(keep, nullptr));
  EXPECT_TRUE(gpu::half_surface_rules(keep, &add));
  add.relu = true;
  EXPECT_FALSE(gpu::half_surface_rules(half, &add));
  add.relu_store = half, add.store = keep;
  EXPECT_TRUE(gpu::half_surface_rules(keep, &add));
  const ConvGeom g = geom(1, 16, 8, 16, 1, 1, 0, 1);
  auto* nowhere = reinterpret_cast<uint16_t*>(uintptr_t(256));  // never written: the call refuses first
  const gpu::MmaShape shape{gpu::MmaTile::k64x64, 1};
  EXPECT_THROW(gpu::conv_half_mma(g, shape, {nullptr, nowhere}, nullptr, nowhere, nullptr, {}, keep, nullptr,
                                  {nullptr, nowhere}, {}, nullptr),
               Error);
  add.relu_store = keep;
  EXPECT_THROW(gpu::conv_half_mma(g, shape, {nullptr, nowhere}, nullptr, nowhere, nullptr, {}, half, &add,
                                  {nullptr, nowhere}, {}, nullptr),
               Error);
  // a split K without the memory its blocks meet in
  EXPECT_THROW(gpu::conv_half_mma(g, {gpu::MmaTile::k64x64, 2}, {nullptr, nowhere}, nullptr, nowhere, nullptr,
                                  {}, half, nullptr, {nullptr, nowhere}, {}, nullptr),
               Error);
}

// Where implicit_gemm_tile's grid leaves the multiprocessors few warps (ResNet-50's last stages at batch
// 32), the largest tile with K split to about 16 warps a multiprocessor; elsewhere its choice, unsplit.
TEST(ImplicitGemmShape, SplitsKWhereTheGridIsThin) {
  auto square = [](int64_t n, int64_t c, int64_t hw, int64_t m, int64_t k) {
    ConvGeom g = geom(n, c, hw, m, k, 1, k / 2, 1);
    g.W = g.OW = hw;
    return g;
  };
  auto shape_for = [](const ConvGeom& g) {
    gpu::MmaShape shape;
    EXPECT_TRUE(gpu::implicit_gemm_shape(g, gpu::half_atoms_stages(g), 132, shape));
    return shape;
  };
  // 3x3, 512 filters at 7x7: 52 wide tiles for 264 blocks of 8 warps; 144 stages
  gpu::MmaShape shape = shape_for(square(32, 512, 7, 512, 3));
  EXPECT_EQ(shape.tile, gpu::MmaTile::k128x128);
  EXPECT_EQ(shape.splits, 5);
  EXPECT_EQ(gpu::split_arrivals(square(32, 512, 7, 512, 3), shape), 52);
  EXPECT_EQ(gpu::split_sums_bytes(square(32, 512, 7, 512, 3), shape), size_t(52) * 5 * 128 * 128 * 4);
  shape = shape_for(square(32, 256, 14, 256, 3));  // 98 wide tiles: 2 parts
  EXPECT_EQ(shape.tile, gpu::MmaTile::k128x128);
  EXPECT_EQ(shape.splits, 2);
  shape = shape_for(square(32, 64, 14, 256, 1));  // 2 stages: too short to split
  EXPECT_EQ(shape.tile, gpu::MmaTile::k128x64);
  EXPECT_EQ(shape.splits, 1);
  EXPECT_EQ(gpu::split_sums_bytes(square(32, 64, 14, 256, 1), shape), 0u);
  shape = shape_for(square(32, 512, 7, 2048, 1));  // 13 x 16 wide tiles fill the GPU as they are
  EXPECT_EQ(shape.tile, gpu::MmaTile::k128x128);
  EXPECT_EQ(shape.splits, 1);
  const ConvGeom batch1 = square(1, 512, 7, 512, 3);  // cuBLASLt's, as implicit_gemm_tile says
  EXPECT_FALSE(gpu::implicit_gemm_shape(batch1, gpu::half_atoms_stages(batch1), 132, shape));
}

// Where cuBLASLt answers (a GPU), so that a null plan is the groups rule's, not a missing library's; the
// same shape ungrouped is planned.
TEST(ConvF16Gemm, LeavesGroupedConvolutionsToThePlainKernel) {
  REQUIRE_GPU();
  EXPECT_NE(ConvF16Gemm::plan(geom(1, 32, 9, 32, 3, 1, 1, 1)), nullptr);
  EXPECT_EQ(ConvF16Gemm::plan(geom(1, 32, 9, 32, 3, 1, 1, 1, 32)), nullptr);
}

}  // namespace
#endif
