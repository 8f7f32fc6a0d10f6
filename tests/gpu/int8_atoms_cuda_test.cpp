// The CUDA in-place INT8 surface operations (gpu/int8_atoms.cu) against the CPU's (kernels/int8_atoms.h),
// byte for byte over whole surfaces (padding channels and untouched line tails included), on odd shapes
// (channels not a multiple of 32, lines with 64-byte tails), the tie-prone scales of the CPU test (y at
// twice the inputs' scale), and pools with and without a change of scale. Skips without a GPU; fails
// with DLAKIT_REQUIRE_GPU=1.
#include <gtest/gtest.h>

#include <array>
#include <random>

#include "../common/require_gpu.h"
#include "kernels/int8_atoms.h"
#include "numerics/quantize.h"
#include "runtime/io_format.h"

#if DLAKIT_WITH_CUDA
#include "gpu/gpu.h"
#include "gpu/kernels.h"

using namespace dlakit;

namespace {

// A chw32 surface whose lines end in a 64-byte tail (make_desc lays chw lines out without one), its every
// byte a random level (`fill`: an input) or 0x5a (an output, whose tails and padding stay as they were).
struct Surface {
  rt::TensorDesc desc;
  std::vector<uint8_t> bytes;
};
Surface surface(const Shape& s, float scale, std::mt19937& rng, bool fill) {
  Surface r{rt::make_desc("t", s, {DType::kI8, rt::IoFormat::kChw32}, 64), {}};
  r.desc.stride[1] += 64;
  r.desc.stride[2] = r.desc.stride[1] * uint32_t(r.desc.h);
  r.desc.stride[3] = r.desc.stride[2] * uint32_t((r.desc.c + 31) / 32);
  r.desc.size = r.desc.n * r.desc.stride[3];
  r.desc.scale = scale;
  r.bytes.assign(r.desc.size, 0x5a);
  std::uniform_int_distribution<int> level(-128, 127);
  if (fill)
    for (auto& b : r.bytes) b = uint8_t(level(rng));
  return r;
}
Int8Atoms atoms(const Surface& s, void* data) {
  return {static_cast<int8_t*>(data), int64_t(s.desc.stride[3]), int64_t(s.desc.stride[2]),
          int64_t(s.desc.stride[1]), s.desc.scale};
}

// The surfaces on the device, the kernel run there, the output copied back.
struct OnDevice {
  gpu::Queue q;
  std::vector<gpu::DeviceBuffer> keep;
  // shift: bytes past the allocation's (aligned) start, to reach the kernels' unaligned paths.
  void* put(const Surface& s, size_t shift = 0) {
    keep.emplace_back(s.bytes.size() + shift);
    void* at = static_cast<uint8_t*>(keep.back().data()) + shift;
    q.copy(at, s.bytes.data(), s.bytes.size());
    return at;
  }
  std::vector<uint8_t> get(const void* d, size_t n) {
    std::vector<uint8_t> out(n);
    q.copy(out.data(), d, n);
    q.synchronize();
    return out;
  }
};

}  // namespace

TEST(Int8AtomsCuda, AddWithAndWithoutReluEqualsTheCpuKernel) {
  REQUIRE_GPU();
  std::mt19937 rng(3);
  const std::vector<std::array<float, 3>> scales = {{0.031f, 0.017f, 0.043f},
                                                    {0.350695f, 0.350695f, 0.70139f}};
  for (const Shape& s : {Shape{1, 45, 5, 7}, Shape{2, 32, 3, 4}, Shape{1, 70, 2, 9}})
    for (const auto& [sa, sb, sy] : scales)
      for (bool relu : {false, true})
        for (size_t shift : {0, 1}) {  // aligned: 4 bytes a thread; not: 1
          SCOPED_TRACE(shape_str(s) + (relu ? " relu" : "") + (shift ? " unaligned" : ""));
          const Surface a = surface(s, sa, rng, true), b = surface(s, sb, rng, true);
          Surface want = surface(s, sy, rng, false);
          OnDevice dev;
          void *da = dev.put(a, shift), *db = dev.put(b), *dy = dev.put(want);
          dev.q.synchronize();  // the copies have read `want` before the CPU kernel writes it
          add_int8_atoms(s[0], s[1], s[2], s[3], atoms(a, const_cast<uint8_t*>(a.bytes.data())),
                         atoms(b, const_cast<uint8_t*>(b.bytes.data())), relu,
                         atoms(want, want.bytes.data()));
          gpu::k::add_int8_atoms(s[0], s[1], s[2], s[3], atoms(a, da), atoms(b, db), relu, atoms(want, dy),
                                 static_cast<cudaStream_t>(dev.q.stream()));
          EXPECT_EQ(dev.get(dy, want.bytes.size()), want.bytes);
        }
}

TEST(Int8AtomsCuda, MaxPoolEqualsTheCpuKernel) {
  REQUIRE_GPU();
  std::mt19937 rng(4);
  struct Pool {
    int64_t k, stride, pad;
  };
  // 1 x 40 x 3 x 140: at stride 1, lines longer than a block's pass (140 x 32 bytes, 280 pieces of 16 for 256
  // threads).
  for (const Shape& s : {Shape{1, 45, 9, 11}, Shape{2, 64, 8, 8}, Shape{1, 40, 3, 140}})
    for (const Pool& p : {Pool{3, 2, 1}, Pool{2, 2, 0}, Pool{3, 1, 1}})
      for (float sy : {0.02f, 0.031f})
        for (size_t shift : {0, 4, 1}) {  // 16-byte aligned: 16 channels a thread; 4: a word of 4; 1: a byte
          SCOPED_TRACE(shape_str(s) + " k" + std::to_string(p.k) + " s" + std::to_string(p.stride) + " p" +
                       std::to_string(p.pad) + " scale " + std::to_string(sy) + " shift " +
                       std::to_string(shift));
          const int64_t oh = (s[2] + 2 * p.pad - p.k) / p.stride + 1,
                        ow = (s[3] + 2 * p.pad - p.k) / p.stride + 1;
          const PoolWindow w{p.k, p.k, p.stride, p.stride, p.pad, p.pad, oh, ow};
          const Surface x = surface(s, 0.02f, rng, true);
          Surface want = surface({s[0], s[1], oh, ow}, sy, rng, false);
          OnDevice dev;
          void *dx = dev.put(x, shift), *dy = dev.put(want);
          dev.q.synchronize();
          const bool keep_levels = quant::same_levels(0.02f, sy);
          max_pool_int8_atoms(s[0], s[1], s[2], s[3], w, atoms(x, const_cast<uint8_t*>(x.bytes.data())),
                              keep_levels, atoms(want, want.bytes.data()));
          gpu::k::max_pool_int8_atoms(s[0], s[1], s[2], s[3], w, atoms(x, dx), keep_levels, atoms(want, dy),
                                      static_cast<cudaStream_t>(dev.q.stream()));
          EXPECT_EQ(dev.get(dy, want.bytes.size()), want.bytes);
        }
}

#endif  // DLAKIT_WITH_CUDA
