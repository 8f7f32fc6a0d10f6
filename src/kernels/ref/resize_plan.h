// A Resize (or Upsample) of the last two axes of a float tensor, as the reference computes it, for kernels
// elsewhere (the CUDA backend) that must give its bits: each output row is blended from two input rows
// (row_w on the second; 0: a copy of the first), then each output value from two values of that blended row
// (col_w). All products and sums in float, none contracted into a multiply-add.
#pragma once
#include <optional>
#include <vector>

#include "kernels/registry.h"

namespace dlakit::ref {

// Where a Resize or Upsample node's constant inputs are (-1: none): roi, scales and sizes from Resize opset
// 11; scales alone before, and for Upsample from opset 9 (before, an attribute).
struct ResizeInputs {
  int roi = -1, scales = -1, sizes = -1;
};
ResizeInputs resize_inputs(const Node& n);

struct ResizeLastTwo {
  int64_t planes = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  std::vector<int64_t> row0, row1, col0, col1;  // per output row / column: the sources
  std::vector<float> row_w, col_w;
};

// The constants are the node's roi, scales and sizes inputs as their opset places them (null where
// absent). Nothing where the resize touches other axes, crops (tf_crop_and_resize) or is empty.
std::optional<ResizeLastTwo> resize_last_two_plan(const Node& n, const Shape& in, const Tensor* roi,
                                                  const Tensor* scales, const Tensor* sizes);

}  // namespace dlakit::ref
