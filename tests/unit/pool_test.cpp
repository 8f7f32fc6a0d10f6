// MaxPool's 2-D fast path (one output row at a time, window positions outermost) and its general loop (taken
// with the Indices output) against the definition:
// each output the std::max of its window's inputs inside the image, in row-major window order, bit for
// bit on odd shapes, strides, pads and ceil_mode, with NaN, infinities and signed zeros in the data (where
// the order of std::max decides which zero or whether a NaN is kept).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "../common/test_data.h"
#include "engine/engine.h"
#include "kernels/registry.h"

using namespace dlakit;

namespace {

struct PoolCase {
  int64_t H, W, KH, KW, SH, SW, pt, pl, pb, pr;
  bool ceil_mode;
};

int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p0, int64_t p1, bool ceil_mode) {
  const int64_t span = in + p0 + p1 - k;
  const int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  return ceil_mode && (out - 1) * s >= in + p0 ? out - 1 : out;  // no window starting in the end padding
}

// `indices`: with the Indices output too, which takes the general loop instead of the fast path.
Tensor max_pool(const Tensor& x, const PoolCase& c, bool indices) {
  Graph g;
  const int xv = g.add_value("x", {DType::kF32, x.shape()});
  g.inputs = {xv};
  Node n;
  n.op = OpKind::MaxPool;
  n.name = "pool";
  n.opset = 12;
  n.inputs = {xv};
  n.attrs["kernel_shape"] = std::vector<int64_t>{c.KH, c.KW};
  n.attrs["strides"] = std::vector<int64_t>{c.SH, c.SW};
  n.attrs["pads"] = std::vector<int64_t>{c.pt, c.pl, c.pb, c.pr};
  n.attrs["ceil_mode"] = int64_t(c.ceil_mode);
  n.outputs = {g.add_value("y", op_impl(OpKind::MaxPool).infer(InferContext(g, n))[0])};
  if (indices) n.outputs.push_back(g.add_value("i", op_impl(OpKind::MaxPool).infer(InferContext(g, n))[1]));
  g.nodes.push_back(n);
  g.outputs = n.outputs;
  g.relink();
  return ReferenceEngine(g).run({{"x", x}}).at("y");
}

}  // namespace

TEST(MaxPool, FastPathEqualsTheDefinitionBitForBit) {
  std::vector<PoolCase> cases = {
      {11, 13, 3, 3, 2, 2, 1, 1, 1, 1, false},
      {11, 13, 2, 2, 1, 1, 0, 0, 1, 1, false},
      {9, 17, 3, 3, 1, 1, 1, 1, 1, 1, false},
      {12, 15, 3, 3, 2, 2, 0, 0, 0, 0, true},
      {14, 19, 5, 5, 3, 3, 2, 2, 2, 2, false},
      {10, 11, 3, 2, 2, 1, 1, 0, 0, 1, false},
      {7, 23, 1, 4, 1, 4, 0, 1, 0, 2, true},
      // wide enough for the stride-2 rows' vector steps (16 outputs), with a tail and a ragged end
      {9, 77, 3, 3, 2, 2, 1, 1, 1, 1, false},
      {6, 70, 2, 2, 2, 2, 0, 0, 0, 0, true},
      {5, 66, 3, 3, 2, 2, 0, 0, 0, 0, true},
      // a window much wider than the row, padded left: no output reads every tap (the vector steps none)
      {1, 1, 1, 40, 1, 2, 0, 39, 0, 0, false}};
  // ResNet's stem pool (3x3, stride 2, pad 1) on rows of 34-66 columns: every count of 0 to 15 outputs inside
  // the row after its last 16-output vector
  for (int64_t w = 34; w <= 66; ++w) cases.push_back({3, w, 3, 3, 2, 2, 1, 1, 1, 1, false});
  std::mt19937 gen(17);
  const float specials[] = {0.f, -0.f, std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()};
  for (const PoolCase& c : cases) {
    const int64_t N = 2, C = 3, OH = out_size(c.H, c.KH, c.SH, c.pt, c.pb, c.ceil_mode),
                  OW = out_size(c.W, c.KW, c.SW, c.pl, c.pr, c.ceil_mode);
    Tensor x(DType::kF32, {N, C, c.H, c.W});
    test_data::fill_random(x, gen);
    float* xd = x.data<float>();
    // Every seventh value special; runs of signed zeros make ties that only the order settles.
    for (int64_t i = 0; i < x.numel(); i += 7) xd[i] = specials[(i / 7) % 5];
    for (int64_t i = 3; i < x.numel(); i += 11) xd[i] = -std::abs(xd[i]) - 100.f;
    const Tensor got = max_pool(x, c, false), general = max_pool(x, c, true);
    ASSERT_EQ(got.shape(), (Shape{N, C, OH, OW}));
    ASSERT_EQ(general.shape(), got.shape());
    std::vector<float> want(size_t(N * C * OH * OW));
    for (int64_t p = 0; p < N * C; ++p)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          float r = -std::numeric_limits<float>::infinity();
          for (int64_t kh = 0; kh < c.KH; ++kh)
            for (int64_t kw = 0; kw < c.KW; ++kw) {
              const int64_t ih = oh * c.SH - c.pt + kh, iw = ow * c.SW - c.pl + kw;
              if (ih >= 0 && ih < c.H && iw >= 0 && iw < c.W) r = std::max(r, xd[(p * c.H + ih) * c.W + iw]);
            }
          want[size_t((p * OH + oh) * OW + ow)] = r;
        }
    EXPECT_EQ(std::memcmp(general.data<float>(), want.data(), want.size() * sizeof(float)), 0)
        << "MaxPool with Indices " << c.KH << "x" << c.KW << " stride " << c.SH << "x" << c.SW;
    EXPECT_EQ(std::memcmp(got.data<float>(), want.data(), want.size() * sizeof(float)), 0)
        << "MaxPool " << c.KH << "x" << c.KW << " stride " << c.SH << "x" << c.SW << " on " << c.H << "x"
        << c.W;
  }
}
