// GpuEngine on the CUDA runtime: per node either GPU kernels (kernels.cu) wrapped in the plan's input and
// output rules, or a host step running quant::NumericsRunner between two copies.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "engine/gpu_engine.h"
#include "gpu/gpu.h"
#include "gpu/gpu_check.h"
#include "gpu/layer_emit.h"

namespace dlakit::gpu {

using quant::Mode;

namespace {
cudaStream_t cs(void* s) { return static_cast<cudaStream_t>(s); }

size_t bytes_of(const Graph& g, int v) { return nbytes(g.value(v).type); }

bool is_f32(const Graph& g, int v) { return v >= 0 && g.value(v).type.dtype == DType::kF32; }

}  // namespace

struct GpuEngine::Impl {
  const Graph& g;
  quant::NumericsRunner runner;
  Queue queue;
  // per runtime value: float NCHW; the graph's inputs and outputs allocated at once, others once a layer
  // writes or reads them as floats
  std::vector<DeviceBuffer> val;
  // Per runtime value: the fp16 chw16 surface that its producer, an FP16 Conv on the implicit GEMM, writes
  // instead of floats where every reader takes one (surface_result); empty otherwise.
  // A surface's float buffer exists once a reader's unpack fills it (floats()).
  std::vector<DeviceBuffer> atoms;
  std::vector<std::vector<Launch>> unpacks;  // per node: the float copies it needs, run before its steps
  std::vector<signed char> implicit_conv;    // per node: implicit_half_conv's answer; -1 not asked yet
  DeviceArena arena;                         // constants, temporaries
  std::map<std::pair<size_t, int>, const void*> const_dev;
  std::vector<std::vector<Launch>> steps;  // per node
  std::vector<NodeInfo> info;
  // Per runtime value: written by a GPU layer whose store rule leaves fp16 values, so that a later layer's
  // rounding of it to fp16 would change nothing and is skipped.
  std::vector<char> half_valued;
  std::vector<std::vector<PinnedBuffer>> pinned;  // host steps' staging
  std::mutex run_mu;
  // The whole run as one CUDA graph, recorded on the first enqueue: the launches read and write this
  // engine's own buffers only, so one graph launch replaces them all on every later run.
  std::shared_ptr<Queue::Captured> graph;

  Impl(const Graph& graph, quant::NumericsPlan plan) : g(graph), runner(graph, std::move(plan)) {}
  ~Impl() { cudaStreamSynchronize(cs(queue.stream())); }  // no replay still running when the graph goes
  const quant::NumericsPlan& plan() const { return runner.plan(); }

  float* dev(int v) {
    DeviceBuffer& b = val[size_t(v)];
    if (!b.data()) b = DeviceBuffer(std::max<size_t>(bytes_of(g, v), 4));
    return static_cast<float*>(b.data());
  }
  const uint16_t* surface(int v) const { return static_cast<const uint16_t*>(atoms[size_t(v)].data()); }
  // v's float values for node n: a surface is unpacked into them once, before the first node that reads
  // floats (nodes run in order).
  const float* floats(int v, size_t n) {
    const bool unpacked = val[size_t(v)].data() != nullptr;
    float* f = dev(v);
    if (surface(v) && !unpacked) {
      const Shape& s = g.value(v).type.shape;
      const uint16_t* a = surface(v);
      const int64_t images = s[0], channels = s[1], plane = s[2] * s[3];
      unpacks[n].push_back([=](cudaStream_t st) { unpack_half_atoms(a, images, channels, plane, f, st); });
    }
    return f;
  }

  // A constant input as the node's mode reads it (its stored form when it has one), uploaded once.
  const Tensor& host_constant(size_t n, int k) {
    const Tensor* p = runner.prepared_constant(n, k);
    return p ? *p : *g.value(g.nodes[n].inputs[size_t(k)]).constant;
  }
  const float* constant(size_t n, int k) {
    auto key = std::make_pair(n, k);
    auto it = const_dev.find(key);
    if (it != const_dev.end()) return static_cast<const float*>(it->second);
    const Tensor& t = host_constant(n, k);
    const void* d = arena.upload(t.raw(), t.nbytes());
    const_dev[key] = d;
    return static_cast<const float*>(d);
  }

  // The Add (and ReLU) that node n's epilogue can run (ResidualTail), where the layers allow it.
  struct ResidualTail {
    size_t add = 0, relu = 0;  // nodes; relu == add: none
    int other = -1, out = -1;  // the Add's other operand; the last fused layer's output
    HalfResidual residual;     // the rules (`other` filled in at emit)
  };
  std::optional<ResidualTail> residual_tail(size_t n) const;
  std::vector<int> uses, producer;  // per value: reads by nodes (a graph output counts one); its node or -1
  // Whether node n is an FP16 Conv that takes the implicit GEMM (layer_emit's half_conv_implicit).
  bool implicit_half_conv(size_t n);
  // Whether node r reads value v (once) as an fp16 chw16 surface: as the input of an implicit FP16 Conv
  // whose input rule only rounds to fp16, or as the other operand of a residual Add that such a Conv's
  // epilogue runs (residual_tail; v's half_valued must be set).
  bool reads_surface(size_t r, int v);
  // Whether node n's result v (on the fp16 grid) lives as a surface: not a graph output, and every reader
  // takes one. A reader that then runs apart after all gets floats (floats()).
  bool surface_result(size_t n, int v);

  // GPU kernels for node n (layer_emit), or false with the reason (the node then runs on the host); with a
  // tail, node n's launches also compute the tail's layers, or it is false.
  bool emit_gpu(size_t n, std::string& why, const ResidualTail* tail = nullptr);
  void emit_host(size_t n);
  void record();
};

void GpuEngine::Impl::record() {
  const cudaStream_t s = cs(queue.stream());
  graph = queue.record([&] {
    for (auto& node_steps : steps)
      for (auto& step : node_steps) step(s);
  });
}

// An FP16 Conv whose result only a same-shape Add reads (then, optionally, whose sum only a ReLU reads), with
// the Add's other operand computed before the Conv: the three layers' arithmetic in the convolution's
// epilogue equals running them apart (each store rule applied in turn; every operand the Add and the ReLU
// read is already on the fp16 grid where their input rules round to it, so the rules change nothing).
std::optional<GpuEngine::Impl::ResidualTail> GpuEngine::Impl::residual_tail(size_t n) const {
  const Node& conv = g.nodes[n];
  const Mode mode = plan().nodes[n].mode;
  auto only_reader = [&](int v) -> std::optional<size_t> {
    if (v < 0 || uses[size_t(v)] != 1) return std::nullopt;
    for (size_t r = n + 1; r < g.nodes.size(); ++r)
      for (int in : g.nodes[r].inputs)
        if (in == v) return r;
    return std::nullopt;  // a graph output
  };
  auto keeps = [&](const numerics::InputRule& rule, bool half) {
    return !(rule.quantize_scale > 0) && (half || !rule.round_fp16);
  };
  if (conv.op != OpKind::Conv || mode != Mode::kFP16 || conv.outputs.size() != 1) return std::nullopt;
  const int conv_out = conv.outputs[0];
  const std::optional<size_t> add = only_reader(conv_out);
  if (!add) return std::nullopt;
  const Node& add_node = g.nodes[*add];
  if (add_node.op != OpKind::Add || add_node.inputs.size() != 2 || add_node.outputs.size() != 1 ||
      plan().nodes[*add].mode != mode)
    return std::nullopt;
  const size_t conv_side = add_node.inputs[0] == conv_out ? 0 : 1;
  const int other = add_node.inputs[1 - conv_side];
  if (other < 0 || other == conv_out || g.value(other).constant || !is_f32(g, other) ||
      !(g.value(other).type.shape == g.value(conv_out).type.shape) || producer[size_t(other)] >= int(n) ||
      !is_f32(g, add_node.outputs[0]))
    return std::nullopt;
  const numerics::StepRules& add_rules = runner.rules(*add);
  if (!keeps(add_rules.inputs[conv_side], store_rule(runner.rules(n)).leaves_half()) ||
      !keeps(add_rules.inputs[1 - conv_side], half_valued[size_t(other)]))
    return std::nullopt;
  ResidualTail t;
  t.add = t.relu = *add, t.other = other, t.out = add_node.outputs[0];
  t.residual.store = store_rule(add_rules);
  const std::optional<size_t> relu = only_reader(t.out);
  if (relu && g.nodes[*relu].op == OpKind::Relu && g.nodes[*relu].outputs.size() == 1 &&
      plan().nodes[*relu].mode == mode && is_f32(g, g.nodes[*relu].outputs[0]) &&
      keeps(runner.rules(*relu).inputs[0], t.residual.store.leaves_half())) {
    t.relu = *relu, t.out = g.nodes[*relu].outputs[0];
    t.residual.relu = true, t.residual.relu_store = store_rule(runner.rules(*relu));
  }
  return t;
}

bool GpuEngine::Impl::emit_gpu(size_t n, std::string& why, const ResidualTail* tail) {
  const Node& node = g.nodes[n];
  const bool fp32 = plan().nodes[n].mode == Mode::kFP32;
  const numerics::StepRules& rules = runner.rules(n);
  for (int v : node.inputs)
    if (v >= 0 && !g.value(v).constant && !is_f32(g, v)) return why = "a non-float32 runtime input", false;
  for (size_t k = 1; k < node.outputs.size(); ++k)
    if (node.outputs[k] >= 0) return why = "a second output", false;
  const int out = node.outputs.empty() ? -1 : node.outputs[0];
  if (!is_f32(g, out)) return why = "no float32 output", false;
  LayerCall c;
  if (tail) {
    c.residual = tail->residual;
    if (surface(tail->other)) {
      c.residual->other.atoms = surface(tail->other);
    } else {
      c.residual->other.nchw = floats(tail->other, n);
    }
  }
  c.node = &node;
  c.int8 = plan().nodes[n].mode == Mode::kINT8;
  c.conv = runner.conv_int8(n);
  c.rounding = rounding_code(rules.rounding);
  const int in0 = node.inputs.empty() ? -1 : node.inputs[0];
  set_input0(c, node.op, rules, in0 >= 0 && half_valued[size_t(in0)]);
  const bool surface_in = in0 >= 0 && surface(in0) && node.op == OpKind::Conv && reads_surface(n, in0);
  c.out_shape = g.value(out).type.shape;
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    const int v = node.inputs[k];
    LayerOperand o;
    if (v >= 0) {
      o.shape = g.value(v).type.shape;
      if (g.value(v).constant) {
        o.constant = &host_constant(n, int(k));
        if (o.constant->dtype() == DType::kF32) o.dev = constant(n, int(k));
      } else if (k == 0 && surface_in) {  // on the fp16 grid: the rule changes nothing
        c.in0_atoms = surface(v);
      } else if (fp32 || (k == 0 && (c.conv || c.in0_unrounded))) {  // the layer applies the rule itself
        o.dev = floats(v, n);
      } else if (half_valued[size_t(v)] &&
                 rounds_to_half_only(rules.inputs[k])) {  // already on the fp16 grid
        o.dev = floats(v, n);
      } else {
        o.dev =
            apply_input_rule(floats(v, n), numel(o.shape), rules.inputs[k], rules.rounding, arena, steps[n]);
      }
    }
    c.in.push_back(o);
  }
  if (c.conv) c.s_in = rules.inputs[0].quantize_scale;
  if (!fp32) c.store = store_rule(rules);
  const k::StoreRule& last = !tail                 ? c.store
                             : tail->residual.relu ? tail->residual.relu_store
                                                   : tail->residual.store;
  const int result = tail ? tail->out : out;
  const size_t mark = steps[n].size();
  auto undo = [&] {  // nothing of a failed attempt stays: its launches, the result's form
    steps[n].resize(mark);
    half_valued[size_t(result)] = 0;
    atoms[size_t(result)] = DeviceBuffer();
  };
  try {
    half_valued[size_t(result)] = last.leaves_half();  // before surface_result: its readers' tails read it
    if (node.op == OpKind::Conv && !fp32 && !c.int8 &&
        half_surface_rules(c.store, c.residual ? &*c.residual : nullptr) && surface_result(n, result)) {
      const Shape& s = g.value(result).type.shape;
      atoms[size_t(result)] = DeviceBuffer(half_atoms_bytes(s[0], s[1], s[2] * s[3]));
      c.out_atoms = static_cast<uint16_t*>(atoms[size_t(result)].data());
    } else {
      c.out = dev(result);
    }
    if (!emit_layer(c, arena, steps[n], why)) {
      undo();
      return false;
    }
    info[n].surface = c.out_atoms != nullptr;
  } catch (...) {
    undo();
    throw;
  }
  return true;
}

bool GpuEngine::Impl::implicit_half_conv(size_t n) {
  signed char& known = implicit_conv[n];
  if (known >= 0) return known > 0;
  const Node& node = g.nodes[n];
  const std::vector<int>& ins = node.inputs;
  // emit_layer's and emit_half_conv's conditions: constant weights (and bias), an input the rule rounds to
  // fp16, float32 values
  known = node.op == OpKind::Conv && plan().nodes[n].mode == Mode::kFP16 && ins.size() >= 2 &&
          node.outputs.size() == 1 && ins[0] >= 0 && ins[1] >= 0 && g.value(ins[1]).constant &&
          (ins.size() < 3 || ins[2] < 0 || g.value(ins[2]).constant) && is_f32(g, ins[0]) &&
          is_f32(g, node.outputs[0]) && !runner.rules(n).inputs.empty() &&
          runner.rules(n).inputs[0].round_fp16;
  if (known) {
    try {
      known = half_conv_implicit(node, g.value(ins[0]).type.shape, host_constant(n, 1),
                                 g.value(node.outputs[0]).type.shape);
    } catch (const Error&) {
      known = 0;  // a layer emit_layer cannot take either (its own emission then says why)
    }
  }
  return known > 0;
}

bool GpuEngine::Impl::reads_surface(size_t r, int v) {
  const Node& node = g.nodes[r];
  if (std::count(node.inputs.begin(), node.inputs.end(), v) != 1) return false;
  if (node.op == OpKind::Conv)
    return node.inputs[0] == v && implicit_half_conv(r) && rounds_to_half_only(runner.rules(r).inputs[0]);
  if (node.op != OpKind::Add || node.inputs.size() != 2) return false;
  const int conv_out = node.inputs[0] == v ? node.inputs[1] : node.inputs[0];
  const int conv = conv_out >= 0 ? producer[size_t(conv_out)] : -1;
  if (conv < 0 || !implicit_half_conv(size_t(conv))) return false;
  const std::optional<ResidualTail> tail = residual_tail(size_t(conv));
  return tail && tail->add == r && tail->other == v;
}

bool GpuEngine::Impl::surface_result(size_t n, int v) {
  const Shape& s = g.value(v).type.shape;
  if (!implicit_half_conv(n) || s.size() != 4 || half_atoms_bytes(s[0], s[1], s[2] * s[3]) / 32 > INT32_MAX ||
      std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end())
    return false;
  int readers = 0;
  for (size_t r = n + 1; r < g.nodes.size(); ++r) {
    const std::vector<int>& ins = g.nodes[r].inputs;
    if (std::find(ins.begin(), ins.end(), v) == ins.end()) continue;
    if (!reads_surface(r, v)) return false;
    ++readers;
  }
  return readers > 0;
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
  // (pairs, not structured bindings: clang before 16 does not capture those in the lambdas)
  for (const auto& in : ins) {
    void* p = in.second;
    const void* src = floats(in.first, n);
    const size_t bytes = bytes_of(g, in.first);
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
  for (const auto& out : outs) {
    void* p = out.second;
    void* dst = dev(out.first);
    const size_t bytes = bytes_of(g, out.first);
    steps[n].push_back(
        [=](cudaStream_t s) { DLAKIT_CUDA(cudaMemcpyAsync(dst, p, bytes, cudaMemcpyHostToDevice, s)); });
  }
}

GpuEngine::GpuEngine(const Graph& g, quant::NumericsPlan plan)
    : impl_(std::make_unique<Impl>(g, std::move(plan))) {
  Impl& m = *impl_;
  m.val.resize(g.values.size());
  m.atoms.resize(g.values.size());
  m.half_valued.assign(g.values.size(), 0);
  for (int v : g.inputs) m.dev(v);
  for (int v : g.outputs) m.dev(v);
  m.steps.resize(g.nodes.size());
  m.unpacks.resize(g.nodes.size());
  m.implicit_conv.assign(g.nodes.size(), -1);
  m.info.resize(g.nodes.size());
  m.pinned.resize(g.nodes.size());
  m.uses.assign(g.values.size(), 0);
  m.producer.assign(g.values.size(), -1);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    for (int v : g.nodes[n].inputs)
      if (v >= 0) ++m.uses[size_t(v)];
    for (int v : g.nodes[n].outputs)
      if (v >= 0) m.producer[size_t(v)] = int(n);
  }
  for (int v : g.outputs) ++m.uses[size_t(v)];
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (m.info[n].fused_into >= 0) {
      m.info[n].on_gpu = true;
      continue;
    }
    std::string why;
    bool ok = false;
    auto emit = [&](const Impl::ResidualTail* tail) {
      try {
        ok = m.emit_gpu(n, why, tail);
      } catch (const Error& e) {
        why = e.what();
        ok = false;
      }
      if (!ok) m.steps[n].clear();
    };
    if (const std::optional<Impl::ResidualTail> tail = m.residual_tail(n)) {
      emit(&*tail);
      if (ok) m.info[tail->add].fused_into = m.info[tail->relu].fused_into = int(n);
    }
    if (!ok) emit(nullptr);
    m.info[n].on_gpu = ok;
    if (!ok) {
      m.info[n].why = why;
      m.emit_host(n);
    }
  }
  for (size_t n = 0; n < g.nodes.size(); ++n)
    m.steps[n].insert(m.steps[n].begin(), m.unpacks[n].begin(), m.unpacks[n].end());
  m.arena.settle();
}

GpuEngine::~GpuEngine() = default;

void* GpuEngine::input(size_t i) { return impl_->val.at(size_t(impl_->g.inputs.at(i))).data(); }
const void* GpuEngine::output(size_t i) { return impl_->val.at(size_t(impl_->g.outputs.at(i))).data(); }

void GpuEngine::enqueue(void* stream) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lk(m.run_mu);
  m.queue.begin(stream);
  if (!m.graph) m.record();
  m.queue.replay(*m.graph);
  DLAKIT_CUDA(cudaGetLastError());  // a failed kernel launch
  m.queue.end(stream);
}

void GpuEngine::synchronize() {
  std::lock_guard<std::mutex> lk(impl_->run_mu);  // never while the run is being recorded on the stream
  impl_->queue.synchronize();
}

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
  std::vector<double> ms;
  std::lock_guard<std::mutex> lk(m.run_mu);
  ms = time_launch_groups(m.steps, cs(m.queue.stream()));
  m.queue.synchronize();  // rethrows a host step's failure
  return ms;
}

const std::vector<GpuEngine::NodeInfo>& GpuEngine::nodes() const { return impl_->info; }

int GpuEngine::gpu_nodes() const {
  int c = 0;
  for (auto& i : impl_->info) c += i.on_gpu;
  return c;
}

}  // namespace dlakit::gpu
