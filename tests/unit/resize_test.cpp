// Resize's fused path for float tensors resized in their last two axes (rows, then columns, written once)
// against the definition: two separate 1-D linear passes (half_pixel coordinates), and a nearest-neighbour
// gather, bit for bit on random data with odd sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "../common/test_data.h"
#include "engine/engine.h"
#include "kernels/registry.h"

using namespace dlakit;

namespace {

Tensor resize(const Tensor& x, const Shape& out, const std::string& mode, const std::string& coord) {
  Graph g;
  const int xv = g.add_value("x", {DType::kF32, x.shape()});
  g.inputs = {xv};
  Tensor sizes(DType::kI64, {int64_t(out.size())});
  std::copy(out.begin(), out.end(), sizes.data<int64_t>());
  Node n;
  n.op = OpKind::Resize;
  n.name = "resize";
  n.opset = 13;
  n.inputs = {xv, -1, -1, g.add_constant("sizes", sizes)};
  n.attrs["mode"] = mode;
  n.attrs["coordinate_transformation_mode"] = coord;
  n.outputs = {g.add_value("y", op_impl(OpKind::Resize).infer(InferContext(g, n))[0])};
  g.nodes.push_back(n);
  g.outputs = {n.outputs[0]};
  g.relink();
  return ReferenceEngine(g).run({{"x", x}}).at("y");
}

// One linear half_pixel pass over axis `axis` of a [planes][rows][cols] array, as the ONNX definition reads.
std::vector<float> linear_pass(const std::vector<float>& in, int64_t planes, int64_t rows, int64_t cols,
                               bool along_rows, int64_t out_len) {
  const int64_t in_len = along_rows ? rows : cols;
  const double scale = double(float(double(out_len) / double(in_len)));
  const int64_t out_rows = along_rows ? out_len : rows, out_cols = along_rows ? cols : out_len;
  std::vector<float> out(size_t(planes * out_rows * out_cols));
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < out_rows; ++i)
      for (int64_t j = 0; j < out_cols; ++j) {
        const int64_t o = along_rows ? i : j;
        const double x = std::clamp((double(o) + 0.5) / scale - 0.5, 0.0, double(in_len - 1));
        const int64_t x0 = int64_t(std::floor(x)), x1 = std::min(x0 + 1, in_len - 1);
        const float w = float(x - double(x0));
        auto at = [&](int64_t k) {
          return in[size_t((p * rows + (along_rows ? k : i)) * cols + (along_rows ? j : k))];
        };
        out[size_t((p * out_rows + i) * out_cols + j)] = w == 0.f ? at(x0) : at(x0) * (1.f - w) + at(x1) * w;
      }
  return out;
}

}  // namespace

TEST(Resize, LastTwoAxesLinearEqualsTwoSeparatePasses) {
  std::mt19937 gen(4);
  for (const Shape& out : {Shape{2, 3, 9, 4}, Shape{2, 3, 5, 15}, Shape{2, 3, 12, 7}}) {
    Tensor x(DType::kF32, {2, 3, 5, 7});
    test_data::fill_random(x, gen);
    const Tensor got = resize(x, out, "linear", "half_pixel");
    std::vector<float> want(x.data<float>(), x.data<float>() + x.numel());
    want = linear_pass(want, 6, 5, 7, true, out[2]);
    want = linear_pass(want, 6, out[2], 7, false, out[3]);
    ASSERT_EQ(got.shape(), out);
    ASSERT_EQ(std::memcmp(got.data<float>(), want.data(), want.size() * sizeof(float)), 0)
        << "to " << shape_str(out);
  }
}

TEST(Resize, LastTwoAxesNearestIsAGather) {
  std::mt19937 gen(6);
  Tensor x(DType::kF32, {1, 5, 3, 7});
  test_data::fill_random(x, gen);
  const Tensor got = resize(x, {1, 5, 6, 14}, "nearest", "asymmetric");  // source index = output / 2
  for (int64_t c = 0; c < 5; ++c)
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t j = 0; j < 14; ++j)
        ASSERT_EQ(got.data<float>()[(c * 6 + i) * 14 + j], x.data<float>()[(c * 3 + i / 2) * 7 + j / 2])
            << c << "," << i << "," << j;
}
