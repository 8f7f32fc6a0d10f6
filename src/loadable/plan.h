// Hybrid plans: a model placed with GPU fallback, as DLA loadables and GPU segments wired by tensor name.
#pragma once
#include <string>

#include "compiler/memory_plan.h"
#include "ir/graph.h"
#include "placement/placement.h"
#include "quant/calib_cache.h"

namespace dlakit {

// Writes the plan of a (pass-optimised) graph and its fallback placement; DLA segments use fp16:chw16 I/O.
// With `scales` (an INT8 build), each DLA segment is an INT8 loadable: its layers keep the placement's
// precision (INT8 where the scales allow, as plan_numerics decides); GPU segments run FP32.
// `int8_layers` (optional) receives the number of layers that run INT8.
// `pools` (--memPoolSize) bounds each DLA segment's memory, as in TensorRT (a budget per DLA subgraph).
std::string write_plan(const Graph& g, const Placement& p, const quant::ScaleTable* scales = nullptr,
                       int* int8_layers = nullptr, const compiler::MemoryBudgets& pools = {});

// True when the bytes start like a plan (file identifier "DLKP").
bool is_plan(const uint8_t* data, size_t size);

// A plan read back and verified (identifier, FlatBuffers verifier, version, complete segments).
struct PlanSegment {
  bool dla = false;
  std::string payload;  // a DLA loadable (dla) or an ONNX model
  std::vector<std::string> inputs, outputs;
};
struct PlanContents {
  std::vector<std::string> inputs, outputs;
  std::vector<PlanSegment> segments;
};
PlanContents read_plan(const uint8_t* data, size_t size, const std::string& origin = "plan");

}  // namespace dlakit
