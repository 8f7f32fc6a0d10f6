// Graph passes for the DLA. Each records remarks: what it did, and what it declined to do and why
// (MLIR's notifyMatchFailure). Every pass preserves the graph's outputs (tests/unit/adjust_for_dla_test.cpp
// and the real-model tests check it).
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"
#include "targets/dla/rules.h"

namespace dlakit {

struct Remark {
  std::string pass;
  std::string node;  // the node the remark is about
  bool applied;      // true: done; false: declined
  std::string message;
};

struct PassOptions {
  // adjust-for-dla keeps a rewrite only when every layer it adds can run on this chip's DLA in this
  // precision (the build's default precision).
  std::string target = "orin";
  dla::Precision precision = dla::Precision::kFP16;
  std::vector<std::string> disabled;  // pass names, or the names of adjust-for-dla's rewrites
};

struct PassInfo {
  const char* name;
  const char* summary;
  void (*run)(Graph&, const PassOptions&, std::vector<Remark>&);
};

// The default pipeline, in order.
const std::vector<PassInfo>& dla_pipeline();
// Runs the pipeline (minus the disabled passes and rewrites); returns all remarks. An unknown name in
// `disabled` is an error that lists the known ones.
std::vector<Remark> run_passes(Graph& g, const PassOptions& o = {});
// Every name --disable-pass accepts: the passes, then adjust-for-dla's rewrites.
std::vector<std::string> pass_names();

namespace passes {
void remove_identity(Graph& g, std::vector<Remark>& r);
void fold_constants(Graph& g, std::vector<Remark>& r);
void fold_batchnorm(Graph& g, std::vector<Remark>& r);
void fold_pad(Graph& g, std::vector<Remark>& r);
void decompose(Graph& g, std::vector<Remark>& r);
void adjust_for_dla(Graph& g, const PassOptions& o, std::vector<Remark>& r);
void fuse_activation(Graph& g, std::vector<Remark>& r);
void eliminate_dead_code(Graph& g, std::vector<Remark>& r);
}  // namespace passes

// Helpers the passes share.
std::vector<int> consumers(const Graph& g, int value);  // node indices reading the value
bool is_graph_output(const Graph& g, int value);

}  // namespace dlakit
