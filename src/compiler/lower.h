// Lowering: a DLA graph (every node placed on the DLA, after passes) and its numerics plan become a
// compiled program: operations on the DLA's engines (a convolution or SDP pass with the per-element
// layers fused behind it, as the plan fuses them), surfaces in the DLA's feature layout, constants packed
// in the form their layer reads, and a memory plan.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/memory_plan.h"
#include "ir/graph.h"
#include "program/program.h"
#include "quant/numerics.h"
#include "runtime/io_format.h"

namespace dlakit::compiler {

struct LowerOptions {
  std::string target = "orin";
  bool int8 = false;  // an INT8 build (int8 I/O formats need one)
  int dla_core = 0;
  std::vector<rt::IoSpec> inputs, outputs;  // one per graph input / output
  MemoryBudgets pools;
};

// `plan` decides every layer's numerics: plan_uniform(g, kFP16) for FP16, plan_numerics on the
// standalone INT8 placement for INT8. Network outputs with an int8 output format leave quantized
// (lower adds them to the plan's int8_outputs). Throws a clear error for anything the DLA program cannot
// express (an unplaced layer, a non-float tensor, a pool that cannot hold the program).
prog::Program lower(const Graph& g, quant::NumericsPlan plan, const LowerOptions& o);

}  // namespace dlakit::compiler
