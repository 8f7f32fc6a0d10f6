// A Slice node's selection as the reference computes it, for kernels elsewhere (the CUDA backend) that
// copy the same elements.
#pragma once
#include <vector>

#include "kernels/registry.h"

namespace dlakit::ref {

struct SliceSpec {
  std::vector<int64_t> start, step, count;  // per dim of the input: first index, step (may be < 0), length
};
// Of node n on input shape `in`: from attributes before opset 10, else from its starts, ends, axes and
// steps inputs (null where absent; starts and ends are required).
SliceSpec slice_of(const Node& n, const Shape& in, const Tensor* starts, const Tensor* ends,
                   const Tensor* axes, const Tensor* steps);

}  // namespace dlakit::ref
