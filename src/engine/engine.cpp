#include "engine/engine.h"

#include <chrono>
#include <optional>

#include "base/fp16_array.h"
#include "base/threadpool.h"
#include "kernels/registry.h"

namespace dlakit {

std::vector<Tensor> run_node(const Graph& g, const Node& node, const std::vector<const Tensor*>& inputs) {
  std::vector<TensorType> types;
  for (int o : node.outputs) types.push_back(o >= 0 ? g.value(o).type : TensorType{});
  std::vector<char> constant;
  for (int i : node.inputs) constant.push_back(i >= 0 && g.value(i).constant.has_value());
  return run_kernel(node, inputs, types, constant);
}

// Values a step reads: its nodes' non-constant inputs that none of its nodes produce.
std::vector<int> step_reads(const Graph& g, const EngineStep& step) {
  std::vector<int> reads;
  for (size_t n : step.nodes)  // a fused Conv's residual is its Add node's input too
    for (int i : g.nodes[n].inputs) {
      bool internal = false;
      for (size_t m : step.nodes)
        for (int o : g.nodes[m].outputs) internal = internal || (o == i && o >= 0);
      if (i >= 0 && !g.value(i).constant && !internal) reads.push_back(i);
    }
  return reads;
}

// The values a step makes: a single node's outputs, or the fused group's final one.
std::vector<int> step_writes(const Graph& g, const EngineStep& step) {
  if (step.conv) return step.conv->outputs;
  if (step.elementwise) return {step.elementwise->output};
  return g.nodes[step.nodes.front()].outputs;
}

ReferenceEngine::Schedule ReferenceEngine::schedule(std::vector<EngineStep> steps) const {
  Schedule s{std::move(steps), std::vector<int>(graph_.values.size(), -1), {}, {}};
  for (size_t k = 0; k < s.steps.size(); ++k) {
    s.reads.push_back(step_reads(graph_, s.steps[k]));
    s.writes.push_back(step_writes(graph_, s.steps[k]));
    for (int i : s.reads.back()) s.last_use[size_t(i)] = int(k);
  }
  for (int o : graph_.outputs) s.last_use[size_t(o)] = int(s.steps.size());  // outputs live to the end
  return s;
}

ReferenceEngine::ReferenceEngine(const Graph& graph) : graph_(graph) {
  graph_.verify();
  std::vector<EngineStep> one_each;
  for (size_t n = 0; n < graph_.nodes.size(); ++n)
    one_each.push_back({{n}, std::nullopt, std::nullopt, std::nullopt});
  per_node_ = schedule(std::move(one_each));
  fused_ = schedule(plan_fused_steps(graph_));
}

TensorMap ReferenceEngine::run(const TensorMap& inputs) {
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
  const Schedule& plan = observer_ || runner_ || fp16_storage_ ? per_node_ : fused_;
  std::vector<const Tensor*> in_ptrs;
  auto value_ptr = [&](const Node& node, int i) -> const Tensor* {
    if (i < 0) return nullptr;
    if (graph_.value(i).constant) return &*graph_.value(i).constant;
    if (!live[size_t(i)])
      fail(Status::kInternal, node.label(), ": input '", graph_.value(i).name, "' is not computed");
    return &*live[size_t(i)];
  };
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const EngineStep& step = plan.steps[k];
    const size_t n = step.nodes.front();
    const Node& node = step.conv ? *step.conv : graph_.nodes[n];
    in_ptrs.clear();
    auto t0 = std::chrono::steady_clock::now();
    std::vector<Tensor> outs;
    if (step.elementwise) {
      for (int i : step.elementwise->inputs) in_ptrs.push_back(value_ptr(node, i));
      outs.push_back(run_elementwise_step(graph_, *step.elementwise, in_ptrs));
    } else if (step.expand) {  // the expansion's inputs, then the depthwise's but the expanded one
      for (int i : step.expand->inputs) in_ptrs.push_back(value_ptr(*step.expand, i));
      for (size_t j = 1; j < node.inputs.size(); ++j) in_ptrs.push_back(value_ptr(node, node.inputs[j]));
      outs.push_back(run_expand_depthwise_step(graph_, step, in_ptrs));
    } else {
      for (int i : node.inputs) in_ptrs.push_back(value_ptr(node, i));
      outs = runner_ ? runner_(n, in_ptrs) : run_node(graph_, node, in_ptrs);
    }
    if (profiling_)
      node_ms_[n] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (fp16_storage_)
      for (Tensor& t : outs)
        if (!t.empty() && t.dtype() == DType::kF32) round_to_half_inplace(t.data<float>(), t.numel());
    if (observer_) observer_(node, outs);
    const std::vector<int>& writes = plan.writes[k];
    for (size_t o = 0; o < outs.size(); ++o)
      if (writes[o] >= 0) live[size_t(writes[o])] = std::move(outs[o]);
    for (int i : plan.reads[k])  // free what no later step reads
      if (plan.last_use[size_t(i)] == int(k)) live[size_t(i)].reset();
    for (int o : writes)
      if (o >= 0 && plan.last_use[size_t(o)] < 0) live[size_t(o)].reset();
  }
  TensorMap result;
  for (int o : graph_.outputs) {
    const Value& v = graph_.value(o);
    result[v.name] = v.constant ? *v.constant : *live[size_t(o)];
  }
  return result;
}

std::vector<TensorMap> ReferenceEngine::run_batch(const std::vector<TensorMap>& samples) {
  std::vector<TensorMap> out(samples.size());
  if (observer_ || profiling_) {
    for (size_t i = 0; i < samples.size(); ++i) out[i] = run(samples[i]);
    return out;
  }
  parallel_for(
      int64_t(samples.size()),
      [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i) out[size_t(i)] = run(samples[size_t(i)]);
      },
      1);
  return out;
}

void ReferenceEngine::run_each(const std::vector<TensorMap>& samples,
                               const std::function<void(size_t, const TensorMap&)>& take) {
  const size_t block = size_t(4 * num_threads());
  for (size_t first = 0; first < samples.size(); first += block) {
    const size_t last = std::min(samples.size(), first + block);
    const std::vector<TensorMap> outs =
        run_batch(std::vector<TensorMap>(samples.begin() + long(first), samples.begin() + long(last)));
    for (size_t i = first; i < last; ++i) take(i, outs[i - first]);
  }
}

}  // namespace dlakit
