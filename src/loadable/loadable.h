// Building a DLA loadable: one DLA graph (every layer placed on the DLA) and its numerics plan compiled
// into a program (compiler::lower: operations, surfaces, memory plan, packed constants) and written in
// the loadable format (prog::serialize, format version 2). The runtime reads it with prog::deserialize.
#pragma once
#include <string>
#include <vector>

#include "compiler/memory_plan.h"
#include "ir/graph.h"
#include "program/program.h"
#include "quant/numerics.h"
#include "runtime/io_format.h"

namespace dlakit {

struct LoadableOptions {
  std::string target = "orin";
  bool int8 = false;
  // INT8: the numerics plan (`quant::plan_numerics` on the standalone placement) decides which layers
  // run in INT8, their weight scales and the activation scales the program stores.
  const quant::NumericsPlan* plan = nullptr;
  int dla_core = 0;
  std::vector<rt::IoSpec> inputs, outputs;  // one per graph input/output
  compiler::MemoryBudgets pools;            // --memPoolSize
};

// The graph must be entirely DLA layers (the caller checked placement in standalone mode).
prog::Program compile_program(const Graph& g, const LoadableOptions& opt);
std::string write_loadable(const Graph& g, const LoadableOptions& opt);

}  // namespace dlakit
