// BatchNormalization (inference), LRN (across channels) and Softmax (both the opset<13 "coerce to 2-D"
// semantics and the opset>=13 single-axis semantics).
#include <algorithm>
#include <cmath>

#include "base/threadpool.h"
#include "kernels/ref/batch_norm.h"
#include "kernels/ref/common.h"
#include "kernels/ref/softmax.h"
#include "numerics/exp_float.h"

namespace dlakit::ref {
namespace {

void require_f32(const InferContext& c, int i) {
  if (c.dtype(i) != DType::kF32)
    c.unsupported("input #", i, " has dtype ", dtype_name(c.dtype(i)), "; float32 only");
}

std::vector<TensorType> infer_bn(const InferContext& c) {
  c.require_inputs(5, 5);
  if (c.node().attr_int("training_mode", 0) != 0)
    c.unsupported("training_mode=1 (only inference is supported)");
  if (c.node().outputs.size() > 1) {
    for (size_t i = 1; i < c.node().outputs.size(); ++i)
      if (c.node().outputs[i] >= 0) c.unsupported("running mean/var outputs (training) are not supported");
  }
  require_f32(c, 0);
  const Shape& x = c.shape(0);
  if (x.size() < 2) c.invalid("input ", shape_str(x), " must have rank >= 2");
  for (int i = 1; i < 5; ++i)
    if (c.shape(i) != Shape{x[1]})
      c.invalid("parameter #", i, " has shape ", shape_str(c.shape(i)), ", expected [", x[1], "]");
  return {c.type(0)};
}

}  // namespace

BatchNormAffine batch_norm_affine(const Node& n, const Tensor& scale, const Tensor& bias, const Tensor& mean,
                                  const Tensor& var) {
  const float eps = n.attr_float("epsilon", 1e-5f);
  const float *sc = scale.data<float>(), *bi = bias.data<float>(), *mu = mean.data<float>(),
              *va = var.data<float>();
  BatchNormAffine f;
  for (int64_t ch = 0; ch < scale.numel(); ++ch) {
    const float a = sc[ch] / std::sqrt(va[ch] + eps);
    f.a.push_back(a);
    f.b.push_back(bi[ch] - mu[ch] * a);
  }
  return f;
}

AxisSplit softmax_split(const Node& n, const Shape& s) {
  const int64_t rank = int64_t(s.size());
  const int64_t axis = normalize_axis(n, n.attr_int("axis", n.opset < 13 ? 1 : -1), rank);
  if (n.opset >= 13) return split_at(s, axis);
  AxisSplit r;  // opset < 13: the input is coerced to 2-D [prod(d < axis), prod(d >= axis)]
  for (int64_t i = 0; i < rank; ++i) (i < axis ? r.outer : r.axis) *= s[size_t(i)];
  return r;
}

namespace {

void run_bn(const KernelContext& c) {
  const Tensor& X = c.in(0);
  const BatchNormAffine f = batch_norm_affine(c.node(), c.in(1), c.in(2), c.in(3), c.in(4));
  const int64_t N = X.dim(0), C = X.dim(1), vol = X.numel() / std::max<int64_t>(N * C, 1);
  const float* x = X.data<float>();
  float* y = c.out(0).data<float>();
  parallel_for(
      N * C,
      [&](int64_t s, int64_t e) {
        for (int64_t nc = s; nc < e; ++nc) {
          const float a = f.a[size_t(nc % C)], b = f.b[size_t(nc % C)];
          for (int64_t i = 0; i < vol; ++i) y[nc * vol + i] = x[nc * vol + i] * a + b;
        }
      },
      4);
}

std::vector<TensorType> infer_lrn(const InferContext& c) {
  c.require_inputs(1, 1);
  require_f32(c, 0);
  if (c.node().attr_int("size", 0) < 1) c.invalid("attribute size must be >= 1");
  if (c.shape(0).size() < 3) c.invalid("input ", shape_str(c.shape(0)), " must have rank >= 3");
  return {c.type(0)};
}

void run_lrn(const KernelContext& c) {
  const Node& n = c.node();
  const int64_t size = n.attr_int("size", 1);
  const double alpha = n.attr_float("alpha", 1e-4f), beta = n.attr_float("beta", 0.75f),
               bias = n.attr_float("bias", 1.0f);
  const Tensor& X = c.in(0);
  const int64_t N = X.dim(0), C = X.dim(1), vol = X.numel() / (N * C);
  const int64_t lo_off = (size - 1) / 2, hi_off = size - 1 - lo_off;  // floor and ceil of (size-1)/2
  const float* x = X.data<float>();
  float* y = c.out(0).data<float>();
  parallel_for(N * C, [&](int64_t s, int64_t e) {
    for (int64_t nc = s; nc < e; ++nc) {
      const int64_t b = nc / C, ch = nc % C;
      const int64_t c0 = std::max<int64_t>(0, ch - lo_off), c1 = std::min<int64_t>(C - 1, ch + hi_off);
      for (int64_t i = 0; i < vol; ++i) {
        double sq = 0;
        for (int64_t k = c0; k <= c1; ++k) {
          double v = x[(b * C + k) * vol + i];
          sq += v * v;
        }
        y[nc * vol + i] = float(x[nc * vol + i] / std::pow(bias + alpha / double(size) * sq, beta));
      }
    }
  });
}

std::vector<TensorType> infer_softmax(const InferContext& c) {
  c.require_inputs(1, 1);
  require_f32(c, 0);
  softmax_split(c.node(), c.shape(0));
  return {c.type(0)};
}

// Softmax rows [first, last). The CUDA kernel (gpu/kernels.cu softmax_kernel) repeats this arithmetic in this
// order (ref/softmax.h): a change here is a change there.
DLAKIT_FMA_CLONES void softmax_rows(const float* x, float* y, const AxisSplit& sp, int64_t first,
                                    int64_t last) {
  for (int64_t r = first; r < last; ++r) {
    const int64_t o = r / sp.inner, in = r % sp.inner;
    const float* px = x + o * sp.axis * sp.inner + in;
    float* py = y + o * sp.axis * sp.inner + in;
    float mx = -INFINITY;
    for (int64_t a = 0; a < sp.axis; ++a) mx = std::max(mx, px[a * sp.inner]);
    double sum = 0;
    for (int64_t a = 0; a < sp.axis; ++a) {
      const float v = numerics::exp_float(px[a * sp.inner] - mx);
      py[a * sp.inner] = v;
      sum += v;
    }
    const float inv = float(1.0 / sum);
    for (int64_t a = 0; a < sp.axis; ++a) py[a * sp.inner] *= inv;
  }
}

void run_softmax(const KernelContext& c) {
  const AxisSplit sp = softmax_split(c.node(), c.in(0).shape());
  const float* x = c.in(0).data<float>();
  float* y = c.out(0).data<float>();
  parallel_for(
      sp.outer * sp.inner, [&](int64_t first, int64_t last) { softmax_rows(x, y, sp, first, last); }, 16);
}

}  // namespace
}  // namespace dlakit::ref

namespace dlakit {
extern const OpImpl kImpl_BatchNormalization{ref::infer_bn, ref::run_bn};
extern const OpImpl kImpl_LRN{ref::infer_lrn, ref::run_lrn};
extern const OpImpl kImpl_Softmax{ref::infer_softmax, ref::run_softmax};
}  // namespace dlakit
