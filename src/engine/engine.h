// The reference engine: runs a Graph node by node with the reference kernels (the oracle).
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace dlakit {

using TensorMap = std::map<std::string, Tensor>;

// Runs one node on given inputs (nullptr for omitted optional inputs) and returns its outputs,
// allocated from the graph's inferred types. Used by the engine and by constant folding.
std::vector<Tensor> run_node(const Graph& g, const Node& node, const std::vector<const Tensor*>& inputs);

class ReferenceEngine {
 public:
  explicit ReferenceEngine(const Graph& graph);

  // Inputs by graph-input name; every runtime input is required and must match its type exactly.
  // `before_node` (optional) is called with each node's index before it runs: a runtime checks its task
  // deadline there, and may throw to stop the run.
  TensorMap run(const TensorMap& inputs, const std::function<void(size_t)>& before_node = {});

  // Called after each node with its outputs (for per-layer comparison tools). Slows the run down.
  void set_observer(std::function<void(const Node&, const std::vector<Tensor>&)> f) {
    observer_ = std::move(f);
  }
  // Replaces how nodes run (numerics emulation): called with the node's index and inputs, returns its
  // outputs. Unset: run_node with the reference kernels.
  using NodeRunner = std::function<std::vector<Tensor>(size_t, const std::vector<const Tensor*>&)>;
  void set_node_runner(NodeRunner f) { runner_ = std::move(f); }
  // Milliseconds per node of the last run when profiling is on.
  void set_profiling(bool on) { profiling_ = on; }
  // DLA FP16 mode: every float32 value a node produces is rounded to fp16 (fp16 storage between layers;
  // kernels still accumulate in fp32).
  void set_fp16_storage(bool on) { fp16_storage_ = on; }
  const std::vector<double>& node_ms() const { return node_ms_; }
  const Graph& graph() const { return graph_; }

 private:
  const Graph& graph_;
  std::vector<int> last_use_;  // per value: index of the last node reading it (-1: none)
  std::function<void(const Node&, const std::vector<Tensor>&)> observer_;
  NodeRunner runner_;
  bool profiling_ = false;
  bool fp16_storage_ = false;
  std::vector<double> node_ms_;
};

}  // namespace dlakit
