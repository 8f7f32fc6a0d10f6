#include "workflow/calibrate.h"

#include "base/error.h"
#include "quant/calibrate.h"

namespace dlakit::workflow {

std::vector<quant::CalibAlgo> parse_calib_algos(const std::string& name) {
  if (name == "all")
    return {quant::CalibAlgo::kEntropy2, quant::CalibAlgo::kMinMax, quant::CalibAlgo::kPercentile,
            quant::CalibAlgo::kMse};
  return {quant::parse_calib_algo(name)};
}

void require_calibratable(const PlacedModel& pm) {
  if (pm.has_qdq)
    fail(Status::kInvalidArgument, pm.placement.model,
         " is a Q/DQ model: its scales come from the model; use `dlakit qdq-to-cache` instead");
}

Calibration calibrate(const PlacedModel& pm, const SampleSource& next, const CalibrateOptions& o,
                      const std::function<void(int)>& after_sample) {
  require_calibratable(pm);
  quant::HistogramCollector c(pm.graph);
  TensorMap sample;
  while (next(sample)) {
    c.add(sample);
    sample.clear();
    if (after_sample) after_sample(c.samples());
  }
  if (c.samples() == 0) fail(Status::kInvalidArgument, "calibration got no samples");
  Calibration r;
  quant::CalibOptions mm;
  mm.algo = quant::CalibAlgo::kMinMax;
  r.maxes = c.compute(mm);
  for (quant::CalibAlgo a : o.algos) {
    quant::CalibOptions co;
    co.algo = a;
    co.percentile = o.percentile;
    r.tables.push_back(c.compute(co));
    r.tables.back().trt_version = o.trt_version;
  }
  r.samples = c.samples();
  return r;
}

}  // namespace dlakit::workflow
