// Writes a placement's segments as separate ONNX models plus a manifest that wires them together and
// the trtexec command lines that build them on a Jetson.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "placement/placement.h"

namespace dlakit {

// Segment ids in an order that respects their data dependencies.
std::vector<int> segment_order(const Graph& g, const Placement& p);

// Writes DIR/segment_<k>_<dla|gpu>.onnx, DIR/manifest.json and DIR/build_on_jetson.sh; returns the manifest.
nlohmann::json write_split(const Graph& g, const Placement& p, const std::string& dir,
                           const std::string& model_path);

// Runs a split directory's segments one after another on the reference engine (the manifest's order).
TensorMap run_split(const std::string& dir, const TensorMap& inputs);

}  // namespace dlakit
