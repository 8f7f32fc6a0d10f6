#include "quant/auto_calib.h"

#include <algorithm>

namespace dlakit::quant {

std::vector<CalibOptions> auto_candidates(double percentile) {
  std::vector<CalibOptions> v;
  for (CalibAlgo a : {CalibAlgo::kEntropy2, CalibAlgo::kMinMax, CalibAlgo::kMse}) {
    CalibOptions o;
    o.algo = a;
    v.push_back(o);
  }
  std::vector<double> levels = kAutoPercentiles;
  if (std::find(levels.begin(), levels.end(), percentile) == levels.end()) levels.push_back(percentile);
  for (double p : levels) {
    CalibOptions o;
    o.algo = CalibAlgo::kPercentile;
    o.percentile = p;
    v.push_back(o);
  }
  return v;
}

std::string candidate_name(const CalibOptions& o) {
  if (o.algo != CalibAlgo::kPercentile) return calib_algo_name(o.algo);
  char buf[48];
  std::snprintf(buf, sizeof buf, "percentile %g", o.percentile);
  return buf;
}

AutoCalibration choose_calibration(const Graph& g, const Placement& placement, const HistogramCollector& h,
                                   const std::vector<CalibOptions>& options,
                                   const std::vector<TensorMap>& samples,
                                   const std::vector<TensorMap>& reference, const MetricSpec& metric,
                                   const NumericsOptions& no, const std::function<void(int, int)>& progress) {
  AutoCalibration a;
  for (size_t i = 0; i < options.size(); ++i) {
    CalibCandidate c;
    c.name = candidate_name(options[i]);
    c.options = options[i];
    c.table = h.compute(options[i]);
    const NumericsPlan plan = plan_numerics(g, placement, &c.table, no);
    c.int8_layers = plan.int8_nodes;
    c.score = score_plan(g, plan, samples, reference, metric);
    a.candidates.push_back(std::move(c));
    if (better(metric.kind, a.candidates.back().score, a.candidates[a.best].score)) a.best = i;
    if (progress) progress(int(i) + 1, int(options.size()));
  }
  return a;
}

}  // namespace dlakit::quant
