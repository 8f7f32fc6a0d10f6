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
// positive, activations per-tensor; anything else is an Unsupported error naming the node.
ScaleTable fold_qdq(Graph& g);

}  // namespace dlakit::quant
