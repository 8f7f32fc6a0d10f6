// Conv (groups incl. depthwise, dilation, pads, strides, auto_pad; 1-D/2-D/3-D) and ConvTranspose.
// General convolution is im2col + the blocked sgemm; depthwise convolution is a direct loop.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "base/threadpool.h"
#include "kernels/fused_activation.h"
#include "kernels/gemm.h"
#include "kernels/ref/common.h"
#include "kernels/ref/conv_geom.h"

namespace dlakit::ref {
namespace {

std::vector<int64_t> kernel_of(const Node& n, const Shape& w) {
  std::vector<int64_t> k(w.begin() + 2, w.end());
  auto attr = n.attr_ints("kernel_shape", k);
  if (attr != k)
    fail(Status::kShapeError, n.label(), ": kernel_shape ", shape_str(attr),
         " disagrees with the weight shape ", shape_str(w));
  return k;
}

void check_float(const InferContext& c) {
  for (int i = 0; i < c.num_inputs(); ++i)
    if (c.has(i) && c.dtype(i) != DType::kF32)
      c.unsupported("input #", i, " has dtype ", dtype_name(c.dtype(i)),
                    "; the reference Conv is float32 only");
}

std::vector<TensorType> infer_conv(const InferContext& c) {
  c.require_inputs(2, 3);
  check_float(c);
  const Shape &x = c.shape(0), &w = c.shape(1);
  if (x.size() < 3 || x.size() > 5)  // before any x[1]/w[1] (found by fuzz_loadable)
    c.unsupported("input of rank ", x.size(), " (", shape_str(x),
                  "); 1-D, 2-D and 3-D spatial inputs (rank 3..5) are supported");
  if (w.size() != x.size())
    c.invalid("weight rank ", w.size(), " (", shape_str(w), ") differs from input rank ", x.size());
  const int64_t G = c.node().attr_int("group", 1);
  if (G < 1 || x[1] % G || w[0] % G || w[1] * G != x[1])
    c.invalid("input channels ", x[1], ", weight ", shape_str(w), " and group ", G, " do not agree");
  if (c.has(2) && c.shape(2) != Shape{w[0]})
    c.invalid("bias shape ", shape_str(c.shape(2)), " should be ", w[0]);
  WindowGeom g = window_geom(c.node(), x, kernel_of(c.node(), w), false);
  return {{DType::kF32, g.out_shape(w[0])}};
}

// Depthwise: one filter per input channel (multiplier M/C). For each kernel tap, a row-wise axpy over
// the valid output range only, so the inner loop has no bounds checks and vectorises for stride 1.
void conv_depthwise(const WindowGeom& g, int64_t M, const float* x, const float* w, const float* b,
                    float* y) {
  const int64_t mult = M / g.C;
  parallel_for(
      g.N * M,
      [&](int64_t s, int64_t e) {
        for (int64_t nm = s; nm < e; ++nm) {
          const int64_t n = nm / M, m = nm % M, c = m / mult;
          const float* xc = x + (n * g.C + c) * g.in_vol();
          const float* wm = w + m * g.k_vol();
          float* ym = y + nm * g.out_vol();
          const float bias = b ? b[m] : 0.f;
          for (int64_t i = 0; i < g.out_vol(); ++i) ym[i] = bias;
          for (int64_t kd = 0; kd < g.k[0]; ++kd)
            for (int64_t kh = 0; kh < g.k[1]; ++kh)
              for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                const float wv = wm[(kd * g.k[1] + kh) * g.k[2] + kw];
                const int64_t off_w = kw * g.d[2] - g.pb[2];
                // valid ow: 0 <= ow*s + off_w < in
                int64_t lo = off_w >= 0 ? 0 : (-off_w + g.s[2] - 1) / g.s[2];
                int64_t hi = g.in[2] - off_w <= 0 ? 0 : (g.in[2] - off_w - 1) / g.s[2] + 1;
                hi = std::min(hi, g.out[2]);
                if (lo >= hi) continue;
                for (int64_t od = 0; od < g.out[0]; ++od) {
                  const int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
                  if (id < 0 || id >= g.in[0]) continue;
                  for (int64_t oh = 0; oh < g.out[1]; ++oh) {
                    const int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
                    if (ih < 0 || ih >= g.in[1]) continue;
                    const float* xr = xc + (id * g.in[1] + ih) * g.in[2] + off_w;
                    float* yr = ym + (od * g.out[1] + oh) * g.out[2];
                    if (g.s[2] == 1) {
                      for (int64_t ow = lo; ow < hi; ++ow) yr[ow] += wv * xr[ow];
                    } else {
                      const int64_t st = g.s[2];
                      for (int64_t ow = lo; ow < hi; ++ow) yr[ow] += wv * xr[ow * st];
                    }
                  }
                }
              }
        }
      },
      1);
}

// col[(c*kvol + k), out_pos] = x[c, in_pos(out_pos, k)] or 0 in the padding.
void im2col(const WindowGeom& g, int64_t channels, const float* x, float* col, int64_t oh0, int64_t oh1) {
  const int64_t kvol = g.k_vol(), ovol = (oh1 - oh0) * g.out[2] * g.out[0];
  parallel_for(
      channels * kvol,
      [&](int64_t s, int64_t e) {
        for (int64_t r = s; r < e; ++r) {
          const int64_t c = r / kvol, kk = r % kvol;
          const int64_t kd = kk / (g.k[1] * g.k[2]), kh = (kk / g.k[2]) % g.k[1], kw = kk % g.k[2];
          const float* xc = x + c * g.in_vol();
          float* dst = col + r * ovol;
          for (int64_t od = 0; od < g.out[0]; ++od) {
            const int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
            for (int64_t oh = oh0; oh < oh1; ++oh) {
              const int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
              float* d = dst + (od * (oh1 - oh0) + oh - oh0) * g.out[2];
              if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
                std::memset(d, 0, sizeof(float) * size_t(g.out[2]));
                continue;
              }
              const float* row = xc + (id * g.in[1] + ih) * g.in[2];
              const int64_t base = kw * g.d[2] - g.pb[2];
              if (g.s[2] == 1) {
                // valid ow range: 0 <= ow + base < in
                const int64_t lo = std::clamp<int64_t>(-base, 0, g.out[2]),
                              hi = std::clamp<int64_t>(g.in[2] - base, lo, g.out[2]);
                std::memset(d, 0, sizeof(float) * size_t(lo));
                std::memcpy(d + lo, row + lo + base, sizeof(float) * size_t(hi - lo));
                std::memset(d + hi, 0, sizeof(float) * size_t(g.out[2] - hi));
              } else {
                for (int64_t ow = 0; ow < g.out[2]; ++ow) {
                  const int64_t iw = ow * g.s[2] + base;
                  d[ow] = (iw >= 0 && iw < g.in[2]) ? row[iw] : 0.f;
                }
              }
            }
          }
        }
      },
      4);
}

void add_bias(float* y, const float* b, int64_t N, int64_t M, int64_t vol) {
  if (!b) return;
  parallel_for(
      N * M,
      [&](int64_t s, int64_t e) {
        for (int64_t nm = s; nm < e; ++nm) {
          float* p = y + nm * vol;
          const float v = b[nm % M];
          for (int64_t i = 0; i < vol; ++i) p[i] += v;
        }
      },
      8);
}

// Constant weights are packed for the GEMM once and kept (keyed by their storage, which the cache holds
// alive so the key cannot be reused). Entries whose weights only the cache still holds belong to models
// that are gone (a runtime that loads and unloads modules) and are dropped. Bounded; cleared when full.
std::shared_ptr<const PackedA> packed_weights(const Tensor& W, int64_t gi, int64_t Mg, int64_t K) {
  static std::mutex mu;
  static std::map<std::pair<const void*, int64_t>, std::pair<Tensor, std::shared_ptr<const PackedA>>> cache;
  static size_t bytes = 0;
  std::lock_guard<std::mutex> lk(mu);
  auto key = std::make_pair(W.raw(), gi);
  auto it = cache.find(key);
  if (it != cache.end() && it->second.first.shape() == W.shape()) return it->second.second;
  if (bytes > (size_t(1) << 30)) {
    cache.clear();
    bytes = 0;
  }
  std::erase_if(cache, [&](const auto& entry) {
    const bool gone = entry.second.first.storage_users() == 1;
    if (gone) bytes -= entry.second.second->data.size() * sizeof(float);
    return gone;
  });
  auto p = sgemm_pack_a(Mg, K, W.data<float>() + gi * Mg * K, K, 1);
  bytes += p->data.size() * sizeof(float);
  cache[key] = {W, p};
  return p;
}

void run_conv(const KernelContext& c) {
  const Tensor &X = c.in(0), &W = c.in(1);
  const float* b = c.has(2) ? c.in(2).data<float>() : nullptr;
  Tensor& Y = c.out(0);
  const WindowGeom g = window_geom(c.node(), X.shape(), kernel_of(c.node(), W.shape()), false);
  const int64_t G = c.node().attr_int("group", 1), M = W.dim(0), Cg = g.C / G, Mg = M / G;
  const float* x = X.data<float>();
  const float* w = W.data<float>();
  float* y = Y.data<float>();
  if (G == g.C && G > 1 && Cg == 1) {
    conv_depthwise(g, M, x, w, b, y);
    return apply_fused_activation(c.node(), y, Y.numel());
  }
  const int64_t kvol = g.k_vol(), ivol = g.in_vol(), ovol = g.out_vol(), K = Cg * kvol;
  bool pointwise = kvol == 1;
  for (int i = 0; i < 3; ++i)
    pointwise = pointwise && g.s[size_t(i)] == 1 && g.pb[size_t(i)] == 0 && g.pe[size_t(i)] == 0;
  // im2col in bands of output rows so the column buffer stays cache-sized (about 1 M floats), reused.
  const int64_t row = g.out[2];
  const int64_t band =
      g.out[0] > 1 ? g.out[1]
                   : std::clamp<int64_t>((int64_t(1) << 20) / std::max<int64_t>(K * row, 1), 1, g.out[1]);
  thread_local std::vector<float> col;
  if (!pointwise && col.size() < size_t(K * band * row * g.out[0]))
    col.resize(size_t(K * band * row * g.out[0]));
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t gi = 0; gi < G; ++gi) {
      const float* xg = x + (n * g.C + gi * Cg) * ivol;
      float* yg = y + (n * M + gi * Mg) * ovol;
      const float* wg = w + gi * Mg * K;
      const float* bg = b ? b + gi * Mg : nullptr;
      std::shared_ptr<const PackedA> pw = c.is_constant(1) ? packed_weights(W, gi, Mg, K) : nullptr;
      if (pointwise) {
        sgemm({Mg, ovol, K, wg, K, 1, xg, ovol, 1, yg, ovol, false, bg, pw.get()});
        continue;
      }
      for (int64_t oh0 = 0; oh0 < g.out[1]; oh0 += band) {
        const int64_t oh1 = std::min(g.out[1], oh0 + band), cols = (oh1 - oh0) * row * g.out[0];
        im2col(g, Cg, xg, col.data(), oh0, oh1);
        sgemm({Mg, cols, K, wg, K, 1, col.data(), cols, 1, yg + oh0 * row, ovol, false, bg, pw.get()});
      }
    }
  apply_fused_activation(c.node(), y, Y.numel());
}

// ConvTranspose geometry: the input is the "output" of the equivalent convolution.
struct TransGeom {
  WindowGeom g;  // g.in = ConvTranspose input size, g.out = its output size
  int64_t M = 0, G = 1;
};

TransGeom trans_geom(const Node& n, const Shape& x, const Shape& w) {
  TransGeom t;
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
    size_t j = off + i;
    g.in[j] = x[2 + i];
    g.k[j] = kernel[i];
    g.s[j] = strides[i];
    g.d[j] = dil[i];
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

std::vector<TensorType> infer_conv_transpose(const InferContext& c) {
  c.require_inputs(2, 3);
  check_float(c);
  TransGeom t = trans_geom(c.node(), c.shape(0), c.shape(1));
  if (c.has(2) && c.shape(2) != Shape{t.M})
    c.invalid("bias shape ", shape_str(c.shape(2)), " should be ", t.M);
  return {{DType::kF32, t.g.out_shape(t.M)}};
}

void run_conv_transpose(const KernelContext& c) {
  const Tensor &X = c.in(0), &W = c.in(1);
  const TransGeom t = trans_geom(c.node(), X.shape(), W.shape());
  const WindowGeom& g = t.g;
  const int64_t Cg = g.C / t.G, Mg = t.M / t.G, kvol = g.k_vol(), ivol = g.in_vol(), ovol = g.out_vol();
  const float* x = X.data<float>();
  const float* w = W.data<float>();
  float* y = c.out(0).data<float>();
  std::memset(y, 0, c.out(0).nbytes());  // col2im accumulates into y
  std::vector<float> col(size_t(Mg * kvol * ivol));
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t gi = 0; gi < t.G; ++gi) {
      // col[m*kvol + k, i] = sum_c W[c, m, k] * X[c, i]
      const float* wg = w + gi * Cg * Mg * kvol;
      sgemm({Mg * kvol, ivol, Cg, wg, 1, Mg * kvol, x + (n * g.C + gi * Cg) * ivol, ivol, 1, col.data(), ivol,
             false});
      float* yg = y + (n * t.M + gi * Mg) * ovol;
      parallel_for(Mg, [&](int64_t s, int64_t e) {
        for (int64_t m = s; m < e; ++m)
          for (int64_t k = 0; k < kvol; ++k) {
            const int64_t kd = k / (g.k[1] * g.k[2]), kh = (k / g.k[2]) % g.k[1], kw = k % g.k[2];
            const float* src = col.data() + (m * kvol + k) * ivol;
            for (int64_t id = 0; id < g.in[0]; ++id) {
              const int64_t od = id * g.s[0] - g.pb[0] + kd * g.d[0];
              if (od < 0 || od >= g.out[0]) continue;
              for (int64_t ih = 0; ih < g.in[1]; ++ih) {
                const int64_t oh = ih * g.s[1] - g.pb[1] + kh * g.d[1];
                if (oh < 0 || oh >= g.out[1]) continue;
                float* drow = yg + m * ovol + (od * g.out[1] + oh) * g.out[2];
                const float* srow = src + (id * g.in[1] + ih) * g.in[2];
                for (int64_t iw = 0; iw < g.in[2]; ++iw) {
                  const int64_t ow = iw * g.s[2] - g.pb[2] + kw * g.d[2];
                  if (ow >= 0 && ow < g.out[2]) drow[ow] += srow[iw];
                }
              }
            }
          }
      });
    }
  add_bias(y, c.has(2) ? c.in(2).data<float>() : nullptr, g.N, t.M, ovol);
}

}  // namespace

// The activation a fuse-activation pass attached ("dlakit_activation"), applied to the finished output with
// exactly the arithmetic of the separate node, so fusion never changes results.
void apply_fused_activation(const Node& n, float* y, int64_t count) {
  if (!n.has("dlakit_activation")) return;
  const std::string act = n.attr_str("dlakit_activation", "");
  const auto p = n.attr_floats("dlakit_activation_params", {});
  if (act == "Relu") {
    parallel_for(
        count,
        [&](int64_t s, int64_t e) {
          for (int64_t i = s; i < e; ++i) y[i] = y[i] > 0.f ? y[i] : 0.f;
        },
        16384);
  } else if (act == "Clip" && p.size() == 2) {
    const float lo = p[0], hi = p[1];
    parallel_for(
        count,
        [&](int64_t s, int64_t e) {
          for (int64_t i = s; i < e; ++i) y[i] = y[i] != y[i] ? y[i] : std::min(std::max(y[i], lo), hi);
        },
        16384);
  } else if (act == "LeakyRelu" && p.size() == 1) {
    const float a = p[0];
    parallel_for(
        count,
        [&](int64_t s, int64_t e) {
          for (int64_t i = s; i < e; ++i) y[i] = y[i] >= 0.f ? y[i] : y[i] * a;
        },
        16384);
  } else {
    fail(Status::kInvalidArgument, n.label(), ": unknown fused activation '", act, "'");
  }
}

}  // namespace dlakit::ref

namespace dlakit {
extern const OpImpl kImpl_Conv{ref::infer_conv, ref::run_conv};
extern const OpImpl kImpl_ConvTranspose{ref::infer_conv_transpose, ref::run_conv_transpose};
}  // namespace dlakit
