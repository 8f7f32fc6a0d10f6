// Resize (opset 10..17) and Upsample (7..9): nearest and linear, every coordinate transformation mode
// and nearest mode of the spec. Separable: one 1-D pass per resized axis (exact for nearest and linear);
// float tensors resized in their last two axes only take both passes row by row.
#include <algorithm>
#include <cmath>

#include "base/threadpool.h"
#include "kernels/ref/common.h"
#include "kernels/ref/resize_plan.h"

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
  c.require_inputs(1, n.op == OpKind::Upsample ? 2 : 4);
  const ResizeInputs at = resize_inputs(n);
  const bool optional = at.sizes >= 0;  // from Resize opset 11 each of the three may be omitted
  const Tensor* roi = nullptr;
  const Tensor* scales = nullptr;
  const Tensor* sizes = nullptr;
  if (at.roi >= 0 && c.has(at.roi) &&
      n.attr_str("coordinate_transformation_mode", "") == "tf_crop_and_resize")
    roi = &c.require_constant(at.roi, "roi");
  if (at.scales >= 0 && (!optional || c.has(at.scales))) scales = &c.require_constant(at.scales, "scales");
  if (at.sizes >= 0 && c.has(at.sizes)) sizes = &c.require_constant(at.sizes, "sizes");
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

// One axis's 1-D pass: output j reads sources i0[j] and i1[j] with weight w[j] on the second (0: a plain copy
// of the first); identity axes are left alone.
struct AxisMap {
  bool identity = false;
  std::vector<int64_t> i0, i1;
  std::vector<float> w;
  std::vector<char> valid;  // tf_crop_and_resize: outputs whose source lies outside the input
};

AxisMap axis_map(const ResizePlan& p, size_t a, int64_t in_len) {
  const int64_t out_len = p.out[a];
  AxisMap m;
  m.valid.assign(size_t(out_len), 1);
  m.identity = in_len == 0 ||
               (in_len == out_len &&
                (p.coord == "half_pixel" || p.coord == "pytorch_half_pixel" || p.coord == "asymmetric") &&
                p.scales[a] == 1.0);
  if (m.identity) return m;
  m.i0.resize(size_t(out_len));
  m.i1.resize(size_t(out_len));
  m.w.assign(size_t(out_len), 0.f);
  for (int64_t j = 0; j < out_len; ++j) {
    double x = source_coord(p, a, double(j), in_len, out_len);
    if (p.coord == "tf_crop_and_resize" && (x < 0 || x > double(in_len - 1))) m.valid[size_t(j)] = 0;
    if (p.mode == "nearest") {
      m.i0[size_t(j)] = m.i1[size_t(j)] =
          std::clamp<int64_t>(nearest_index(p.nearest, x, p.scales[a] < 1), 0, in_len - 1);
    } else {
      x = std::clamp(x, 0.0, double(in_len - 1));
      const int64_t x0 = int64_t(std::floor(x));
      m.i0[size_t(j)] = x0;
      m.i1[size_t(j)] = std::min(x0 + 1, in_len - 1);
      m.w[size_t(j)] = float(x - double(x0));
    }
  }
  return m;
}

// One output value of a pass: the source, or the two sources blended.
inline float blend(const AxisMap& m, const float* src, int64_t j, int64_t inner) {
  const float wj = m.w[size_t(j)];
  const float a = src[m.i0[size_t(j)] * inner];
  return wj == 0.f ? a : a * (1.f - wj) + src[m.i1[size_t(j)] * inner] * wj;
}

// Float tensors resized in their last two axes only (upsampling in a detector's neck): the same two passes
// (rows, then columns) with the same arithmetic, fused per output row so the data is written once.
void resize_last_two(const AxisMap& rows, const AxisMap& cols, const float* x, int64_t planes, int64_t in_h,
                     int64_t in_w, int64_t out_h, int64_t out_w, float* y) {
  parallel_for(
      planes * out_h,
      [&](int64_t s, int64_t e) {
        std::vector<float> row(static_cast<size_t>(in_w));
        for (int64_t pr = s; pr < e; ++pr) {
          const int64_t plane = pr / out_h, oh = pr % out_h;
          const float* in = x + plane * in_h * in_w;
          const float* src = in + oh * in_w;
          if (!rows.identity) {
            const float wh = rows.w[size_t(oh)];
            src = in + rows.i0[size_t(oh)] * in_w;
            if (wh != 0.f) {
              const float* s1 = in + rows.i1[size_t(oh)] * in_w;
              for (int64_t i = 0; i < in_w; ++i) row[size_t(i)] = src[i] * (1.f - wh) + s1[i] * wh;
              src = row.data();
            }
          }
          float* d = y + pr * out_w;
          if (cols.identity) {
            std::copy(src, src + in_w, d);
            continue;
          }
          for (int64_t j = 0; j < out_w; ++j) d[j] = blend(cols, src, j, 1);
        }
      },
      std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_w)));
}

std::vector<AxisMap> axis_maps(const ResizePlan& p, const Shape& in) {
  std::vector<AxisMap> maps;
  for (size_t a = 0; a < in.size(); ++a) maps.push_back(axis_map(p, a, in[a]));
  return maps;
}

// Whether the resize changes its last two axes only, not empty and not cropped: resize_last_two's case, and
// the one resize_last_two_plan gives other backends.
bool last_two_only(const ResizePlan& p, const std::vector<AxisMap>& maps, const Shape& in) {
  const size_t r = in.size();
  if (r < 2 || p.coord == "tf_crop_and_resize" || numel(in) == 0) return false;
  for (size_t a = 0; a + 2 < r; ++a)
    if (!maps[a].identity) return false;
  return true;
}

// The resize's sources for an axis of the last two as resize_last_two reads them (an identity axis: each
// output from the same index, weight 0).
void sources(const AxisMap& m, int64_t out_len, std::vector<int64_t>& i0, std::vector<int64_t>& i1,
             std::vector<float>& w) {
  if (!m.identity) {
    i0 = m.i0, i1 = m.i1, w = m.w;
    return;
  }
  i0.resize(size_t(out_len));
  for (int64_t j = 0; j < out_len; ++j) i0[size_t(j)] = j;
  i1 = i0;
  w.assign(size_t(out_len), 0.f);
}

}  // namespace

std::optional<ResizeLastTwo> resize_last_two_plan(const Node& n, const Shape& in, const Tensor* roi,
                                                  const Tensor* scales, const Tensor* sizes) {
  const ResizePlan p = plan_resize(n, in, roi, scales, sizes);
  const std::vector<AxisMap> maps = axis_maps(p, in);
  if (!last_two_only(p, maps, in)) return std::nullopt;
  const size_t r = in.size();
  ResizeLastTwo z;
  z.in_h = in[r - 2], z.in_w = in[r - 1], z.out_h = p.out[r - 2], z.out_w = p.out[r - 1];
  z.planes = numel(in) / (z.in_h * z.in_w);
  sources(maps[r - 2], z.out_h, z.row0, z.row1, z.row_w);
  sources(maps[r - 1], z.out_w, z.col0, z.col1, z.col_w);
  return z;
}

ResizeInputs resize_inputs(const Node& n) {
  if (n.op == OpKind::Upsample) return {-1, n.opset >= 9 ? 1 : -1, -1};
  if (n.opset < 11) return {-1, 1, -1};
  return {1, 2, 3};
}

namespace {

void run_resize(const KernelContext& c) {
  const Node& n = c.node();
  const Tensor& X = c.in(0);
  const ResizeInputs at = resize_inputs(n);
  auto input = [&](int k) { return k >= 0 && c.has(k) ? &c.in(k) : nullptr; };
  const ResizePlan p = plan_resize(n, X.shape(), input(at.roi), input(at.scales), input(at.sizes));
  if (p.out != c.out(0).shape())
    fail(Status::kShapeError, n.label(), ": its scales or sizes give ", shape_str(p.out),
         ", its output holds ", shape_str(c.out(0).shape()));
  const size_t r = X.shape().size();
  const std::vector<AxisMap> maps = axis_maps(p, X.shape());
  Tensor& Y = c.out(0);
  if (X.dtype() == DType::kF32 && Y.dtype() == DType::kF32 && last_two_only(p, maps, X.shape())) {
    const Shape& in = X.shape();
    return resize_last_two(maps[r - 2], maps[r - 1], X.data<float>(), X.numel() / (in[r - 2] * in[r - 1]),
                           in[r - 2], in[r - 1], p.out[r - 2], p.out[r - 1], Y.data<float>());
  }
  std::vector<float> cur = X.to_f32();
  Shape shape = X.shape();
  for (size_t a = 0; a < r; ++a) {
    const AxisMap& m = maps[a];
    if (m.identity) continue;
    const int64_t in_len = shape[a], out_len = p.out[a];
    const AxisSplit sp = split_at(shape, int64_t(a));
    std::vector<float> next(size_t(sp.outer * out_len * sp.inner));
    parallel_for(
        sp.outer,
        [&](int64_t o0, int64_t o1) {
          for (int64_t o = o0; o < o1; ++o)
            for (int64_t j = 0; j < out_len; ++j) {
              const float* src = cur.data() + o * in_len * sp.inner;
              float* d = next.data() + (o * out_len + j) * sp.inner;
              for (int64_t i = 0; i < sp.inner; ++i) d[i] = blend(m, src + i, j, sp.inner);
            }
        },
        std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_len * sp.inner)));
    cur.swap(next);
    shape[a] = out_len;
  }
  if (p.coord == "tf_crop_and_resize") {
    std::vector<int64_t> idx(r, 0);
    for (int64_t i = 0; i < Y.numel(); ++i) {
      bool ok = true;
      for (size_t a = 0; a < r; ++a) ok = ok && maps[a].valid[size_t(idx[a])];
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
