// Placement: per-layer device and precision, DLA segments with GPU fallback (TensorRT's GPU_FALLBACK) or
// strict standalone mode (--buildDLAStandalone), explained. Capability proposes; the partitioner decides.
#pragma once
#include <nlohmann/json.hpp>

#include <compare>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "passes/passes.h"
#include "targets/dla/rules.h"

namespace dlakit {

enum class Device { kDLA, kGPU };
const char* device_name(Device d);

struct PlacementOptions {
  std::string target = "orin";
  bool standalone = false;                           // the whole network must be one DLA graph
  dla::Precision precision = dla::Precision::kFP16;  // default DLA precision (--int8 gives INT8)
  int dla_core = 0;
  // Overrides, first match wins: (glob over layer names, value); op-type overrides use the op name.
  std::vector<std::pair<std::string, Device>> layer_devices, op_devices;
  std::vector<std::pair<std::string, dla::Precision>> layer_precisions, op_precisions;
  // Tiny-island avoidance (dlakit's heuristic, not TensorRT's): a DLA segment with fewer layers than this
  // and under min_island_mac_share of the MACs, that would cost two DLA<->GPU hops, runs on the GPU.
  int min_island_layers = 3;
  double min_island_mac_share = 0.02;
  // every field: equal options, equal placements of one graph (search memos key on them)
  auto operator<=>(const PlacementOptions&) const = default;
};

struct LayerPlacement {
  Device device = Device::kGPU;
  dla::Precision precision = dla::Precision::kFP16;
  dla::Capability cap;
  std::string decision;  // why this device: "supported", "unsupported", "tiny island", "override"...
  int segment = -1;
  int64_t macs = 0;
};

struct Segment {
  int id = 0;
  Device device = Device::kGPU;
  std::vector<int> nodes;            // node indices, topological
  std::vector<int> inputs, outputs;  // value ids crossing the segment boundary (or graph I/O)
  int64_t macs = 0;
  std::string ends_because;  // why the segment stops where it does
};

struct Placement {
  std::string model, target, mode;  // mode: "fallback" | "standalone"
  PlacementOptions options;
  std::vector<LayerPlacement> layers;  // parallel to graph.nodes
  std::vector<Segment> segments;
  std::vector<Remark> remarks;  // from the passes
  int dla_layers = 0, total_layers = 0, transitions = 0, dla_loadables = 0;
  int64_t dla_macs = 0, total_macs = 0;
  bool standalone_possible = false;
  std::string recommendation;
};

// Checks every node, applies overrides, partitions. With options.standalone, throws one Unsupported error
// listing every layer that keeps the network from being a single DLA graph.
Placement place(const Graph& g, const PlacementOptions& opt);

// "name:GPU,conv*:DLA" -> overrides (trtexec's --layerDeviceTypes / --layerPrecisions syntax).
std::vector<std::pair<std::string, Device>> parse_device_overrides(const std::string& spec);
std::vector<std::pair<std::string, dla::Precision>> parse_precision_overrides(const std::string& spec);

std::string placement_text(const Graph& g, const Placement& p);
nlohmann::json placement_json(const Graph& g, const Placement& p);
std::string explain_node(const Graph& g, const Placement& p, const std::string& node_name);

}  // namespace dlakit
