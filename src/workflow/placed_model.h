// What inspect, split, calibrate, compare and build start from: an imported model with its Q/DQ nodes
// folded into scales, the graph passes run, and placed. The CLI and the Python module both call this, so
// both see the same graph and the same placement.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"
#include "placement/placement.h"
#include "quant/calib_cache.h"

namespace dlakit::workflow {

struct PassOptions {
  bool run = true;                    // false: --no-passes
  std::vector<std::string> disabled;  // --disable-pass NAME (a pass, or one adjust-for-dla rewrite)
};

struct PlacedModel {
  Graph graph;
  Placement placement;
  quant::ScaleTable qdq;  // scales of a Q/DQ model (its Q/DQ nodes are folded away here)
  bool has_qdq = false;
  Graph imported;  // the model before the passes (Q/DQ folded): what a TensorRT cache's names refer to
};

// Placement options as the CLI's flags and the Python module's keywords give them: trtexec strings.
struct PlacementRequest {
  std::string target = "orin";
  bool standalone = false, int8 = false;
  int dla_core = 0;
  std::string layer_devices, layer_precisions, op_devices, op_precisions;  // "name:GPU,conv*:DLA" ...
  std::string overrides_file;  // JSON from `compare --fix --apply`; after the layer strings (they win)
};
PlacementOptions placement_options(const PlacementRequest& r);

// `model` names the model in reports (its path). Throws like place() (standalone: every offender).
PlacedModel place_model(Graph g, const std::string& model, const PlacementOptions& options,
                        const PassOptions& passes);

// Appends the layerPrecisions / layerDeviceTypes strings of an overrides file (what `dlakit compare --fix
// --apply` writes) after the overrides already in `options`: first match wins, so earlier ones win.
void add_overrides_file(const std::string& path, PlacementOptions& options);

}  // namespace dlakit::workflow
