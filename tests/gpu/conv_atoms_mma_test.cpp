// The implicit GEMM between int8 chw32 surfaces (conv_atoms_mma) against unpack, the cuBLASLt path's run()
// (checked against the plain kernel in conv_int8_gemm_test.cpp) and pack, bit for bit, with every block
// tile, on odd geometries: channels and filters not multiples of 32 nor of the tiles, pixels not a multiple
// of the tile's rows, stride 2, padding, dilation, 1x1, 3x3 and 7x7 windows, batch 2; each activation, both
// store roundings, fp16 first, the output surface at the store rule's scale (its levels are the bytes) and
// at another; and with the residual Add fused, against the CPU's atom Add, the convolution's own surface
// left as it was. Skips without a GPU; fails with DLAKIT_REQUIRE_GPU=1.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>

#include "../common/require_gpu.h"

#if DLAKIT_WITH_CUDA
#include <cuda_runtime.h>

#include "conv_test_data.h"
#include "gpu/conv_atoms_mma.h"
#include "gpu/conv_int8_gemm.h"
#include "gpu/gpu.h"
#include "gpu/kernels.h"
#include "gpu/program_engine.h"
#include "kernels/int8_atoms.h"
#include "runtime/io_format.h"

using namespace dlakit;
using gpu::ConvInt8Gemm;
using gpu::MmaTile;
using gpu::k::Act;
using gpu::k::ConvGeom;
using test_conv::geom;

namespace {

using Case = test_conv::NamedGeom;

std::vector<Case> cases() {
  return {{"c45_m70_3x3_s2_p1_n2", geom(2, 45, 15, 70, 3, 2, 1, 1)},
          {"c96_m200_1x1_n2", geom(2, 96, 9, 200, 1, 1, 0, 1)},
          {"c64_m130_3x3_d2_p2", geom(1, 64, 17, 130, 3, 1, 2, 2)},
          {"c33_m64_7x7_s2_p3", geom(1, 33, 29, 64, 7, 2, 3, 1)},
          {"c256_m17_1x1_s2", geom(1, 256, 13, 17, 1, 2, 0, 1)},
          {"c32_m300_3x3_p1_n2", geom(2, 32, 10, 300, 3, 1, 1, 1)},
          {"c20_m40_1x1_one_stage_n2", geom(2, 20, 6, 40, 1, 1, 0, 1)}};
}

class ConvAtomsMmaTest : public ::testing::TestWithParam<Case> {};

void* scratch(size_t bytes, std::vector<gpu::DeviceBuffer>& keep) {
  keep.emplace_back(std::max<size_t>(bytes, 4));
  return keep.back().data();
}

std::vector<uint8_t> to_host(const void* d, size_t bytes) {
  std::vector<uint8_t> h(bytes);
  EXPECT_EQ(cudaMemcpy(h.data(), d, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

size_t differences(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

TEST_P(ConvAtomsMmaTest, EveryTileEqualsUnpackRunAndPack) {
  REQUIRE_GPU();
  const ConvGeom g = GetParam().g;
  const float s_surface = 0.043f, s_out = 0.05f, s_other = 0.061f, s_sum = 0.09f;
  const rt::TensorDesc in_desc =
      rt::make_desc("x", {g.N, g.C, g.H, g.W}, {DType::kI8, rt::IoFormat::kChw32}, 64);
  const rt::TensorDesc out_desc =
      rt::make_desc("y", {g.N, g.M, g.OH, g.OW}, {DType::kI8, rt::IoFormat::kChw32}, 64);
  gpu::k::SurfaceGeom in_geom = gpu::surface_geom(in_desc), out_geom = gpu::surface_geom(out_desc);
  in_geom.scale = s_surface;
  std::mt19937 gen(11);
  std::uniform_int_distribution<int> level(-128, 127);
  // Random levels in every byte: the padding channels of the input must not matter.
  auto random_bytes = [&](size_t n) {
    std::vector<int8_t> v(n);
    for (auto& b : v) b = int8_t(level(gen));
    return v;
  };
  const std::vector<int8_t> in_bytes = random_bytes(in_desc.size), other_bytes = random_bytes(out_desc.size),
                            w = random_bytes(size_t(g.M * g.C * g.KH * g.KW));
  const Int8EpilogueData ep =
      random_int8_epilogue(g.M, std::sqrt(double(g.C * g.KH * g.KW)) * 74.0 * 74.0, gen);

  const std::shared_ptr<const ConvInt8Gemm> plain = ConvInt8Gemm::plan(g, ConvInt8Gemm::depth(g));
  const std::shared_ptr<const ConvInt8Gemm> atoms = ConvInt8Gemm::plan(g, ConvInt8Gemm::atom_depth(g));
  ASSERT_TRUE(plain && atoms);
  std::vector<gpu::DeviceBuffer> keep;
  auto* in_d = to_device(in_bytes, keep);
  auto* other_d = to_device(other_bytes, keep);
  const float* md = to_device(ep.mult, keep);
  const float* bd = to_device(ep.bias, keep);
  const double* bqd = to_device(ep.bq, keep);
  const int8_t* plain_w = to_device(plain->weights(g, w.data()), keep);
  const int8_t* atom_w = to_device(atoms->atom_weights(g, w.data()), keep);
  void* cols = scratch(plain->cols_bytes(), keep);
  void* sums = scratch(plain->sums_bytes(), keep);
  void* work = scratch(plain->workspace_bytes(), keep);
  auto* x = static_cast<float*>(scratch(size_t(g.N * g.C * g.H * g.W) * 4, keep));
  auto* y = static_cast<float*>(scratch(size_t(g.N * g.M * g.OH * g.OW) * 4, keep));
  auto* want_d = static_cast<uint8_t*>(scratch(out_desc.size, keep));
  auto* got_d = static_cast<int8_t*>(scratch(out_desc.size, keep));
  auto* sum_d = static_cast<int8_t*>(scratch(out_desc.size, keep));
  auto surface = [&](void* data, float scale) {
    return Int8Atoms{static_cast<int8_t*>(data), int64_t(out_desc.stride[3]), int64_t(out_desc.stride[2]),
                     int64_t(out_desc.stride[1]), scale};
  };
  const Int8Atoms in_atoms{in_d, int64_t(in_desc.stride[3]), int64_t(in_desc.stride[2]),
                           int64_t(in_desc.stride[1]), s_surface};
  gpu::k::unpack_surface(in_geom, reinterpret_cast<const uint8_t*>(in_d), x, nullptr);

  gpu::k::StoreRule store;
  store.kind = gpu::k::StoreRule::Kind::kInt8, store.scale = s_out;
  for (const auto& [s_pack, rounding, half_first, act] :
       {std::tuple{s_out, 0, false, gpu::k::ActParams{Act::kRelu, 0, 0}},
        std::tuple{0.07f, 1, false, gpu::k::ActParams{Act::kNone, 0, 0}},
        std::tuple{s_out, 0, true, gpu::k::ActParams{Act::kClip, -1.5f, 2.f}},
        std::tuple{0.07f, 1, false, gpu::k::ActParams{Act::kLeakyRelu, 0.1f, 0}}}) {
    store.rounding = rounding, store.half_first = half_first;
    // Expected: unpack (above), run() at the surface's own scale, pack.
    plain->run(x, s_surface, 0, plain_w, md, bqd, bd, act, store, y, cols, sums, work, nullptr);
    out_geom.scale = s_pack;
    ASSERT_EQ(cudaMemset(want_d, 0x5a, out_desc.size), cudaSuccess);
    gpu::k::pack_surface(out_geom, y, want_d, nullptr);
    const std::vector<uint8_t> want = to_host(want_d, out_desc.size);
    size_t nonzero = 0, negative = 0;
    for (uint8_t b : want) nonzero += b != 0, negative += int8_t(b) < 0;
    // Of the real values (an atom's padding channels are zero, and 17 of 32 channels are real in one case).
    const size_t real = size_t(g.N * g.M * g.OH * g.OW);
    EXPECT_GT(nonzero, real / 4) << "mostly zero outputs would show little";
    if (act.act == Act::kNone) {
      EXPECT_GT(negative, real / 8);
    }
    // The Add of that output and the other surface, on the CPU.
    std::vector<uint8_t> other_host(other_bytes.begin(), other_bytes.end()), want_sum(out_desc.size, 0x5a);
    for (bool relu : {false, true}) {
      Int8Atoms want_atoms = surface(const_cast<uint8_t*>(want.data()), s_pack);
      add_int8_atoms(g.N, g.M, g.OH, g.OW, want_atoms, surface(other_host.data(), s_other), relu,
                     surface(want_sum.data(), s_sum));
      for (MmaTile tile : {MmaTile::k128x128, MmaTile::k128x64, MmaTile::k64x64}) {
        SCOPED_TRACE("tile " + std::to_string(int(tile)) + ", output scale " + std::to_string(s_pack) +
                     ", rounding " + std::to_string(rounding) + (half_first ? ", fp16 first" : "") +
                     ", activation " + std::to_string(int(act.act)) + (relu ? ", Add + ReLU" : ", Add"));
        ASSERT_TRUE(ConvInt8Gemm::atoms_fit(g, in_atoms, surface(got_d, s_pack)));
        ASSERT_EQ(cudaMemset(got_d, 0x33, out_desc.size), cudaSuccess);
        if (!relu) {  // the convolution alone (once per tile)
          gpu::conv_atoms_mma(g, tile, in_atoms, atom_w, ConvInt8Gemm::atom_depth(g), md, bqd, bd, act, store,
                              surface(got_d, s_pack), nullptr, nullptr);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          EXPECT_EQ(differences(want, to_host(got_d, out_desc.size)), 0u) << "of " << want.size() << " bytes";
          ASSERT_EQ(cudaMemset(got_d, 0x33, out_desc.size), cudaSuccess);
        }
        gpu::AtomAdd add;
        add.other = surface(other_d, s_other), add.y = surface(sum_d, s_sum), add.relu = relu;
        ASSERT_EQ(cudaMemset(sum_d, 0x5a, out_desc.size), cudaSuccess);
        gpu::conv_atoms_mma(g, tile, in_atoms, atom_w, ConvInt8Gemm::atom_depth(g), md, bqd, bd, act, store,
                            surface(got_d, s_pack), &add, nullptr);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const std::vector<uint8_t> own = to_host(got_d, out_desc.size);
        EXPECT_EQ(std::count(own.begin(), own.end(), uint8_t(0x33)), std::ptrdiff_t(own.size()))
            << "the convolution's own surface is written although the Add is fused";
        EXPECT_EQ(differences(want_sum, to_host(sum_d, out_desc.size)), 0u) << "the fused Add";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvAtomsMmaTest, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// Where run_on_atoms takes the implicit GEMM: a grid that gives each multiprocessor a block, with the widest
// tile that still does; none for a batch-1 layer of ResNet-50's last stage (cuBLASLt's split-K serves it).
TEST(ImplicitGemmTile, TheWidestTileThatFillsTheGpu) {
  // Square images (geom's are 3 columns wider), as ResNet-50's at batch 32 and 1.
  auto square = [](int64_t n, int64_t c, int64_t hw, int64_t m, int64_t k) {
    ConvGeom g = geom(n, c, hw, m, k, 1, k / 2, 1);
    g.W = g.OW = hw;
    return g;
  };
  MmaTile tile;
  ASSERT_TRUE(gpu::implicit_gemm_tile(square(32, 512, 7, 2048, 1), 132, tile));  // 13 x 16 wide tiles
  EXPECT_EQ(tile, MmaTile::k128x128);
  ASSERT_TRUE(gpu::implicit_gemm_tile(square(32, 64, 56, 64, 3), 132, tile));  // 64 filters
  EXPECT_EQ(tile, MmaTile::k128x64);
  ASSERT_TRUE(gpu::implicit_gemm_tile(square(32, 512, 7, 512, 3), 132, tile));  // 13 x 4, 13 x 8, 25 x 8
  EXPECT_EQ(tile, MmaTile::k64x64);
  EXPECT_FALSE(gpu::implicit_gemm_tile(square(1, 512, 7, 512, 3), 132, tile));  // 8 small tiles
}

// The written surface against the input's bytes: one byte of overlap at either end counts, touching does not.
TEST(ConvAtomsMmaAliases, AnyByteInCommon) {
  const ConvGeom g = geom(2, 40, 5, 70, 3, 1, 1, 1);  // 2 input atoms, 3 output atoms, 5 x 8 images
  int8_t* const base = reinterpret_cast<int8_t*>(uintptr_t(1) << 20);
  const Int8Atoms in{base, 2 * 5 * 8 * 32, 5 * 8 * 32, 8 * 32, 1.f};  // 5120 bytes
  const int64_t in_bytes = 2 * in.batch;
  const Int8Atoms out_layout{nullptr, 3 * 5 * 8 * 32, 5 * 8 * 32, 8 * 32, 1.f};  // 7680 bytes
  auto at = [&](int64_t offset) {
    Int8Atoms o = out_layout;
    o.data = base + offset;
    return o;
  };
  EXPECT_FALSE(gpu::conv_atoms_mma_aliases(g, in, at(in_bytes)));               // right after the input
  EXPECT_TRUE(gpu::conv_atoms_mma_aliases(g, in, at(in_bytes - 1)));            // its last byte
  EXPECT_FALSE(gpu::conv_atoms_mma_aliases(g, in, at(-2 * out_layout.batch)));  // right before
  EXPECT_TRUE(gpu::conv_atoms_mma_aliases(g, in, at(-2 * out_layout.batch + 1)));
  EXPECT_TRUE(gpu::conv_atoms_mma_aliases(g, in, at(0)));  // in place
}

}  // namespace

#endif  // DLAKIT_WITH_CUDA
