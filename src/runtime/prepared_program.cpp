#include "runtime/prepared_program.h"

#include <cstring>

#include "base/fp16.h"
#include "ir/op_schema.h"
#include "kernels/fused_activation.h"
#include "kernels/registry.h"

namespace dlakit::rt {
namespace {

using prog::ConstType;
using prog::Ref;

Tensor expand(const prog::Constant& c, const uint8_t* data) {
  const DType type = c.type == ConstType::kI64   ? DType::kI64
                     : c.type == ConstType::kI32 ? DType::kI32
                                                 : DType::kF32;
  Tensor t = Tensor::uninitialized(type, c.shape);
  switch (c.type) {
    case ConstType::kF16:
      for (int64_t e = 0; e < t.numel(); ++e) {
        uint16_t h;
        std::memcpy(&h, data + e * 2, 2);
        t.data<float>()[e] = half_to_float(h);
      }
      break;
    case ConstType::kI8: {  // the weight on its INT8 grid: level * its channel's scale
      int64_t outer = 1, inner = 1;
      for (size_t d = 0; d < size_t(c.axis); ++d) outer *= c.shape[d];
      for (size_t d = size_t(c.axis) + 1; d < c.shape.size(); ++d) inner *= c.shape[d];
      const int64_t channels = c.shape[size_t(c.axis)];
      float* out = t.data<float>();
      for (int64_t o = 0, e = 0; o < outer; ++o)
        for (int64_t ch = 0; ch < channels; ++ch) {
          const float s = c.scales[size_t(ch)];
          for (int64_t i = 0; i < inner; ++i, ++e) out[e] = float(int8_t(data[e])) * s;
        }
      break;
    }
    default:
      std::memcpy(t.raw(), data, c.bytes);
  }
  return t;
}

// The integer levels of an int8 weight, as float32 (the exact convolution's operand).
Tensor levels(const prog::Constant& c, const uint8_t* data) {
  Tensor t = Tensor::uninitialized(DType::kF32, c.shape);
  for (int64_t e = 0; e < t.numel(); ++e) t.data<float>()[e] = float(int8_t(data[e]));
  return t;
}

}  // namespace

PreparedProgram::PreparedProgram(prog::Program p) : p_(std::move(p)) {
  // An exact INT8 convolution reads its weight as integer levels; every other step reads constants as
  // values. Each constant is expanded in the form(s) its readers need.
  std::vector<char> as_levels(p_.constants.size(), 0), as_values(p_.constants.size(), 0);
  for (const prog::Op& op : p_.ops)
    for (const prog::Step& s : op.steps)
      for (size_t k = 0; k < s.inputs.size(); ++k)
        if (s.inputs[k].kind == Ref::Kind::kConstant)
          (s.rules.exact_int8_conv && k == 1 ? as_levels : as_values)[s.inputs[k].index] = 1;
  constants_.resize(p_.constants.size());
  levels_.resize(p_.constants.size());
  for (size_t i = 0; i < p_.constants.size(); ++i) {
    const prog::Constant& c = p_.constants[i];
    if (as_values[i]) constants_[i] = expand(c, p_.blob.data() + c.offset);
    if (as_levels[i]) levels_[i] = levels(c, p_.blob.data() + c.offset);
  }
  for (size_t oi = 0; oi < p_.ops.size(); ++oi) {
    const prog::Op& op = p_.ops[oi];
    std::vector<PreparedStep> steps;
    std::vector<TensorType> temp_types;
    for (const prog::Step& s : op.steps) {
      // The step as a one-node graph: its operands' types (and constant values), so the op's own shape
      // inference checks the attributes and recomputes the result types.
      Graph g;
      PreparedStep ps;
      Node& n = ps.node;
      n.op = s.op;
      n.name = s.layer;
      n.opset = s.opset;
      n.attrs = s.attrs;
      for (size_t k = 0; k < s.inputs.size(); ++k) {
        const Ref& r = s.inputs[k];
        int id = -1;
        const Tensor* c = nullptr;
        switch (r.kind) {
          case Ref::Kind::kSurface:
            id =
                g.add_value("in" + std::to_string(k), {DType::kF32, p_.surfaces[r.index].desc.network_shape});
            break;
          case Ref::Kind::kTemp:
            id = g.add_value("in" + std::to_string(k), temp_types.at(r.index));
            break;
          case Ref::Kind::kConstant:
            c = s.rules.exact_int8_conv && k == 1 ? &levels_[r.index] : &constants_[r.index];
            id = g.add_constant("in" + std::to_string(k), *c);
            break;
          case Ref::Kind::kNone:
            break;
        }
        n.inputs.push_back(id);
        ps.constants.push_back(c);
        ps.is_constant.push_back(c != nullptr);
      }
      for (size_t k = 0; k < s.outputs.size(); ++k)
        n.outputs.push_back(s.outputs[k].kind == Ref::Kind::kNone
                                ? -1
                                : g.add_value("out" + std::to_string(k), s.out_types[k]));
      // The op's definition first, as at import: shape formulas and kernels assume its attribute ranges.
      if (const std::vector<std::string> bad = schema_violations(n); !bad.empty())
        fail(Status::kParseError, "step '", s.layer, "': ", bad.front());
      if (n.has("dlakit_activation")) {  // its parameters are the activation's (checked where it runs)
        try {
          ref::fused_epilogue(n);
        } catch (const Error& e) {
          fail(Status::kParseError, "step '", s.layer, "': ", e.what());
        }
      }
      std::vector<TensorType> inferred;
      try {
        inferred = op_impl(n.op).infer(InferContext(g, n));
      } catch (const Error& e) {
        fail(Status::kParseError, "step '", s.layer, "': ", e.what());
      }
      for (size_t k = 0; k < s.outputs.size(); ++k) {
        if (n.outputs[k] < 0) continue;
        if (k >= inferred.size() || !(inferred[k] == s.out_types[k]))
          fail(Status::kParseError, "step '", s.layer, "' (", op_name(n.op), ") records result ", k, " as ",
               type_str(s.out_types[k]), "; its operands give ",
               k < inferred.size() ? type_str(inferred[k]) : std::string("none"));
        if (s.outputs[k].kind == Ref::Kind::kTemp) temp_types.push_back(s.out_types[k]);
      }
      if (s.rules.exact_int8_conv) {
        const uint32_t w = s.inputs[1].index;
        std::vector<float> bias;
        if (s.inputs.size() > 2 && s.inputs[2].kind == Ref::Kind::kConstant)
          bias = constants_[s.inputs[2].index].to_f32();
        ps.conv = std::make_unique<numerics::Int8Conv>(
            numerics::prepare_int8_conv(n, levels_[w], p_.constants[w].scales, std::move(bias),
                                        s.rules.inputs[0].quantize_scale, s.rules.rounding));
      }
      steps.push_back(std::move(ps));
    }
    steps_.push_back(std::move(steps));
  }
  for (size_t oi = 0; oi < p_.ops.size(); ++oi) {
    std::vector<const Node*> nodes;
    for (const PreparedStep& ps : steps_[oi]) nodes.push_back(&ps.node);
    atom_ops_.push_back(plan_int8_atoms(p_, oi, nodes));
  }
}

}  // namespace dlakit::rt
