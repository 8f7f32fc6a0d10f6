// Element-wise rewrites: a constant operand the DLA cannot broadcast becomes the same values in a shape it
// takes; Div by a constant becomes Mul by the reciprocal where the chip has no Div; Sqrt becomes Pow(x,0.5)
// where the chip has Pow; Pow(x, 2) becomes Mul(x, x) where it has no Pow.
#include <algorithm>

#include "kernels/ref/common.h"
#include "passes/adjust_for_dla.h"

namespace dlakit::adjust {
namespace {

// dlakit's choice: an expanded constant is stored per element (Orin keeps non-convolution weights as FP19 in
// 4-byte containers, dla-constraints.md §1.2 "Orin-specific notes"), so it is capped at 4 MiB.
constexpr int64_t kMaxExpandedElements = int64_t(1) << 20;

bool has_reason(const dla::Capability& cap, dla::ReasonCode code) {
  return std::any_of(cap.reasons.begin(), cap.reasons.end(), [&](auto& r) { return r.code == code; });
}

bool is_binary_eltwise(OpKind op) {
  return op == OpKind::Add || op == OpKind::Sub || op == OpKind::Mul || op == OpKind::Div ||
         op == OpKind::Max || op == OpKind::Min || op == OpKind::Pow;
}

bool chip_has(const Context& c, const char* op) {
  return std::find(c.limits.eltwise_ops.begin(), c.limits.eltwise_ops.end(), op) !=
         c.limits.eltwise_ops.end();
}

// k's values broadcast to `out` (NumPy rules), as float32.
Tensor expand_to(const Tensor& k, const Shape& out) {
  const std::vector<float> src = k.to_f32();
  Tensor e(DType::kF32, out);
  float* dst = e.data<float>();
  ref::for_each_broadcast(out, {ref::broadcast_strides(k.shape(), out)},
                          [&](int64_t i, const std::vector<int64_t>& off) { dst[i] = src[size_t(off[0])]; });
  return e;
}

// The smallest shape the DLA takes that holds the same values: a scalar, [1,C,1,1] for a 4-D output whose
// values change along C only, else the full shape.
Tensor smallest_form(const Tensor& full) {
  const float* v = full.data<float>();
  if (std::all_of(v, v + full.numel(), [&](float x) { return x == v[0]; })) return Tensor::scalar_f32(v[0]);
  const Shape& s = full.shape();
  if (s.size() == 4) {
    const int64_t N = s[0], C = s[1], HW = s[2] * s[3];
    bool per_channel = true;
    for (int64_t i = 0; i < full.numel() && per_channel; ++i) {
      const int64_t c = (i / HW) % C;
      per_channel = v[i] == v[c * HW];
    }
    if (per_channel) {
      Tensor pc(DType::kF32, {1, C, 1, 1});
      for (int64_t c = 0; c < C; ++c) pc.data<float>()[c] = v[c * HW];
      (void)N;
      return pc;
    }
  }
  return full;
}

}  // namespace

Attempt rewrite_broadcast_constant(Graph& g, const Node& n, const Context& c) {
  if (!is_binary_eltwise(n.op) || n.inputs.size() != 2) return Attempt::none();
  const Tensor* k0 = constant_input(g, n, 0);
  const Tensor* k1 = constant_input(g, n, 1);
  if (!k0 == !k1) return Attempt::none();  // the rule is about one constant operand
  const size_t ki = k1 ? 1 : 0;
  const Tensor k = k1 ? *k1 : *k0;  // copies (shared data): adding values moves them
  // The DLA rules decide what is a broadcast the DLA does not take; this only finds another shape.
  if (!has_reason(dla::check_node(g, n, c.limits, c.precision), dla::ReasonCode::BroadcastNotSupported))
    return Attempt::none();
  const Shape out = g.value(n.outputs[0]).type.shape;
  if (g.value(n.inputs[1 - ki]).type.shape != out)
    return Attempt::decline("not reshaped: the activation operand " +
                            shape_str(g.value(n.inputs[1 - ki]).type.shape) + " is broadcast too");
  if (!is_float(k.dtype())) return Attempt::decline("not reshaped: the constant is not floating point");
  const Tensor full = expand_to(k, out);
  Tensor form = smallest_form(full);
  if (form.numel() > kMaxExpandedElements)
    return Attempt::decline("not expanded: " + std::to_string(form.numel()) + " elements (dlakit's cap is " +
                            std::to_string(kMaxExpandedElements) + ")");
  NodeBuilder b(g, n);
  std::vector<int> ins = n.inputs;
  const std::string new_shape = form.rank() ? "[" + shape_str(form.shape()) + "]" : "a scalar";
  ins[ki] = b.constant("operand" + std::to_string(ki), std::move(form));
  b.add(n.op, "dla_broadcast", ins, n.attrs, n.outputs[0]);
  Proposal p;
  p.nodes = b.take();
  p.what = std::string(op_name(n.op)) + "'s constant [" + shape_str(k.shape()) + "] against [" +
           shape_str(out) + "] -> the same values as " + new_shape;
  p.why =
      "same values, so exact; satisfies dlakit's ElementWise/Scale operand rule (scalar, per-channel or "
      "full shape; the DLA's broadcast rules are unconfirmed, dla-constraints.md §1.2 ElementWise [U])";
  return Attempt::propose(std::move(p));
}

Attempt rewrite_div_by_constant(Graph& g, const Node& n, const Context& c) {
  if (n.op != OpKind::Div || chip_has(c, "Div")) return Attempt::none();
  const Tensor* k = constant_input(g, n, 1);  // read before any value is added
  if (!k || constant_input(g, n, 0) || !is_float(k->dtype())) return Attempt::none();
  std::vector<float> inv = k->to_f32();
  for (float& v : inv) v = 1.f / v;
  NodeBuilder b(g, n);
  Tensor r = Tensor::from_f32(k->shape(), inv);
  b.add(OpKind::Mul, "by_reciprocal", {n.inputs[0], b.constant("reciprocal", std::move(r))}, {},
        n.outputs[0]);
  Proposal p;
  p.nodes = b.take();
  p.what = "Div by a constant -> Mul by its reciprocal";
  p.why =
      c.limits.chip +
      "'s ElementWise has no Div (dla-constraints.md §1.2 ElementWise, §1.3); a product "
      "with a constant is a Scale layer; x*(1/k) and x/k differ by at most about one unit in the last place";
  return Attempt::propose(std::move(p));
}

Attempt rewrite_sqrt_as_pow(Graph& g, const Node& n, const Context& c) {
  if (n.op != OpKind::Sqrt) return Attempt::none();
  if (!chip_has(c, "Pow")) return Attempt::decline("kept: " + c.limits.chip + "'s ElementWise has no Pow");
  NodeBuilder b(g, n);
  b.add(OpKind::Pow, "as_pow", {n.inputs[0], b.constant("half", Tensor::scalar_f32(0.5f))}, {}, n.outputs[0]);
  Proposal p;
  p.nodes = b.take();
  p.what = "Sqrt -> Pow(x, 0.5)";
  p.why =
      "the DLA has no square root layer but Orin's ElementWise has Pow (dla-constraints.md §1.2 "
      "ElementWise, latest TensorRT table); both are within an ulp";
  return Attempt::propose(std::move(p));
}

Attempt rewrite_square_as_mul(Graph& g, const Node& n, const Context& c) {
  if (n.op != OpKind::Pow || chip_has(c, "Pow")) return Attempt::none();
  const Tensor* e = constant_input(g, n, 1);
  if (!e || e->numel() != 1 || e->at_f64(0) != 2.0 || constant_input(g, n, 0)) return Attempt::none();
  NodeBuilder b(g, n);
  b.add(OpKind::Mul, "as_mul", {n.inputs[0], n.inputs[0]}, {}, n.outputs[0]);
  Proposal p;
  p.nodes = b.take();
  p.what = "Pow(x, 2) -> Mul(x, x)";
  p.why = c.limits.chip +
          "'s ElementWise has no Pow but has Prod (dla-constraints.md §1.2 ElementWise); x*x is "
          "the square";
  return Attempt::propose(std::move(p));
}

}  // namespace dlakit::adjust
