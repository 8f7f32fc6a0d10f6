// The CUDA pack/unpack kernels of the DLA feature layouts against the runtime's CPU functions (rt::pack,
// rt::unpack, rt::write_surface, rt::read_surface): the same bytes and the same values, for every format and
// element type, on odd shapes. Skips without a GPU; fails with DLAKIT_REQUIRE_GPU=1.
#include <gtest/gtest.h>

#include <cstring>

#include "../common/require_gpu.h"
#include "../common/test_data.h"
#include "runtime/io_format.h"
#include "runtime/surface_io.h"

#if DLAKIT_WITH_CUDA
#include <cuda_runtime.h>

#include "gpu/gpu.h"
#include "gpu/kernels.h"
#include "gpu/program_engine.h"

using namespace dlakit;

namespace {

struct Case {
  rt::IoFormat format;
  DType dtype;
  Shape shape;
};

class SurfaceKernels : public ::testing::TestWithParam<Case> {};

TEST_P(SurfaceKernels, PackAndUnpackEqualTheCpu) {
  REQUIRE_GPU();
  const Case& c = GetParam();
  rt::TensorDesc d = rt::make_desc("x", c.shape, {c.dtype, c.format}, 32);
  if (c.dtype == DType::kI8) d.scale = 0.0173f;
  Graph g;
  g.inputs.push_back(g.add_value("x", {DType::kF32, c.shape}));
  const Tensor x = test_data::random_inputs(g, 11).at("x");
  const bool chw = c.format == rt::IoFormat::kChw16 || c.format == rt::IoFormat::kChw32;
  std::vector<uint8_t> cpu(d.size, 0), gpu_bytes(d.size, 0);
  chw ? rt::write_surface(x, d, cpu.data()) : rt::pack(x, d, cpu.data());

  gpu::DeviceBuffer xs(size_t(x.nbytes())), buf(d.size), back(size_t(x.nbytes()));
  ASSERT_EQ(cudaMemcpy(xs.data(), x.raw(), x.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
  // A chw surface is all elements and padding channels (its lines have no tails), which pack writes as
  // zeros: a filler there shows any byte it leaves. Linear and hwc4 keep their line tails and hwc4's fourth
  // channel as they were, here zeros as the CPU's pack writes them.
  ASSERT_EQ(cudaMemset(buf.data(), chw ? 0x5a : 0, d.size), cudaSuccess);
  gpu::k::pack_surface(gpu::surface_geom(d), static_cast<const float*>(xs.data()),
                       static_cast<uint8_t*>(buf.data()), nullptr);
  ASSERT_EQ(cudaMemcpy(gpu_bytes.data(), buf.data(), d.size, cudaMemcpyDeviceToHost), cudaSuccess);
  size_t differ = 0, first = 0;
  for (size_t i = 0; i < d.size; ++i)
    if (cpu[i] != gpu_bytes[i] && !differ++) first = i;
  EXPECT_EQ(differ, 0u) << "pack: " << differ << " of " << d.size << " bytes differ, first at " << first
                        << ": cpu " << int(cpu[first]) << " cuda " << int(gpu_bytes[first]);

  ASSERT_EQ(cudaMemcpy(buf.data(), cpu.data(), d.size, cudaMemcpyHostToDevice), cudaSuccess);
  gpu::k::unpack_surface(gpu::surface_geom(d), static_cast<const uint8_t*>(buf.data()),
                         static_cast<float*>(back.data()), nullptr);
  Tensor y = Tensor::uninitialized(DType::kF32, c.shape);
  ASSERT_EQ(cudaMemcpy(y.raw(), back.data(), y.nbytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  const Tensor want = chw ? rt::read_surface(d, cpu.data()) : rt::unpack(cpu.data(), d);
  EXPECT_EQ(std::memcmp(y.raw(), want.raw(), y.nbytes()), 0) << "unpack differs";

  // An int8 surface one byte past an aligned address: the kernels' byte-wise reads (fp16 values must be
  // 2-byte aligned, as every caller's buffers are).
  if (c.dtype != DType::kI8) return;
  gpu::DeviceBuffer shifted(d.size + 1);
  ASSERT_EQ(cudaMemcpy(static_cast<uint8_t*>(shifted.data()) + 1, cpu.data(), d.size, cudaMemcpyHostToDevice),
            cudaSuccess);
  ASSERT_EQ(cudaMemset(back.data(), 0x5a, y.nbytes()), cudaSuccess);
  gpu::k::unpack_surface(gpu::surface_geom(d), static_cast<const uint8_t*>(shifted.data()) + 1,
                         static_cast<float*>(back.data()), nullptr);
  ASSERT_EQ(cudaMemcpy(y.raw(), back.data(), y.nbytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(std::memcmp(y.raw(), want.raw(), y.nbytes()), 0) << "unpack from an unaligned surface differs";
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (auto f :
       {rt::IoFormat::kDlaLinear, rt::IoFormat::kChw16, rt::IoFormat::kChw32, rt::IoFormat::kDlaHwc4})
    for (auto t : {DType::kF16, DType::kI8})
      // Several atom groups with padding channels; a chw32 line too wide for the kernels that take a line
      // per block (W * 32 > 32 KiB), which keep the element kernels.
      for (const Shape& s : {Shape{1, 3, 5, 7}, Shape{2, 17, 3, 9}, Shape{1, 16, 56, 56}, Shape{2, 45, 4, 6},
                             Shape{1, 33, 2, 1030}}) {
        if (f == rt::IoFormat::kDlaHwc4 && s[1] > 4) continue;
        if (f == rt::IoFormat::kChw32 && t != DType::kI8) continue;
        out.push_back({f, t, s});
      }
  return out;
}

std::string label(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  std::string name = std::string(rt::io_format_name(c.format)) + (c.dtype == DType::kI8 ? "_int8" : "_fp16");
  for (int64_t d : c.shape) name += "_" + std::to_string(d);
  return name;
}

INSTANTIATE_TEST_SUITE_P(Formats, SurfaceKernels, ::testing::ValuesIn(cases()), label);

}  // namespace
#endif
