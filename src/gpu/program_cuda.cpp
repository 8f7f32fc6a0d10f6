// ProgramEngine on the CUDA runtime. Every value in flight is a device float32 NCHW buffer: a step's
// surfaces are unpacked from their memory (the SRAM / local DRAM arenas or the task's buffers, in the DLA
// layouts), its layer runs as layer_emit's kernels or as a host step (numerics::run_step between copies),
// and its results are packed back into their surfaces or kept as fused values.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "gpu/conv_int8_gemm.h"
#include "gpu/gpu_check.h"
#include "gpu/kernels.h"
#include "gpu/layer_emit.h"
#include "gpu/program_engine.h"
#include "numerics/quantize.h"
#include "runtime/atom_ops.h"

namespace dlakit::gpu {

using prog::Pool;
using prog::Ref;

namespace {
cudaStream_t cs(void* s) { return static_cast<cudaStream_t>(s); }

// An int8 chw32 surface of the program's own memory (not a task buffer, whose address varies per run).
bool own_int8_atoms(const prog::Surface& sf) {
  return (sf.pool == Pool::kSram || sf.pool == Pool::kLocalDram) && sf.desc.dtype == DType::kI8 &&
         sf.desc.format == rt::IoFormat::kChw32 && sf.desc.stride[0] == 1 &&
         sf.desc.network_shape.size() == 4;
}
}  // namespace

k::SurfaceGeom surface_geom(const rt::TensorDesc& d) {
  k::SurfaceGeom g;
  g.format = d.format == rt::IoFormat::kDlaLinear ? 0
             : d.format == rt::IoFormat::kChw16   ? 1
             : d.format == rt::IoFormat::kChw32   ? 2
                                                  : 3;
  g.int8 = d.dtype == DType::kI8;
  g.scale = d.scale;
  g.n = int64_t(d.n), g.c = int64_t(d.c), g.h = int64_t(d.h), g.w = int64_t(d.w);
  for (int k = 0; k < 4; ++k) g.stride[k] = int64_t(d.stride[size_t(k)]);
  return g;
}

struct ProgramEngine::Impl {
  const rt::PreparedProgram& pp;
  const prog::Program& p;
  Queue queue;
  DeviceArena arena;
  DeviceBuffer sram, local_dram;
  std::vector<const void*> in_bind;  // the task's buffers of the run being queued
  std::vector<void*> out_bind;
  std::vector<std::vector<Launch>> ops;  // per operation, as the program has them (run_prefix)
  // What whole runs launch: `ops`, except that a residual Add which follows its convolution is computed in
  // that convolution's epilogue (fuse_residual_adds): its launches are there, and its own list is empty.
  std::vector<std::vector<Launch>> whole;
  // An operation that is one INT8 convolution between int8 surfaces (atom_conv), as fuse_residual_adds
  // needs it again.
  struct AtomConv {
    std::shared_ptr<const ConvInt8Gemm> gemm;
    Int8Atoms in, out;
    const int8_t* lut = nullptr;
    bool identity = false;
    const int8_t* w = nullptr;
    DeviceRequant rq;
    k::ActParams act;
    k::StoreRule store;
    void *cols = nullptr, *sums = nullptr, *work = nullptr;
    uint32_t out_surface = 0;
    Launch launch(const AtomAdd* add) const;
  };
  std::map<size_t, AtomConv> atom_convs;  // by operation
  std::vector<StepInfo> info;
  std::vector<PinnedBuffer> pinned;                 // host steps' staging
  std::map<const Tensor*, const float*> const_dev;  // prepared constants, uploaded once
  std::mutex run_mu;
  // Whole runs recorded as CUDA graphs, one per set of task buffers (the launches read the buffers'
  // addresses when they are queued). A cuDLA application registers its buffers once and submits on them
  // again and again: one graph launch then replaces some hundreds of kernel launches. The first
  // kMaxRecorded buffer sets get graphs; runs on others launch their kernels one by one (dropping a graph
  // would mean waiting for the stream, which may wait on the caller's).
  struct Recorded {
    std::vector<const void*> in;
    std::vector<void*> out;
    std::shared_ptr<Queue::Captured> graph;
  };
  static constexpr size_t kMaxRecorded = 8;
  std::vector<Recorded> recorded;

  explicit Impl(const rt::PreparedProgram& prepared) : pp(prepared), p(prepared.program()) {}
  ~Impl() { cudaStreamSynchronize(cs(queue.stream())); }  // no replay still running when graphs go
  const Queue::Captured* graph_for(cudaStream_t s);

  uint8_t* base(const prog::Surface& s) const {
    switch (s.pool) {
      case Pool::kSram:
        return static_cast<uint8_t*>(sram.data()) + s.offset;
      case Pool::kLocalDram:
        return static_cast<uint8_t*>(local_dram.data()) + s.offset;
      case Pool::kInput:
        return static_cast<uint8_t*>(const_cast<void*>(in_bind.at(s.io_index))) + s.offset;
      case Pool::kOutput:
        return static_cast<uint8_t*>(out_bind.at(s.io_index)) + s.offset;
      case Pool::kGlobalDram:
        break;
    }
    fail(Status::kInternal, "surface '", s.desc.name, "' is in the constants pool");
  }

  const float* constant(const Tensor* t) {
    auto it = const_dev.find(t);
    if (it != const_dev.end()) return it->second;
    const auto* d = static_cast<const float*>(arena.upload(t->raw(), t->nbytes()));
    return const_dev[t] = d;
  }

  // Unpacks a surface into a new device float buffer, at launch time (the I/O buffers vary per run).
  const float* unpack(uint32_t si, std::vector<Launch>& launches) {
    const prog::Surface& sf = p.surfaces[si];
    auto* out = static_cast<float*>(arena.alloc(size_t(numel(sf.desc.network_shape)) * 4));
    const k::SurfaceGeom g = surface_geom(sf.desc);
    launches.push_back([this, g, &sf, out](cudaStream_t s) { k::unpack_surface(g, base(sf), out, s); });
    return out;
  }
  void pack(const float* values, uint32_t si, std::vector<Launch>& launches) {
    const prog::Surface& sf = p.surfaces[si];
    const k::SurfaceGeom g = surface_geom(sf.desc);
    // A whole task buffer in a pitch-linear format: its padding bytes are zeroed first, as rt::pack does.
    const bool clear = sf.parent < 0 && sf.pool == Pool::kOutput && g.format != 1 && g.format != 2;
    const size_t bytes = sf.desc.size;
    launches.push_back([this, g, &sf, values, clear, bytes](cudaStream_t s) {
      if (clear) DLAKIT_CUDA(cudaMemsetAsync(base(sf), 0, bytes, s));
      k::pack_surface(g, values, base(sf), s);
    });
  }

  void check_counts(size_t in, size_t out) const {
    if (in != p.inputs.size() || out != p.outputs.size())
      fail(Status::kInvalidArgument, "program run with ", in, " input and ", out, " output buffers; it has ",
           p.inputs.size(), " and ", p.outputs.size());
  }
  struct Staged;
  Staged stage(const std::vector<const void*>& in, const std::vector<void*>& out) const;
  void unstage(const Staged& st, const std::vector<void*>& out) const;
  void build_op(size_t oi);
  std::optional<AtomConv> atom_conv(size_t oi, size_t k, const std::map<uint32_t, const float*>& loaded);
  std::optional<Launch> conv_to_atoms(size_t oi, size_t k, const float* x, const Shape& xs);
  void fuse_residual_adds();
  bool read_elsewhere(uint32_t surface, size_t except_op) const;
  Launch atom_launch(const rt::AtomOp& a);
  void enqueue(const std::vector<const void*>& in, const std::vector<void*>& out, void* stream,
               size_t op_count);
  void host_step(size_t oi, size_t k, const std::vector<const float*>& ins, const std::vector<Shape>& shapes,
                 const std::vector<float*>& outs, std::vector<Launch>& launches);
};

// An operation on int8 surfaces in place (runtime/atom_ops.h), as one kernel.
Launch ProgramEngine::Impl::atom_launch(const rt::AtomOp& a) {
  auto atoms = [this](const prog::Surface& s) { return rt::atoms_of(s, base(s)); };
  const Shape xs = a.x->desc.network_shape;
  if (a.kind == rt::AtomOp::Kind::kAdd)
    return [=](cudaStream_t s) {
      k::add_int8_atoms(xs[0], xs[1], xs[2], xs[3], atoms(*a.x), atoms(*a.b), a.relu, atoms(*a.y), s);
    };
  return [=](cudaStream_t s) {
    k::max_pool_int8_atoms(xs[0], xs[1], xs[2], xs[3], a.window, atoms(*a.x), a.keep_levels, atoms(*a.y), s);
  };
}

// An INT8 convolution from one int8 chw32 surface of the program's own memory to another, on cuBLASLt
// with no float tensor between them (ConvInt8Gemm::run_on_atoms): the DLA's own dataflow, and a third of
// the memory traffic of unpack, convolution and pack. False where it does not apply (the caller then
// takes the general path: I/O buffers, other formats, groups, shapes cuBLASLt has no algorithm for).
std::optional<ProgramEngine::Impl::AtomConv> ProgramEngine::Impl::atom_conv(
    size_t oi, size_t k, const std::map<uint32_t, const float*>& loaded) {
  const prog::Op& op = p.ops[oi];
  const prog::Step& s = op.steps[k];
  const rt::PreparedStep& ps = pp.step(oi, k);
  if (!s.rules.exact_int8_conv || !ps.conv || ps.node.op != OpKind::Conv || s.inputs.empty() ||
      s.outputs.size() != 1 || s.inputs[0].kind != Ref::Kind::kSurface ||
      s.outputs[0].kind != Ref::Kind::kSurface || s.rules.inputs.empty() || s.rules.outputs.empty())
    return std::nullopt;
  // As the CPU executor reads a surface in place: not once this operation has read it (its steps see that
  // first read) and not when one of its steps writes it.
  const uint32_t in_index = s.inputs[0].index;
  if (loaded.count(in_index)) return std::nullopt;
  for (const prog::Step& other : op.steps)
    for (const Ref& r : other.outputs)
      if (r.kind == Ref::Kind::kSurface && r.index == in_index) return std::nullopt;
  const prog::Surface& in = p.surfaces[in_index];
  const prog::Surface& out = p.surfaces[s.outputs[0].index];
  const numerics::Int8Conv& cv = *ps.conv;
  const Shape ws = cv.w_levels.shape();
  if (!own_int8_atoms(in) || !own_int8_atoms(out) || ws.size() != 4 ||
      out.desc.network_shape != s.out_types[0].shape)
    return std::nullopt;
  const k::ConvGeom g = conv_geom(ps.node, in.desc.network_shape, ws, out.desc.network_shape);
  const Int8Atoms in_atoms = rt::atoms_of(in, base(in)), out_atoms = rt::atoms_of(out, base(out));
  if (g.G != 1 || !ConvInt8Gemm::atoms_fit(g, in_atoms, out_atoms)) return std::nullopt;
  const std::shared_ptr<const ConvInt8Gemm> gemm = ConvInt8Gemm::plan(g, ConvInt8Gemm::atom_depth(g));
  if (!gemm) return std::nullopt;
  // The input's levels at the layer's input scale, as unpack then quantize_i8 would make them.
  const float s_in = s.rules.inputs[0].quantize_scale;
  std::vector<int8_t> levels(256);
  bool identity = true;
  for (int q = -128; q < 128; ++q) {
    levels[size_t(q + 128)] =
        s_in > 0 ? quant::quantize(float(q) * in.desc.scale, s_in, s.rules.rounding) : 0;
    identity = identity && levels[size_t(q + 128)] == q;
  }
  AtomConv c;
  c.gemm = gemm, c.in = in_atoms, c.out = out_atoms, c.identity = identity;
  const std::vector<int8_t> w = gemm->atom_weights(g, weight_levels(cv).data());
  c.w = static_cast<const int8_t*>(arena.upload(w.data(), w.size()));
  c.lut = static_cast<const int8_t*>(arena.upload(levels.data(), levels.size()));
  c.rq = upload_requant(cv, arena);
  c.cols = arena.scratch(0, gemm->cols_bytes());
  c.sums = arena.scratch(1, gemm->sums_bytes());
  c.work = arena.scratch(2, gemm->workspace_bytes());
  c.act = fused_act(ps.node);
  c.store = store_rule(s.rules);
  c.out_surface = s.outputs[0].index;
  return c;
}

Launch ProgramEngine::Impl::AtomConv::launch(const AtomAdd* add) const {
  const AtomConv c = *this;
  const std::optional<AtomAdd> fused = add ? std::optional<AtomAdd>(*add) : std::nullopt;
  return [c, fused](cudaStream_t st) {
    c.gemm->run_on_atoms(c.in, c.lut, c.identity, c.w, c.rq.mult, c.rq.bias_q, c.rq.bias, c.act, c.store,
                         c.out, fused ? &*fused : nullptr, c.cols, c.sums, c.work, st);
  };
}

// Whether an operation other than `except_op` reads `surface` or a view of it (views of views included).
bool ProgramEngine::Impl::read_elsewhere(uint32_t surface, size_t except_op) const {
  for (size_t oi = 0; oi < p.ops.size(); ++oi) {
    if (oi == except_op) continue;
    for (const prog::Step& st : p.ops[oi].steps)
      for (const Ref& r : st.inputs) {
        if (r.kind != Ref::Kind::kSurface) continue;
        for (int64_t s = r.index; s >= 0; s = p.surfaces[size_t(s)].parent)
          if (s == int64_t(surface)) return true;
      }
  }
  return false;
}

// A residual Add (an atom Add operation) right after the INT8 convolution that writes one of its operands,
// where nothing else reads that output: the convolution's epilogue adds the other operand and writes the
// Add's result (as the DLA's SDP adds its second input before the write), and the convolution's own output
// surface is never written. One pass over the sums instead of a write, two reads and a write more. The
// bytes of the Add's result are the same (run_on_atoms); whole runs only: run_prefix keeps each operation's
// own writes, which first_difference-style comparisons of the arenas read.
void ProgramEngine::Impl::fuse_residual_adds() {
  whole = ops;
  for (const auto& [oi, conv] : atom_convs) {
    if (oi + 1 >= p.ops.size()) continue;
    const std::optional<rt::AtomOp>& next = pp.atom_op(oi + 1);
    if (!next || next->kind != rt::AtomOp::Kind::kAdd) continue;
    const prog::Surface& x = p.surfaces[conv.out_surface];
    const bool conv_is_x = next->x == &x, conv_is_b = next->b == &x;
    if (conv_is_x == conv_is_b || x.parent >= 0 || read_elsewhere(conv.out_surface, oi + 1)) continue;
    const prog::Surface& other = conv_is_x ? *next->b : *next->x;
    // The other operand and the result in the program's own memory: their addresses are fixed now (a task
    // buffer's is known only when a run is queued).
    if (!own_int8_atoms(other) || !own_int8_atoms(*next->y) ||
        other.desc.network_shape != x.desc.network_shape || rt::overlap(other, x) || rt::overlap(*next->y, x))
      continue;
    AtomAdd add;
    add.other = rt::atoms_of(other, base(other)), add.y = rt::atoms_of(*next->y, base(*next->y));
    add.relu = next->relu;
    if (!ConvInt8Gemm::atoms_aligned(add.other) || !ConvInt8Gemm::atoms_aligned(add.y)) continue;
    whole[oi] = {conv.launch(&add)};
    whole[oi + 1].clear();
  }
}

// An exact INT8 convolution from a float value (an unpacked task input, say: the network's first layer) to
// an int8 chw32 surface of the program's own (ConvInt8Gemm::run_to_atoms): its epilogue writes the
// surface's bytes, with no float output and pack. Nullopt where it does not apply.
std::optional<Launch> ProgramEngine::Impl::conv_to_atoms(size_t oi, size_t k, const float* x,
                                                         const Shape& xs) {
  const prog::Step& s = p.ops[oi].steps[k];
  const rt::PreparedStep& ps = pp.step(oi, k);
  if (!s.rules.exact_int8_conv || !ps.conv || ps.node.op != OpKind::Conv || !x || xs.size() != 4 ||
      s.outputs.size() != 1 || s.outputs[0].kind != Ref::Kind::kSurface || s.rules.inputs.empty() ||
      s.rules.outputs.empty())
    return std::nullopt;
  const prog::Surface& out = p.surfaces[s.outputs[0].index];
  const numerics::Int8Conv& cv = *ps.conv;
  const Shape ws = cv.w_levels.shape();
  if (!own_int8_atoms(out) || ws.size() != 4 || out.desc.network_shape != s.out_types[0].shape)
    return std::nullopt;
  const k::ConvGeom g = conv_geom(ps.node, xs, ws, out.desc.network_shape);
  const Int8Atoms out_atoms = rt::atoms_of(out, base(out));
  if (g.G != 1 || !ConvInt8Gemm::atoms_aligned(out_atoms)) return std::nullopt;
  const std::shared_ptr<const ConvInt8Gemm> gemm = ConvInt8Gemm::plan(g, ConvInt8Gemm::depth(g));
  if (!gemm) return std::nullopt;
  const std::vector<int8_t> w = gemm->weights(g, weight_levels(cv).data());
  const auto* wd = static_cast<const int8_t*>(arena.upload(w.data(), w.size()));
  const DeviceRequant rq = upload_requant(cv, arena);
  void* cols = arena.scratch(0, gemm->cols_bytes());
  void* sums = arena.scratch(1, gemm->sums_bytes());
  void* work = arena.scratch(2, gemm->workspace_bytes());
  const k::ActParams act = fused_act(ps.node);
  const k::StoreRule store = store_rule(s.rules);
  const float s_in = s.rules.inputs[0].quantize_scale;
  const int rounding = rounding_code(s.rules.rounding);
  return [=](cudaStream_t st) {
    gemm->run_to_atoms(x, s_in, rounding, wd, rq.mult, rq.bias_q, rq.bias, act, store, out_atoms, cols, sums,
                       work, st);
  };
}

// A step on the host in stream order: its device inputs copied to pinned memory, numerics::run_step, its
// results copied back (already in their stored form).
void ProgramEngine::Impl::host_step(size_t oi, size_t k, const std::vector<const float*>& ins,
                                    const std::vector<Shape>& shapes, const std::vector<float*>& outs,
                                    std::vector<Launch>& launches) {
  const prog::Step& s = p.ops[oi].steps[k];
  const rt::PreparedStep& ps = pp.step(oi, k);
  std::vector<std::pair<size_t, void*>> in_pin, out_pin;  // operand index, pinned copy
  const std::vector<Shape> in_shapes = shapes;
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    if (!ins[i] || s.inputs[i].kind == Ref::Kind::kConstant) continue;
    const size_t bytes = size_t(numel(in_shapes[i])) * 4;
    pinned.emplace_back(std::max<size_t>(bytes, 4));
    void* h = pinned.back().data();
    in_pin.push_back({i, h});
    const float* d = ins[i];
    launches.push_back(
        [=](cudaStream_t st) { DLAKIT_CUDA(cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, st)); });
  }
  for (size_t o = 0; o < s.outputs.size(); ++o) {
    if (!outs[o]) continue;
    pinned.emplace_back(std::max<size_t>(nbytes(s.out_types[o]), 4));
    out_pin.push_back({o, pinned.back().data()});
  }
  Impl* self = this;
  launches.push_back([=, &s, &ps](cudaStream_t) {
    self->queue.host([=, &s, &ps] {
      std::vector<Tensor> held;
      held.reserve(in_pin.size());
      std::vector<const Tensor*> ptrs = ps.constants;
      for (auto [i, h] : in_pin) {
        held.push_back(Tensor::uninitialized(DType::kF32, in_shapes[i]));
        std::memcpy(held.back().raw(), h, held.back().nbytes());
        ptrs[i] = &held.back();
      }
      std::vector<Tensor> res =
          numerics::run_step(ps.node, s.rules, ptrs, ps.is_constant, s.out_types, ps.conv.get());
      for (auto [o, h] : out_pin) std::memcpy(h, res.at(o).raw(), res[o].nbytes());
    });
  });
  for (auto [o, h] : out_pin) {
    float* d = outs[o];
    const size_t bytes = nbytes(s.out_types[o]);
    launches.push_back(
        [=](cudaStream_t st) { DLAKIT_CUDA(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, st)); });
  }
}

void ProgramEngine::Impl::build_op(size_t oi) {
  const prog::Op& op = p.ops[oi];
  std::vector<Launch>& launches = ops[oi];
  if (const std::optional<rt::AtomOp>& atom = pp.atom_op(oi)) {
    launches.push_back(atom_launch(*atom));
    for (const prog::Step& s : op.steps) info.push_back({s.layer, true, ""});
    return;
  }
  std::map<uint32_t, const float*> loaded;  // surfaces read by this operation, unpacked
  std::vector<float*> temps;
  for (size_t k = 0; k < op.steps.size(); ++k) {
    const prog::Step& s = op.steps[k];
    std::optional<AtomConv> on_atoms;
    try {
      on_atoms = atom_conv(oi, k, loaded);
    } catch (const Error&) {  // out of device memory, say: the general path below decides
    }
    if (on_atoms) {
      launches.push_back(on_atoms->launch(nullptr));
      if (op.steps.size() == 1) atom_convs.emplace(oi, std::move(*on_atoms));
      info.push_back({s.layer, true, ""});
      continue;
    }
    const rt::PreparedStep& ps = pp.step(oi, k);
    StepInfo si;
    si.layer = s.layer;
    // Operands as device float buffers (null: omitted, or a constant the kernels read on the host).
    std::vector<const float*> raw(s.inputs.size(), nullptr);
    std::vector<Shape> shapes(s.inputs.size());
    for (size_t i = 0; i < s.inputs.size(); ++i) {
      const Ref& r = s.inputs[i];
      if (r.kind == Ref::Kind::kSurface) {
        auto it = loaded.find(r.index);
        if (it == loaded.end()) it = loaded.emplace(r.index, unpack(r.index, launches)).first;
        raw[i] = it->second;
        shapes[i] = p.surfaces[r.index].desc.network_shape;
      } else if (r.kind == Ref::Kind::kTemp) {
        raw[i] = temps.at(r.index);
      } else if (r.kind == Ref::Kind::kConstant) {
        shapes[i] = ps.constants[i]->shape();
        if (ps.constants[i]->dtype() == DType::kF32) raw[i] = constant(ps.constants[i]);
      }
      if (r.kind == Ref::Kind::kTemp) {
        // a fused value's shape: the result type of the step that made it
        for (size_t j = 0; j < k; ++j)
          for (size_t o = 0; o < op.steps[j].outputs.size(); ++o)
            if (op.steps[j].outputs[o].kind == Ref::Kind::kTemp && op.steps[j].outputs[o].index == r.index)
              shapes[i] = op.steps[j].out_types[o].shape;
      }
    }
    std::optional<Launch> to_atoms;
    try {
      to_atoms = conv_to_atoms(oi, k, raw.empty() ? nullptr : raw[0], shapes.empty() ? Shape{} : shapes[0]);
    } catch (const Error&) {  // as for atom_conv
    }
    if (to_atoms) {
      launches.push_back(std::move(*to_atoms));
      si.on_gpu = true;
      info.push_back(si);
      continue;
    }
    std::vector<float*> outs(s.outputs.size(), nullptr);
    for (size_t o = 0; o < s.outputs.size(); ++o)
      if (s.outputs[o].kind != Ref::Kind::kNone)
        outs[o] = static_cast<float*>(arena.alloc(std::max<size_t>(nbytes(s.out_types[o]), 4)));
    const size_t mark = launches.size();
    bool ok = false;
    if (s.outputs.size() == 1 && outs[0] && s.out_types[0].dtype == DType::kF32) {
      LayerCall c;
      c.node = &ps.node;
      c.int8 = s.rules.precision == numerics::Precision::kInt8;
      c.conv = ps.conv.get();
      c.s_in = s.rules.exact_int8_conv ? s.rules.inputs[0].quantize_scale : 0;
      set_input0(c, ps.node.op, s.rules, false);
      c.rounding = rounding_code(s.rules.rounding);
      c.out = outs[0];
      c.out_shape = s.out_types[0].shape;
      c.store = store_rule(s.rules);
      for (size_t i = 0; i < s.inputs.size(); ++i) {
        LayerOperand o;
        o.shape = shapes[i];
        if (s.inputs[i].kind == Ref::Kind::kConstant) {
          o.constant = ps.constants[i];
          o.dev = raw[i];
        } else if (raw[i]) {
          o.dev = (i == 0 && (c.conv || c.in0_unrounded))
                      ? raw[i]
                      : apply_input_rule(raw[i], numel(shapes[i]), s.rules.inputs[i], s.rules.rounding, arena,
                                         launches);
        }
        c.in.push_back(o);
      }
      try {
        ok = emit_layer(c, arena, launches, si.why);
      } catch (const Error& e) {
        si.why = e.what();
      }
    } else {
      si.why = "not a single float32 result";
    }
    if (!ok) {
      launches.resize(mark);
      host_step(oi, k, raw, shapes, outs, launches);
    }
    si.on_gpu = ok;
    info.push_back(si);
    for (size_t o = 0; o < s.outputs.size(); ++o) {
      if (s.outputs[o].kind == Ref::Kind::kTemp) temps.push_back(outs[o]);
      if (s.outputs[o].kind == Ref::Kind::kSurface) pack(outs[o], s.outputs[o].index, launches);
    }
  }
}

ProgramEngine::ProgramEngine(const rt::PreparedProgram& prepared) : impl_(std::make_unique<Impl>(prepared)) {
  Impl& m = *impl_;
  if (m.p.sram.used) m.sram = DeviceBuffer(m.p.sram.used);
  if (m.p.local_dram.used) m.local_dram = DeviceBuffer(m.p.local_dram.used);
  m.ops.resize(m.p.ops.size());
  for (size_t oi = 0; oi < m.p.ops.size(); ++oi) m.build_op(oi);
  m.fuse_residual_adds();
  m.arena.settle();
}

ProgramEngine::~ProgramEngine() = default;

void ProgramEngine::enqueue(const std::vector<const void*>& in, const std::vector<void*>& out, void* stream) {
  impl_->enqueue(in, out, stream, impl_->ops.size());
}

void ProgramEngine::Impl::enqueue(const std::vector<const void*>& in, const std::vector<void*>& out,
                                  void* stream, size_t op_count) {
  Impl& m = *this;
  check_counts(in.size(), out.size());
  std::lock_guard<std::mutex> lk(m.run_mu);
  m.in_bind = in;
  m.out_bind = out;
  m.queue.begin(stream);
  const cudaStream_t s = cs(m.queue.stream());
  const bool whole_run = op_count >= m.ops.size();
  const Queue::Captured* graph = whole_run ? m.graph_for(s) : nullptr;
  if (graph) {
    m.queue.replay(*graph);
  } else {
    const std::vector<std::vector<Launch>>& launches = whole_run ? m.whole : m.ops;
    for (size_t oi = 0; oi < launches.size() && oi < op_count; ++oi)
      for (auto& l : launches[oi]) l(s);
  }
  DLAKIT_CUDA(cudaGetLastError());  // a failed kernel launch
  m.queue.end(stream);
}

// The graph of a whole run on the bound buffers (in_bind, out_bind), recorded on first use; null when
// kMaxRecorded other buffer sets have graphs.
const Queue::Captured* ProgramEngine::Impl::graph_for(cudaStream_t s) {
  for (const Recorded& r : recorded)
    if (r.in == in_bind && r.out == out_bind) return r.graph.get();
  if (recorded.size() == kMaxRecorded) return nullptr;
  std::shared_ptr<Queue::Captured> graph = queue.record([&] {
    for (auto& op : whole)
      for (auto& l : op) l(s);
  });
  recorded.push_back({in_bind, out_bind, std::move(graph)});
  return recorded.back().graph.get();
}

void ProgramEngine::synchronize() {
  std::lock_guard<std::mutex> lk(impl_->run_mu);  // never while a run is being recorded on the stream
  impl_->queue.synchronize();
}

void ProgramEngine::run(const std::vector<const void*>& in, const std::vector<void*>& out) {
  run_prefix(in, out, impl_->ops.size());
}

std::vector<uint8_t> ProgramEngine::arena(prog::Pool pool) {
  Impl& m = *impl_;
  const DeviceBuffer& b = pool == Pool::kSram ? m.sram : m.local_dram;
  std::vector<uint8_t> bytes(b.size());
  if (!bytes.empty()) DLAKIT_CUDA(cudaMemcpy(bytes.data(), b.data(), bytes.size(), cudaMemcpyDeviceToHost));
  return bytes;
}

// Host buffers in and out through device copies: what run_prefix and profile run on.
struct ProgramEngine::Impl::Staged {
  std::vector<DeviceBuffer> in_buf, out_buf;
  std::vector<const void*> in;
  std::vector<void*> out;
};

ProgramEngine::Impl::Staged ProgramEngine::Impl::stage(const std::vector<const void*>& in,
                                                       const std::vector<void*>& out) const {
  check_counts(in.size(), out.size());
  Staged st;
  for (size_t i = 0; i < in.size(); ++i) {
    st.in_buf.emplace_back(p.input_desc(i).size);
    DLAKIT_CUDA(cudaMemcpy(st.in_buf.back().data(), in[i], p.input_desc(i).size, cudaMemcpyHostToDevice));
    st.in.push_back(st.in_buf.back().data());
  }
  for (size_t i = 0; i < out.size(); ++i) {
    st.out_buf.emplace_back(p.output_desc(i).size);
    st.out.push_back(st.out_buf.back().data());
  }
  return st;
}

void ProgramEngine::Impl::unstage(const Staged& st, const std::vector<void*>& out) const {
  for (size_t i = 0; i < out.size(); ++i)
    DLAKIT_CUDA(cudaMemcpy(out[i], st.out[i], p.output_desc(i).size, cudaMemcpyDeviceToHost));
}

void ProgramEngine::run_prefix(const std::vector<const void*>& in, const std::vector<void*>& out,
                               size_t op_count) {
  Impl& m = *impl_;
  const Impl::Staged st = m.stage(in, out);
  m.enqueue(st.in, st.out, nullptr, op_count);
  DLAKIT_CUDA(cudaDeviceSynchronize());
  synchronize();
  m.unstage(st, out);
}

std::vector<double> ProgramEngine::profile(const std::vector<const void*>& in,
                                           const std::vector<void*>& out) {
  run(in, out);  // warm: constants uploaded, kernels loaded
  Impl& m = *impl_;
  const Impl::Staged st = m.stage(in, out);
  std::vector<double> ms;
  {
    std::lock_guard<std::mutex> lk(m.run_mu);
    m.in_bind = st.in;
    m.out_bind = st.out;
    ms = time_launch_groups(m.whole, cs(m.queue.stream()));
  }
  m.queue.synchronize();  // rethrows a host step's failure
  m.unstage(st, out);
  return ms;
}

const std::vector<ProgramEngine::StepInfo>& ProgramEngine::steps() const { return impl_->info; }

int ProgramEngine::fused_adds() const {
  int c = 0;
  for (size_t oi = 0; oi < impl_->ops.size(); ++oi) c += impl_->whole[oi].empty() && !impl_->ops[oi].empty();
  return c;
}

int ProgramEngine::gpu_steps() const {
  int c = 0;
  for (const StepInfo& i : impl_->info) c += i.on_gpu;
  return c;
}

}  // namespace dlakit::gpu
