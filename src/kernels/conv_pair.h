// The reference engine's padded pair (engine/fusion.h): a Conv whose output only another Conv reads, and that
// one reads it through a padded copy (conv_direct.h). The first writes its output straight into the second's
// padded layout, so the copy, and its extra pass over the data, is not made.
#pragma once
#include <vector>

#include "ir/graph.h"

namespace dlakit::ref {
// Writes y (the second Conv's output) and returns true where both convolutions run on the direct kernels
// with one group and one image and the second reads the first's output in its stride-1 padded layout, with
// the bits of the two run one after the other; otherwise writes nothing and returns false. `first_in` and
// `second_in` are the nodes' inputs (second_in[0], the first's output, is not read); the nodes carry their
// fused epilogues (dlakit_activation, dlakit_residual) and their weights are constants.
bool run_conv_pair(const Node& first, const std::vector<const Tensor*>& first_in, const Node& second,
                   const std::vector<const Tensor*>& second_in, Tensor& y);
}  // namespace dlakit::ref
