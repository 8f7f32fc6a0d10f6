// Convolution/pooling geometry, normalised to three spatial dims so 1-D, 2-D and 3-D share one code path
// (missing leading spatial dims get size 1, kernel 1, stride 1, no padding).
#pragma once
#include <array>
#include <string>

#include "kernels/registry.h"

namespace dlakit::ref {

struct WindowGeom {
  int nsp = 2;  // spatial dims in the model (1..3)
  int64_t N = 1, C = 1;
  std::array<int64_t, 3> in{1, 1, 1}, k{1, 1, 1}, s{1, 1, 1}, d{1, 1, 1}, pb{0, 0, 0}, pe{0, 0, 0},
      out{1, 1, 1};
  int64_t in_vol() const { return in[0] * in[1] * in[2]; }
  int64_t out_vol() const { return out[0] * out[1] * out[2]; }
  int64_t k_vol() const { return k[0] * k[1] * k[2]; }
  Shape out_shape(int64_t channels) const;
};

// Reads kernel_shape (or `kernel` when given), strides, dilations, pads and auto_pad of a Conv or pool node
// applied to input shape x; computes the output size. `ceil_mode` is the pools' rounding.
WindowGeom window_geom(const Node& n, const Shape& x, const std::vector<int64_t>& kernel, bool ceil_mode);

// A Conv's kernel size from its weight [M, C/group, k...], checked against kernel_shape.
std::vector<int64_t> kernel_of(const Node& n, const Shape& w);

// ConvTranspose geometry: the input is the "output" of the equivalent convolution (g.in = the
// ConvTranspose's input size, g.out = its output size; pb/pe the pads it crops from the full result).
struct ConvTransposeGeom {
  WindowGeom g;
  int64_t M = 0, G = 1;  // output channels, groups
};
// Of node n (a ConvTranspose) on input x with weight w [C, M/group, k...]: strides, dilations, pads,
// output_padding, output_shape and auto_pad as ONNX defines them.
ConvTransposeGeom conv_transpose_geom(const Node& n, const Shape& x, const Shape& w);

}  // namespace dlakit::ref
