// No silent collapse: INT8 emulation measured against FP32 on the data at hand; below the metric's
// collapse threshold (metric.h) the check names the layers with the most error of their own, so the
// caller can warn with them and with the command that fixes it.
#pragma once
#include <string>
#include <vector>

#include "quant/compare.h"

namespace dlakit::quant {

struct Int8Check {
  MetricSpec metric;
  Score score;
  double threshold = 0;
  bool collapsed = false;
  int samples = 0;
  std::vector<LayerError> worst;  // when collapsed: the INT8 layers with the largest own error, at most 5
};

// `known`: the plan's score on these samples when the caller measured it already (auto calibration).
Int8Check check_int8(const Graph& g, const NumericsPlan& plan, const std::vector<TensorMap>& samples,
                     const MetricSpec& metric, const Score* known = nullptr);
// "INT8 collapses on this data: CER 100.00 % against FP32 (warning threshold 5.00 %); ..." (one paragraph).
std::string describe(const Int8Check& c);

}  // namespace dlakit::quant
