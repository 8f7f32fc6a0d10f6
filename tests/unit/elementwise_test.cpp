// The reference binary ops' fast paths (no copy of a full-shape first operand, a broadcast first operand of
// Add/Mul swapped to second, block fills and copies of broadcast operands) against a plain loop over every
// output element with NumPy broadcasting, bit for bit, on odd shapes in both operand orders.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "engine/engine.h"
#include "kernels/registry.h"

using namespace dlakit;

namespace {

// Element of t (shape `in`) that output index `i` of shape `out` reads under NumPy broadcasting.
int64_t broadcast_source(const Shape& in, const Shape& out, int64_t i) {
  int64_t src = 0, stride = 1;
  for (size_t d = out.size(); d-- > 0;) {
    const int64_t pos = i % out[d];
    i /= out[d];
    const size_t k = d + in.size() - out.size();
    if (d + in.size() < out.size()) continue;  // a leading dim `in` does not have
    if (in[k] != 1) src += pos * stride;
    stride *= in[k];
  }
  return src;
}

template <typename T>
T plain(OpKind op, T x, T y) {
  switch (op) {
    case OpKind::Add:
      return T(x + y);
    case OpKind::Sub:
      return T(x - y);
    case OpKind::Mul:
      return T(x * y);
    case OpKind::Div:
      return T(x / y);
    case OpKind::Max:
      return x > y ? x : y;
    case OpKind::Min:
      return x < y ? x : y;
    default:
      return T(0);
  }
}

template <typename T>
Tensor random_tensor(DType dt, const Shape& s, std::mt19937& rng) {
  Tensor t(dt, s);
  std::uniform_real_distribution<float> u(1.f, 4.f);  // never zero (Div, also for ints), signs mixed below
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = T((i % 3 ? 1 : -1) * u(rng));
  return t;
}

template <typename T>
void check(DType dt, OpKind op, const Shape& a, const Shape& b, std::mt19937& rng) {
  Graph g;
  Node n;
  n.op = op;
  n.name = "binary";
  n.opset = 13;
  n.inputs = {g.add_value("a", {dt, a}), g.add_value("b", {dt, b})};
  const TensorType out = op_impl(op).infer(InferContext(g, n))[0];
  n.outputs = {g.add_value("y", out)};
  const Tensor x = random_tensor<T>(dt, a, rng), y = random_tensor<T>(dt, b, rng);
  const Tensor got = run_node(g, n, {&x, &y})[0];
  ASSERT_EQ(got.shape(), out.shape);
  for (int64_t i = 0; i < got.numel(); ++i) {
    const T want = plain<T>(op, x.data<T>()[broadcast_source(a, out.shape, i)],
                            y.data<T>()[broadcast_source(b, out.shape, i)]);
    ASSERT_EQ(std::memcmp(&got.data<T>()[i], &want, sizeof(T)), 0)
        << op_name(op) << " " << shape_str(a) << " with " << shape_str(b) << " at " << i;
  }
}

}  // namespace

TEST(Elementwise, BroadcastPathsMatchAPlainLoopBitForBit) {
  std::mt19937 rng(7);
  // Pairs of shapes; each is also run the other way round.
  const std::vector<std::pair<Shape, Shape>> pairs = {
      {{2, 5, 7, 9}, {2, 5, 7, 9}},      // same shape
      {{2, 5, 7, 9}, {1}},               // scalar
      {{2, 5, 7, 9}, {1, 5, 1, 1}},      // per channel
      {{2, 5, 7, 9}, {9}},               // a row
      {{2, 5, 7, 9}, {2, 1, 7, 1}},      // mixed
      {{3, 1, 9}, {5, 1}},               // both broadcast
      {{33}, {33}},                      // 1-D
      {{2, 40, 33, 31}, {1, 40, 1, 1}},  // big enough for the threads' chunks to start mid-tensor
      {{64, 300, 3}, {300, 1}},          // one value per short block, chunks starting mid-tensor
      {{0, 3}, {3}},                     // empty
      {{2, 0, 4}, {1, 4}},               // empty in the middle
  };
  for (OpKind op : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Max, OpKind::Min})
    for (const auto& [a, b] : pairs) {
      check<float>(DType::kF32, op, a, b, rng);
      check<float>(DType::kF32, op, b, a, rng);
      check<int32_t>(DType::kI32, op, a, b, rng);
      check<int32_t>(DType::kI32, op, b, a, rng);
    }
}
