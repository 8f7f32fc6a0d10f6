// Graph passes for the DLA. Each records remarks: what it did, and what it declined to do and why
// (MLIR's notifyMatchFailure). Every pass preserves the graph's outputs (tests/unit/passes_test.cpp and
// the real-model tests check it).
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace dlakit {

struct Remark {
  std::string pass;
  std::string node;  // the node the remark is about
  bool applied;      // true: done; false: declined
  std::string message;
};

struct PassInfo {
  const char* name;
  const char* summary;
  void (*run)(Graph&, std::vector<Remark>&);
};

// The default pipeline, in order.
const std::vector<PassInfo>& dla_pipeline();
// Runs the pipeline (minus `disabled` pass names); returns all remarks.
std::vector<Remark> run_passes(Graph& g, const std::vector<std::string>& disabled = {});

namespace passes {
void remove_identity(Graph& g, std::vector<Remark>& r);
void fold_constants(Graph& g, std::vector<Remark>& r);
void fold_batchnorm(Graph& g, std::vector<Remark>& r);
void fold_pad(Graph& g, std::vector<Remark>& r);
void decompose(Graph& g, std::vector<Remark>& r);
void fuse_activation(Graph& g, std::vector<Remark>& r);
void eliminate_dead_code(Graph& g, std::vector<Remark>& r);
}  // namespace passes

// Helpers the passes share.
std::vector<int> consumers(const Graph& g, int value);  // node indices reading the value
bool is_graph_output(const Graph& g, int value);

}  // namespace dlakit
