// INT8 calibration as `dlakit calibrate` runs it: one FP32 pass per sample over the placed model's graph
// feeding the histograms, then one scale table per calibrator. Samples come one at a time from a callback
// so the Python module can stream an iterator without holding every sample.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "quant/calibrator.h"
#include "workflow/placed_model.h"

namespace dlakit::workflow {

using SampleSource = std::function<bool(TensorMap& sample)>;  // fills the next sample; false when done

struct CalibrateOptions {
  std::vector<quant::CalibAlgo> algos = {quant::CalibAlgo::kEntropy2};
  double percentile = 99.99;
  int trt_version = 100300;  // TensorRT version written in the cache header
};

struct Calibration {
  std::vector<quant::ScaleTable> tables;  // one per algorithm, in the order asked
  quant::ScaleTable maxes;                // the largest |x| seen per tensor (minmax), for reports
  int samples = 0;
};

// "entropy2" | "minmax" | "percentile" | "mse" | "all" (the four).
std::vector<quant::CalibAlgo> parse_calib_algos(const std::string& name);

// Throws for a Q/DQ model: its scales come from the model.
void require_calibratable(const PlacedModel& pm);

// Throws for a Q/DQ model (its scales come from the model) and when the source gives no sample.
// `after_sample` (optional) is called with the count of samples seen so far.
Calibration calibrate(const PlacedModel& pm, const SampleSource& next, const CalibrateOptions& o,
                      const std::function<void(int)>& after_sample = {});

}  // namespace dlakit::workflow
