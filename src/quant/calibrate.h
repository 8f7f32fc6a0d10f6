// Calibration: one pass of the FP32 graph over the data, a histogram of |x| per float activation (graph
// inputs and every node output), then a calibrator turns each histogram into a dynamic range.
#pragma once
#include <vector>

#include "engine/engine.h"
#include "quant/calib_cache.h"
#include "quant/calibrator.h"

namespace dlakit::quant {

class HistogramCollector {
 public:
  explicit HistogramCollector(const Graph& g);
  TensorMap add(const TensorMap& inputs);  // runs the graph once; returns its outputs (the FP32 reference)
  int samples() const { return samples_; }
  // Ranges in graph order (inputs, then node outputs); tensors that never held a value are left out.
  ScaleTable compute(const CalibOptions& o) const;

 private:
  const Graph& g_;
  ReferenceEngine engine_;
  std::vector<AbsHistogram> hist_;  // per value id
  std::vector<int> order_;          // value ids in graph order
  int samples_ = 0;
};

}  // namespace dlakit::quant
