// `dlakit compare --fix --fix-target VALUE`: the smallest set of INT8 layers to keep in FP16 so that the task
// metric on the calibration data reaches VALUE, whenever all-FP16 reaches it.
//   1. all INT8 and all FP16 are measured; a target FP16 misses is reported as unreachable on the DLA.
//   2. Sensitivity, measured: every INT8 layer's own error (compare_numerics; layers inside a fused
//      pipeline that add none are not ranked), then for `candidates` layers (half with the largest own
//      error, half nearest the outputs, where a small relative error can still flip the task's decision),
//      the score with that layer alone moved to FP16 (with the producers fused into it and its INT8
//      readers, as --fix moves it), on the first `sensitivity_samples` samples.
//   3. Ranking: the layers whose move alone raised the output cosine, most first (the cosine is continuous
//      where a task metric such as CER moves in steps of one character), then the unmeasured by own error,
//      then the measured ones whose move lowered it. The number of leading layers to move is bisected: k - 1
//      layers miss the target and k meet it, both measured on every sample (the metric need not be
//      monotonic in k; every point is measured, none is assumed).
//   4. Back to INT8: each of the k layers whose move takes MACs out of INT8 (counted on the plan, fused
//      producers included), most first, is returned to INT8 alone and stays there when the target is still
//      met on every sample (the effects of moves do not add up, so the k leading layers can hold some the
//      target does not need in FP16).
//   5. Optional (return_groups): fused groups back to INT8. A moved layer that other moved layers pull
//      back to FP16 (their fused producer, or an INT8 reader moved with them) is returned with them. These
//      groups, most MACs first, are returned as a prefix, and the longest prefix that meets is bisected
//      (about log2(groups) plans).
// Every measured point goes into the curve (moves, FP16 layers, INT8 share of the DLA's MACs, metric);
// `predict_latency`, once the DLA latency model exists, adds a predicted latency to each point.
#pragma once
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "quant/compare.h"

namespace dlakit::quant {

struct SearchOptions {
  MetricSpec metric;
  double target = 0;
  int candidates = 32;           // layers measured alone; 0: every INT8 layer
  int sensitivity_samples = 16;  // samples those are measured on (0: all)
  // Step 5 (fused groups back to INT8). Off by default: on PP-OCRv4 det it met the target on the
  // calibration images and missed it on the evaluation images (docs/int8.md).
  bool return_groups = false;
  // Optional: the predicted latency (ms) of a placement and its plan; NaN when unset.
  std::function<double(const Placement&, const NumericsPlan&)> predict_latency;
};

struct LayerSensitivity {
  std::string layer, op;
  double own_rel_l2 = 0;
  bool measured = false;  // moved alone and scored
  Score alone;            // the score with this layer (and its group) in FP16, everything else as before
};

struct CurvePoint {
  int moves = 0;  // leading layers of the ranking moved to FP16
  // Step 4 (back to INT8): how many of those this point returns to INT8, the last one tried being
  // `returned_layer` (empty on the bisection's points).
  int returned = 0;
  std::string returned_layer;
  int int8_layers = 0, fp16_layers = 0;
  double int8_mac_share = 0;  // INT8 MACs / DLA MACs
  Score score;
  bool meets = false;
  double predicted_latency_ms = std::nan("");
};

struct SearchResult {
  Score all_int8, all_fp16;
  bool reachable = false;  // all-FP16 meets the target
  bool reached = false;    // the chosen configuration meets it
  std::vector<LayerSensitivity> ranking;
  // The samples the layers are measured alone on (the first sensitivity_samples), and all INT8 on them:
  // what their scores compare with (the all-INT8 score above is on every sample).
  size_t sensitivity_samples = 0;
  Score sensitivity_base;
  std::vector<CurvePoint> curve;  // every measured point, by moves (all FP16 last, moves = -1)
  int chosen = -1;                // index into curve; -1: none meets the target
  CompareResult before;           // all INT8: own errors per layer
  Fix applied;                    // the chosen moves
  PlacementOptions options;       // the placement options with them
  NumericsPlan plan;
  int evaluations = 0;  // plans scored over the samples (a memo's scores included)
};

// What a search measures whatever its target: the FP32 reference, the all-INT8 comparison and every plan's
// score (by its placement options and sample count). Searches of one model, base placement, scale table,
// numerics options, samples and metric that share a memo (other targets, return_groups) measure no plan
// twice; search_fix fills it and refuses one filled from other inputs (the graph, scales and samples by
// address: the same objects).
struct SearchMemo {
  const Graph* graph = nullptr;  // the inputs it was filled from (null: empty)
  const ScaleTable* scales = nullptr;
  const std::vector<TensorMap>* samples = nullptr;
  PlacementOptions base;
  NumericsOptions numerics;
  MetricSpec metric;
  std::vector<TensorMap> reference;
  CompareResult before;
  std::map<std::pair<PlacementOptions, size_t>, Score> scores;  // (placement, samples scored) -> score
  int measured = 0;                                             // plans scored on samples (not found here)
};

SearchResult search_fix(const Graph& g, const PlacementOptions& base, const ScaleTable* scales,
                        const NumericsOptions& no, const std::vector<TensorMap>& samples,
                        const SearchOptions& o, const std::function<void(const std::string&)>& log = {},
                        SearchMemo* memo = nullptr);

// Step 5's groups: for each moved layer that another moved layer's move covers (as a fused producer or an
// INT8 reader), the layer with every moved layer that covers it; each sorted, no duplicates, none alone.
std::vector<std::vector<std::string>> fused_groups(const CompareResult& before,
                                                   const std::vector<std::string>& moved);

// INT8 MACs over the DLA's MACs in a placement and its plan.
double int8_mac_share(const Placement& p, const NumericsPlan& plan);

}  // namespace dlakit::quant
