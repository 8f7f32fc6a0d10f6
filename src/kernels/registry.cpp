#include "kernels/registry.h"

namespace dlakit {

#define DLAKIT_OP(e, name, family) extern const OpImpl kImpl_##e;
#include "ir/ops.def"
#undef DLAKIT_OP

namespace {
const OpImpl* const kImpls[] = {
#define DLAKIT_OP(e, name, family) &kImpl_##e,
#include "ir/ops.def"
#undef DLAKIT_OP
};
}  // namespace

const OpImpl& op_impl(OpKind op) { return *kImpls[size_t(op)]; }

std::vector<Tensor> run_kernel(const Node& node, const std::vector<const Tensor*>& inputs,
                               const std::vector<TensorType>& out_types, const std::vector<char>& constant) {
  std::vector<Tensor> outs;
  outs.reserve(out_types.size());
  std::vector<Tensor*> out_ptrs;
  // Kernels write every element of their outputs, so outputs start uninitialised (kernels that
  // accumulate clear their output first).
  for (size_t i = 0; i < out_types.size(); ++i) {
    const bool present = i >= node.outputs.size() || node.outputs[i] >= 0;
    outs.push_back(present ? Tensor::uninitialized(out_types[i].dtype, out_types[i].shape) : Tensor());
    out_ptrs.push_back(present ? &outs[i] : nullptr);
  }
  op_impl(node.op).run(KernelContext(node, inputs, out_ptrs, constant));
  return outs;
}

const TensorType& InferContext::type(int i) const {
  if (!has(i)) fail(Status::kInvalidArgument, n_.label(), ": required input #", i, " is missing");
  return g_.value(n_.inputs[size_t(i)]).type;
}

const Tensor* InferContext::constant(int i) const {
  if (!has(i)) return nullptr;
  const auto& v = g_.value(n_.inputs[size_t(i)]);
  return v.constant ? &*v.constant : nullptr;
}

const Tensor& InferContext::require_constant(int i, const char* what) const {
  const Tensor* t = constant(i);
  if (!t) {
    if (missing_ && has(i)) missing_->push_back(n_.inputs[size_t(i)]);
    fail(Status::kUnsupported, n_.label(), ": input #", i, " ('", what, "' = '",
         has(i) ? g_.value(n_.inputs[size_t(i)]).name : std::string("<missing>"),
         "') is computed at run time; dlakit needs it constant to give the graph static shapes "
         "(pin dynamic input dimensions with --input-shape)");
  }
  return *t;
}

void InferContext::require_inputs(int min, int max) const {
  int n = 0;
  for (int i = 0; i < num_inputs(); ++i) n = has(i) ? i + 1 : n;
  if (n < min || num_inputs() > max)
    fail(Status::kParseError, n_.label(), ": has ", num_inputs(), " inputs, expected ", min, "..", max);
  for (int i = 0; i < min; ++i)
    if (!has(i)) fail(Status::kParseError, n_.label(), ": required input #", i, " is missing");
}

}  // namespace dlakit
