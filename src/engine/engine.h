// The reference engine: runs a Graph node by node with the reference kernels (the oracle).
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/fusion.h"
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
  TensorMap run(const TensorMap& inputs);

  // Runs independent samples several at a time, one per thread with single-threaded kernels inside: the
  // throughput path for calibration and evaluation, where small layers and serial steps leave threads
  // idle. Results are those of run() on each sample, bit for bit. With an observer or profiling on (their
  // state is not shared between threads) the samples run one after another.
  std::vector<TensorMap> run_batch(const std::vector<TensorMap>& samples);
  // run_batch a block of samples at a time, handing each output to `take` in sample order (so metrics
  // accumulate in the same order whatever the thread count), holding one block of outputs at a time.
  void run_each(const std::vector<TensorMap>& samples,
                const std::function<void(size_t, const TensorMap&)>& take);

  // Called after each node with its outputs (for per-layer comparison tools). Slows the run down.
  void set_observer(std::function<void(const Node&, const std::vector<Tensor>&)> f) {
    observer_ = std::move(f);
  }
  // Replaces how nodes run (numerics emulation): called with the node's index and inputs, returns its
  // outputs. Unset: run_node with the reference kernels.
  using NodeRunner = std::function<std::vector<Tensor>(size_t, const std::vector<const Tensor*>&)>;
  void set_node_runner(NodeRunner f) { runner_ = std::move(f); }
  // Milliseconds per node of the last run when profiling is on. A fused step's time is its first node's
  // (the Conv of Conv + Relu), the other nodes it covers show 0.
  void set_profiling(bool on) { profiling_ = on; }
  // DLA FP16 mode: every float32 value a node produces is rounded to fp16 (fp16 storage between layers;
  // kernels still accumulate in fp32).
  void set_fp16_storage(bool on) { fp16_storage_ = on; }
  const std::vector<double>& node_ms() const { return node_ms_; }
  const Graph& graph() const { return graph_; }

 private:
  // Steps in order and, per value, the index of the last step reading it (-1: none; outputs: the end).
  struct Schedule {
    std::vector<EngineStep> steps;
    std::vector<int> last_use;
    std::vector<std::vector<int>> reads, writes;  // per step: values read from outside it, values made
  };
  Schedule schedule(std::vector<EngineStep> steps) const;
  const Graph& graph_;
  Schedule per_node_;  // one step per node: for observers, node runners and fp16 storage
  Schedule fused_;     // plan_fused_steps: otherwise
  std::function<void(const Node&, const std::vector<Tensor>&)> observer_;
  NodeRunner runner_;
  bool profiling_ = false;
  bool fp16_storage_ = false;
  std::vector<double> node_ms_;
};

}  // namespace dlakit
