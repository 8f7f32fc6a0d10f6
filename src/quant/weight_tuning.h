// Beyond TensorRT's post-training quantization, within the DLA's scheme (per-tensor activation scales,
// per-channel weight scales max|w|/127, round half away from zero, saturation): two optional edits of an
// INT8 convolution's constants, measured on calibration data. They change only the graph's weights and
// biases, so the loadable, the runtime and every executor stay as they are.
//   weight rounding  each weight's level is floor or ceil of w/s, chosen per output channel to minimise
//                    E[(w'.x_q - w.x)^2] over the layer's calibration inputs (x_q: the input on its INT8
//                    grid), by coordinate descent from round-to-nearest; the weight becomes exactly
//                    level * s, so the DLA's own rounding of w'/s gives that level. The channel's largest
//                    |w| keeps its value (and level +-127), so the scale is unchanged bit for bit.
//   bias correction  each channel's bias is shifted by the mean error quantization introduces at the
//                    convolution's output (before its fused activation): mean(w'.x_q) - mean(w.x) over every
//                    output position of every calibration sample, the layer alone on FP32 inputs.
// Convolutions with constant weights whose scales come from the weights (not from a Q/DQ model) only.
#pragma once
#include <string>
#include <vector>

#include "quant/numerics.h"

namespace dlakit::quant {

struct TuneOptions {
  bool bias_correction = false, weight_rounding = false;
  int64_t rounding_positions = 8192;  // output positions per layer (spread over the samples) for rounding
  int64_t max_patch = 4608;  // weight rounding skips layers whose patch (C/groups x kernel) is larger
  bool edits() const { return bias_correction || weight_rounding; }  // whether any weight changes
};

struct TunedLayer {
  std::string layer;
  int64_t flipped = 0;  // weights whose level moved off round-to-nearest
  double objective_reduction =
      0;                      // weight rounding: 1 - E[e^2](chosen) / E[e^2](nearest), e the output error
  double bias_shift_rms = 0;  // bias correction: RMS over channels of the shift, in output units
  std::string skipped;        // why a layer was left alone
};

struct TuneReport {
  std::vector<TunedLayer> layers;
  int tuned = 0;
};

// Edits g's constants in place (new tensors; shared data is never written). `plan` is the INT8 plan of g
// (its modes and input scales say which layers run INT8 on which grid); re-plan g afterwards.
TuneReport tune_weights(Graph& g, const NumericsPlan& plan, const std::vector<TensorMap>& samples,
                        const TuneOptions& o);
// tune_weights with each of several options on its own copy of g, from one pass over the samples (the
// statistics the edits read are the same): the edited copies, in order (reports: their reports). Options
// that round must agree on rounding_positions and max_patch.
std::vector<Graph> tune_weights_each(const Graph& g, const NumericsPlan& plan,
                                     const std::vector<TensorMap>& samples,
                                     const std::vector<TuneOptions>& each,
                                     std::vector<TuneReport>* reports = nullptr);

}  // namespace dlakit::quant
