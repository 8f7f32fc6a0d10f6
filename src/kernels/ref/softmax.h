// Softmax's rows (ref/normalization.cpp), for the kernels elsewhere that must give the reference's bits (the
// CUDA backend): each row's maximum, numerics::exp_float of each value minus it, their sum in double in the
// row's order, and each exponential times float(1 / sum).
#pragma once
#include "kernels/ref/common.h"
#include "kernels/registry.h"

namespace dlakit::ref {

// The input viewed as [outer, axis, inner]: opset 13's single axis, or before it the coercion to 2-D at the
// axis (inner 1).
AxisSplit softmax_split(const Node& n, const Shape& s);

}  // namespace dlakit::ref
