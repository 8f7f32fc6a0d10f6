// The in-place int8 chw32 operations (kernels/int8_atoms.h) against the path the CPU executor takes
// without them: read the surfaces to float (read_surface), run the reference kernels, write the result
// (write_surface). Output buffers, padding channels included, must be byte-identical, for every kernel the
// CPU runs (kernels/int8_kernel.h), on odd shapes (channels not a multiple of 32, rows of 4 to 11 pixels).
// Lines here are W x 32 bytes, as make_desc lays every chw surface out (write_surface needs that); lines
// with tails are tested against these kernels on the GPU (tests/gpu/int8_atoms_cuda_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>

#include "engine/engine.h"
#include "kernels/int8_atoms.h"
#include "kernels/int8_kernel.h"
#include "kernels/registry.h"
#include "numerics/quantize.h"
#include "runtime/io_format.h"
#include "runtime/surface_io.h"

using namespace dlakit;

namespace {

struct Surface {
  rt::TensorDesc desc;
  std::vector<uint8_t> bytes;
  Int8Atoms atoms() {
    return {reinterpret_cast<int8_t*>(bytes.data()), int64_t(desc.stride[3]), int64_t(desc.stride[2]),
            int64_t(desc.stride[1]), desc.scale};
  }
};

// A chw32 surface at `scale` filled with 0x5a, then written with random values spanning a little more than
// the scale's range (some saturate), if `fill`.
Surface surface(const Shape& s, float scale, std::mt19937& rng, bool fill) {
  Surface r{rt::make_desc("t", s, {DType::kI8, rt::IoFormat::kChw32}, 64), {}};
  r.desc.scale = scale;
  r.bytes.assign(r.desc.size, 0x5a);
  if (fill) {
    Tensor t(DType::kF32, s);
    std::uniform_real_distribution<float> u(-140.f * scale, 140.f * scale);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
    rt::write_surface(t, r.desc, r.bytes.data());
  }
  return r;
}

Tensor run_one(OpKind op, const std::vector<std::pair<std::string, std::vector<int64_t>>>& attrs,
               const std::vector<const Tensor*>& in) {
  Graph g;
  Node n;
  n.op = op;
  n.name = "op";
  n.opset = 13;
  for (size_t i = 0; i < in.size(); ++i)
    n.inputs.push_back(g.add_value("x" + std::to_string(i), in[i]->type()));
  for (const auto& [name, v] : attrs) n.attrs[name] = v;
  n.outputs = {g.add_value("y", op_impl(op).infer(InferContext(g, n))[0])};
  return run_node(g, n, in)[0];
}

class Int8AtomOps : public ::testing::TestWithParam<Int8Kernel> {
 protected:
  void SetUp() override { previous_ = int8_kernel_use(GetParam()); }
  void TearDown() override { int8_kernel_use(previous_); }
  Int8Kernel previous_ = Int8Kernel::kGeneric;
};

}  // namespace

TEST_P(Int8AtomOps, AddWithAndWithoutReluEqualsTheFloatPath) {
  std::mt19937 rng(11);
  // Unrelated scales, and the scales that make sums of two levels land on ties (y = 2 x the inputs' scale,
  // from PP-OCRv4 det: a multiply-add fused into one rounding flips those ties).
  const std::vector<std::array<float, 3>> scales = {{0.031f, 0.017f, 0.043f},
                                                    {0.350695f, 0.350695f, 0.70139f}};
  for (const Shape& s : {Shape{1, 45, 5, 7}, Shape{2, 32, 3, 4}, Shape{1, 70, 2, 9}})
    for (const auto& [sa, sb, sy] : scales)
      for (bool relu : {false, true}) {
        Surface a = surface(s, sa, rng, true), b = surface(s, sb, rng, true);
        Surface want = surface(s, sy, rng, false), got = surface(s, sy, rng, false);
        const Tensor xa = rt::read_surface(a.desc, a.bytes.data()),
                     xb = rt::read_surface(b.desc, b.bytes.data());
        Tensor sum = run_one(OpKind::Add, {}, {&xa, &xb});
        if (relu) sum = run_one(OpKind::Relu, {}, {&sum});
        rt::write_surface(sum, want.desc, want.bytes.data());
        add_int8_atoms(s[0], s[1], s[2], s[3], a.atoms(), b.atoms(), relu, got.atoms());
        EXPECT_EQ(got.bytes, want.bytes) << shape_str(s) << (relu ? " relu" : "");
      }
}

TEST_P(Int8AtomOps, MaxPoolEqualsTheFloatPathAtOneScaleAndAcrossScales) {
  std::mt19937 rng(12);
  struct Case {
    Shape in;
    std::vector<int64_t> kernel, strides, pads;
  };
  const std::vector<Case> cases = {{{1, 45, 9, 11}, {3, 3}, {2, 2}, {1, 1, 1, 1}},  // ResNet's stem pool
                                   {{2, 33, 6, 7}, {2, 2}, {1, 1}, {0, 0, 0, 0}},
                                   {{1, 64, 7, 5}, {3, 2}, {2, 1}, {1, 0, 2, 1}}};
  for (const Case& c : cases)
    for (float out_scale : {0.025f, 0.019f}) {
      Surface x = surface(c.in, 0.025f, rng, true);
      const Tensor xf = rt::read_surface(x.desc, x.bytes.data());
      const Tensor pooled = run_one(
          OpKind::MaxPool, {{"kernel_shape", c.kernel}, {"strides", c.strides}, {"pads", c.pads}}, {&xf});
      Surface want = surface(pooled.shape(), out_scale, rng, false),
              got = surface(pooled.shape(), out_scale, rng, false);
      rt::write_surface(pooled, want.desc, want.bytes.data());
      const Shape& o = pooled.shape();
      const PoolWindow w{c.kernel[0], c.kernel[1], c.strides[0], c.strides[1],
                         c.pads[0],   c.pads[1],   o[2],         o[3]};
      max_pool_int8_atoms(c.in[0], c.in[1], c.in[2], c.in[3], w, x.atoms(),
                          quant::same_levels(0.025f, out_scale), got.atoms());
      EXPECT_EQ(got.bytes, want.bytes) << shape_str(c.in) << " out scale " << out_scale;
    }
}

// Every kernel this CPU runs.
INSTANTIATE_TEST_SUITE_P(Kernels, Int8AtomOps, ::testing::ValuesIn(int8_kernels()), [](const auto& info) {
  std::string name = int8_kernel_name(info.param);
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
});
