// Resize (opset 10..17) and Upsample (7..9): nearest and linear, every coordinate transformation mode
// and nearest mode of the spec. Separable: one 1-D pass per resized axis (exact for nearest and linear).
#include <algorithm>
#include <cmath>

#include "base/threadpool.h"
#include "kernels/ref/common.h"

namespace dlakit::ref {
namespace {

struct ResizePlan {
  std::string mode, coord, nearest;
  Shape out;
  std::vector<double> scales;  // per axis
  std::vector<double> roi;     // tf_crop_and_resize: starts..., ends...
  double extrapolation = 0;
  bool from_sizes = false;
};

ResizePlan plan_resize(const Node& n, const Shape& in, const Tensor* roi, const Tensor* scales,
                       const Tensor* sizes) {
  ResizePlan p;
  const size_t r = in.size();
  p.mode = n.attr_str("mode", "nearest");
  const bool upsample = n.op == OpKind::Upsample;
  const bool legacy = upsample || n.opset < 11;  // asymmetric coordinates, "simple" nearest rounding
  p.coord = legacy ? "asymmetric" : n.attr_str("coordinate_transformation_mode", "half_pixel");
  p.nearest = legacy ? "simple" : n.attr_str("nearest_mode", "round_prefer_floor");
  p.extrapolation = n.attr_float("extrapolation_value", 0.f);
  if (p.mode == "bilinear" && upsample) p.mode = "linear";
  if (p.mode != "nearest" && p.mode != "linear")
    fail(Status::kUnsupported, n.label(), ": mode '", p.mode, "' (supported: nearest, linear)");
  if (n.attr_int("antialias", 0)) fail(Status::kUnsupported, n.label(), ": antialias=1");
  static const char* coords[] = {"half_pixel", "pytorch_half_pixel",   "align_corners",
                                 "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  if (std::find(std::begin(coords), std::end(coords), p.coord) == std::end(coords))
    fail(Status::kUnsupported, n.label(), ": coordinate_transformation_mode '", p.coord, "'");
  static const char* nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple"};
  if (std::find(std::begin(nearests), std::end(nearests), p.nearest) == std::end(nearests))
    fail(Status::kUnsupported, n.label(), ": nearest_mode '", p.nearest, "'");
  std::vector<double> sc;
  if (upsample && n.opset < 9) {
    for (float f : n.attr_floats("scales")) sc.push_back(f);
  } else if (scales && scales->numel() > 0) {
    for (int64_t i = 0; i < scales->numel(); ++i) sc.push_back(double(float(scales->at_f64(i))));
  }
  if (sizes && sizes->numel() > 0) {
    if (!sc.empty()) fail(Status::kParseError, n.label(), ": both scales and sizes are given");
    auto sz = sizes->to_i64();
    if (sz.size() != r)
      fail(Status::kShapeError, n.label(), ": sizes has ", sz.size(), " values for rank ", r);
    p.out = sz;
    p.from_sizes = true;
    for (size_t i = 0; i < r; ++i)
      p.scales.push_back(in[i] ? double(float(double(sz[i]) / double(in[i]))) : 1.0);
  } else {
    if (sc.size() != r)
      fail(Status::kShapeError, n.label(), ": scales has ", sc.size(), " values for rank ", r);
    p.scales = sc;
    for (size_t i = 0; i < r; ++i) {
      if (!(sc[i] > 0)) fail(Status::kShapeError, n.label(), ": scale ", sc[i], " must be positive");
      p.out.push_back(int64_t(std::floor(double(in[i]) * sc[i] + 1e-9)));
    }
  }
  if (p.coord == "tf_crop_and_resize") {
    if (!roi || roi->numel() != int64_t(2 * r))
      fail(Status::kShapeError, n.label(), ": tf_crop_and_resize needs an roi of ", 2 * r, " values");
    for (int64_t i = 0; i < roi->numel(); ++i) p.roi.push_back(roi->at_f64(i));
  }
  return p;
}

std::vector<TensorType> infer_resize(const InferContext& c) {
  const Node& n = c.node();
  const bool upsample = n.op == OpKind::Upsample;
  c.require_inputs(1, upsample ? 2 : 4);
  const Tensor* roi = nullptr;
  const Tensor* scales = nullptr;
  const Tensor* sizes = nullptr;
  if (upsample) {
    if (n.opset >= 9) scales = &c.require_constant(1, "scales");
  } else if (n.opset < 11) {
    scales = &c.require_constant(1, "scales");
  } else {
    if (c.has(1) && n.attr_str("coordinate_transformation_mode", "") == "tf_crop_and_resize")
      roi = &c.require_constant(1, "roi");
    if (c.has(2)) scales = &c.require_constant(2, "scales");
    if (c.has(3)) sizes = &c.require_constant(3, "sizes");
  }
  return {{c.dtype(0), plan_resize(n, c.shape(0), roi, scales, sizes).out}};
}

// Source coordinate of output position x along an axis.
double source_coord(const ResizePlan& p, size_t axis, double x, int64_t in_len, int64_t out_len) {
  const double s = p.scales[axis];
  if (p.coord == "half_pixel") return (x + 0.5) / s - 0.5;
  if (p.coord == "pytorch_half_pixel") return out_len > 1 ? (x + 0.5) / s - 0.5 : 0.0;
  if (p.coord == "align_corners") {
    // ONNX measures the resized length as in_len * scale, unrounded, when scales are given.
    const double resized = p.from_sizes ? double(out_len) : double(in_len) * s;
    return out_len == 1 ? 0.0 : x * double(in_len - 1) / (resized - 1.0);
  }
  if (p.coord == "tf_half_pixel_for_nn") return (x + 0.5) / s;
  if (p.coord == "tf_crop_and_resize") {
    const double st = p.roi[axis], en = p.roi[p.scales.size() + axis];
    return out_len > 1 ? st * double(in_len - 1) + x * (en - st) * double(in_len - 1) / double(out_len - 1)
                       : 0.5 * (st + en) * double(in_len - 1);
  }
  return x / s;  // asymmetric
}

int64_t nearest_index(const std::string& mode, double x, bool downsampling) {
  if (mode == "simple") return downsampling ? int64_t(std::ceil(x)) : int64_t(x);
  if (mode == "floor") return int64_t(std::floor(x));
  if (mode == "ceil") return int64_t(std::ceil(x));
  const double f = std::floor(x);
  if (x - f == 0.5) return mode == "round_prefer_ceil" ? int64_t(f) + 1 : int64_t(f);
  return int64_t(std::round(x));
}

void run_resize(const KernelContext& c) {
  const Node& n = c.node();
  const Tensor& X = c.in(0);
  const bool upsample = n.op == OpKind::Upsample;
  const Tensor* roi = !upsample && n.opset >= 11 && c.has(1) ? &c.in(1) : nullptr;
  const Tensor* scales = upsample ? (n.opset >= 9 ? &c.in(1) : nullptr)
                                  : (n.opset < 11 ? &c.in(1) : (c.has(2) ? &c.in(2) : nullptr));
  const Tensor* sizes = !upsample && n.opset >= 11 && c.has(3) ? &c.in(3) : nullptr;
  const ResizePlan p = plan_resize(n, X.shape(), roi, scales, sizes);
  const size_t r = X.shape().size();
  std::vector<float> cur = X.to_f32();
  Shape shape = X.shape();
  std::vector<std::vector<char>> valid(r);
  for (size_t a = 0; a < r; ++a) {
    const int64_t in_len = shape[a], out_len = p.out[a];
    valid[a].assign(size_t(out_len), 1);
    const bool identity =
        in_len == out_len &&
        (p.coord == "half_pixel" || p.coord == "pytorch_half_pixel" || p.coord == "asymmetric") &&
        p.scales[a] == 1.0;
    if (identity || in_len == 0) continue;
    std::vector<int64_t> i0(static_cast<size_t>(out_len)), i1(static_cast<size_t>(out_len));
    std::vector<float> w(size_t(out_len), 0.f);
    for (int64_t j = 0; j < out_len; ++j) {
      double x = source_coord(p, a, double(j), in_len, out_len);
      if (p.coord == "tf_crop_and_resize" && (x < 0 || x > double(in_len - 1))) valid[a][size_t(j)] = 0;
      if (p.mode == "nearest") {
        i0[size_t(j)] = i1[size_t(j)] =
            std::clamp<int64_t>(nearest_index(p.nearest, x, p.scales[a] < 1), 0, in_len - 1);
      } else {
        x = std::clamp(x, 0.0, double(in_len - 1));
        const int64_t x0 = int64_t(std::floor(x));
        i0[size_t(j)] = x0;
        i1[size_t(j)] = std::min(x0 + 1, in_len - 1);
        w[size_t(j)] = float(x - double(x0));
      }
    }
    const AxisSplit sp = split_at(shape, int64_t(a));
    std::vector<float> next(size_t(sp.outer * out_len * sp.inner));
    parallel_for(
        sp.outer,
        [&](int64_t o0, int64_t o1) {
          for (int64_t o = o0; o < o1; ++o)
            for (int64_t j = 0; j < out_len; ++j) {
              const float* s0 = cur.data() + (o * in_len + i0[size_t(j)]) * sp.inner;
              const float* s1 = cur.data() + (o * in_len + i1[size_t(j)]) * sp.inner;
              float* d = next.data() + (o * out_len + j) * sp.inner;
              const float wj = w[size_t(j)];
              if (wj == 0.f) {
                std::copy(s0, s0 + sp.inner, d);
                continue;
              }
              for (int64_t i = 0; i < sp.inner; ++i) d[i] = s0[i] * (1.f - wj) + s1[i] * wj;
            }
        },
        std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_len * sp.inner)));
    cur.swap(next);
    shape[a] = out_len;
  }
  Tensor& Y = c.out(0);
  if (p.coord == "tf_crop_and_resize") {
    std::vector<int64_t> idx(r, 0);
    for (int64_t i = 0; i < Y.numel(); ++i) {
      bool ok = true;
      for (size_t a = 0; a < r; ++a) ok = ok && valid[a][size_t(idx[a])];
      if (!ok) cur[size_t(i)] = float(p.extrapolation);
      for (size_t a = r; a-- > 0;) {
        if (++idx[a] < shape[a]) break;
        idx[a] = 0;
      }
    }
  }
  if (Y.dtype() == DType::kF32) {
    std::copy(cur.begin(), cur.end(), Y.data<float>());
    return;
  }
  for (int64_t i = 0; i < Y.numel(); ++i) store_f64(Y, i, cur[size_t(i)]);
}

}  // namespace
}  // namespace dlakit::ref

namespace dlakit {
extern const OpImpl kImpl_Resize{ref::infer_resize, ref::run_resize};
extern const OpImpl kImpl_Upsample{ref::infer_resize, ref::run_resize};
}  // namespace dlakit
