// GpuEngine on the CUDA runtime: per node either GPU kernels (kernels.cu) wrapped in the plan's input and
// output rules, or a host step running quant::NumericsRunner between two copies.
#include <cuda_runtime.h>

#include <chrono>
#include <cstring>
#include <map>
#include <mutex>

#include "gpu/engine.h"
#include "gpu/gpu.h"
#include "gpu/gpu_check.h"
#include "gpu/kernels.h"
#include "kernels/ref/common.h"
#include "kernels/ref/conv_geom.h"

namespace dlakit::gpu {

using quant::Mode;

namespace {
cudaStream_t cs(void* s) { return static_cast<cudaStream_t>(s); }

int64_t count_of(const Graph& g, int v) { return numel(g.value(v).type.shape); }
size_t bytes_of(const Graph& g, int v) { return nbytes(g.value(v).type); }

bool is_f32(const Graph& g, int v) { return v >= 0 && g.value(v).type.dtype == DType::kF32; }

int rounding_code(quant::Rounding r) { return r == quant::Rounding::kHalfAwayFromZero ? 0 : 1; }

// The INT8-exact unary ops (kernels.h); the transcendental ones may differ from glibc by an ulp.
bool exact(k::Unary u) { return int(u) <= int(k::Unary::kCeil); }

bool unary_code(OpKind op, k::Unary& u) {
  switch (op) {
    case OpKind::Relu:
      u = k::Unary::kRelu;
      return true;
    case OpKind::LeakyRelu:
      u = k::Unary::kLeakyRelu;
      return true;
    case OpKind::Clip:
      u = k::Unary::kClip;
      return true;
    case OpKind::HardSigmoid:
      u = k::Unary::kHardSigmoid;
      return true;
    case OpKind::HardSwish:
      u = k::Unary::kHardSwish;
      return true;
    case OpKind::Neg:
      u = k::Unary::kNeg;
      return true;
    case OpKind::Abs:
      u = k::Unary::kAbs;
      return true;
    case OpKind::Sqrt:
      u = k::Unary::kSqrt;
      return true;
    case OpKind::Reciprocal:
      u = k::Unary::kReciprocal;
      return true;
    case OpKind::Floor:
      u = k::Unary::kFloor;
      return true;
    case OpKind::Ceil:
      u = k::Unary::kCeil;
      return true;
    case OpKind::Sigmoid:
      u = k::Unary::kSigmoid;
      return true;
    case OpKind::Tanh:
      u = k::Unary::kTanh;
      return true;
    case OpKind::Elu:
      u = k::Unary::kElu;
      return true;
    case OpKind::Softplus:
      u = k::Unary::kSoftplus;
      return true;
    case OpKind::Exp:
      u = k::Unary::kExp;
      return true;
    case OpKind::Log:
      u = k::Unary::kLog;
      return true;
    case OpKind::Erf:
      u = k::Unary::kErf;
      return true;
    case OpKind::Reshape:
    case OpKind::Flatten:
    case OpKind::Squeeze:
    case OpKind::Unsqueeze:
    case OpKind::Identity:
    case OpKind::Dropout:
      u = k::Unary::kCopy;
      return true;
    default:
      return false;
  }
}

bool binary_code(OpKind op, k::Binary& b) {
  switch (op) {
    case OpKind::Add:
    case OpKind::Sum:
      b = k::Binary::kAdd;
      return true;
    case OpKind::Sub:
      b = k::Binary::kSub;
      return true;
    case OpKind::Mul:
      b = k::Binary::kMul;
      return true;
    case OpKind::Div:
      b = k::Binary::kDiv;
      return true;
    case OpKind::Max:
      b = k::Binary::kMax;
      return true;
    case OpKind::Min:
      b = k::Binary::kMin;
      return true;
    case OpKind::Pow:
      b = k::Binary::kPow;
      return true;
    case OpKind::PRelu:
      b = k::Binary::kPRelu;
      return true;
    default:
      return false;
  }
}

k::ActParams fused_act(const Node& n) {
  k::ActParams a;
  if (!n.has("dlakit_activation")) return a;
  const std::string act = n.attr_str("dlakit_activation", "");
  const auto p = n.attr_floats("dlakit_activation_params", {});
  if (act == "Relu")
    a.act = k::Act::kRelu;
  else if (act == "Clip" && p.size() == 2)
    a = {k::Act::kClip, p[0], p[1]};
  else if (act == "LeakyRelu" && p.size() == 1)
    a = {k::Act::kLeakyRelu, p[0], 0};
  else
    fail(Status::kInvalidArgument, n.label(), ": unknown fused activation '", act, "'");
  return a;
}
}  // namespace

struct GpuEngine::Impl {
  const Graph& g;
  quant::NumericsRunner runner;
  Queue queue;
  std::vector<DeviceBuffer> val;    // per runtime value
  std::vector<DeviceBuffer> owned;  // constants, temporaries
  std::map<std::pair<size_t, int>, const void*> const_dev;
  using Step = std::function<void(cudaStream_t)>;
  std::vector<std::vector<Step>> steps;  // per node
  std::vector<NodeInfo> info;
  std::vector<std::vector<PinnedBuffer>> pinned;  // host steps' staging
  std::mutex run_mu;

  Impl(const Graph& graph, quant::NumericsPlan plan) : g(graph), runner(graph, std::move(plan)) {}
  const quant::NumericsPlan& plan() const { return runner.plan(); }

  void* alloc(size_t bytes) {
    owned.emplace_back(std::max<size_t>(bytes, 4));
    return owned.back().data();
  }
  float* dev(int v) { return static_cast<float*>(val[size_t(v)].data()); }

  // A constant input as the node's mode reads it (prepared form when there is one), uploaded once.
  const Tensor& host_constant(size_t n, int k) {
    const Tensor* p = runner.prepared_constant(n, k);
    return p ? *p : *g.value(g.nodes[n].inputs[size_t(k)]).constant;
  }
  const float* constant(size_t n, int k) {
    auto key = std::make_pair(n, k);
    auto it = const_dev.find(key);
    if (it != const_dev.end()) return static_cast<const float*>(it->second);
    const Tensor& t = host_constant(n, k);
    if (t.dtype() != DType::kF32) fail(Status::kInternal, "constant is not float32");
    void* d = alloc(t.nbytes());
    DLAKIT_CUDA(cudaMemcpy(d, t.raw(), t.nbytes(), cudaMemcpyHostToDevice));
    const_dev[key] = d;
    return static_cast<const float*>(d);
  }

  // Input k of node n as its kernel reads it: constants prepared, runtime values rounded / quantized by
  // the node's input rule (numerics::StepRules, as numerics::run_step applies it) into a temporary.
  const float* input(size_t n, int kin) {
    const Node& node = g.nodes[n];
    const int v = node.inputs[size_t(kin)];
    if (g.value(v).constant) return constant(n, kin);
    const float* src = dev(v);
    if (plan().nodes[n].mode == Mode::kFP32) return src;
    const numerics::InputRule rule = runner.rules(n).inputs[size_t(kin)];
    const bool quantize = rule.quantize_scale > 0, half = rule.round_fp16;
    if (!quantize && !half) return src;
    const int64_t count = count_of(g, v);
    float* t = static_cast<float*>(alloc(size_t(count) * 4));
    const float scale = rule.quantize_scale;
    const int r = rounding_code(runner.rules(n).rounding);
    steps[n].push_back([=](cudaStream_t s) {
      const float* from = src;
      if (quantize) k::quantize(from, t, count, scale, r, true, s), from = t;
      if (half) k::round_to_half(from, t, count, s);
    });
    return t;
  }

  // The node's output rule on its outputs, in place (as numerics::run_step stores them).
  void finish(size_t n) {
    const Node& node = g.nodes[n];
    if (plan().nodes[n].mode == Mode::kFP32) return;
    const numerics::StepRules& rules = runner.rules(n);
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      const int v = node.outputs[k];
      if (v < 0 || !is_f32(g, v)) continue;
      float* y = dev(v);
      const int64_t count = count_of(g, v);
      if (rules.compute_fp16) steps[n].push_back([=](cudaStream_t s) { k::round_to_half(y, y, count, s); });
      const numerics::OutputRule out = rules.outputs[k];
      if (out.store == numerics::Store::kFp16) {
        steps[n].push_back([=](cudaStream_t s) { k::round_to_half(y, y, count, s); });
      } else if (out.store == numerics::Store::kInt8) {
        const float scale = out.scale;
        const int r = rounding_code(rules.rounding);
        steps[n].push_back([=](cudaStream_t s) { k::quantize(y, y, count, scale, r, true, s); });
      }
    }
  }

  // GPU kernels for node n, or false with the reason (the node then runs on the host).
  bool emit_gpu(size_t n, std::string& why);
  void emit_host(size_t n);
};

bool GpuEngine::Impl::emit_gpu(size_t n, std::string& why) {
  const Node& node = g.nodes[n];
  const quant::NodeNumerics& nn = plan().nodes[n];
  const bool int8 = nn.mode == Mode::kINT8;
  for (int v : node.inputs)
    if (v >= 0 && !g.value(v).constant && !is_f32(g, v)) return why = "a non-float32 runtime input", false;
  for (int v : node.outputs)
    if (v >= 0 && !is_f32(g, v)) return why = "a non-float32 output", false;
  for (size_t k = 1; k < node.outputs.size(); ++k)
    if (node.outputs[k] >= 0) return why = "a second output", false;
  const int out = node.outputs.empty() ? -1 : node.outputs[0];
  if (out < 0) return why = "no output", false;
  float* y = dev(out);
  const Shape& ys = g.value(out).type.shape;
  const int64_t count = count_of(g, out);
  const size_t mark = steps[n].size();
  auto give_up = [&](const char* reason) {
    steps[n].resize(mark);
    why = reason;
    return false;
  };

  k::Unary u;
  k::Binary b;
  if (unary_code(node.op, u)) {
    if (int8 && !exact(u)) return give_up("INT8: its GPU formula may differ from the CPU's by an ulp");
    k::UnaryParams p;
    p.op = u;
    if (node.op == OpKind::LeakyRelu) p.alpha = node.attr_float("alpha", 0.01f);
    if (node.op == OpKind::HardSigmoid)
      p.alpha = node.attr_float("alpha", 0.2f), p.beta = node.attr_float("beta", 0.5f);
    if (node.op == OpKind::Elu) p.alpha = node.attr_float("alpha", 1.0f);
    if (node.op == OpKind::Clip) {
      p.lo = -INFINITY, p.hi = INFINITY;
      if (node.opset < 11) {
        p.lo = node.attr_float("min", -std::numeric_limits<float>::max());
        p.hi = node.attr_float("max", std::numeric_limits<float>::max());
      } else {
        for (size_t k = 1; k < node.inputs.size(); ++k) {
          const int v = node.inputs[k];
          if (v < 0) continue;
          if (!g.value(v).constant) return give_up("Clip bounds computed at run time");
          (k == 1 ? p.lo : p.hi) = float(host_constant(n, int(k)).at_f64(0));
        }
      }
    }
    const float* x = input(n, 0);
    steps[n].push_back([=](cudaStream_t s) { k::unary(p, x, y, count, s); });
  } else if (binary_code(node.op, b)) {
    if (node.inputs.size() != 2 || node.opset < 7)
      return give_up("legacy broadcasting or more than two inputs");
    if (int8 && b == k::Binary::kPow) return give_up("INT8: powf may differ from the CPU's by an ulp");
    const Shape& as = g.value(node.inputs[0]).type.shape;
    const Shape& bs = g.value(node.inputs[1]).type.shape;
    if (ys.size() > size_t(k::kMaxRank)) return give_up("rank above 6");
    k::BroadcastShape sh;
    sh.rank = int(ys.size());
    const auto sa = ref::broadcast_strides(as, ys), sb = ref::broadcast_strides(bs, ys);
    for (size_t d = 0; d < ys.size(); ++d) sh.out[d] = ys[d], sh.a_stride[d] = sa[d], sh.b_stride[d] = sb[d];
    const float* pa = input(n, 0);
    const float* pb = input(n, 1);
    steps[n].push_back([=](cudaStream_t s) { k::binary(b, sh, pa, pb, y, s); });
  } else if (node.op == OpKind::Conv) {
    const Shape& xs = g.value(node.inputs[0]).type.shape;
    const int wv = node.inputs[1];
    if (xs.size() != 4 || !g.value(wv).constant)
      return give_up("not a 2-D convolution with constant weights");
    const Shape& ws = g.value(wv).type.shape;
    const int bv = node.inputs.size() > 2 ? node.inputs[2] : -1;
    if (bv >= 0 && !g.value(bv).constant) return give_up("a bias computed at run time");
    const ref::WindowGeom wg = ref::window_geom(node, xs, {ws[2], ws[3]}, false);
    k::ConvGeom cg;
    cg.N = xs[0], cg.C = xs[1], cg.H = xs[2], cg.W = xs[3], cg.M = ws[0], cg.OH = ys[2], cg.OW = ys[3];
    cg.KH = ws[2], cg.KW = ws[3], cg.SH = wg.s[1], cg.SW = wg.s[2], cg.DH = wg.d[1], cg.DW = wg.d[2];
    cg.PT = wg.pb[1], cg.PL = wg.pb[2], cg.G = node.attr_int("group", 1);
    const k::ActParams act = fused_act(node);
    if (int8) {
      const auto* c = runner.conv_int8(n);
      if (!c) return give_up("INT8 without the integer convolution path");
      std::vector<int8_t> wq(size_t(c->w_levels.numel()));
      for (size_t i = 0; i < wq.size(); ++i) wq[i] = int8_t(c->w_levels.data<float>()[i]);
      auto upload = [&](const void* p, size_t bytes) {
        void* d = alloc(bytes);
        DLAKIT_CUDA(cudaMemcpy(d, p, bytes, cudaMemcpyHostToDevice));
        return d;
      };
      const auto* wd = static_cast<const int8_t*>(upload(wq.data(), wq.size()));
      const auto* md = static_cast<const float*>(upload(c->mult.data(), c->mult.size() * 4));
      const auto* bqd = static_cast<const double*>(upload(c->bias_q.data(), c->bias_q.size() * 8));
      const float* bd =
          c->bias.empty() ? nullptr : static_cast<const float*>(upload(c->bias.data(), c->bias.size() * 4));
      const int xv = node.inputs[0];
      const float* x = dev(xv);
      const int64_t xn = count_of(g, xv);
      auto* xq = static_cast<int8_t*>(alloc(size_t(xn)));
      const float s_in = runner.rules(n).inputs[0].quantize_scale;
      const int r = rounding_code(nn.rounding);
      steps[n].push_back([=](cudaStream_t s) {
        k::quantize_i8(x, xq, xn, s_in, r, s);
        k::conv_int8(cg, xq, wd, md, bqd, bd, act, y, s);
      });
    } else {
      const float* x = input(n, 0);
      const float* w = input(n, 1);
      const float* bias = bv >= 0 ? input(n, 2) : nullptr;
      steps[n].push_back([=](cudaStream_t s) { k::conv_f32(cg, x, w, bias, act, y, s); });
    }
  } else if (node.op == OpKind::MaxPool || node.op == OpKind::AveragePool) {
    const Shape& xs = g.value(node.inputs[0]).type.shape;
    if (xs.size() != 4) return give_up("not a 2-D pool");
    const ref::WindowGeom wg =
        ref::window_geom(node, xs, node.attr_ints("kernel_shape"), node.attr_int("ceil_mode", 0) != 0);
    k::PoolGeom pg;
    pg.NC = xs[0] * xs[1], pg.H = xs[2], pg.W = xs[3], pg.OH = ys[2], pg.OW = ys[3];
    pg.KH = wg.k[1], pg.KW = wg.k[2], pg.SH = wg.s[1], pg.SW = wg.s[2], pg.DH = wg.d[1], pg.DW = wg.d[2];
    pg.PT = wg.pb[1], pg.PL = wg.pb[2], pg.PB = wg.pe[1], pg.PR = wg.pe[2];
    pg.is_max = node.op == OpKind::MaxPool;
    pg.include_pad = node.attr_int("count_include_pad", 0) != 0;
    const float* x = input(n, 0);
    steps[n].push_back([=](cudaStream_t s) { k::pool2d(pg, x, y, s); });
  } else if (node.op == OpKind::GlobalAveragePool || node.op == OpKind::GlobalMaxPool) {
    const Shape& xs = g.value(node.inputs[0]).type.shape;
    const int64_t planes = xs[0] * xs[1], vol = count_of(g, node.inputs[0]) / std::max<int64_t>(planes, 1);
    const bool is_max = node.op == OpKind::GlobalMaxPool;
    const float* x = input(n, 0);
    steps[n].push_back([=](cudaStream_t s) { k::global_pool(x, y, planes, vol, is_max, s); });
  } else if (node.op == OpKind::Concat) {
    const int64_t axis = ref::normalize_axis(node, node.attr_int("axis", 0), int64_t(ys.size()));
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= ys[size_t(d)];
    for (size_t d = size_t(axis) + 1; d < ys.size(); ++d) inner *= ys[d];
    int64_t offset = 0;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const int v = node.inputs[k];
      const int64_t len = g.value(v).type.shape[size_t(axis)];
      const float* x = input(n, int(k));
      float* dst = y + offset * inner;
      const size_t width = size_t(len * inner) * 4, dpitch = size_t(ys[size_t(axis)] * inner) * 4;
      if (width && outer)
        steps[n].push_back([=](cudaStream_t s) {
          DLAKIT_CUDA(
              cudaMemcpy2DAsync(dst, dpitch, x, width, width, size_t(outer), cudaMemcpyDeviceToDevice, s));
        });
      offset += len;
    }
  } else if (node.op == OpKind::Transpose) {
    const Shape& xs = g.value(node.inputs[0]).type.shape;
    if (xs.size() > size_t(k::kMaxRank)) return give_up("rank above 6");
    std::vector<int64_t> perm = node.attr_ints("perm", {});
    if (perm.empty())
      for (int64_t d = int64_t(xs.size()) - 1; d >= 0; --d) perm.push_back(d);
    std::vector<int64_t> stride(xs.size(), 1);
    for (int64_t d = int64_t(xs.size()) - 2; d >= 0; --d)
      stride[size_t(d)] = stride[size_t(d + 1)] * xs[size_t(d + 1)];
    k::TransposeShape t;
    t.rank = int(ys.size());
    for (size_t d = 0; d < ys.size(); ++d) t.out[d] = ys[d], t.in_stride[d] = stride[size_t(perm[d])];
    const float* x = input(n, 0);
    steps[n].push_back([=](cudaStream_t s) { k::transpose(t, x, y, s); });
  } else if (node.op == OpKind::Gemm || node.op == OpKind::MatMul) {
    if (int8) return give_up("INT8: float sums in a different order than the CPU's");
    const Shape& as = g.value(node.inputs[0]).type.shape;
    const Shape& bs = g.value(node.inputs[1]).type.shape;
    if (as.size() != 2 || bs.size() != 2) return give_up("not a 2-D matrix product");
    k::GemmGeom gg;
    const bool gemm = node.op == OpKind::Gemm;
    gg.trans_a = gemm && node.attr_int("transA", 0) != 0;
    gg.trans_b = gemm && node.attr_int("transB", 0) != 0;
    gg.alpha = gemm ? node.attr_float("alpha", 1.f) : 1.f;
    gg.beta = gemm ? node.attr_float("beta", 1.f) : 1.f;
    gg.M = ys[0], gg.N = ys[1], gg.K = gg.trans_a ? as[0] : as[1];
    const float* pa = input(n, 0);
    const float* pb = input(n, 1);
    const float* pc = nullptr;
    if (gemm && node.inputs.size() > 2 && node.inputs[2] >= 0) {
      const Shape& c = g.value(node.inputs[2]).type.shape;
      const auto st = ref::broadcast_strides(c, ys);
      gg.c_stride_m = st[0], gg.c_stride_n = st[1];
      pc = input(n, 2);
    }
    steps[n].push_back([=](cudaStream_t s) { k::gemm(gg, pa, pb, pc, y, s); });
  } else {
    return give_up("no CUDA kernel for this op yet");
  }
  finish(n);
  return true;
}

void GpuEngine::Impl::emit_host(size_t n) {
  const Node& node = g.nodes[n];
  std::vector<PinnedBuffer>& pins = pinned[n];
  std::vector<std::pair<int, void*>> ins, outs;  // (value, pinned)
  for (int v : node.inputs)
    if (v >= 0 && !g.value(v).constant) {
      pins.emplace_back(std::max<size_t>(bytes_of(g, v), 4));
      ins.push_back({v, pins.back().data()});
    }
  for (int v : node.outputs)
    if (v >= 0) {
      pins.emplace_back(std::max<size_t>(bytes_of(g, v), 4));
      outs.push_back({v, pins.back().data()});
    }
  for (auto [v, p] : ins) {
    void* src = val[size_t(v)].data();
    const size_t bytes = bytes_of(g, v);
    steps[n].push_back(
        [=](cudaStream_t s) { DLAKIT_CUDA(cudaMemcpyAsync(p, src, bytes, cudaMemcpyDeviceToHost, s)); });
  }
  Impl* self = this;
  steps[n].push_back([=, &node](cudaStream_t) {
    self->queue.host([=, &node] {
      std::vector<Tensor> held;
      held.reserve(ins.size());
      std::vector<const Tensor*> ptrs;
      size_t next = 0;
      for (int v : node.inputs) {
        if (v < 0) {
          ptrs.push_back(nullptr);
        } else if (self->g.value(v).constant) {
          ptrs.push_back(&*self->g.value(v).constant);
        } else {
          const auto& [iv, p] = ins[next++];
          held.push_back(Tensor::uninitialized(self->g.value(iv).type.dtype, self->g.value(iv).type.shape));
          std::memcpy(held.back().raw(), p, held.back().nbytes());
          ptrs.push_back(&held.back());
        }
      }
      std::vector<Tensor> res = self->runner(n, ptrs);
      size_t o = 0;
      for (size_t k = 0; k < node.outputs.size(); ++k) {
        if (node.outputs[k] < 0) continue;
        const auto& [ov, p] = outs[o++];
        if (k >= res.size() || res[k].nbytes() != bytes_of(self->g, ov))
          fail(Status::kInternal, node.label(), ": host step produced an unexpected output ", k);
        std::memcpy(p, res[k].raw(), res[k].nbytes());
      }
    });
  });
  for (auto [v, p] : outs) {
    void* dst = val[size_t(v)].data();
    const size_t bytes = bytes_of(g, v);
    steps[n].push_back(
        [=](cudaStream_t s) { DLAKIT_CUDA(cudaMemcpyAsync(dst, p, bytes, cudaMemcpyHostToDevice, s)); });
  }
}

GpuEngine::GpuEngine(const Graph& g, quant::NumericsPlan plan)
    : impl_(std::make_unique<Impl>(g, std::move(plan))) {
  Impl& m = *impl_;
  m.val.resize(g.values.size());
  for (size_t v = 0; v < g.values.size(); ++v)
    if (!g.values[v].constant) m.val[v] = DeviceBuffer(std::max<size_t>(bytes_of(g, int(v)), 4));
  m.steps.resize(g.nodes.size());
  m.info.resize(g.nodes.size());
  m.pinned.resize(g.nodes.size());
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    std::string why;
    bool ok = false;
    try {
      ok = m.emit_gpu(n, why);
    } catch (const Error& e) {
      why = e.what();
      m.steps[n].clear();
    }
    m.info[n].on_gpu = ok;
    if (!ok) {
      m.info[n].why = why;
      m.emit_host(n);
    }
  }
}

GpuEngine::~GpuEngine() = default;

void* GpuEngine::input(size_t i) { return impl_->val.at(size_t(impl_->g.inputs.at(i))).data(); }
const void* GpuEngine::output(size_t i) { return impl_->val.at(size_t(impl_->g.outputs.at(i))).data(); }

void GpuEngine::enqueue(void* stream) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lk(m.run_mu);
  m.queue.begin(stream);
  const cudaStream_t s = cs(m.queue.stream());
  for (auto& node_steps : m.steps)
    for (auto& step : node_steps) step(s);
  DLAKIT_CUDA(cudaGetLastError());  // a failed kernel launch
  m.queue.end(stream);
}

void GpuEngine::synchronize() { impl_->queue.synchronize(); }

TensorMap GpuEngine::run(const TensorMap& inputs) {
  Impl& m = *impl_;
  const Graph& g = m.g;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const Value& v = g.value(g.inputs[i]);
    auto it = inputs.find(v.name);
    if (it == inputs.end()) fail(Status::kInvalidArgument, "missing input '", v.name, "'");
    if (!(it->second.type() == v.type))
      fail(Status::kInvalidArgument, "input '", v.name, "' is ", type_str(it->second.type()),
           " but the model expects ", type_str(v.type));
    DLAKIT_CUDA(cudaMemcpy(input(i), it->second.raw(), it->second.nbytes(), cudaMemcpyHostToDevice));
  }
  enqueue(nullptr);
  DLAKIT_CUDA(cudaDeviceSynchronize());
  synchronize();
  TensorMap out;
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const Value& v = g.value(g.outputs[i]);
    Tensor t = Tensor::uninitialized(v.type.dtype, v.type.shape);
    DLAKIT_CUDA(cudaMemcpy(t.raw(), output(i), t.nbytes(), cudaMemcpyDeviceToHost));
    out.emplace(v.name, std::move(t));
  }
  return out;
}

std::vector<double> GpuEngine::profile(const TensorMap& inputs) {
  run(inputs);  // warm: constants uploaded, kernels loaded
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lk(m.run_mu);
  const cudaStream_t s = cs(m.queue.stream());
  std::vector<cudaEvent_t> ev(m.steps.size() + 1);
  for (auto& e : ev) DLAKIT_CUDA(cudaEventCreate(&e));
  DLAKIT_CUDA(cudaEventRecord(ev[0], s));
  for (size_t n = 0; n < m.steps.size(); ++n) {
    for (auto& step : m.steps[n]) step(s);
    DLAKIT_CUDA(cudaEventRecord(ev[n + 1], s));
  }
  m.queue.synchronize();
  std::vector<double> ms(m.steps.size());
  for (size_t n = 0; n < ms.size(); ++n) {
    float t = 0;
    DLAKIT_CUDA(cudaEventElapsedTime(&t, ev[n], ev[n + 1]));
    ms[n] = t;
  }
  for (auto& e : ev) cudaEventDestroy(e);
  return ms;
}

const std::vector<GpuEngine::NodeInfo>& GpuEngine::nodes() const { return impl_->info; }

int GpuEngine::gpu_nodes() const {
  int c = 0;
  for (auto& i : impl_->info) c += i.on_gpu;
  return c;
}

}  // namespace dlakit::gpu
