// Hybrid plans: a model placed with GPU fallback, as DLA loadables and GPU segments wired by tensor name.
#pragma once
#include <string>

#include "ir/graph.h"
#include "placement/placement.h"

namespace dlakit {

// Writes the plan of a (pass-optimised) graph and its fallback placement; DLA segments use fp16:chw16 I/O.
std::string write_plan(const Graph& g, const Placement& p);

// True when the bytes start like a plan (file identifier "DLKP").
bool is_plan(const uint8_t* data, size_t size);

}  // namespace dlakit
