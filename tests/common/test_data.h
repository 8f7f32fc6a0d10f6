// Inputs, calibration and metrics shared by the model-level test programs (header-only).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>

#include "base/fp16.h"
#include "engine/engine.h"
#include "quant/calibrate.h"

namespace dlakit::test_data {

// Fills `t` with random values of its dtype: N(0, 1) for float tensors (stored as fp16 for f16), uniform
// integers in [-8, 8] for integer tensors ([0, 8] for u8), 0/1 for bool. Never all zeros.
inline void fill_random(Tensor& t, std::mt19937& gen) {
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_int_distribution<int> level(-8, 8), bit(0, 1);
  for (int64_t i = 0; i < t.numel(); ++i) switch (t.dtype()) {
      case DType::kF32:
        t.data<float>()[i] = normal(gen);
        break;
      case DType::kF16:
        t.data<uint16_t>()[i] = float_to_half(normal(gen));
        break;
      case DType::kI8:
        t.data<int8_t>()[i] = int8_t(level(gen));
        break;
      case DType::kU8:
        t.data<uint8_t>()[i] = uint8_t(std::abs(level(gen)));
        break;
      case DType::kBool:
        t.data<uint8_t>()[i] = uint8_t(bit(gen));
        break;
      case DType::kI32:
        t.data<int32_t>()[i] = level(gen);
        break;
      case DType::kI64:
        t.data<int64_t>()[i] = level(gen);
        break;
    }
}

// Random values (fill_random) for every graph input, one generator per input seeded seed, seed + 1, ...
inline TensorMap random_inputs(const Graph& g, uint32_t seed = 11) {
  TensorMap in;
  for (int id : g.inputs) {
    std::mt19937 gen(seed++);
    Tensor t(g.value(id).type.dtype, g.value(id).type.shape);
    fill_random(t, gen);
    in[g.value(id).name] = t;
  }
  return in;
}

// Inputs for scoring INT8 results: seeds no calibration batch uses, so a test never scores the INT8
// build on the data it was calibrated on.
inline constexpr uint32_t kEvalSeed = 90001;

// Scales from `batches` different random batches (random_inputs seeded 11, 11 + 1000, ...), dlakit's
// default calibrator.
inline quant::ScaleTable random_calibration(const Graph& g, int batches) {
  quant::HistogramCollector hc(g);
  for (int i = 0; i < batches; ++i) hc.add(random_inputs(g, 11 + 1000 * uint32_t(i)));
  return hc.compute({});
}

// Cosine similarity of two tensors of the same size (1 when both are zero).
inline double cosine(const Tensor& a, const Tensor& b) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.at_f64(i), y = b.at_f64(i);
    ab += x * y, aa += x * x, bb += y * y;
  }
  return aa == 0 && bb == 0 ? 1.0 : ab / std::sqrt(aa * bb);
}

// How far `got` lies from `want`: relative L2 (over want's norm; the plain L2 where want is zero), max
// |diff|, and the fraction of elements within 1e-4 (for discrete outputs, where one flipped element moves the
// norms). Tensors of different shapes: relative L2 infinite.
struct Compared {
  double rel_l2 = 0, max_abs = 0, agree = 1;
};
inline Compared compare(const Tensor& got, const Tensor& want) {
  Compared c;
  if (got.shape() != want.shape()) {
    c.rel_l2 = INFINITY;
    return c;
  }
  double num = 0, den = 0;
  int64_t agree = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double a = got.at_f64(i), b = want.at_f64(i);
    num += (a - b) * (a - b);
    den += b * b;
    c.max_abs = std::max(c.max_abs, std::fabs(a - b));
    agree += std::fabs(a - b) <= 1e-4;
  }
  c.agree = got.numel() > 0 ? double(agree) / double(got.numel()) : 1.0;
  c.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return c;
}

// x [N, K] -> a fully connected layer "fc" (Gemm or MatMul; `w` as the op reads it: [M, K] for Gemm with
// transB, else [K, M]; an optional bias; Gemm's transB and alpha) -> y -> `reader` (Relu: fused into the
// layer's pipeline, so y stays fp32 in INT8; Identity: y is stored as int8) -> z.
inline Graph fc_graph(OpKind op, const Tensor& w, const Tensor* bias, int64_t N, bool trans_b, OpKind reader,
                      float alpha = 1.f) {
  const bool transposed = op == OpKind::Gemm && trans_b;
  const int64_t K = transposed ? w.dim(1) : w.dim(0), M = transposed ? w.dim(0) : w.dim(1);
  Graph g;
  const int x = g.add_value("x", {DType::kF32, {N, K}});
  const int y = g.add_value("y", {DType::kF32, {N, M}}), z = g.add_value("z", {DType::kF32, {N, M}});
  Node fc;
  fc.op = op;
  fc.name = "fc";
  fc.opset = 13;
  fc.inputs = {x, g.add_constant("w", w)};
  if (bias) fc.inputs.push_back(g.add_constant("b", *bias));
  fc.outputs = {y};
  if (op == OpKind::Gemm) {
    fc.attrs["transB"] = int64_t(trans_b);
    fc.attrs["alpha"] = alpha;
  }
  Node next;
  next.op = reader;
  next.name = "next";
  next.opset = 13;
  next.inputs = {y};
  next.outputs = {z};
  g.nodes = {fc, next};
  g.inputs = {x};
  g.outputs = {z};
  g.relink();
  return g;
}

}  // namespace dlakit::test_data
