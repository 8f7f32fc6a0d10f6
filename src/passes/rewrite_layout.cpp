// Rewrites around tensor layout: drop layers that only copy, keep 4-D tensors 4-D through a transpose, and
// give the per-row statistics of rank-3 tensors (LayerNorm's mean and deviation over the last axis) the
// forms the DLA takes: a fully connected layer instead of a Reduce, and an explicit expansion instead of
// a broadcast.
#include <algorithm>
#include <numeric>

#include "passes/adjust_for_dla.h"

namespace dlakit::adjust {
namespace {

bool fails_dla_rules(const Graph& g, const Node& n, const Context& c) {
  return !dla::check_node(g, n, c.limits, c.precision).ok();
}

// A copy: adding values to the graph moves them.
Shape shape_of(const Graph& g, int v) { return g.value(v).type.shape; }

}  // namespace

Attempt rewrite_noop_layer(Graph& g, const Node& n, const Context&) {
  bool noop = false;
  if (n.op == OpKind::Concat) noop = n.inputs.size() == 1;
  if (n.op == OpKind::Pad) {
    std::vector<int64_t> pads = n.attr_ints("pads", {});
    if (n.opset >= 11) {
      const Tensor* p = constant_input(g, n, 1);
      pads = p ? p->to_i64() : std::vector<int64_t>{1};
    }
    noop = std::all_of(pads.begin(), pads.end(), [](int64_t v) { return v == 0; });
  }
  if (!noop) return Attempt::none();
  if (is_graph_output(g, n.outputs[0]))
    return Attempt::decline("kept: it copies to a graph output, which keeps its name");
  Proposal p;
  p.forward_from = n.inputs[0];
  p.what = n.op == OpKind::Pad ? "Pad of zeros removed (it copies its input)"
                               : "one-input Concat removed (it copies its input)";
  p.why = n.op == OpKind::Pad
              ? "Pad has no DLA layer (dla-constraints.md §1.2)"
              : "the DLA's Concatenation takes >= 2 inputs (dla-constraints.md §1.2 Concatenation)";
  return Attempt::propose(std::move(p));
}

Attempt rewrite_transpose_before_reshape(Graph& g, const Node& n, const Context&) {
  if (n.op != OpKind::Transpose || shape_of(g, n.inputs[0]).size() != 3) return Attempt::none();
  const int producer = g.value(n.inputs[0]).producer;
  if (producer < 0) return Attempt::none();
  const Node& r = g.nodes[size_t(producer)];
  if (r.op != OpKind::Reshape && r.op != OpKind::Squeeze && r.op != OpKind::Flatten) return Attempt::none();
  const Shape u = shape_of(g, r.inputs[0]), v = shape_of(g, n.inputs[0]);
  if (u.size() != 4) return Attempt::none();
  int unit = -1;  // the unit axis of u that the reshape dropped
  for (int d = 1; d < 4 && unit < 0; ++d) {
    Shape without = u;
    without.erase(without.begin() + d);
    if (u[size_t(d)] == 1 && without == v) unit = d;
  }
  if (unit < 0)
    return Attempt::decline("not moved: [" + shape_str(v) + "] is not [" + shape_str(u) +
                            "] without a unit axis");
  std::vector<int64_t> perm = n.attr_ints("perm", {2, 1, 0});
  std::vector<int64_t> kept;  // u's axes that v keeps, in order
  for (int64_t d = 0; d < 4; ++d)
    if (d != unit) kept.push_back(d);
  std::vector<int64_t> perm4;
  for (int q = 0, j = 0; q < 4; ++q) perm4.push_back(q == unit ? unit : kept[size_t(perm[size_t(j++)])]);
  if (perm4[0] != 0) return Attempt::decline("not moved: the transpose moves the batch axis");
  NodeBuilder b(g, n);
  const int t4 = b.add(OpKind::Transpose, "4d", {r.inputs[0]}, {{"perm", perm4}});
  b.add(OpKind::Reshape, "to_3d", {t4, b.i64s("shape", shape_of(g, n.outputs[0]))}, {}, n.outputs[0]);
  Proposal p;
  p.nodes = b.take();
  p.what = "Transpose of [" + shape_str(v) + "] (" + r.label() + " of [" + shape_str(u) +
           "]) -> Transpose of the 4-D tensor, then Reshape to [" + shape_str(shape_of(g, n.outputs[0])) +
           "]";
  p.why =
      "the same elements in the same order; the DLA's Shuffle takes 4-D inputs only (dla-constraints.md "
      "§1.2 Shuffle)";
  return Attempt::propose(std::move(p));
}

Attempt rewrite_last_axis_mean(Graph& g, const Node& n, const Context& c) {
  if (n.op != OpKind::ReduceMean || n.inputs.size() > 1) return Attempt::none();
  const Shape s = shape_of(g, n.inputs[0]);
  const auto axes = n.attr_ints("axes", {});
  if (s.size() != 3 || axes.size() != 1 || (axes[0] != -1 && axes[0] != 2) || !n.attr_int("keepdims", 1))
    return Attempt::none();
  if (!fails_dla_rules(g, n, c)) return Attempt::none();
  const int64_t D = s[2];
  NodeBuilder b(g, n);
  Tensor w(DType::kF32, {D, 1});
  std::fill_n(w.data<float>(), D, 1.f / float(D));
  b.add(OpKind::MatMul, "as_fc", {n.inputs[0], b.constant("mean_weights", std::move(w))}, {}, n.outputs[0]);
  Proposal p;
  p.nodes = b.take();
  p.what = "ReduceMean over the last axis of [" + shape_str(s) + "] -> MatMul by a [" + std::to_string(D) +
           ",1] column of 1/" + std::to_string(D);
  p.why =
      "a mean is a weighted sum (float rounding aside); a MatMul with constant weights is a DLA "
      "FullyConnected layer (dla-constraints.md §1.2 FC), the Reduce layer's limits are unconfirmed (§1.2 "
      "Reduce [U])";
  return Attempt::propose(std::move(p));
}

Attempt rewrite_broadcast_by_fc(Graph& g, const Node& n, const Context& c) {
  if (n.op != OpKind::Sub && n.op != OpKind::Div && n.op != OpKind::Mul && n.op != OpKind::Add)
    return Attempt::none();
  if (n.inputs.size() != 2 || constant_input(g, n, 0) || constant_input(g, n, 1)) return Attempt::none();
  const Shape out = shape_of(g, n.outputs[0]);
  if (out.size() != 3) return Attempt::none();
  const Shape row{out[0], out[1], 1};
  int stat = -1;  // the operand that holds one value per row
  for (int i = 0; i < 2; ++i)
    if (shape_of(g, n.inputs[size_t(i)]) == row && shape_of(g, n.inputs[size_t(1 - i)]) == out) stat = i;
  if (stat < 0 || !fails_dla_rules(g, n, c)) return Attempt::none();
  NodeBuilder b(g, n);
  Tensor ones(DType::kF32, {1, out[2]});
  std::fill_n(ones.data<float>(), out[2], 1.f);
  std::vector<int> ins = n.inputs;
  ins[size_t(stat)] =
      b.add(OpKind::MatMul, "expand", {n.inputs[size_t(stat)], b.constant("ones", std::move(ones))});
  b.add(n.op, "same_shape", ins, {}, n.outputs[0]);
  Proposal p;
  p.nodes = b.take();
  p.what = std::string(op_name(n.op)) + " of [" + shape_str(out) + "] by a per-row [" + shape_str(row) +
           "] -> the per-row value expanded by MatMul with a [1," + std::to_string(out[2]) +
           "] row of ones, then a same-shape " + op_name(n.op);
  p.why =
      "v*1 is v, so exact; the DLA's ElementWise takes same-shape operands (dlakit's broadcast rule, "
      "dla-constraints.md §1.2 ElementWise [U]) and a MatMul with constant weights is a FullyConnected "
      "layer (§1.2 FC)";
  return Attempt::propose(std::move(p));
}

}  // namespace dlakit::adjust
