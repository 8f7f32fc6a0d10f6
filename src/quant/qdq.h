// Q/DQ (quantization-aware-trained) models: the scales live in QuantizeLinear/DequantizeLinear nodes.
// The DLA takes implicit quantization only (dla-constraints.md §4.1), so dlakit folds the Q/DQ nodes away
// and keeps their scales, as NVIDIA's qdq-translator does: activation Q->DQ pairs become the range of the
// tensor they quantize (amax = scale * 127); weight DQs (or Q->DQ on a constant) become float weights
// on the quantization grid plus their per-channel scales.
#pragma once
#include "ir/graph.h"
#include "quant/calib_cache.h"

namespace dlakit::quant {

bool has_qdq(const Graph& g);

// Folds every Q/DQ node and returns the scales. Zero points must be 0 (the DLA is symmetric), scales
// positive, activations per-tensor; anything else is an Unsupported error naming the node. Then, as
// NVIDIA's qdq-translator does by default, copies scales across the ops that keep ranges
// (propagate_unchanged_scales), so TensorRT runs those tensors in INT8 on the DLA too.
ScaleTable fold_qdq(Graph& g);

// qdq-translator's rule (DLASW tools/qdq-translator, its default op set): in graph order, a MaxPool,
// Flatten, Relu, Pad, Transpose, Reshape or Squeeze whose input has a scale and whose output has none
// gives the output the input's scale; then in reverse order, one whose output has a scale and whose input
// has none gives the input the output's scale; a Sigmoid, backwards only, gives its input the range
// ln(a / (1 - a)) of its output's range a (when 1/2 < a < 1: a positive range; the input is unbounded for
// a >= 1). Returns
// how many scales were added.
int propagate_unchanged_scales(const Graph& g, ScaleTable& t);

}  // namespace dlakit::quant
