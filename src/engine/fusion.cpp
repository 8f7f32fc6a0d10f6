#include "engine/fusion.h"

#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "base/cpu.h"
#include "base/threadpool.h"
#include "engine/engine.h"
#include "kernels/expand_depthwise.h"
#include "kernels/ref/common.h"
#include "kernels/ref/float_ops.h"

namespace dlakit {
namespace {

struct Uses {
  std::vector<std::vector<size_t>> consumers;  // per value
  std::vector<char> is_output;
  explicit Uses(const Graph& g) : consumers(g.values.size()), is_output(g.values.size(), 0) {
    for (size_t n = 0; n < g.nodes.size(); ++n)
      for (int i : g.nodes[n].inputs)
        if (i >= 0 && (consumers[size_t(i)].empty() || consumers[size_t(i)].back() != n))
          consumers[size_t(i)].push_back(n);
    for (int o : g.outputs) is_output[size_t(o)] = 1;
  }
  bool single_use(int v) const { return consumers[size_t(v)].size() == 1 && !is_output[size_t(v)]; }
};

bool is_const(const Graph& g, int v) { return v >= 0 && g.value(v).constant.has_value(); }
bool is_f32(const Graph& g, int v) { return v >= 0 && g.value(v).type.dtype == DType::kF32; }

// Clip's bounds when known before run time and as the Clip kernel reads them (before opset 11 its absent
// bounds are +-FLT_MAX, not graph.h's +-inf, so those Clips are left alone).
std::optional<std::pair<float, float>> fixed_clip_bounds(const Graph& g, const Node& n) {
  if (n.opset < 11 && !(n.has("min") && n.has("max"))) return std::nullopt;
  return clip_bounds(g, n);
}

// An activation the convolution epilogue can apply, as dlakit_activation attributes.
bool attach_activation(const Graph& g, const Node& act, Node& conv) {
  if (!is_f32(g, act.outputs[0])) return false;
  if (act.op == OpKind::Relu) {
    conv.attrs["dlakit_activation"] = std::string("Relu");
  } else if (act.op == OpKind::LeakyRelu) {
    conv.attrs["dlakit_activation"] = std::string("LeakyRelu");
    conv.attrs["dlakit_activation_params"] = std::vector<float>{act.attr_float("alpha", 0.01f)};
  } else if (act.op == OpKind::Clip) {
    const auto b = fixed_clip_bounds(g, act);
    if (!b) return false;
    conv.attrs["dlakit_activation"] = std::string("Clip");
    conv.attrs["dlakit_activation_params"] = std::vector<float>{b->first, b->second};
  } else {
    return false;
  }
  return true;
}

// v -> HardSigmoid -> Mul(v, that), v read by nothing else: PP-LCNet's hard swish as Paddle exports it.
// Attached to the convolution that makes v (as "HardSigmoidMul"), it returns the two nodes; else none.
std::vector<size_t> attach_hard_sigmoid_mul(const Graph& g, const Uses& u, const std::vector<char>& taken,
                                            int v, Node& conv) {
  const auto& users = u.consumers[size_t(v)];
  if (users.size() != 2 || u.is_output[size_t(v)] || !is_f32(g, v)) return {};
  const size_t first = std::min(users[0], users[1]), second = std::max(users[0], users[1]);
  const Node &hs = g.nodes[first], &mul = g.nodes[second];
  if (taken[first] || taken[second] || hs.op != OpKind::HardSigmoid || hs.inputs[0] != v ||
      !u.single_use(hs.outputs[0]) || mul.op != OpKind::Mul || mul.opset < 7 || mul.inputs.size() != 2)
    return {};
  const int h = hs.outputs[0];
  if (!((mul.inputs[0] == v && mul.inputs[1] == h) || (mul.inputs[0] == h && mul.inputs[1] == v)) ||
      g.value(mul.outputs[0]).type != g.value(v).type)
    return {};
  conv.attrs["dlakit_activation"] = std::string("HardSigmoidMul");
  conv.attrs["dlakit_activation_params"] =
      std::vector<float>{hs.attr_float("alpha", 0.2f), hs.attr_float("beta", 0.5f)};
  conv.outputs = {mul.outputs[0]};
  return {first, second};
}

// Conv -> [Add same-shape] -> [activation]; returns the covered nodes (empty: nothing to fuse).
std::vector<size_t> fuse_conv(const Graph& g, const Uses& u, const std::vector<char>& taken, size_t c,
                              Node& fused) {
  const Node& conv = g.nodes[c];
  if (conv.op != OpKind::Conv || conv.has("dlakit_activation") || conv.has("dlakit_residual") ||
      !is_f32(g, conv.outputs[0]))
    return {};
  std::vector<size_t> covered{c};
  fused = conv;
  int v = conv.outputs[0];
  auto with_hard_sigmoid_mul = [&]() {
    const std::vector<size_t> pair = attach_hard_sigmoid_mul(g, u, taken, v, fused);
    covered.insert(covered.end(), pair.begin(), pair.end());
    return !pair.empty();
  };
  if (with_hard_sigmoid_mul()) return covered;
  if (!u.single_use(v)) return {};
  size_t next = u.consumers[size_t(v)][0];
  const Node& add = g.nodes[next];
  if (taken[next]) return {};  // e.g. the Add already joined the other branch's Conv
  if (add.op == OpKind::Add && add.opset >= 7 && add.inputs.size() == 2) {
    const int other = add.inputs[0] == v ? add.inputs[1] : add.inputs[0];
    if (other != v && !is_const(g, other) && is_f32(g, other) && g.value(other).type == g.value(v).type) {
      fused.inputs.resize(3, -1);
      fused.inputs.push_back(other);
      fused.attrs["dlakit_residual"] = int64_t(1);
      covered.push_back(next);
      v = add.outputs[0];
      if (with_hard_sigmoid_mul()) return covered;
      if (!u.single_use(v)) {
        fused.outputs = {v};
        return covered;
      }
      next = u.consumers[size_t(v)][0];
      if (taken[next]) {
        fused.outputs = {v};
        return covered;
      }
    }
  }
  if (g.nodes[next].inputs[0] == v && attach_activation(g, g.nodes[next], fused)) {
    covered.push_back(next);
    v = g.nodes[next].outputs[0];
  }
  if (covered.size() == 1) return {};
  fused.outputs = {v};
  return covered;
}

// A constant an element-wise step can read as one value per channel plane.
bool plane_constant(const Graph& g, int v, const Shape& shape) {
  if (!is_f32(g, v)) return false;
  const Tensor& t = *g.value(v).constant;
  if (t.numel() == 1) return true;
  if (shape.size() < 2 || t.numel() != shape[1] || t.shape().size() > shape.size()) return false;
  const auto strides = ref::broadcast_strides(t.shape(), shape);
  for (size_t d = 0; d < strides.size(); ++d)
    if (d != 1 && strides[d] != 0) return false;
  return strides[1] == 1;
}

bool elementwise_op(OpKind op) {
  switch (op) {
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::Relu:
    case OpKind::Clip:
    case OpKind::LeakyRelu:
    case OpKind::HardSigmoid:
    case OpKind::HardSwish:
      return true;
    default:
      return false;
  }
}

// Whether node n computes element by element on `shape` with operands a step can read.
bool fusable(const Graph& g, const Node& n, const Shape& shape) {
  if (!elementwise_op(n.op) || n.outputs.size() != 1 || !is_f32(g, n.outputs[0]) ||
      g.value(n.outputs[0]).type.shape != shape)
    return false;
  const bool binary =
      n.op == OpKind::Add || n.op == OpKind::Sub || n.op == OpKind::Mul || n.op == OpKind::Div;
  if (binary && (n.opset < 7 || n.inputs.size() != 2)) return false;
  if (n.op == OpKind::Clip && !fixed_clip_bounds(g, n)) return false;
  const size_t operands = binary ? 2 : 1;
  if (n.inputs.size() < operands) return false;
  for (size_t k = 0; k < operands; ++k) {
    const int v = n.inputs[k];
    if (v < 0) return false;
    if (is_const(g, v) ? !plane_constant(g, v, shape) : !(is_f32(g, v) && g.value(v).type.shape == shape))
      return false;
  }
  return !(binary && is_const(g, n.inputs[0]) && is_const(g, n.inputs[1]));
}

// The longest run of fusable nodes from `first` whose intermediate values stay inside the run.
std::vector<size_t> elementwise_run(const Graph& g, const Uses& u, const std::vector<char>& taken,
                                    size_t first) {
  const Node& head = g.nodes[first];
  if (taken[first] || !elementwise_op(head.op) || head.outputs.size() != 1 || head.outputs[0] < 0) return {};
  const Shape shape = g.value(head.outputs[0]).type.shape;
  if (!fusable(g, head, shape)) return {};
  std::vector<size_t> run{first};
  std::map<int, size_t> produced{{head.outputs[0], first}};
  for (size_t n = first + 1; n < g.nodes.size() && !taken[n] && fusable(g, g.nodes[n], shape); ++n) {
    bool connected = false;
    for (int v : g.nodes[n].inputs) connected = connected || produced.count(v);
    if (!connected) break;
    run.push_back(n);
    produced[g.nodes[n].outputs[0]] = n;
  }
  // Drop nodes from the end until every value but the last one is read only inside the run.
  while (run.size() > 1) {
    bool closed = true;
    for (size_t k = 0; k + 1 < run.size() && closed; ++k) {
      const int v = g.nodes[run[k]].outputs[0];
      if (u.is_output[size_t(v)]) closed = false;
      for (size_t c : u.consumers[size_t(v)]) closed = closed && c >= run.front() && c <= run.back();
    }
    if (closed) break;
    run.pop_back();
  }
  return run.size() > 1 ? run : std::vector<size_t>{};
}

EwStep make_elementwise_step(const Graph& g, const std::vector<size_t>& run) {
  EwStep step;
  std::map<int, int> slot;  // value -> slot
  for (size_t n : run)
    for (int v : g.nodes[n].inputs)
      if (v >= 0 && !is_const(g, v) && !slot.count(v)) {
        bool internal = false;
        for (size_t m : run) internal = internal || g.nodes[m].outputs[0] == v;
        if (!internal) {
          slot[v] = int(step.inputs.size());
          step.inputs.push_back(v);
        }
      }
  for (size_t k = 0; k < run.size(); ++k) {
    const Node& n = g.nodes[run[k]];
    EwOp op;
    op.op = n.op;
    const bool binary =
        n.op == OpKind::Add || n.op == OpKind::Sub || n.op == OpKind::Mul || n.op == OpKind::Div;
    for (size_t i = 0; i < (binary ? 2u : 1u); ++i) {
      const int v = n.inputs[i];
      int& operand = i == 0 ? op.a : op.b;
      if (is_const(g, v)) {
        op.constant = &*g.value(v).constant;
        op.constant_first = i == 0;
      } else {
        operand = slot.at(v);
      }
    }
    if (n.op == OpKind::Clip) std::tie(op.p0, op.p1) = *fixed_clip_bounds(g, n);
    if (n.op == OpKind::LeakyRelu) op.p0 = n.attr_float("alpha", 0.01f);
    if (n.op == OpKind::HardSigmoid) {
      op.p0 = n.attr_float("alpha", 0.2f);
      op.p1 = n.attr_float("beta", 0.5f);
    }
    slot[n.outputs[0]] = int(step.inputs.size() + k);
    step.ops.push_back(op);
  }
  step.output = g.nodes[run.back()].outputs[0];
  return step;
}

// out[i] = f(x[i], y[i]) with either operand possibly one value for the whole block.
template <typename F>
[[gnu::always_inline]] inline void binary_block(F f, const float* x, const float* y, float xc, float yc,
                                                float* out, int64_t len) {
  if (x && y)
    for (int64_t i = 0; i < len; ++i) out[i] = f(x[i], y[i]);
  else if (x)
    for (int64_t i = 0; i < len; ++i) out[i] = f(x[i], yc);
  else
    for (int64_t i = 0; i < len; ++i) out[i] = f(xc, y[i]);
}

template <typename F>
[[gnu::always_inline]] inline void unary_block(F f, const float* x, float* out, int64_t len) {
  for (int64_t i = 0; i < len; ++i) out[i] = f(x[i]);
}

// One op over a block: dst = op(x or c, y or c); false for an op a step cannot hold.
[[gnu::always_inline]] inline bool block_op(const EwOp& op, const float* x, const float* yv, float c,
                                            float* dst, int64_t len) {
  const float lo = op.p0, hi = op.p1;
  switch (op.op) {
    case OpKind::Add:
      binary_block([](float p, float q) { return p + q; }, x, yv, c, c, dst, len);
      return true;
    case OpKind::Sub:
      binary_block([](float p, float q) { return p - q; }, x, yv, c, c, dst, len);
      return true;
    case OpKind::Mul:
      binary_block([](float p, float q) { return p * q; }, x, yv, c, c, dst, len);
      return true;
    case OpKind::Div:
      binary_block([](float p, float q) { return p / q; }, x, yv, c, c, dst, len);
      return true;
    case OpKind::Relu:
      unary_block([](float v) { return ref::f32::relu(v); }, x, dst, len);
      return true;
    case OpKind::Clip:
      unary_block([=](float v) { return ref::f32::clip(v, lo, hi); }, x, dst, len);
      return true;
    case OpKind::LeakyRelu:
      unary_block([=](float v) { return ref::f32::leaky_relu(v, lo); }, x, dst, len);
      return true;
    case OpKind::HardSigmoid:
      unary_block([=](float v) { return ref::f32::hard_sigmoid(v, lo, hi); }, x, dst, len);
      return true;
    case OpKind::HardSwish:
      unary_block([](float v) { return ref::f32::hard_swish(v); }, x, dst, len);
      return true;
    default:
      return false;
  }
}

// block_op built for any x86-64 and again with AVX2 (twice the lanes). Not with FMA: every op rounds on its
// own, as the separate nodes do, so both builds give the same bits.
bool block_op_baseline(const EwOp& op, const float* x, const float* yv, float c, float* dst, int64_t len) {
  return block_op(op, x, yv, c, dst, len);
}
#if defined(__x86_64__)
DLAKIT_TARGET_AVX2 bool block_op_avx2(const EwOp& op, const float* x, const float* yv, float c, float* dst,
                                      int64_t len) {
  return block_op(op, x, yv, c, dst, len);
}
#endif

using BlockOp = bool (*)(const EwOp&, const float*, const float*, float, float*, int64_t);
BlockOp choose_block_op() {
#if defined(__x86_64__)
  if (cpu::avx2()) return block_op_avx2;
#endif
  return block_op_baseline;
}

// A Conv over 4-D float32 with constant weights and bias (if any) and no fused residual.
bool plain_conv(const Graph& g, const Node& c) {
  if (c.op != OpKind::Conv || c.has("dlakit_residual") || c.inputs.size() < 2 || !is_f32(g, c.inputs[0]) ||
      !is_f32(g, c.outputs[0]) || !is_const(g, c.inputs[1]))
    return false;
  if (c.inputs.size() > 2 && c.inputs[2] >= 0 && !is_const(g, c.inputs[2])) return false;
  return g.value(c.inputs[0]).type.shape.size() == 4 && g.value(c.inputs[1]).type.shape.size() == 4;
}

// An expansion: 1x1, stride 1, no padding, one group (its input read in place).
bool pointwise_conv(const Graph& g, const Node& c) {
  if (!plain_conv(g, c) || c.attr_int("group", 1) != 1) return false;
  const Shape& w = g.value(c.inputs[1]).type.shape;
  if (w[2] != 1 || w[3] != 1) return false;
  for (int64_t v : c.attr_ints("strides", {}))
    if (v != 1) return false;
  for (int64_t v : c.attr_ints("pads", {}))
    if (v != 0) return false;
  const std::string pad = c.attr_str("auto_pad", "NOTSET");
  return pad == "NOTSET" || pad == "VALID";
}

// One filter per channel, as many outputs as inputs.
bool depthwise_conv(const Graph& g, const Node& c) {
  if (!plain_conv(g, c)) return false;
  const int64_t channels = g.value(c.inputs[0]).type.shape[1];
  const Shape& w = g.value(c.inputs[1]).type.shape;
  return channels > 1 && c.attr_int("group", 1) == channels && w[0] == channels && w[1] == 1;
}

// Joins each depthwise Conv step (or lone depthwise Conv) with the pointwise Conv step (or lone Conv) whose
// output it alone reads: EngineStep::expand. Joined groups are emptied; `taken` marks lone nodes joined.
void join_expansions(const Graph& g, const Uses& u, std::vector<char>& taken,
                     std::vector<EngineStep>& groups) {
  std::vector<long> group_of(g.nodes.size(), -1), producer(g.values.size(), -1);
  for (size_t k = 0; k < groups.size(); ++k)
    for (size_t n : groups[k].nodes) group_of[n] = long(k);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int o : g.nodes[n].outputs)
      if (o >= 0) producer[size_t(o)] = long(n);
  // A Conv step's fused node and nodes: the group it heads, or the node alone; null if n heads neither.
  auto conv_step = [&](size_t n, std::vector<size_t>& nodes) -> const Node* {
    const long k = group_of[n];
    if (k < 0) {
      nodes = {n};
      return taken[n] ? nullptr : &g.nodes[n];
    }
    const EngineStep& s = groups[size_t(k)];
    nodes = s.nodes;
    return s.conv && !s.expand && s.nodes.front() == n ? &*s.conv : nullptr;
  };
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    std::vector<size_t> dw_nodes, ex_nodes;
    const Node* dw = g.nodes[n].op == OpKind::Conv ? conv_step(n, dw_nodes) : nullptr;
    if (!dw || !depthwise_conv(g, *dw) || !u.single_use(dw->inputs[0])) continue;
    const long p = producer[size_t(dw->inputs[0])];
    if (p < 0) continue;
    // The expansion's step must end in the value the depthwise reads: its head is its group's first node.
    const long pk = group_of[size_t(p)];
    const size_t head = pk < 0 ? size_t(p) : groups[size_t(pk)].nodes.front();
    const Node* ex = g.nodes[head].op == OpKind::Conv ? conv_step(head, ex_nodes) : nullptr;
    if (!ex || ex->outputs[0] != dw->inputs[0] || !pointwise_conv(g, *ex)) continue;
    EngineStep joined;
    joined.nodes = ex_nodes;
    joined.nodes.insert(joined.nodes.end(), dw_nodes.begin(), dw_nodes.end());
    joined.conv = *dw;
    joined.expand = *ex;
    for (long k : {pk, group_of[n]})
      if (k >= 0) groups[size_t(k)] = EngineStep{};
    for (size_t m : joined.nodes) {
      taken[m] = 1;
      group_of[m] = long(groups.size());
    }
    groups.push_back(std::move(joined));
  }
}

}  // namespace

std::vector<EngineStep> plan_fused_steps(const Graph& g) {
  const Uses u(g);
  std::vector<char> taken(g.nodes.size(), 0);
  std::vector<EngineStep> groups;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (taken[n]) continue;
    EngineStep s;
    Node fused;
    s.nodes = fuse_conv(g, u, taken, n, fused);
    if (!s.nodes.empty()) {
      s.conv = fused;
    } else {
      s.nodes = elementwise_run(g, u, taken, n);
      if (s.nodes.empty()) continue;
      s.elementwise = make_elementwise_step(g, s.nodes);
    }
    for (size_t k : s.nodes) taken[k] = 1;
    groups.push_back(std::move(s));
  }
  join_expansions(g, u, taken, groups);
  // Every node once, in order; a group runs where its last node was (its inputs are ready by then).
  std::vector<long> group_of(g.nodes.size(), -1);
  for (size_t k = 0; k < groups.size(); ++k)
    for (size_t n : groups[k].nodes) group_of[n] = long(k);
  std::vector<EngineStep> steps;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (group_of[n] < 0) {
      steps.push_back({{n}, std::nullopt, std::nullopt, std::nullopt});
    } else if (groups[size_t(group_of[n])].nodes.back() == n) {  // emptied groups own no node
      steps.push_back(std::move(groups[size_t(group_of[n])]));
    }
  }
  return steps;
}

Tensor run_expand_depthwise_step(const Graph& g, const EngineStep& step,
                                 const std::vector<const Tensor*>& in) {
  const Node &ex = *step.expand, &dw = *step.conv;
  const size_t ne = ex.inputs.size();
  auto at = [&](size_t k) { return k < in.size() ? in[k] : nullptr; };
  const TensorType& type = g.value(dw.outputs[0]).type;
  Tensor y = Tensor::uninitialized(type.dtype, type.shape);
  if (ref::run_expand_depthwise(ex, *in[0], *in[1], ne > 2 ? at(2) : nullptr, dw, *at(ne),
                                dw.inputs.size() > 2 ? at(ne + 1) : nullptr, y))
    return y;
  // No fused kernel here: the two layers one after the other.
  const std::vector<Tensor> expanded = run_node(g, ex, {in.begin(), in.begin() + long(ne)});
  std::vector<const Tensor*> dw_in{&expanded[0]};
  dw_in.insert(dw_in.end(), in.begin() + long(ne), in.end());
  return std::move(run_node(g, dw, dw_in)[0]);
}

Tensor run_elementwise_step(const Graph& g, const EwStep& step, const std::vector<const Tensor*>& in) {
  const TensorType& type = g.value(step.output).type;
  Tensor out = Tensor::uninitialized(type.dtype, type.shape);
  const Shape& shape = type.shape;
  // Blocks lie inside one channel plane when a constant is per channel; otherwise anywhere.
  bool per_channel = false;
  for (const EwOp& op : step.ops) per_channel = per_channel || (op.constant && op.constant->numel() > 1);
  int64_t inner = out.numel(), channels = 1;
  if (per_channel) {
    channels = shape[1];
    inner = 1;
    for (size_t d = 2; d < shape.size(); ++d) inner *= shape[d];
  }
  constexpr int64_t kBlock = 2048;
  const int64_t per_plane = (inner + kBlock - 1) / kBlock, planes = inner ? out.numel() / inner : 0;
  const int64_t ninputs = int64_t(step.inputs.size()), nops = int64_t(step.ops.size());
  float* y = out.data<float>();
  static const BlockOp run_op = choose_block_op();
  parallel_for(planes * per_plane, [&](int64_t s, int64_t e) {
    thread_local std::vector<float> scratch;
    scratch.resize(size_t(nops * kBlock));
    for (int64_t t = s; t < e; ++t) {
      const int64_t plane = t / per_plane, j0 = (t % per_plane) * kBlock, len = std::min(kBlock, inner - j0);
      const int64_t base = plane * inner + j0, ch = plane % channels;
      auto at = [&](int slot) -> float* {
        if (slot < ninputs) return const_cast<float*>(in[size_t(slot)]->data<float>()) + base;
        return slot == ninputs + nops - 1 ? y + base : scratch.data() + (slot - ninputs) * kBlock;
      };
      for (int64_t k = 0; k < nops; ++k) {
        const EwOp& op = step.ops[size_t(k)];
        float* dst = at(int(ninputs + k));
        const float c = op.constant ? op.constant->data<float>()[op.constant->numel() == 1 ? 0 : ch] : 0.f;
        const float* x = op.a >= 0 ? at(op.a) : nullptr;
        const float* yv = op.b >= 0 ? at(op.b) : nullptr;
        if (!run_op(op, x, yv, c, dst, len))
          fail(Status::kInternal, "fused element-wise step: unexpected op ", op_name(op.op));
      }
    }
  });
  return out;
}

}  // namespace dlakit
