#include "quant/numerics.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <set>

#include "base/fp16_array.h"
#include "kernels/fused_activation.h"
#include "kernels/registry.h"
#include "passes/passes.h"
#include "targets/dla/precision.h"

namespace dlakit::quant {

int weight_axis(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2 || n.inputs[1] < 0 || !g.value(n.inputs[1]).constant) return -1;
  const int rank = int(g.value(n.inputs[1]).type.shape.size());
  switch (n.op) {
    case OpKind::Conv:
      return rank >= 3 ? 0 : -1;
    case OpKind::ConvTranspose:
      return rank >= 3 ? 1 : -1;
    case OpKind::Gemm:
    case OpKind::MatMul:
      return rank == 2 ? numerics::fc_weight_axis(n) : -1;
    default:
      return -1;
  }
}

const char* mode_name(Mode m) { return m == Mode::kINT8 ? "int8" : m == Mode::kFP16 ? "fp16" : "fp32"; }

bool is_float_activation(const Graph& g, int v) {
  return v >= 0 && !g.value(v).constant && g.value(v).type.dtype == DType::kF32;
}

std::vector<float> weight_scales_for(const NumericsPlan& plan, const Value& w, int axis) {
  auto it = plan.weight_scales.find(w.name);
  std::vector<float> s = it != plan.weight_scales.end() ? it->second : per_channel_scales(*w.constant, axis);
  if (s.size() == 1) s.assign(size_t(w.type.shape[size_t(axis)]), s[0]);
  return s;
}

namespace {

// Layers the DLA computes in FP16 even in an INT8 build: the one table in src/targets/dla/precision.cpp.
bool fp16_only_in_int8(OpKind op) { return dla::int8_mode(op) == dla::Int8Mode::kFp16Layer; }

// Value groups that must share one dynamic range on an INT8 DLA layer.
struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) { return parent[size_t(x)] == x ? x : parent[size_t(x)] = find(parent[size_t(x)]); }
  void unite(int a, int b) { parent[size_t(find(a))] = find(b); }
};

void unite_equal_ranges(const Graph& g, const Node& n, UnionFind& uf) {
  std::vector<int> acts;
  for (int v : n.inputs)
    if (is_float_activation(g, v)) acts.push_back(v);
  const int out = n.outputs.empty() ? -1 : n.outputs[0];
  switch (n.op) {
    case OpKind::MaxPool:
    case OpKind::AveragePool:
    case OpKind::GlobalAveragePool:
    case OpKind::GlobalMaxPool:
    case OpKind::Reshape:
    case OpKind::Flatten:
    case OpKind::Transpose:
    case OpKind::Squeeze:
    case OpKind::Unsqueeze:
    case OpKind::Identity:
    case OpKind::Dropout:
    case OpKind::Pad:
    case OpKind::Resize:
    case OpKind::Upsample:
      if (!acts.empty() && out >= 0) uf.unite(acts[0], out);
      break;
    case OpKind::Split:
      for (int o : n.outputs)
        if (o >= 0 && !acts.empty()) uf.unite(acts[0], o);
      break;
    case OpKind::Concat:
      for (int a : acts) uf.unite(a, out);
      break;
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Max:
    case OpKind::Min:
    case OpKind::Sum:
      for (size_t i = 1; i < acts.size(); ++i) uf.unite(acts[0], acts[i]);
      break;
    default:
      break;
  }
}

// Per-element ops the DLA's post-processing unit runs after a convolution: activations, and arithmetic
// whose other operand is a constant (bias, scale, batch norm).
bool sdp_op(const Graph& g, const Node& n) {
  switch (n.op) {
    case OpKind::Relu:
    case OpKind::Clip:
    case OpKind::LeakyRelu:
    case OpKind::PRelu:
    case OpKind::Sigmoid:
    case OpKind::Tanh:
    case OpKind::BatchNormalization:
      return true;
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div: {
      int acts = 0;
      for (int v : n.inputs) acts += is_float_activation(g, v);
      return acts == 1;
    }
    default:
      return false;
  }
}

bool conv_like(const Node& n) {
  return n.op == OpKind::Conv || n.op == OpKind::ConvTranspose || n.op == OpKind::Gemm ||
         n.op == OpKind::MatMul;
}

// A stand-alone SDP pass (an element-wise op between two tensors, or a per-element op on one) has the same
// sub-units (X1, X2, Y) as the SDP after a convolution, so the per-element ops that follow it fuse the same
// way (NVDLA's compiler merges consecutive SDP operations into one pass).
bool sdp_pass(const Graph& g, const Node& n) {
  if (sdp_op(g, n)) return true;
  switch (n.op) {
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Max:
    case OpKind::Min:
    case OpKind::Sum:
      return true;
    default:
      return false;
  }
}

void mark_fused(const Graph& g, const Placement& p, NumericsPlan& plan) {
  plan.fused.assign(g.values.size(), 0);
  std::vector<int> depth(g.nodes.size(), -1);  // ops fused after the layer that starts the chain
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const Mode m = plan.nodes[i].mode;
    if (p.layers[i].device != Device::kDLA || m == Mode::kFP32) continue;
    if ((conv_like(n) && weight_axis(g, n) >= 0) || sdp_pass(g, n)) depth[i] = std::max(depth[i], 0);
    if (depth[i] < 0 || depth[i] >= kMaxFusedOps || n.outputs.empty()) continue;
    const int v = n.outputs[0];
    if (!is_float_activation(g, v) || is_graph_output(g, v)) continue;
    const std::vector<int> readers = consumers(g, v);
    if (readers.size() != 1) continue;
    const size_t k = size_t(readers[0]);  // an SDP op reads its one activation once
    if (p.layers[k].device == Device::kDLA && plan.nodes[k].mode == m && sdp_op(g, g.nodes[k])) {
      plan.fused[size_t(v)] = 1;
      ++plan.fused_values;
      depth[k] = depth[i] + 1;
    }
  }
}

}  // namespace

NumericsPlan plan_numerics(const Graph& g, const Placement& p, const ScaleTable* scales,
                           const NumericsOptions& o) {
  if (p.layers.size() != g.nodes.size())
    fail(Status::kInternal, "placement has ", p.layers.size(), " layers for ", g.nodes.size(), " nodes");
  NumericsPlan plan;
  plan.nodes.resize(g.nodes.size());
  std::map<int, float> calib;
  if (scales) {
    plan.weight_scales = scales->weight_scales;
    for (auto& [name, a] : scales->scales)
      if (auto id = g.find_value(name)) calib[*id] = a;
  }
  // 1. What each node asks for.
  std::vector<char> wants_int8(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    NodeNumerics& nn = plan.nodes[i];
    const LayerPlacement& lp = p.layers[i];
    bool float_out = false;
    for (int v : n.outputs) float_out = float_out || is_float_activation(g, v);
    if (!float_out) continue;  // integer logic (shapes, indices) is exact in any mode
    const bool dla = lp.device == Device::kDLA;
    if (!dla && !o.gpu_int8) continue;
    if (dla && lp.precision == dla::Precision::kFP16) {
      nn.mode = Mode::kFP16;
      continue;
    }
    nn.rounding = dla ? Rounding::kHalfAwayFromZero : Rounding::kHalfToEven;
    if (fp16_only_in_int8(n.op)) {
      nn.mode = dla ? Mode::kFP16 : Mode::kFP32;
      nn.note = std::string(op_name(n.op)) + (dla ? " runs in FP16 on the DLA" : " stays FP32 on the GPU");
      continue;
    }
    wants_int8[i] = 1;
  }
  // 2. Equal-range rules among the INT8 candidates; a group takes its members' largest range.
  UnionFind uf(g.values.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (wants_int8[i]) unite_equal_ranges(g, g.nodes[i], uf);
  std::map<int, float> group_scale;
  for (auto& [v, a] : calib) {
    const int r = uf.find(v);
    group_scale[r] = std::max(group_scale.count(r) ? group_scale[r] : 0.f, a);
  }
  for (size_t v = 0; v < g.values.size(); ++v) {
    auto it = group_scale.find(uf.find(int(v)));
    if (it != group_scale.end()) plan.scale[int(v)] = it->second;
  }
  // 3. INT8 needs a range on every activation input and on every output that stays inside the network,
  // except values that stay inside a fused pipeline.
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (wants_int8[i]) plan.nodes[i].mode = Mode::kINT8;
  mark_fused(g, p, plan);
  const std::vector<char> fusable = plan.fused;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!wants_int8[i]) continue;
    const Node& n = g.nodes[i];
    NodeNumerics& nn = plan.nodes[i];
    const bool dla = p.layers[i].device == Device::kDLA;
    std::string missing;
    for (int v : n.inputs)
      if (missing.empty() && is_float_activation(g, v) && !plan.scale.count(v) && !fusable[size_t(v)])
        missing = g.value(v).name;
    for (int v : n.outputs)
      if (missing.empty() && is_float_activation(g, v) && !is_graph_output(g, v) && !plan.scale.count(v) &&
          !fusable[size_t(v)])
        missing = g.value(v).name;
    if (!missing.empty()) {
      nn.mode = dla ? Mode::kFP16 : Mode::kFP32;
      nn.note = "no dynamic range for tensor '" + missing + "' (not in the calibration cache), so " +
                (dla ? "FP16" : "FP32");
      continue;
    }
    nn.mode = Mode::kINT8;
    nn.compute_fp16 = dla && (n.op == OpKind::Sigmoid || n.op == OpKind::Tanh);
    if (nn.compute_fp16) nn.note = "INT8 I/O, computed in FP16 on the DLA";
  }
  plan.fused_values = 0;
  mark_fused(g, p, plan);  // again: layers that fell back to FP16 end their chains
  for (auto& nn : plan.nodes)
    (nn.mode == Mode::kINT8 ? plan.int8_nodes : nn.mode == Mode::kFP16 ? plan.fp16_nodes : plan.fp32_nodes)++;
  return plan;
}

NumericsPlan plan_uniform(const Graph& g, Mode mode, const ScaleTable* scales) {
  Placement p;
  p.layers.resize(g.nodes.size());
  for (auto& l : p.layers) {
    l.device = mode == Mode::kFP32 ? Device::kGPU : Device::kDLA;
    l.precision = mode == Mode::kINT8 ? dla::Precision::kINT8 : dla::Precision::kFP16;
  }
  return plan_numerics(g, p, scales);
}

ConstantForm constant_form(const Graph& g, const NumericsPlan& plan, size_t node, int input) {
  const Node& n = g.nodes[node];
  const Mode m = plan.nodes[node].mode;
  // A Resize's roi and scales say where it samples, not values it computes on: in fp16 a scale would move
  // (0.29998 rounds to 0.30005, another output size than the graph's).
  if ((n.op == OpKind::Resize || n.op == OpKind::Upsample) && input >= 1) return ConstantForm::kAsIs;
  if (m == Mode::kFP16) return ConstantForm::kFp16;
  if (m == Mode::kINT8 && input == 1 && weight_axis(g, n) >= 0) return ConstantForm::kInt8Weight;
  return ConstantForm::kAsIs;
}

bool exact_int8_conv(const Graph& g, const NumericsPlan& plan, size_t i) {
  const Node& n = g.nodes[i];
  if (plan.nodes[i].mode != Mode::kINT8 || weight_axis(g, n) < 0) return false;
  if (n.op == OpKind::Conv) return true;
  const bool has_bias = n.inputs.size() > 2 && n.inputs[2] >= 0;
  if (has_bias && !g.value(n.inputs[2]).constant) return false;
  if (n.op == OpKind::ConvTranspose) return numerics::deconv_as_conv(n);
  return numerics::fc_as_conv(n, g.value(n.inputs[0]).type.shape, g.value(n.inputs[1]).type.shape,
                              has_bias ? &g.value(n.inputs[2]).type.shape : nullptr);
}

numerics::StepRules step_rules(const Graph& g, const NumericsPlan& plan, size_t i) {
  const Node& n = g.nodes[i];
  const NodeNumerics& nn = plan.nodes[i];
  numerics::StepRules r;
  r.precision = nn.mode == Mode::kINT8   ? numerics::Precision::kInt8
                : nn.mode == Mode::kFP16 ? numerics::Precision::kFp16
                                         : numerics::Precision::kFp32;
  r.rounding = nn.rounding;
  r.compute_fp16 = nn.mode == Mode::kINT8 && nn.compute_fp16;
  r.exact_int8_conv = exact_int8_conv(g, plan, i);
  const bool fused_vector = plan.fused.size() == g.values.size();
  auto fused = [&](int v) { return fused_vector && plan.fused[size_t(v)]; };
  for (int v : n.inputs) {
    numerics::InputRule in;
    if (v >= 0 && is_float_activation(g, v) && fused(v)) {
      // A layer computed in FP16 reads its pipeline's fp32 value as fp16 too, as it reads a dequantized one.
      in.round_fp16 = nn.mode == Mode::kINT8 && nn.compute_fp16;
    } else if (v >= 0 && is_float_activation(g, v)) {
      if (nn.mode == Mode::kFP16) {
        in.round_fp16 = true;
      } else if (nn.mode == Mode::kINT8) {
        auto a = plan.scale.find(v);
        if (a != plan.scale.end()) {
          in.quantize_scale = a->second;
          in.round_fp16 = nn.compute_fp16;
        }
      }
    }
    r.inputs.push_back(in);
  }
  for (int v : n.outputs) {
    numerics::OutputRule out;
    if (v < 0 || g.value(v).type.dtype != DType::kF32 || nn.mode == Mode::kFP32 || fused(v)) {
      out.store = numerics::Store::kFused;  // integer outputs, FP32 layers, fused values: as computed
    } else if (nn.mode == Mode::kINT8) {
      auto a = plan.scale.find(v);
      const bool leaves_fp16 = is_graph_output(g, v) && !plan.int8_outputs.count(v);
      if (!leaves_fp16 && a != plan.scale.end()) {
        out.store = numerics::Store::kInt8;
        out.scale = a->second;
      }
    }
    r.outputs.push_back(out);
  }
  return r;
}

NumericsRunner::NumericsRunner(const Graph& g, NumericsPlan plan, bool inputs_emulated)
    : g_(g), plan_(std::move(plan)) {
  if (plan_.nodes.size() != g.nodes.size())
    fail(Status::kInternal, "numerics plan has ", plan_.nodes.size(), " nodes for ", g.nodes.size());
  plan_.fused.resize(g.values.size(), 0);  // a hand-made plan may leave it empty: nothing fused
  // Everything derived from constants is prepared now, so runs only read (several threads may run).
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    rules_.push_back(step_rules(g, plan_, i));
    const Node& node = g.nodes[i];
    if (plan_.nodes[i].mode == Mode::kFP32) continue;
    const quant::Rounding r = plan_.nodes[i].rounding;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const int v = node.inputs[k];
      if (v < 0 || !g.value(v).constant || g.value(v).constant->dtype() != DType::kF32) continue;
      const Tensor& c = *g.value(v).constant;
      switch (constant_form(g, plan_, i, int(k))) {
        case ConstantForm::kFp16: {
          Tensor t = c.clone();
          round_to_half_inplace(t.data<float>(), t.numel());
          const_cache_.emplace(std::make_pair(i, int(k)), std::move(t));
          break;
        }
        case ConstantForm::kInt8Weight: {
          const int axis = weight_axis(g, node);
          const std::vector<float> s = weight_scales_for(plan_, g.value(v), axis);
          if (rules_[i].exact_int8_conv) {
            std::vector<float> bias;
            if (node.inputs.size() > 2 && node.inputs[2] >= 0) {
              const Value& b = g.value(node.inputs[2]);
              if (!b.constant)
                fail(Status::kUnsupported, node.label(), ": INT8 emulation needs a constant bias");
              bias = b.constant->to_f32();
            }
            conv_.emplace(
                i, numerics::prepare_int8_conv(node, quantize_weights(c, s, axis, r), s, std::move(bias),
                                               rules_[i].inputs[0].quantize_scale, r));
          } else {
            const_cache_.emplace(std::make_pair(i, int(k)), fake_quantize_weights(c, s, axis, r));
          }
          break;
        }
        case ConstantForm::kAsIs:
          break;
      }
    }
  }
  if (!inputs_emulated) return;
  // Inputs a producer stored on the grid this node quantizes them to (same scale, levels that survive
  // level x scale / scale): fake quantization would give them back unchanged.
  std::vector<std::pair<int, size_t>> producer(g.values.size(), {-1, 0});
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (size_t o = 0; o < g.nodes[i].outputs.size(); ++o)
      if (g.nodes[i].outputs[o] >= 0) producer[size_t(g.nodes[i].outputs[o])] = {int(i), o};
  shortcuts_.resize(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (size_t k = 0; k < g.nodes[i].inputs.size() && k < rules_[i].inputs.size(); ++k) {
      const int v = g.nodes[i].inputs[k];
      const numerics::InputRule& in = rules_[i].inputs[k];
      bool on_grid = false;
      if (v >= 0 && producer[size_t(v)].first >= 0 && !in.round_fp16 &&
          quant::levels_round_trip(in.quantize_scale)) {
        const auto [p, o] = producer[size_t(v)];
        const numerics::OutputRule& out = rules_[size_t(p)].outputs.at(o);
        on_grid = out.store == numerics::Store::kInt8 && out.scale == in.quantize_scale;
      }
      shortcuts_[i].input_on_grid.push_back(on_grid);
    }
}

bool NumericsRunner::leaves_as_fp16(int v) const {
  return is_graph_output(g_, v) && !plan_.int8_outputs.count(v);
}

std::vector<Tensor> NumericsRunner::operator()(size_t n, const std::vector<const Tensor*>& in) {
  const Node& node = g_.nodes[n];
  if (plan_.nodes[n].mode == Mode::kFP32) return run_node(g_, node, in);
  std::vector<const Tensor*> ptrs = in;
  std::vector<char> constant(node.inputs.size(), 0);
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    if (node.inputs[k] < 0 || !g_.value(node.inputs[k]).constant) continue;
    constant[k] = 1;
    if (const Tensor* p = prepared_constant(n, int(k))) ptrs[k] = p;
  }
  std::vector<TensorType> types;
  for (int o : node.outputs) types.push_back(o >= 0 ? g_.value(o).type : TensorType{});
  return numerics::run_step(node, rules_[n], ptrs, constant, types, conv_int8(n),
                            shortcuts_.empty() ? nullptr : &shortcuts_[n]);
}

EmulatedEngine::EmulatedEngine(const Graph& g, NumericsPlan plan)
    : runner_(g, std::move(plan), /*inputs_emulated=*/true), engine_(g) {
  engine_.set_node_runner(std::ref(runner_));
}

}  // namespace dlakit::quant
