// `--calib-algo auto` (the default of `dlakit calibrate`): the histograms of one pass over the data give
// every calibrator's ranges; each candidate's INT8 emulation is scored against FP32 on the calibration
// samples with the task metric (the output cosine breaking ties), and the best one's ranges are written.
// The cache stays TensorRT's format whichever calibrator won.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "placement/placement.h"
#include "quant/calibrate.h"
#include "quant/metric.h"

namespace dlakit::quant {

struct CalibCandidate {
  std::string name;  // "entropy2", "percentile 99.99", ...
  CalibOptions options;
  ScaleTable table;
  Score score;
  int int8_layers = 0;
};

struct AutoCalibration {
  std::vector<CalibCandidate> candidates;
  size_t best = 0;
};

// The percentiles auto tries (dlakit's choice): how much of the tail to clip is what differs most between
// models (on PP-OCRv4 rec, 99.99 and 99.999 are three CER points apart; docs/accuracy.md).
inline const std::vector<double> kAutoPercentiles = {99.9, 99.99, 99.999, 99.9999};
// entropy2, minmax, mse and percentile at each of kAutoPercentiles (and the given one).
std::vector<CalibOptions> auto_candidates(double percentile);
std::string candidate_name(const CalibOptions& o);

// `placement` is the INT8 placement a build would use. `reference`: FP32 outputs of the samples.
AutoCalibration choose_calibration(const Graph& g, const Placement& placement, const HistogramCollector& h,
                                   const std::vector<CalibOptions>& candidates,
                                   const std::vector<TensorMap>& samples,
                                   const std::vector<TensorMap>& reference, const MetricSpec& metric,
                                   const NumericsOptions& no = {},
                                   const std::function<void(int, int)>& progress = {});

}  // namespace dlakit::quant
