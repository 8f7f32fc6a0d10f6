// `dlakit compare` as a function: the emulated DLA (INT8 or FP16) against the FP32 reference on the same
// samples, per layer, optionally with the --fix search; and its JSON document. The CLI and the Python
// module both call these, so `dlakit.compare(...)` returns what `dlakit compare --json` prints.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "quant/compare.h"
#include "workflow/placed_model.h"

namespace dlakit::workflow {

struct CompareOptions {
  bool int8 = false;                         // INT8 (needs ranges) or FP16 against FP32
  const quant::ScaleTable* calib = nullptr;  // a calibration cache's ranges; win over a Q/DQ model's
  bool gpu_int8 = false;                     // GPU-fallback layers run INT8 instead of FP32
  bool fix = false;                          // --fix: move flagged layers, re-place, re-measure
  int fix_rounds = 3;                        // at most this many --fix rounds
  double fix_target = 0;  // --fix-target: the search for a mean output cosine (0: --fix's rounds)
};

// The ranges an INT8 comparison uses (the Q/DQ model's, then the cache's); throws when INT8 has none.
quant::ScaleTable compare_scales(const PlacedModel& pm, const CompareOptions& o);

// Runs on pm.placement's options. `progress(done, total)` is optional.
quant::AutoFix compare(const PlacedModel& pm, const std::vector<TensorMap>& samples, const CompareOptions& o,
                       const std::function<void(int, int)>& progress = {});

// One run's metrics: samples, medians, "outputs" and "layers" rows (infinities as null).
nlohmann::json compare_result_json(const quant::CompareResult& r);
// The whole `dlakit compare --json` document.
nlohmann::json compare_json(const std::string& model, const CompareOptions& o, const quant::AutoFix& a);

}  // namespace dlakit::workflow
