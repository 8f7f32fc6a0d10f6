#include "kernels/ref/conv_geom.h"

#include <algorithm>
#include <cmath>

namespace dlakit::ref {

Shape WindowGeom::out_shape(int64_t channels) const {
  Shape s{N, channels};
  for (int i = 3 - nsp; i < 3; ++i) s.push_back(out[size_t(i)]);
  return s;
}

namespace {

// Spatial dim i of the node (slot j of g): its input size, kernel, stride and dilation, the last three at
// least 1 (every user's tap arithmetic assumes them).
void set_axis(const Node& n, size_t i, size_t j, int64_t in, int64_t k, int64_t s, int64_t d, WindowGeom& g) {
  if (k < 1 || s < 1 || d < 1)
    fail(Status::kParseError, n.label(), ": kernel ", k, ", stride ", s, ", dilation ", d, " in spatial dim ",
         i, " must all be >= 1");
  g.in[j] = in, g.k[j] = k, g.s[j] = s, g.d[j] = d;
}

}  // namespace

WindowGeom window_geom(const Node& n, const Shape& x, const std::vector<int64_t>& kernel, bool ceil_mode) {
  WindowGeom g;
  if (x.size() < 3 || x.size() > 5)
    fail(Status::kUnsupported, n.label(), ": input of rank ", x.size(), " (", shape_str(x),
         "); 1-D, 2-D and 3-D spatial inputs (rank 3..5) are supported");
  g.nsp = int(x.size()) - 2;
  g.N = x[0];
  g.C = x[1];
  const size_t ns = size_t(g.nsp), off = 3 - ns;
  auto ints = [&](const char* name, int64_t dflt, size_t count) {
    auto v = n.attr_ints(name, std::vector<int64_t>(count, dflt));
    if (v.size() != count)
      fail(Status::kParseError, n.label(), ": attribute ", name, " has ", v.size(), " values, expected ",
           count);
    return v;
  };
  if (kernel.size() != ns)
    fail(Status::kShapeError, n.label(), ": kernel has ", kernel.size(), " spatial dims but the input has ",
         ns);
  auto strides = ints("strides", 1, ns), dil = ints("dilations", 1, ns), pads = ints("pads", 0, 2 * ns);
  const std::string auto_pad = n.attr_str("auto_pad", "NOTSET");
  for (size_t i = 0; i < ns; ++i) {
    const size_t j = off + i;
    set_axis(n, i, j, x[2 + i], kernel[i], strides[i], dil[i], g);
    const int64_t dk = (g.k[j] - 1) * g.d[j] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      g.out[j] = (g.in[j] + g.s[j] - 1) / g.s[j];
      int64_t total = std::max<int64_t>(0, (g.out[j] - 1) * g.s[j] + dk - g.in[j]);
      g.pb[j] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pe[j] = total - g.pb[j];
      continue;
    }
    if (auto_pad == "VALID") {
      g.pb[j] = g.pe[j] = 0;
    } else if (auto_pad == "NOTSET") {
      g.pb[j] = pads[i];
      g.pe[j] = pads[ns + i];
      if (g.pb[j] < 0 || g.pe[j] < 0) fail(Status::kParseError, n.label(), ": negative pads are not valid");
    } else {
      fail(Status::kParseError, n.label(), ": auto_pad '", auto_pad,
           "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
    }
    const int64_t span = g.in[j] + g.pb[j] + g.pe[j] - dk;
    if (span < 0)
      fail(Status::kShapeError, n.label(), ": window of ", dk, " (kernel ", g.k[j], ", dilation ", g.d[j],
           ") is larger than the padded input ", g.in[j] + g.pb[j] + g.pe[j], " in spatial dim ", i);
    g.out[j] = (ceil_mode ? (span + g.s[j] - 1) / g.s[j] : span / g.s[j]) + 1;
    // A ceil-mode window that starts inside the end padding is dropped (PyTorch and ONNX Runtime agree).
    if (ceil_mode && (g.out[j] - 1) * g.s[j] >= g.in[j] + g.pb[j]) --g.out[j];
  }
  return g;
}

std::vector<int64_t> kernel_of(const Node& n, const Shape& w) {
  std::vector<int64_t> k(w.begin() + 2, w.end());
  auto attr = n.attr_ints("kernel_shape", k);
  if (attr != k)
    fail(Status::kShapeError, n.label(), ": kernel_shape ", shape_str(attr),
         " disagrees with the weight shape ", shape_str(w));
  return k;
}

ConvTransposeGeom conv_transpose_geom(const Node& n, const Shape& x, const Shape& w) {
  ConvTransposeGeom t;
  t.G = n.attr_int("group", 1);
  if (x.size() < 3 || x.size() > 5 || w.size() != x.size())
    fail(Status::kUnsupported, n.label(), ": input ", shape_str(x), " and weight ", shape_str(w),
         " must both be rank 3..5");
  if (t.G < 1 || x[1] != w[0] || x[1] % t.G)
    fail(Status::kShapeError, n.label(), ": input channels ", x[1], ", weight ", shape_str(w), ", group ",
         t.G, " do not agree");
  t.M = w[1] * t.G;
  WindowGeom& g = t.g;
  g.nsp = int(x.size()) - 2;
  g.N = x[0];
  g.C = x[1];
  const size_t ns = size_t(g.nsp), off = 3 - ns;
  auto kernel = kernel_of(n, w);
  auto strides = n.attr_ints("strides", std::vector<int64_t>(ns, 1));
  auto dil = n.attr_ints("dilations", std::vector<int64_t>(ns, 1));
  auto pads = n.attr_ints("pads", std::vector<int64_t>(2 * ns, 0));
  auto outpad = n.attr_ints("output_padding", std::vector<int64_t>(ns, 0));
  auto out_shape = n.attr_ints("output_shape", {});
  if (out_shape.size() == ns + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  const std::string auto_pad = n.attr_str("auto_pad", "NOTSET");
  if (strides.size() != ns || dil.size() != ns || pads.size() != 2 * ns || outpad.size() != ns ||
      (!out_shape.empty() && out_shape.size() != ns))
    fail(Status::kParseError, n.label(),
         ": strides/dilations/pads/output_padding/output_shape lengths do not match ", ns, " spatial dims");
  for (size_t i = 0; i < ns; ++i) {
    const size_t j = off + i;
    set_axis(n, i, j, x[2 + i], kernel[i], strides[i], dil[i], g);
    const int64_t dk = (g.k[j] - 1) * g.d[j] + 1;
    const int64_t full = g.s[j] * (g.in[j] - 1) + outpad[i] + dk;
    if (!out_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t target = out_shape.empty() ? g.in[j] * g.s[j] : out_shape[i];
      // Negative totals clamp to 0: the extra output rows/cols receive only the bias (as ONNX Runtime does).
      const int64_t total = std::max<int64_t>(0, full - target);
      // ONNX: SAME_UPPER puts the smaller half first; otherwise the larger half goes first.
      g.pb[j] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pe[j] = total - g.pb[j];
      g.out[j] = target;
    } else {
      g.pb[j] = auto_pad == "VALID" ? 0 : pads[i];
      g.pe[j] = auto_pad == "VALID" ? 0 : pads[ns + i];
      g.out[j] = full - g.pb[j] - g.pe[j];
    }
    if (g.out[j] < 1) fail(Status::kShapeError, n.label(), ": output size ", g.out[j], " in spatial dim ", i);
  }
  return t;
}

}  // namespace dlakit::ref
