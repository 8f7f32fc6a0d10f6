// The DLA loadable: write one DLA graph (with fp16 weights and cuDLA tensor descriptors) and read it
// back with every field verified. Corrupt, truncated or foreign files are errors, never crashes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "quant/numerics.h"
#include "runtime/io_format.h"

namespace dlakit {

struct LoadableOptions {
  std::string target = "orin";
  bool int8 = false;
  // INT8: the numerics plan (`quant::plan_numerics` on the standalone placement) decides which layers
  // run in INT8, their weight scales and the activation scales stored in the loadable.
  const quant::NumericsPlan* plan = nullptr;
  int dla_core = 0;
  std::vector<rt::IoSpec> inputs, outputs;  // one per graph input/output
};

// The graph must be entirely DLA layers (the caller checked placement in standalone mode).
std::string write_loadable(const Graph& g, const LoadableOptions& opt);

struct Loadable {
  std::string target, dla_version, producer;
  bool int8 = false;
  int dla_core = 0;
  std::vector<rt::TensorDesc> inputs, outputs;
  Graph graph;  // weights bound as constants (fp16 values; INT8 layers' weights on their int8 grid)
  quant::ScaleTable scales;              // INT8: activation scales and per-channel weight scales
  std::vector<std::string> fp16_layers;  // INT8: layers kept in FP16 (the rest INT8 where scales allow)
  uint32_t layers = 0;
  uint64_t macs = 0;
  size_t weight_bytes = 0;
};

Loadable read_loadable(const uint8_t* data, size_t size, const std::string& origin = "<memory>");

}  // namespace dlakit
