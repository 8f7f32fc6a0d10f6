#include "workflow/placed_model.h"

#include "base/error.h"
#include "base/file.h"
#include "placement/overrides.h"
#include "quant/qdq.h"

namespace dlakit::workflow {

PlacedModel place_model(Graph g, const std::string& model, const PlacementOptions& options,
                        const PassOptions& passes) {
  const bool qdq = quant::has_qdq(g);
  quant::ScaleTable scales;
  if (qdq) scales = quant::fold_qdq(g);  // the DLA takes scales, not Q/DQ nodes
  Graph imported = g;                    // shares the constants
  std::vector<Remark> remarks;
  if (passes.run) {
    // adjust-for-dla keeps a rewrite only where the chosen chip's DLA runs its layers in the build's
    // default precision, so the passes see the placement's target and precision.
    dlakit::PassOptions po;
    po.target = options.target;
    po.precision = options.precision;
    po.disabled = passes.disabled;
    remarks = run_passes(g, po);
  }
  Placement p = place(g, options);
  p.model = model;
  p.remarks = std::move(remarks);
  if (qdq)
    p.remarks.insert(
        p.remarks.begin(),
        {"fold-qdq", "", true,
         "folded the Q/DQ nodes into " + std::to_string(scales.scales.size()) + " activation ranges and " +
             std::to_string(scales.weight_scales.size()) + " weight scales"});
  return {std::move(g), std::move(p), std::move(scales), qdq, std::move(imported)};
}

PlacementOptions placement_options(const PlacementRequest& r) {
  PlacementOptions o;
  o.target = r.target;
  o.standalone = r.standalone;
  o.precision = r.int8 ? dla::Precision::kINT8 : dla::Precision::kFP16;
  o.dla_core = r.dla_core;
  o.layer_devices = parse_device_overrides(r.layer_devices);
  o.op_devices = parse_device_overrides(r.op_devices);
  o.layer_precisions = parse_precision_overrides(r.layer_precisions);
  if (!r.overrides_file.empty()) add_overrides_file(r.overrides_file, o);  // first match wins
  o.op_precisions = parse_precision_overrides(r.op_precisions);
  return o;
}

void add_overrides_file(const std::string& path, PlacementOptions& options) {
  add_overrides_json(read_file(path), path, options);
}

}  // namespace dlakit::workflow
