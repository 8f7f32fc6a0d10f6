// The reference engine's fused inverted-residual pair (engine/fusion.h): a pointwise Conv and the
// depthwise Conv that alone reads its output, on the fused kernel (conv_direct.h: ExpandDepthwiseArgs).
#pragma once
#include "ir/graph.h"

namespace dlakit::ref {
// Writes y (the depthwise's output) and returns true where this CPU's fused kernel takes the pair, with the
// bits of the two layers run one after the other; otherwise writes nothing and returns false. The nodes carry
// their fused epilogues (dlakit_activation); the weights are constants.
bool run_expand_depthwise(const Node& expand, const Tensor& x, const Tensor& expand_w, const Tensor* expand_b,
                          const Node& depthwise, const Tensor& w, const Tensor* b, Tensor& y);
}  // namespace dlakit::ref
