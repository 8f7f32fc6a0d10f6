// Inputs, calibration and metrics shared by the model-level test programs (header-only).
#pragma once
#include <cmath>
#include <cstdint>
#include <random>

#include "engine/engine.h"
#include "quant/calibrate.h"

namespace dlakit::test_data {

// N(0, 1) for every graph input, one generator per input seeded seed, seed + 1, ... (never zeros).
inline TensorMap random_inputs(const Graph& g, uint32_t seed = 11) {
  TensorMap in;
  for (int id : g.inputs) {
    std::mt19937 gen(seed++);
    std::normal_distribution<float> d(0.f, 1.f);
    Tensor t(g.value(id).type.dtype, g.value(id).type.shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(gen);
    in[g.value(id).name] = t;
  }
  return in;
}

// Scales from `batches` random batches (random_inputs with the default seed), dlakit's default calibrator.
inline quant::ScaleTable random_calibration(const Graph& g, int batches) {
  quant::HistogramCollector hc(g);
  for (int i = 0; i < batches; ++i) hc.add(random_inputs(g));
  return hc.compute({});
}

// Cosine similarity of two tensors of the same size (1 when both are zero).
inline double cosine(const Tensor& a, const Tensor& b) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.at_f64(i), y = b.at_f64(i);
    ab += x * y, aa += x * x, bb += y * y;
  }
  return aa == 0 && bb == 0 ? 1.0 : ab / std::sqrt(aa * bb);
}

}  // namespace dlakit::test_data
