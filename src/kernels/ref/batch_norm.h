// BatchNormalization (inference) as the reference computes it: y = x * a + b per channel, a and b from the
// node's constants in float (a = scale / sqrt(var + eps), b = bias - mean * a). Kernels elsewhere (the CUDA
// backend) take a and b from here to give its bits.
#pragma once
#include <vector>

#include "kernels/registry.h"

namespace dlakit::ref {

struct BatchNormAffine {
  std::vector<float> a, b;  // per channel
};
BatchNormAffine batch_norm_affine(const Node& n, const Tensor& scale, const Tensor& bias, const Tensor& mean,
                                  const Tensor& var);

}  // namespace dlakit::ref
