#include "engine/engine.h"

#include <chrono>
#include <optional>

#include "base/fp16_array.h"
#include "kernels/registry.h"

namespace dlakit {

std::vector<Tensor> run_node(const Graph& g, const Node& node, const std::vector<const Tensor*>& inputs) {
  std::vector<Tensor> outs;
  outs.reserve(node.outputs.size());
  std::vector<Tensor*> out_ptrs;
  // Kernels write every element of their outputs, so outputs start uninitialised (kernels that
  // accumulate clear their output first).
  for (int o : node.outputs)
    outs.push_back(o >= 0 ? Tensor::uninitialized(g.value(o).type.dtype, g.value(o).type.shape) : Tensor());
  for (size_t i = 0; i < outs.size(); ++i) out_ptrs.push_back(node.outputs[i] >= 0 ? &outs[i] : nullptr);
  std::vector<char> constant;
  for (int i : node.inputs) constant.push_back(i >= 0 && g.value(i).constant.has_value());
  op_impl(node.op).run(KernelContext(node, inputs, out_ptrs, std::move(constant)));
  return outs;
}

ReferenceEngine::ReferenceEngine(const Graph& graph) : graph_(graph) {
  graph_.verify();
  last_use_.assign(graph_.values.size(), -1);
  for (size_t n = 0; n < graph_.nodes.size(); ++n)
    for (int i : graph_.nodes[n].inputs)
      if (i >= 0) last_use_[size_t(i)] = int(n);
  for (int o : graph_.outputs) last_use_[size_t(o)] = int(graph_.nodes.size());  // outputs live to the end
}

TensorMap ReferenceEngine::run(const TensorMap& inputs, const std::function<void(size_t)>& before_node) {
  std::vector<std::optional<Tensor>> live(graph_.values.size());
  for (int id : graph_.inputs) {
    const Value& v = graph_.value(id);
    auto it = inputs.find(v.name);
    if (it == inputs.end())
      fail(Status::kInvalidArgument, "missing input '", v.name, "' (", type_str(v.type), ")");
    if (!(it->second.type() == v.type))
      fail(Status::kInvalidArgument, "input '", v.name, "' is ", type_str(it->second.type()),
           " but the model expects ", type_str(v.type));
    live[size_t(id)] = it->second;
  }
  for (auto& [name, t] : inputs) {
    bool known = false;
    for (int id : graph_.inputs) known = known || graph_.value(id).name == name;
    if (!known) {
      std::string names;
      for (int id : graph_.inputs) names += (names.empty() ? "" : ", ") + graph_.value(id).name;
      fail(Status::kInvalidArgument, "unknown input '", name, "'; the model's inputs are: ", names);
    }
  }
  if (profiling_) node_ms_.assign(graph_.nodes.size(), 0.0);
  std::vector<const Tensor*> in_ptrs;
  for (size_t n = 0; n < graph_.nodes.size(); ++n) {
    const Node& node = graph_.nodes[n];
    if (before_node) before_node(n);
    in_ptrs.clear();
    for (int i : node.inputs) {
      if (i < 0) {
        in_ptrs.push_back(nullptr);
      } else if (graph_.value(i).constant) {
        in_ptrs.push_back(&*graph_.value(i).constant);
      } else {
        if (!live[size_t(i)])
          fail(Status::kInternal, node.label(), ": input '", graph_.value(i).name, "' is not computed");
        in_ptrs.push_back(&*live[size_t(i)]);
      }
    }
    auto t0 = std::chrono::steady_clock::now();
    std::vector<Tensor> outs = runner_ ? runner_(n, in_ptrs) : run_node(graph_, node, in_ptrs);
    if (profiling_)
      node_ms_[n] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (fp16_storage_)
      for (Tensor& t : outs)
        if (!t.empty() && t.dtype() == DType::kF32) round_to_half_inplace(t.data<float>(), t.numel());
    if (observer_) observer_(node, outs);
    for (size_t k = 0; k < outs.size(); ++k)
      if (node.outputs[k] >= 0) live[size_t(node.outputs[k])] = std::move(outs[k]);
    for (int i : node.inputs)  // free what no later node reads
      if (i >= 0 && last_use_[size_t(i)] == int(n)) live[size_t(i)].reset();
    for (int o : node.outputs)
      if (o >= 0 && last_use_[size_t(o)] < 0) live[size_t(o)].reset();
  }
  TensorMap result;
  for (int o : graph_.outputs) {
    const Value& v = graph_.value(o);
    result[v.name] = v.constant ? *v.constant : *live[size_t(o)];
  }
  return result;
}

}  // namespace dlakit
