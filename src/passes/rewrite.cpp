// fold-batchnorm, fold-pad, decompose, fuse-activation.
#include <algorithm>
#include <cmath>

#include "passes/graph_edit.h"
#include "passes/passes.h"

namespace dlakit::passes {
namespace {

std::string describe_producer(const Graph& g, int value) {
  const int p = g.value(value).producer;
  return p < 0 ? "a graph input or constant" : g.nodes[size_t(p)].label();
}

const Tensor* const_input(const Graph& g, const Node& n, size_t i) {
  if (i >= n.inputs.size() || n.inputs[i] < 0) return nullptr;
  const Value& v = g.value(n.inputs[i]);
  return v.constant ? &*v.constant : nullptr;
}

}  // namespace

void fold_batchnorm(Graph& g, std::vector<Remark>& r) {
  std::set<int> drop;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& bn = g.nodes[k];
    if (bn.op != OpKind::BatchNormalization) continue;
    const int x = bn.inputs[0];
    const int pi = g.value(x).producer;
    auto decline = [&](const std::string& why) {
      r.push_back({"fold-batchnorm", bn.name, false,
                   "not folded: " + why + " (it maps to a DLA Scale layer instead)"});
    };
    if (pi < 0 ||
        (g.nodes[size_t(pi)].op != OpKind::Conv && g.nodes[size_t(pi)].op != OpKind::ConvTranspose)) {
      decline("its input comes from " + describe_producer(g, x) + ", not a Conv");
      continue;
    }
    Node& conv = g.nodes[size_t(pi)];
    const size_t users = consumers(g, x).size();
    if (users > 1 || is_graph_output(g, x)) {
      decline(conv.label() + "'s output has " + std::to_string(users) + " readers");
      continue;
    }
    const Tensor* W = const_input(g, conv, 1);
    const Tensor* B = const_input(g, conv, 2);
    bool params = true;
    for (size_t i = 1; i < 5; ++i) params = params && const_input(g, bn, i);
    if (!W || (conv.inputs.size() > 2 && conv.inputs[2] >= 0 && !B) || !params) {
      decline("weights or BatchNorm parameters are not constant");
      continue;
    }
    const float eps = bn.attr_float("epsilon", 1e-5f);
    const Tensor &sc = *const_input(g, bn, 1), &bi = *const_input(g, bn, 2), &mu = *const_input(g, bn, 3),
                 &var = *const_input(g, bn, 4);
    const bool transpose = conv.op == OpKind::ConvTranspose;
    const int64_t M = transpose ? W->dim(1) * conv.attr_int("group", 1) : W->dim(0);
    Tensor w2 = W->clone(), b2(DType::kF32, {M});
    const int64_t per = W->numel() / W->dim(0);  // elements per row of dim 0
    for (int64_t m = 0; m < M; ++m) {
      const float a = sc.data<float>()[m] / std::sqrt(var.data<float>()[m] + eps);
      b2.data<float>()[m] = ((B ? B->data<float>()[m] : 0.f) - mu.data<float>()[m]) * a + bi.data<float>()[m];
      if (!transpose) {
        for (int64_t i = 0; i < per; ++i) w2.data<float>()[m * per + i] *= a;
      } else {  // W is [C, M/G, k...]: output channel m = g*(M/G) + j sits in group g's rows at column j
        const int64_t G = conv.attr_int("group", 1), Mg = W->dim(1), Cg = W->dim(0) / G, kvol = per / Mg;
        const int64_t gi = m / Mg, j = m % Mg;
        for (int64_t c = gi * Cg; c < (gi + 1) * Cg; ++c)
          for (int64_t t = 0; t < kvol; ++t) w2.data<float>()[(c * Mg + j) * kvol + t] *= a;
      }
    }
    const int wid = g.add_constant(fresh_name(g, conv.name + "/W_bnfolded"), w2);
    const int bid = g.add_constant(fresh_name(g, conv.name + "/B_bnfolded"), b2);
    Node& c2 = g.nodes[size_t(pi)];  // re-fetch: add_constant may not move nodes, but keep it obvious
    c2.inputs.resize(3);
    c2.inputs[1] = wid;
    c2.inputs[2] = bid;
    c2.outputs[0] = bn.outputs[0];
    drop.insert(int(k));
    r.push_back({"fold-batchnorm", bn.name, true, "folded into " + c2.label()});
  }
  remove_nodes(g, drop);
}

void fold_pad(Graph& g, std::vector<Remark>& r) {
  std::set<int> drop;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& pad = g.nodes[k];
    if (pad.op != OpKind::Pad) continue;
    auto decline = [&](const std::string& why) {
      r.push_back({"fold-pad", pad.name, false, "not folded: " + why});
    };
    if (pad.attr_str("mode", "constant") != "constant") {
      decline("mode is " + pad.attr_str("mode", "constant") + ", not constant");
      continue;
    }
    std::vector<int64_t> pads;
    double value = 0;
    if (pad.opset < 11) {
      pads = pad.attr_ints("pads");
      value = pad.attr_float("value", 0.f);
    } else {
      const Tensor* p = const_input(g, pad, 1);
      if (!p) {
        decline("pads are not constant");
        continue;
      }
      pads = p->to_i64();
      if (const Tensor* v = const_input(g, pad, 2)) value = v->at_f64(0);
    }
    if (value != 0) {
      decline("pad value is " + std::to_string(value) + ", not 0");
      continue;
    }
    const int out = pad.outputs[0];
    auto users = consumers(g, out);
    if (users.size() != 1 || is_graph_output(g, out) || g.nodes[size_t(users[0])].op != OpKind::Conv) {
      decline("its output does not feed exactly one Conv");
      continue;
    }
    Node& conv = g.nodes[size_t(users[0])];
    if (pads.size() != 8 || pads[0] || pads[1] || pads[4] || pads[5]) {
      decline("it pads more than the two spatial dims of a 4-D tensor");
      continue;
    }
    if (conv.attr_str("auto_pad", "NOTSET") != "NOTSET") {
      decline(conv.label() + " uses auto_pad");
      continue;
    }
    auto cp = conv.attr_ints("pads", {0, 0, 0, 0});
    const Shape& w = g.value(conv.inputs[1]).type.shape;
    const int64_t np[4] = {cp[0] + pads[2], cp[1] + pads[3], cp[2] + pads[6], cp[3] + pads[7]};
    bool ok = true;
    std::string why;
    for (int i = 0; i < 4; ++i) {
      const int64_t kern = w[size_t(2 + i % 2)];
      if (np[i] < 0 || np[i] >= kern || np[i] > 31) {
        ok = false;
        why = "the combined padding " + std::to_string(np[i]) + " would not be below the kernel size " +
              std::to_string(kern) + " (a DLA requirement)";
      }
    }
    if (!ok) {
      decline(why);
      continue;
    }
    conv.attrs["pads"] = std::vector<int64_t>{np[0], np[1], np[2], np[3]};
    conv.inputs[0] = pad.inputs[0];
    drop.insert(int(k));
    r.push_back({"fold-pad", pad.name, true, "folded into " + conv.label() + "'s pads"});
  }
  remove_nodes(g, drop);
}

namespace {

// y = Clip(x * alpha + beta, 0, 1), emitted as three DLA-friendly nodes.
int emit_hardsigmoid(Graph& g, std::vector<Node>& out, const std::string& base, int x, float alpha,
                     float beta, int opset) {
  auto value_like = [&](const std::string& suffix) {
    return g.add_value(fresh_name(g, base + suffix), g.value(x).type);
  };
  auto node = [&](OpKind op, const std::string& suffix, std::vector<int> ins, int o) {
    Node n;
    n.op = op;
    n.name = base + suffix;
    n.opset = opset;
    n.inputs = std::move(ins);
    n.outputs = {o};
    return n;
  };
  const int a = g.add_constant(fresh_name(g, base + "/alpha"), Tensor::scalar_f32(alpha));
  const int b = g.add_constant(fresh_name(g, base + "/beta"), Tensor::scalar_f32(beta));
  const int t1 = value_like("/scaled"), t2 = value_like("/shifted"), y = value_like("/clipped");
  out.push_back(node(OpKind::Mul, "/mul", {x, a}, t1));
  out.push_back(node(OpKind::Add, "/add", {t1, b}, t2));
  Node clip = node(OpKind::Clip, "/clip", {t2}, y);
  if (opset < 11) {
    clip.attrs["min"] = 0.f;
    clip.attrs["max"] = 1.f;
  } else {
    clip.inputs.push_back(g.add_constant(fresh_name(g, base + "/zero"), Tensor::scalar_f32(0.f)));
    clip.inputs.push_back(g.add_constant(fresh_name(g, base + "/one"), Tensor::scalar_f32(1.f)));
  }
  out.push_back(std::move(clip));
  return y;
}

}  // namespace

void decompose(Graph& g, std::vector<Remark>& r) {
  if (std::none_of(g.nodes.begin(), g.nodes.end(),
                   [](const Node& n) { return n.op == OpKind::HardSigmoid || n.op == OpKind::HardSwish; }))
    return;
  std::vector<Node> result;
  for (Node& n : g.nodes) {
    if (n.op != OpKind::HardSigmoid && n.op != OpKind::HardSwish) {
      result.push_back(std::move(n));
      continue;
    }
    const int x = n.inputs[0], y = n.outputs[0];
    if (n.op == OpKind::HardSigmoid) {
      const int hs = emit_hardsigmoid(g, result, n.name, x, n.attr_float("alpha", 0.2f),
                                      n.attr_float("beta", 0.5f), n.opset);
      result.back().outputs[0] = y;  // the Clip writes the original output
      (void)hs;
      r.push_back(
          {"decompose", n.name, true, "HardSigmoid -> Mul, Add, Clip(0,1) (DLA Scale + clipped ReLU)"});
    } else {
      const int hs = emit_hardsigmoid(g, result, n.name, x, 1.f / 6.f, 0.5f, n.opset);
      Node mul;
      mul.op = OpKind::Mul;
      mul.name = n.name + "/gate";
      mul.opset = n.opset;
      mul.inputs = {x, hs};
      mul.outputs = {y};
      result.push_back(std::move(mul));
      r.push_back({"decompose", n.name, true, "HardSwish -> x * HardSigmoid(x) as Mul, Add, Clip, Mul"});
    }
  }
  g.nodes = std::move(result);
  g.relink();
}

void fuse_activation(Graph& g, std::vector<Remark>& r) {
  std::set<int> drop;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& act = g.nodes[k];
    if (act.op != OpKind::Relu && act.op != OpKind::Clip && act.op != OpKind::LeakyRelu) continue;
    const int x = act.inputs[0];
    const int pi = g.value(x).producer;
    if (pi < 0 || g.nodes[size_t(pi)].op != OpKind::Conv) continue;
    Node& conv = g.nodes[size_t(pi)];
    auto decline = [&](const std::string& why) {
      r.push_back({"fuse-activation", act.name, false, "not fused into " + conv.label() + ": " + why});
    };
    if (consumers(g, x).size() > 1 || is_graph_output(g, x)) {
      decline("the Conv output has other readers");
      continue;
    }
    if (conv.has("dlakit_activation")) {
      decline("the Conv already has a fused activation");
      continue;
    }
    std::vector<float> params;
    if (act.op == OpKind::Clip) {
      const auto bounds = clip_bounds(g, act);
      if (!bounds) {
        decline("the Clip bounds are not constant");
        continue;
      }
      params = {bounds->first, bounds->second};
    } else if (act.op == OpKind::LeakyRelu) {
      params = {act.attr_float("alpha", 0.01f)};
    }
    conv.attrs["dlakit_activation"] = std::string(op_name(act.op));
    if (!params.empty()) conv.attrs["dlakit_activation_params"] = params;
    conv.outputs[0] = act.outputs[0];
    drop.insert(int(k));
    r.push_back(
        {"fuse-activation", act.name, true, std::string(op_name(act.op)) + " fused into " + conv.label()});
  }
  remove_nodes(g, drop);
}

}  // namespace dlakit::passes
