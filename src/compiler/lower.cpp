#include "compiler/lower.h"

#include <cstring>
#include <map>
#include <set>

#include "base/fp16.h"
#include "ir/stats.h"
#include "passes/passes.h"
#include "targets/dla/engines.h"
#include "targets/dla/limits.h"

namespace dlakit::compiler {
namespace {

using prog::Ref;
using quant::ConstantForm;
using quant::Mode;

constexpr uint64_t kBlobAlign = 64;

bool chw_format(const rt::TensorDesc& d) {
  return d.format == rt::IoFormat::kChw16 || d.format == rt::IoFormat::kChw32;
}
uint64_t atom_channels(const rt::TensorDesc& d) { return d.format == rt::IoFormat::kChw16 ? 16 : 32; }

// The layout of a surface inside the program: fp16 in 16-channel atoms (chw16), int8 in 32-channel atoms
// (chw32): the DLA's feature formats (dla-constraints.md §2).
rt::TensorDesc feature_desc(const std::string& name, const Shape& shape, DType type, float scale,
                            int line_align) {
  rt::IoSpec spec{type, type == DType::kI8 ? rt::IoFormat::kChw32 : rt::IoFormat::kChw16};
  rt::TensorDesc d = rt::make_desc("t", shape, spec, line_align);  // internal names may exceed cuDLA's 80
  d.name = name;
  d.scale = scale;
  return d;
}

class Lowering {
 public:
  Lowering(const Graph& g, quant::NumericsPlan plan, const LowerOptions& o)
      : g_(g), plan_(std::move(plan)), o_(o), lim_(dla::limits_for(o.target)) {}

  prog::Program run() {
    check_io();
    plan_.fused.resize(g_.values.size(), 0);
    for (size_t i = 0; i < g_.outputs.size(); ++i)
      if (o_.outputs[i].dtype == DType::kI8) plan_.int8_outputs.insert(g_.outputs[i]);
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (plan_.nodes.at(i).mode == Mode::kFP32)
        fail(Status::kInvalidArgument, g_.nodes[i].label(),
             ": not a DLA layer in this build (FP32); a DLA program holds DLA layers only");
      rules_.push_back(quant::step_rules(g_, plan_, i));
    }
    p_.producer = "dlakit 0.1";
    p_.target = o_.target;
    p_.dla_version = lim_.dla_version;
    p_.int8 = o_.int8;
    p_.dla_core = o_.dla_core;
    surface_of_.assign(g_.values.size(), -1);
    make_io_surfaces();
    make_surfaces();
    make_aliases();
    make_ops();
    p_.layers = uint32_t(g_.nodes.size());
    plan_memory(p_, o_.pools);
    return std::move(p_);
  }

 private:
  bool fused(int v) const { return plan_.fused[size_t(v)] != 0; }
  bool runtime_value(int v) const { return v >= 0 && !g_.value(v).constant; }

  void check_io() {
    if (o_.inputs.size() != g_.inputs.size() || o_.outputs.size() != g_.outputs.size())
      fail(Status::kInvalidArgument, "I/O formats: ", o_.inputs.size(), "/", o_.outputs.size(), " given for ",
           g_.inputs.size(), "/", g_.outputs.size(), " inputs/outputs");
    if (plan_.nodes.size() != g_.nodes.size())
      fail(Status::kInternal, "numerics plan has ", plan_.nodes.size(), " nodes for ", g_.nodes.size());
    std::set<int> seen;
    for (int v : g_.outputs)
      if (!seen.insert(v).second || std::count(g_.inputs.begin(), g_.inputs.end(), v))
        fail(Status::kUnsupported, "network output '", g_.value(v).name,
             "' is also a network input or listed twice; a DLA program writes each output once");
    for (const auto* list : {&o_.inputs, &o_.outputs})
      for (size_t i = 0; i < list->size(); ++i) {
        const bool in = list == &o_.inputs;
        const int v = in ? g_.inputs[i] : g_.outputs[i];
        if ((*list)[i].dtype != DType::kI8) continue;
        if (!o_.int8)
          fail(Status::kInvalidArgument, "int8 ", in ? "input" : "output", " '", g_.value(v).name,
               "' needs an INT8 build (--int8 --calib=CACHE): its scale comes from calibration");
        if (!plan_.scale.count(v))
          fail(Status::kInvalidArgument, "int8 ", in ? "input" : "output", " '", g_.value(v).name,
               "' has no dynamic range in the calibration cache; use fp16 for it or calibrate it");
      }
  }

  int add_surface(prog::Surface s, int v) {
    p_.surfaces.push_back(std::move(s));
    surface_of_[size_t(v)] = int(p_.surfaces.size()) - 1;
    return surface_of_[size_t(v)];
  }

  // Network inputs and outputs: the task's buffers, in their I/O formats.
  void make_io_surfaces() {
    for (size_t i = 0; i < g_.inputs.size(); ++i) {
      const Value& v = g_.value(g_.inputs[i]);
      if (v.type.dtype != DType::kF32)
        fail(Status::kUnsupported, "network input '", v.name, "' is ", dtype_name(v.type.dtype),
             "; DLA inputs are float tensors (fp16 or int8 in memory)");
      prog::Surface s;
      s.desc = rt::make_desc(v.name, v.type.shape, o_.inputs[i], lim_.line_stride_align_bytes);
      if (s.desc.dtype == DType::kI8) s.desc.scale = plan_.scale.at(g_.inputs[i]);
      s.pool = prog::Pool::kInput;
      s.io_index = uint32_t(i);
      s.bytes = s.desc.size;
      p_.inputs.push_back(uint32_t(add_surface(std::move(s), g_.inputs[i])));
    }
  }

  // Every value a layer stores: fp16 or int8 as its layer's output rule says; fused values stay inside
  // their operation (no surface).
  void make_surfaces() {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        const int v = n.outputs[k];
        if (v < 0 || fused(v)) continue;
        const Value& val = g_.value(v);
        const numerics::OutputRule& rule = rules_[i].outputs[k];
        if (val.type.dtype != DType::kF32 || rule.store == numerics::Store::kFused)
          fail(Status::kUnsupported, n.label(), ": output '", val.name, "' is ", dtype_name(val.type.dtype),
               "; the DLA stores fp16 or int8 feature data only (run this layer on the GPU)");
        const auto out = std::find(g_.outputs.begin(), g_.outputs.end(), v);
        prog::Surface s;
        if (out != g_.outputs.end()) {
          const size_t idx = size_t(out - g_.outputs.begin());
          s.desc = rt::make_desc(val.name, val.type.shape, o_.outputs[idx], lim_.line_stride_align_bytes);
          const bool int8 = rule.store == numerics::Store::kInt8;
          if (int8 != (s.desc.dtype == DType::kI8))
            fail(Status::kInternal, "output '", val.name, "': stored ", int8 ? "int8" : "fp16",
                 " but its format is ", int8 ? "fp16" : "int8");
          if (int8) s.desc.scale = rule.scale;
          s.pool = prog::Pool::kOutput;
          s.io_index = uint32_t(idx);
        } else {
          const bool int8 = rule.store == numerics::Store::kInt8;
          s.desc = feature_desc(val.name, val.type.shape, int8 ? DType::kI8 : DType::kF16,
                                int8 ? rule.scale : 0, lim_.line_stride_align_bytes);
        }
        s.bytes = s.desc.size;
        add_surface(std::move(s), v);
      }
    }
    p_.outputs.resize(g_.outputs.size());
    for (size_t i = 0; i < g_.outputs.size(); ++i) {
      const int s = surface_of_[size_t(g_.outputs[i])];
      if (s < 0)
        fail(Status::kUnsupported, "network output '", g_.value(g_.outputs[i]).name, "' is not computed");
      p_.outputs[i] = uint32_t(s);
    }
  }

  bool same_storage(const rt::TensorDesc& a, const rt::TensorDesc& b) const {
    return a.dtype == b.dtype && a.format == b.format && (a.dtype != DType::kI8 || a.scale == b.scale);
  }
  bool internal(int s) const {
    const prog::Pool pool = p_.surfaces[size_t(s)].pool;
    return pool != prog::Pool::kInput && pool != prog::Pool::kOutput;
  }
  // Makes `child` a view of `parent` starting at channel `c0` (a multiple of the parent's atom).
  void make_view(int child, int parent, int64_t c0) {
    prog::Surface& c = p_.surfaces[size_t(child)];
    const prog::Surface& par = p_.surfaces[size_t(parent)];
    c.parent = parent;
    c.pool = par.pool;
    c.io_index = par.io_index;
    c.offset = uint64_t(c0) / atom_channels(par.desc) * par.desc.stride[2];
    for (int k = 1; k < 4; ++k) c.desc.stride[size_t(k)] = par.desc.stride[size_t(k)];
    const uint64_t groups = (c.desc.c + atom_channels(par.desc) - 1) / atom_channels(par.desc);
    c.bytes = (c.desc.n - 1) * par.desc.stride[3] + groups * par.desc.stride[2];
  }
  // The layer runs as one step of its own, or not at all: true when aliasing can replace it.
  bool alone(size_t i) const {
    for (int v : g_.nodes[i].outputs)
      if (v >= 0 && fused(v)) return false;
    for (int v : g_.nodes[i].inputs)
      if (v >= 0 && fused(v)) return false;
    return true;
  }

  // Concat and Slice/Split along channels at atom boundaries, and reshapes that keep the memory layout,
  // become views: no operation, no copy (the DLA addresses the same memory).
  void make_aliases() {
    aliased_.assign(g_.nodes.size(), 0);
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (!alone(i)) continue;
      const Node& n = g_.nodes[i];
      bool done = false;
      if (n.op == OpKind::Concat) done = alias_concat(i);
      if (n.op == OpKind::Slice || n.op == OpKind::Split) done = alias_slices(i);
      if (n.op == OpKind::Reshape || n.op == OpKind::Flatten || n.op == OpKind::Squeeze ||
          n.op == OpKind::Unsqueeze || n.op == OpKind::Identity || n.op == OpKind::Dropout)
        done = alias_reshape(i);
      if (!done) continue;
      aliased_[i] = 1;
      for (int v : n.outputs)
        if (v >= 0) p_.aliases.push_back({n.name, n.op, uint32_t(surface_of_[size_t(v)])});
    }
  }

  // Every input written in place into the output: each input has this Concat as its only reader, is
  // stored like the output, is not a network tensor, and starts at an atom boundary.
  bool alias_concat(size_t i) {
    const Node& n = g_.nodes[i];
    const int out = n.outputs[0];
    const int so = surface_of_[size_t(out)];
    const Shape& ys = g_.value(out).type.shape;
    if (ys.size() != 4 || !chw_format(p_.surfaces[size_t(so)].desc)) return false;
    if (n.attr_int("axis", 0) != 1 && n.attr_int("axis", 0) != -3) return false;
    const uint64_t atom = atom_channels(p_.surfaces[size_t(so)].desc);
    std::set<int> seen;
    int64_t c0 = 0;
    for (int v : n.inputs) {
      if (!runtime_value(v) || !seen.insert(v).second) return false;
      const int s = surface_of_[size_t(v)];
      if (s < 0 || !internal(s) || p_.surfaces[size_t(s)].parent >= 0) return false;
      if (!same_storage(p_.surfaces[size_t(s)].desc, p_.surfaces[size_t(so)].desc)) return false;
      if (consumers(g_, v).size() != 1 || is_graph_output(g_, v)) return false;
      if (uint64_t(c0) % atom) return false;
      c0 += g_.value(v).type.shape[1];
    }
    c0 = 0;
    for (int v : n.inputs) {
      make_view(surface_of_[size_t(v)], so, c0);
      c0 += g_.value(v).type.shape[1];
    }
    return true;
  }

  // Each output read in place from the input: channels only, step 1, starting at an atom boundary, the
  // output stored like the input and not a network output.
  bool alias_slices(size_t i) {
    const Node& n = g_.nodes[i];
    const int in = n.inputs[0];
    if (!runtime_value(in)) return false;
    const int si = surface_of_[size_t(in)];
    const Shape& xs = g_.value(in).type.shape;
    if (si < 0 || xs.size() != 4 || !chw_format(p_.surfaces[size_t(si)].desc)) return false;
    const uint64_t atom = atom_channels(p_.surfaces[size_t(si)].desc);
    std::vector<std::pair<int, int64_t>> views;  // output surface, first channel
    int64_t c0 = 0;
    for (int v : n.outputs) {
      if (v < 0) return false;
      const Shape& ys = g_.value(v).type.shape;
      if (ys.size() != 4 || ys[0] != xs[0] || ys[2] != xs[2] || ys[3] != xs[3]) return false;
      const int so = surface_of_[size_t(v)];
      if (so < 0 || !internal(so) ||
          !same_storage(p_.surfaces[size_t(so)].desc, p_.surfaces[size_t(si)].desc))
        return false;
      int64_t start = c0;
      if (n.op == OpKind::Slice && !channel_slice_start(n, xs, ys, start)) return false;
      if (uint64_t(start) % atom) return false;
      views.push_back({so, start});
      c0 += ys[1];
    }
    for (auto [so, start] : views) make_view(so, si, start);
    return true;
  }

  // A Slice over axis 1 only, with step 1: its first channel.
  bool channel_slice_start(const Node& n, const Shape& xs, const Shape& ys, int64_t& start) const {
    if (xs[1] == ys[1]) return false;  // a slice elsewhere (H or W)
    if (n.inputs.size() < 3) return false;
    for (size_t k = 1; k < n.inputs.size(); ++k)
      if (n.inputs[k] >= 0 && !g_.value(n.inputs[k]).constant) return false;
    const std::vector<int64_t> starts = g_.value(n.inputs[1]).constant->to_i64();
    std::vector<int64_t> axes;
    if (n.inputs.size() > 3 && n.inputs[3] >= 0) axes = g_.value(n.inputs[3]).constant->to_i64();
    if (n.inputs.size() > 4 && n.inputs[4] >= 0)
      for (int64_t s : g_.value(n.inputs[4]).constant->to_i64())
        if (s != 1) return false;
    if (axes.empty())
      for (size_t a = 0; a < starts.size(); ++a) axes.push_back(int64_t(a));
    if (axes.size() != 1 || (axes[0] != 1 && axes[0] != -3)) return false;
    start = starts[0] < 0 ? starts[0] + xs[1] : starts[0];
    return start >= 0 && start + ys[1] <= xs[1];
  }

  // A reshape whose input and output have the same N,C,H,W after padding to 4-D keeps every byte where
  // it is: the output is the input's memory.
  bool alias_reshape(size_t i) {
    const Node& n = g_.nodes[i];
    const int in = n.inputs[0], out = n.outputs[0];
    if (!runtime_value(in)) return false;
    for (size_t k = 1; k < n.outputs.size(); ++k)
      if (n.outputs[k] >= 0) return false;  // Dropout's mask
    const int si = surface_of_[size_t(in)], so = surface_of_[size_t(out)];
    if (si < 0 || so < 0 || !internal(so)) return false;
    const rt::TensorDesc &a = p_.surfaces[size_t(si)].desc, &b = p_.surfaces[size_t(so)].desc;
    if (a.n != b.n || a.c != b.c || a.h != b.h || a.w != b.w || !same_storage(a, b)) return false;
    prog::Surface& s = p_.surfaces[size_t(so)];
    s.parent = si;
    s.pool = p_.surfaces[size_t(si)].pool;
    s.io_index = p_.surfaces[size_t(si)].io_index;
    s.offset = 0;
    s.desc.stride = a.stride;
    s.bytes = p_.surfaces[size_t(si)].bytes;
    return true;
  }

  // The constant input `k` of layer `i` in the form the layer reads; one copy per (value, form).
  uint32_t constant(size_t i, int k) {
    const int v = g_.nodes[i].inputs[size_t(k)];
    const Value& val = g_.value(v);
    const Tensor& t = *val.constant;
    ConstantForm form = quant::constant_form(g_, plan_, i, k);
    if (t.dtype() != DType::kF32) form = ConstantForm::kAsIs;
    const auto key = std::make_pair(v, int(form));
    auto it = const_of_.find(key);
    if (it != const_of_.end()) return it->second;
    prog::Constant c;
    c.name = val.name;
    c.shape = t.shape();
    std::vector<uint8_t> bytes;
    if (t.dtype() == DType::kF32 && form == ConstantForm::kFp16) {
      c.type = prog::ConstType::kF16;
      bytes.resize(size_t(t.numel()) * 2);
      for (int64_t e = 0; e < t.numel(); ++e) {
        const uint16_t h = float_to_half(t.data<float>()[e]);
        std::memcpy(&bytes[size_t(e) * 2], &h, 2);
      }
    } else if (t.dtype() == DType::kF32 && form == ConstantForm::kInt8Weight) {
      const int axis = quant::weight_axis(g_, g_.nodes[i]);
      c.type = prog::ConstType::kI8;
      c.axis = axis;
      c.scales = quant::weight_scales_for(plan_, val, axis);
      const Tensor q = quant::quantize_weights(t, c.scales, axis, plan_.nodes[i].rounding);
      bytes.resize(size_t(t.numel()));
      for (int64_t e = 0; e < t.numel(); ++e) bytes[size_t(e)] = uint8_t(int8_t(q.data<float>()[e]));
    } else {
      switch (t.dtype()) {
        case DType::kF32:
          c.type = prog::ConstType::kF32;
          break;
        case DType::kI32:
          c.type = prog::ConstType::kI32;
          break;
        case DType::kI64:
          c.type = prog::ConstType::kI64;
          break;
        default:
          fail(Status::kUnsupported, g_.nodes[i].label(), ": constant '", val.name, "' is ",
               dtype_name(t.dtype()), "; a DLA program holds f32, i32 and i64 constants");
      }
      bytes.assign(static_cast<const uint8_t*>(t.raw()), static_cast<const uint8_t*>(t.raw()) + t.nbytes());
    }
    p_.blob.resize((p_.blob.size() + kBlobAlign - 1) / kBlobAlign * kBlobAlign);
    c.offset = p_.blob.size();
    c.bytes = bytes.size();
    p_.blob.insert(p_.blob.end(), bytes.begin(), bytes.end());
    p_.constants.push_back(std::move(c));
    return const_of_[key] = uint32_t(p_.constants.size() - 1);
  }

  // Operations: each layer that is not an alias starts one, except a layer whose input is a fused value,
  // which joins the operation of that value's producer (the chain runs as one pass, as the plan fused it).
  void make_ops() {
    std::vector<int> op_of(g_.nodes.size(), -1);
    std::map<int, uint32_t> temp_of;  // fused value -> temp index in its operation
    std::vector<uint32_t> temps_in_op;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (aliased_[i]) continue;
      const Node& n = g_.nodes[i];
      int op = -1;
      for (int v : n.inputs)
        if (v >= 0 && fused(v)) op = op_of[size_t(g_.value(v).producer)];
      if (op < 0) {
        p_.ops.emplace_back();
        temps_in_op.push_back(0);
        op = int(p_.ops.size()) - 1;
        p_.ops.back().engine = dla::engine_of(n.op).engine;
      }
      op_of[i] = op;
      prog::Op& o = p_.ops[size_t(op)];
      prog::Step s;
      s.layer = n.name;
      s.op = n.op;
      s.opset = n.opset;
      s.attrs = n.attrs;
      for (const auto& [name, a] : n.attrs)
        if (std::holds_alternative<Tensor>(a))
          fail(Status::kUnsupported, n.label(), ": tensor attribute '", name,
               "' cannot go into a DLA program");
      s.rules = rules_[i];
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const int v = n.inputs[k];
        Ref r;
        if (v < 0) {
          r.kind = Ref::Kind::kNone;
        } else if (g_.value(v).constant) {
          r = {Ref::Kind::kConstant, constant(i, int(k))};
          const prog::Constant& c = p_.constants[r.index];
          if (c.type != prog::ConstType::kI64 && c.type != prog::ConstType::kI32) o.weight_bytes += c.bytes;
        } else if (fused(v)) {
          r = {Ref::Kind::kTemp, temp_of.at(v)};
        } else {
          r = {Ref::Kind::kSurface, uint32_t(surface_of_[size_t(v)])};
          if (std::find(o.reads.begin(), o.reads.end(), r.index) == o.reads.end()) {
            o.reads.push_back(r.index);
            o.read_bytes += p_.surfaces[r.index].desc.size;
          }
        }
        s.inputs.push_back(r);
      }
      for (int v : n.outputs) {
        Ref r;
        if (v >= 0 && fused(v)) {
          r = {Ref::Kind::kTemp, temps_in_op[size_t(op)]++};
          temp_of[v] = r.index;
        } else if (v >= 0) {
          r = {Ref::Kind::kSurface, uint32_t(surface_of_[size_t(v)])};
          o.writes.push_back(r.index);
          o.write_bytes += p_.surfaces[r.index].desc.size;
        }
        s.outputs.push_back(r);
        s.out_types.push_back(v >= 0 ? g_.value(v).type : TensorType{});
      }
      const uint64_t macs = uint64_t(node_macs(g_, n));
      o.macs += macs;
      p_.macs += macs;
      o.steps.push_back(std::move(s));
    }
  }

  const Graph& g_;
  quant::NumericsPlan plan_;
  const LowerOptions& o_;
  const dla::DlaLimits& lim_;
  prog::Program p_;
  std::vector<numerics::StepRules> rules_;
  std::vector<int> surface_of_;  // value -> surface (-1: none)
  std::vector<char> aliased_;    // node -> done by aliasing
  std::map<std::pair<int, int>, uint32_t> const_of_;
};

}  // namespace

prog::Program lower(const Graph& g, quant::NumericsPlan plan, const LowerOptions& o) {
  return Lowering(g, std::move(plan), o).run();
}

}  // namespace dlakit::compiler
