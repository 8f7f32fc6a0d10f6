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
      return rank == 2 ? (n.attr_int("transB", 0) ? 0 : 1) : -1;
    case OpKind::MatMul:
      return rank == 2 ? 1 : -1;
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

NumericsRunner::NumericsRunner(const Graph& g, NumericsPlan plan) : g_(g), plan_(std::move(plan)) {
  if (plan_.nodes.size() != g.nodes.size())
    fail(Status::kInternal, "numerics plan has ", plan_.nodes.size(), " nodes for ", g.nodes.size());
  plan_.fused.resize(g.values.size(), 0);  // a hand-made plan may leave it empty: nothing fused
  on_grid_.assign(g.values.size(), 0);
  is_fp16_.assign(g.values.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].outputs) {
      if (v < 0) continue;
      const Mode m = plan_.nodes[i].mode;
      if (plan_.fused[size_t(v)]) continue;  // stays fp32 inside the fused pipeline
      if (m == Mode::kFP16 || (m == Mode::kINT8 && leaves_as_fp16(v))) is_fp16_[size_t(v)] = 1;
      if (m == Mode::kINT8 && !leaves_as_fp16(v) && plan_.scale.count(v)) on_grid_[size_t(v)] = 1;
    }
  // Everything derived from constants is prepared now, so runs only read (several threads may run).
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& node = g.nodes[i];
    const Mode m = plan_.nodes[i].mode;
    if (m == Mode::kINT8 && node.op == OpKind::Conv && weight_axis(g, node) == 0) conv_prep(i);
    if (m == Mode::kFP32) continue;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const int v = node.inputs[k];
      if (v < 0 || !g.value(v).constant || g.value(v).constant->dtype() != DType::kF32) continue;
      if (m == Mode::kFP16) {
        Tensor t = g.value(v).constant->clone();
        round_to_half_inplace(t.data<float>(), t.numel());
        const_cache_.emplace(std::make_pair(i, int(k)), std::move(t));
      } else if (k == 1 && weight_axis(g, node) >= 0 && node.op != OpKind::Conv) {
        const int axis = weight_axis(g, node);
        Tensor q = fake_quantize_weights(*g.value(v).constant, weight_scales_for(plan_, g.value(v), axis),
                                         axis, plan_.nodes[i].rounding);
        const_cache_.emplace(std::make_pair(i, int(k)), std::move(q));
      }
    }
  }
}

bool NumericsRunner::leaves_as_fp16(int v) const {
  return is_graph_output(g_, v) && !plan_.int8_outputs.count(v);
}

std::vector<Tensor> NumericsRunner::operator()(size_t n, const std::vector<const Tensor*>& in) {
  switch (plan_.nodes[n].mode) {
    case Mode::kFP32:
      return run_node(g_, g_.nodes[n], in);
    case Mode::kFP16:
      return run_fp16(n, in);
    case Mode::kINT8:
      return run_int8(n, in);
  }
  return {};
}

std::vector<Tensor> NumericsRunner::run_fp16(size_t n, const std::vector<const Tensor*>& in) {
  const Node& node = g_.nodes[n];
  std::vector<const Tensor*> ptrs = in;
  std::vector<Tensor> tmp;
  tmp.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const int v = node.inputs[i];
    if (v < 0 || !in[i] || in[i]->dtype() != DType::kF32) continue;
    if (g_.value(v).constant) {  // weights are stored as fp16 in an FP16 loadable (prepared up front)
      ptrs[i] = &const_cache_.at(std::make_pair(n, int(i)));
    } else if ((raw_inputs_ || !is_fp16_[size_t(v)]) && !plan_.fused[size_t(v)]) {
      tmp.push_back(in[i]->clone());
      round_to_half_inplace(tmp.back().data<float>(), tmp.back().numel());
      ptrs[i] = &tmp.back();
    }
  }
  std::vector<Tensor> outs = run_node(g_, node, ptrs);
  for (size_t k = 0; k < outs.size(); ++k) {
    Tensor& t = outs[k];
    if (!t.empty() && t.dtype() == DType::kF32 && !plan_.fused[size_t(node.outputs[k])])
      round_to_half_inplace(t.data<float>(), t.numel());
  }
  return outs;
}

std::vector<Tensor> NumericsRunner::run_int8(size_t n, const std::vector<const Tensor*>& in) {
  const Node& node = g_.nodes[n];
  const NodeNumerics& nn = plan_.nodes[n];
  if (node.op == OpKind::Conv && weight_axis(g_, node) == 0 && in[0]) {
    std::vector<Tensor> outs;
    outs.push_back(run_conv_int8(n, *in[0]));
    return outs;
  }
  std::vector<const Tensor*> ptrs = in;
  std::vector<Tensor> tmp;
  tmp.reserve(in.size());
  const int waxis = weight_axis(g_, node);
  for (size_t i = 0; i < in.size(); ++i) {
    const int v = node.inputs[i];
    if (v < 0 || !in[i] || in[i]->dtype() != DType::kF32) continue;
    if (g_.value(v).constant) {
      if (i != 1 || waxis < 0) continue;  // non-weight constants (e.g. a Scale's factor) stay as they are
      ptrs[i] = &const_cache_.at(std::make_pair(n, int(i)));  // fake-quantized per channel, prepared
      continue;
    }
    auto a = plan_.scale.find(v);
    if (a == plan_.scale.end() || plan_.fused[size_t(v)]) continue;
    const bool grid = on_grid_[size_t(v)] && !raw_inputs_;
    if (!grid || nn.compute_fp16) {
      tmp.push_back(in[i]->clone());
      Tensor& t = tmp.back();
      if (!grid) fake_quantize(t.data<float>(), t.numel(), a->second, nn.rounding);
      if (nn.compute_fp16) round_to_half_inplace(t.data<float>(), t.numel());
      ptrs[i] = &t;
    }
  }
  std::vector<Tensor> outs = run_node(g_, node, ptrs);
  if (nn.compute_fp16)
    for (Tensor& t : outs)
      if (!t.empty() && t.dtype() == DType::kF32) round_to_half_inplace(t.data<float>(), t.numel());
  finish_int8_outputs(n, outs);
  return outs;
}

void NumericsRunner::finish_int8_outputs(size_t n, std::vector<Tensor>& outs) {
  const Node& node = g_.nodes[n];
  for (size_t k = 0; k < outs.size(); ++k) {
    const int v = node.outputs[k];
    Tensor& t = outs[k];
    if (v < 0 || t.empty() || t.dtype() != DType::kF32 || plan_.fused[size_t(v)]) continue;
    auto a = plan_.scale.find(v);
    if (leaves_as_fp16(v) || a == plan_.scale.end())
      round_to_half_inplace(t.data<float>(), t.numel());
    else
      fake_quantize(t.data<float>(), t.numel(), a->second, plan_.nodes[n].rounding);
  }
}

// Integer levels are exact in fp32 while every partial sum stays within 2^24. Input levels are at most
// 128 in magnitude, so input channels are grouped until sum(|w_q|) * 128 could pass 2^24; each group's
// convolution is exact and the groups add in int64.
const NumericsRunner::ConvInt8& NumericsRunner::conv_prep(size_t n) {
  auto it = conv_.find(n);
  if (it != conv_.end()) return it->second;  // after construction, always
  const Node& node = g_.nodes[n];
  const NodeNumerics& nn = plan_.nodes[n];
  ConvInt8 c;
  c.node = node;
  c.node.attrs.erase("dlakit_activation");
  c.node.attrs.erase("dlakit_activation_params");
  c.node.inputs.resize(2);
  const Tensor& w = *g_.value(node.inputs[1]).constant;
  const int64_t M = w.dim(0), Cg = w.dim(1), taps = w.numel() / (M * Cg);
  c.w_scale = weight_scales_for(plan_, g_.value(node.inputs[1]), 0);
  if (int64_t(c.w_scale.size()) != M)
    fail(Status::kInvalidArgument, node.label(), ": ", c.w_scale.size(), " weight scales for ", M,
         " output channels");
  Tensor wq = quantize_weights(w, c.w_scale, 0, nn.rounding);
  c.w_levels = wq;
  if (node.inputs.size() > 2 && node.inputs[2] >= 0) {
    const Tensor* b = g_.value(node.inputs[2]).constant ? &*g_.value(node.inputs[2]).constant : nullptr;
    if (!b) fail(Status::kUnsupported, node.label(), ": INT8 emulation needs a constant bias");
    c.bias = b->to_f32();
  }
  // Requantize: r = (acc + bias_q) * s_in * s_w[k], the bias quantized to int32 at the product's scale.
  const float s_in = plan_.scale.count(node.inputs[0]) ? plan_.scale.at(node.inputs[0]) : 0.f;
  for (int64_t m = 0; m < M; ++m) {
    const float mult = s_in * c.w_scale[size_t(m)];
    const float b = c.bias.empty() ? 0.f : c.bias[size_t(m)];
    double bq = 0;
    if (mult > 0) bq = std::clamp<double>(round_with(b / mult, nn.rounding), -2147483648.0, 2147483647.0);
    c.mult.push_back(mult);
    c.bias_q.push_back(bq);
  }
  const int64_t group = node.attr_int("group", 1);
  std::vector<double> col(size_t(Cg), 0.0);  // per input channel: max over k of sum |w_q[k, c, :]|
  const float* q = wq.data<float>();
  for (int64_t k = 0; k < M; ++k)
    for (int64_t ch = 0; ch < Cg; ++ch) {
      double s = 0;
      for (int64_t t = 0; t < taps; ++t) s += std::fabs(q[(k * Cg + ch) * taps + t]);
      col[size_t(ch)] = std::max(col[size_t(ch)], s);
    }
  const double limit = double(1 << 24) / 128.0;
  int64_t start = 0;
  double run = 0;
  for (int64_t ch = 0; ch < Cg; ++ch) {
    if (group == 1 && ch > start && run + col[size_t(ch)] > limit) {
      c.chunks.push_back({start, ch});
      start = ch;
      run = 0;
    }
    run += col[size_t(ch)];
  }
  c.chunks.push_back({start, Cg});
  for (auto [c0, c1] : c.chunks) {
    if (c.chunks.size() == 1) {
      c.w_q.push_back(wq);
      break;
    }
    Shape s = w.shape();
    s[1] = c1 - c0;
    Tensor part = Tensor::uninitialized(DType::kF32, s);
    for (int64_t k = 0; k < M; ++k)
      std::memcpy(part.data<float>() + k * (c1 - c0) * taps, q + (k * Cg + c0) * taps,
                  size_t((c1 - c0) * taps) * sizeof(float));
    c.w_q.push_back(part);
  }
  return conv_.emplace(n, std::move(c)).first->second;
}

Tensor NumericsRunner::run_conv_int8(size_t n, const Tensor& x) {
  const Node& node = g_.nodes[n];
  const NodeNumerics& nn = plan_.nodes[n];
  const ConvInt8& c = conv_prep(n);
  const float s_in = plan_.scale.at(node.inputs[0]);
  Tensor xq = Tensor::uninitialized(DType::kF32, x.shape());
  quantize_to_levels(x.data<float>(), xq.data<float>(), x.numel(), s_in, nn.rounding);
  const Shape& ys = g_.value(node.outputs[0]).type.shape;
  const int64_t N = ys[0], M = ys[1];
  Tensor acc = Tensor::uninitialized(DType::kF32, ys);
  const int64_t plane = acc.numel() / (N * M);
  const KernelFn conv = op_impl(OpKind::Conv).run;
  std::vector<int64_t> sum;
  for (size_t k = 0; k < c.chunks.size(); ++k) {
    const Tensor* xin = &xq;
    Tensor part;
    if (c.chunks.size() > 1) {
      const auto [c0, c1] = c.chunks[k];
      Shape s = x.shape();
      const int64_t C = s[1], inner = x.numel() / (s[0] * C);
      s[1] = c1 - c0;
      part = Tensor::uninitialized(DType::kF32, s);
      for (int64_t b = 0; b < s[0]; ++b)
        std::memcpy(part.data<float>() + b * (c1 - c0) * inner, xq.data<float>() + (b * C + c0) * inner,
                    size_t((c1 - c0) * inner) * sizeof(float));
      xin = &part;
    }
    conv(KernelContext(c.node, {xin, &c.w_q[k]}, {&acc}, {0, 1}));
    if (c.chunks.size() > 1) {
      if (sum.empty()) sum.assign(size_t(acc.numel()), 0);
      const float* a = acc.data<float>();
      for (int64_t i = 0; i < acc.numel(); ++i) sum[size_t(i)] += int64_t(a[i]);
    }
  }
  // Requantize (conv_prep's mult and bias_q); fused activation on r; r to the output's range.
  float* y = acc.data<float>();
  for (int64_t m = 0; m < M; ++m) {
    const float mult = c.mult[size_t(m)];
    const float b = c.bias.empty() ? 0.f : c.bias[size_t(m)];
    const double bq = c.bias_q[size_t(m)];
    for (int64_t b0 = 0; b0 < N; ++b0) {
      const int64_t base = (b0 * M + m) * plane;
      for (int64_t i = 0; i < plane; ++i) {
        const double a = sum.empty() ? double(y[base + i]) : double(sum[size_t(base + i)]);
        y[base + i] = mult > 0 ? float(a + bq) * mult : b;
      }
    }
  }
  ref::apply_fused_activation(node, y, acc.numel());
  std::vector<Tensor> outs{acc};
  finish_int8_outputs(n, outs);
  return outs[0];
}

EmulatedEngine::EmulatedEngine(const Graph& g, NumericsPlan plan) : runner_(g, std::move(plan)), engine_(g) {
  engine_.set_node_runner(std::ref(runner_));
}

}  // namespace dlakit::quant
