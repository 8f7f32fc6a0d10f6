// Hybrid plans: a model placed with GPU fallback, as DLA loadables and GPU segments wired by tensor name.
#pragma once
#include <string>

#include "ir/graph.h"
#include "placement/placement.h"
#include "quant/calib_cache.h"

namespace dlakit {

// Writes the plan of a (pass-optimised) graph and its fallback placement; DLA segments use fp16:chw16 I/O.
// With `scales` (an INT8 build), each DLA segment is an INT8 loadable: its layers keep the placement's
// precision (INT8 where the scales allow, as plan_numerics decides); GPU segments run FP32.
// `int8_layers` (optional) receives the number of layers that run INT8.
std::string write_plan(const Graph& g, const Placement& p, const quant::ScaleTable* scales = nullptr,
                       int* int8_layers = nullptr);

// True when the bytes start like a plan (file identifier "DLKP").
bool is_plan(const uint8_t* data, size_t size);

}  // namespace dlakit
