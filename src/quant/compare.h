// Per-layer accuracy of an emulated precision against the FP32 reference on the same inputs, and the
// layers where the error jumps. Polygraphy's `--validate`/`compare` mindset, per layer.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "quant/metric.h"
#include "quant/numerics.h"

namespace dlakit::quant {

struct TensorError {
  double cosine = 1, rel_l2 = 0, max_abs = 0, sqnr_db = 0;  // sqnr_db: +inf when identical
};

struct LayerError {
  std::string node, op, tensor, mode, note;  // the node's first float output
  std::vector<std::string> readers;          // nodes that read that output
  std::vector<std::string> fused_with;       // producers fused into this layer's pipeline (plan.fused)
  TensorError err;                           // end to end: this layer in the emulated network
  TensorError own;                           // this layer alone, emulated on the FP32 reference's inputs
  double step = 0;  // rel_l2 minus the largest rel_l2 among its inputs: the error this layer adds
  bool flagged = false;
};

struct CompareResult {
  std::vector<LayerError> layers;   // graph order
  std::vector<LayerError> outputs;  // graph outputs
  double median_step = 0, median_own = 0;
  int samples = 0;
  Score score;  // the task metric (compare_numerics' `metric`; cosine by default) and the output cosine
};

// Runs the FP32 reference and the emulation on every sample, end to end and layer by layer (each layer
// emulated on the reference's inputs: its own error). A DLA layer is flagged when its own relative L2 is
// at least 10x the median over the DLA layers and at least 0.01, so well-behaved models flag nothing.
CompareResult compare_numerics(const Graph& g, const NumericsPlan& plan,
                               const std::vector<TensorMap>& samples,
                               const std::function<void(int, int)>& progress = {},
                               const MetricSpec& metric = {});

// Fixes for flagged layers, trtexec syntax: a DLA INT8 layer, the producers fused into its pipeline and
// the INT8 layers reading its output -> "name:fp16" (--layerPrecisions), so the tensor whose error jumped
// is never quantized (an INT8 reader would quantize it again with the same range) and no fused
// intermediate becomes a new quantization point; a layer already in FP16 -> "name:GPU"
// (--layerDeviceTypes).
struct Fix {
  std::string layer_precisions, layer_devices;
  std::vector<std::string> lines;  // one human-readable line per proposal
  bool empty() const { return layer_precisions.empty() && layer_devices.empty(); }
};
Fix propose_fix(const CompareResult& r);
// The same moves for the given layers (by node name), whatever their flags: one step of a search.
Fix propose_layers(const CompareResult& r, const std::vector<std::string>& layers, const char* why);
// Prepends a fix's overrides to placement options (first match wins).
PlacementOptions with_fix(const PlacementOptions& base, const Fix& f);

// compare -> fix -> re-place -> compare, until no layer is flagged or `max_rounds` rounds were tried.
// A round that makes the metric worse on the samples (the output cosine breaking ties) is undone, and
// its layers are not proposed again: a layer's own error says where quantization noise enters, not that
// removing it helps the output (errors downstream can grow when their inputs change). The overrides
// accumulate in front of the given ones (first match wins). To reach a target, use search_fix.
struct AutoFix {
  CompareResult before, after;      // after == before when nothing was kept
  Fix applied;                      // every override kept, all rounds
  PlacementOptions options;         // the placement options with them
  NumericsPlan plan;                // the final plan
  int rounds = 0;                   // rounds tried (kept + undone)
  std::vector<std::string> undone;  // one line per undone round
};
AutoFix auto_fix(const Graph& g, const PlacementOptions& base, const ScaleTable* scales,
                 const NumericsOptions& no, const std::vector<TensorMap>& samples, int max_rounds = 3,
                 const std::function<void(int, int)>& progress = {}, const MetricSpec& metric = {});

}  // namespace dlakit::quant
