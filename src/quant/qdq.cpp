#include "quant/qdq.h"

#include <cmath>
#include <set>

#include "passes/passes.h"

namespace dlakit::quant {

bool has_qdq(const Graph& g) {
  for (const Node& n : g.nodes)
    if (n.op == OpKind::QuantizeLinear || n.op == OpKind::DequantizeLinear) return true;
  return false;
}

namespace {

std::vector<float> const_floats(const Graph& g, const Node& n, int input, const char* what) {
  if (int(n.inputs.size()) <= input || n.inputs[size_t(input)] < 0) return {};
  const Value& v = g.value(n.inputs[size_t(input)]);
  if (!v.constant)
    fail(Status::kUnsupported, n.label(), ": the ", what, " '", v.name,
         "' is computed at run time; Q/DQ folding needs constant scales and zero points");
  return v.constant->to_f32();
}

// Scale (all > 0) and a zero point that must be all zeros.
std::vector<float> checked_scale(const Graph& g, const Node& n) {
  std::vector<float> s = const_floats(g, n, 1, "scale");
  for (float x : s)
    if (!(x > 0) || !std::isfinite(x))
      fail(Status::kUnsupported, n.label(), ": scale ", x, "; Q/DQ scales must be finite and > 0");
  for (float z : const_floats(g, n, 2, "zero point"))
    if (z != 0)
      fail(Status::kUnsupported, n.label(), ": zero point ", z,
           "; the DLA's INT8 is symmetric, so Q/DQ zero points must be 0");
  return s;
}

// w -> q * s on the quantization grid (the values a QAT model computes with).
Tensor dequantized(const Graph& g, const Node& n, const Tensor& w, const std::vector<float>& s,
                   bool quantize) {
  Tensor out = Tensor::uninitialized(DType::kF32, w.shape());
  int64_t inner = 1, len = 1;
  if (s.size() > 1) {
    int64_t axis = n.attr_int("axis", 1);
    if (axis < 0) axis += w.rank();
    if (axis < 0 || axis >= w.rank() || w.dim(int(axis)) != int64_t(s.size()))
      fail(Status::kShapeError, n.label(), ": ", s.size(), " scales do not fit axis ", axis, " of ",
           shape_str(w.shape()));
    len = w.dim(int(axis));
    for (int d = int(axis) + 1; d < w.rank(); ++d) inner *= w.dim(d);
  }
  const std::vector<float> x = w.to_f32();
  for (int64_t i = 0; i < w.numel(); ++i) {
    const float sc = s.size() > 1 ? s[size_t((i / inner) % len)] : s[0];
    float q = x[size_t(i)];
    if (quantize) q = std::min(127.f, std::max(-128.f, std::nearbyint(q / sc)));  // ONNX: half to even
    out.data<float>()[i] = q * sc;
  }
  (void)g;
  return out;
}

}  // namespace

ScaleTable fold_qdq(Graph& g) {
  ScaleTable t;
  std::set<int> drop;
  std::map<int, int> replace;  // value id -> the value that stands for it after folding
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& dq = g.nodes[k];
    if (dq.op != OpKind::DequantizeLinear) continue;
    const std::vector<float> s = checked_scale(g, dq);
    const int in = dq.inputs[0], out = dq.outputs[0];
    const Value& iv = g.value(in);
    if (iv.constant) {  // int8 weights -> float weights on the grid
      g.value(out).constant = dequantized(g, dq, *iv.constant, s, false);
      t.weight_scales[g.value(out).name] = s;
      drop.insert(int(k));
      continue;
    }
    const int qi = iv.producer;
    if (qi < 0 || g.nodes[size_t(qi)].op != OpKind::QuantizeLinear)
      fail(Status::kUnsupported, dq.label(), ": its input '", iv.name,
           "' does not come from a QuantizeLinear; dlakit folds Q->DQ pairs and DQ of constant weights");
    const Node& q = g.nodes[size_t(qi)];
    const std::vector<float> qs = checked_scale(g, q);
    if (qs != s)
      fail(Status::kUnsupported, dq.label(), ": its scale differs from ", q.label(),
           "'s; a Q->DQ pair "
           "must share one scale");
    const int x = q.inputs[0];
    if (g.value(x).constant) {  // Q->DQ on float weights
      g.value(out).constant = dequantized(g, q, *g.value(x).constant, s, true);
      t.weight_scales[g.value(out).name] = s;
    } else {
      if (s.size() != 1)
        fail(Status::kUnsupported, q.label(), ": per-channel scales on the activation '", g.value(x).name,
             "'; the DLA takes per-tensor activation scales only");
      t.set_scale(g.value(x).name, s[0]);
      replace[out] = x;
    }
    drop.insert(int(k));
    drop.insert(qi);
  }
  // Quantize nodes that feed something other than a DequantizeLinear cannot be folded.
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (g.nodes[k].op == OpKind::QuantizeLinear && !drop.count(int(k)))
      fail(Status::kUnsupported, g.nodes[k].label(),
           ": its INT8 output is used directly; dlakit folds only QuantizeLinear->DequantizeLinear pairs");
  for (Node& n : g.nodes)
    for (int& v : n.inputs)
      if (replace.count(v)) v = replace[v];
  std::vector<Node> kept;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (!drop.count(int(k))) {
      kept.push_back(n);
      continue;
    }
    // A DQ whose output is a graph output keeps the name through an Identity.
    for (int o : n.outputs)
      if (o >= 0 && replace.count(o) && is_graph_output(g, o)) {
        Node id;
        id.op = OpKind::Identity;
        id.name = n.name;
        id.opset = n.opset;
        id.inputs = {replace[o]};
        id.outputs = {o};
        kept.push_back(id);
        t.set_scale(g.value(o).name, *t.find_scale(g.value(replace[o]).name));
      }
  }
  g.nodes = std::move(kept);
  g.relink();
  g.remove_dead_nodes();
  g.verify();
  propagate_unchanged_scales(g, t);
  return t;
}

int propagate_unchanged_scales(const Graph& g, ScaleTable& t) {
  auto keeps_range = [](OpKind op) {
    switch (op) {
      case OpKind::MaxPool:
      case OpKind::Flatten:
      case OpKind::Relu:
      case OpKind::Pad:
      case OpKind::Transpose:
      case OpKind::Reshape:
      case OpKind::Squeeze:
        return true;
      default:
        return false;
    }
  };
  int added = 0;
  auto copy = [&](int from, int to, float scale) {
    if (from < 0 || to < 0 || !t.find_scale(g.value(from).name) || t.find_scale(g.value(to).name)) return;
    t.set_scale(g.value(to).name, scale);
    ++added;
  };
  for (const Node& n : g.nodes)
    if (keeps_range(n.op) && !n.inputs.empty() && !n.outputs.empty() && n.inputs[0] >= 0 &&
        t.find_scale(g.value(n.inputs[0]).name))
      copy(n.inputs[0], n.outputs[0], *t.find_scale(g.value(n.inputs[0]).name));
  for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it) {
    const Node& n = *it;
    if (n.inputs.empty() || n.outputs.empty() || n.outputs[0] < 0) continue;
    const float* out = t.find_scale(g.value(n.outputs[0]).name);
    if (!out) continue;
    if (keeps_range(n.op)) {
      copy(n.outputs[0], n.inputs[0], *out);
    } else if (n.op == OpKind::Sigmoid) {
      const double a = double(*out) * 127.0;
      if (a > 0.5 && a < 1) copy(n.outputs[0], n.inputs[0], float(std::log(a / (1 - a)) / 127.0));
    }
  }
  return added;
}

}  // namespace dlakit::quant
