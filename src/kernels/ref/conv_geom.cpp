#include "kernels/ref/conv_geom.h"

#include <cmath>

namespace dlakit::ref {

Shape WindowGeom::out_shape(int64_t channels) const {
  Shape s{N, channels};
  for (int i = 3 - nsp; i < 3; ++i) s.push_back(out[size_t(i)]);
  return s;
}

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
    size_t j = off + i;
    g.in[j] = x[2 + i];
    g.k[j] = kernel[i];
    g.s[j] = strides[i];
    g.d[j] = dil[i];
    if (g.k[j] < 1 || g.s[j] < 1 || g.d[j] < 1)
      fail(Status::kParseError, n.label(), ": kernel ", g.k[j], ", stride ", g.s[j], ", dilation ", g.d[j],
           " in spatial dim ", i, " must all be >= 1");
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

}  // namespace dlakit::ref
