// Conv (groups incl. depthwise, dilation, pads, strides, auto_pad; 1-D/2-D/3-D) and ConvTranspose.
// General convolution is the blocked sgemm on an implicit im2col matrix; depthwise convolution is a direct
// loop.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "base/threadpool.h"
#include "kernels/conv_direct.h"
#include "kernels/expand_depthwise.h"
#include "kernels/fused_activation.h"
#include "kernels/gemm.h"
#include "kernels/ref/common.h"
#include "kernels/ref/conv_geom.h"

namespace dlakit::ref {
namespace {

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

// The im2col matrix of one image (row r = (c, kd, kh, kw), column = output position (od, oh, ow), value
// x[c, input position] or 0 in the padding), written straight into sgemm's B panels without forming it:
// rows [k0, k0+kc), columns [j0, j0+nc), panels of `panel` columns (see PackB).
void pack_im2col(const WindowGeom& g, const float* x, int64_t k0, int64_t kc, int64_t j0, int64_t nc,
                 int64_t panel, float* dst) {
  const int64_t kvol = g.k_vol(), ow_n = g.out[2], ohw = g.out[1] * g.out[2];
  for (int64_t jp = 0; jp < nc; jp += panel) {
    const int64_t nr = std::min(panel, nc - jp);
    float* pdst = dst + (jp / panel) * kc * panel;
    for (int64_t k = 0; k < kc; ++k) {
      const int64_t r = k0 + k, c = r / kvol, kk = r % kvol;
      const int64_t kd = kk / (g.k[1] * g.k[2]), kh = (kk / g.k[2]) % g.k[1], kw = kk % g.k[2];
      const float* xc = x + c * g.in_vol();
      const int64_t base = kw * g.d[2] - g.pb[2];  // input column = ow * stride + base
      float* d = pdst + k * panel;
      int64_t j = 0;
      while (j < nr) {  // one run of columns along an output row at a time
        const int64_t pos = j0 + jp + j, od = pos / ohw, oh = (pos / ow_n) % g.out[1], ow = pos % ow_n;
        const int64_t run = std::min(nr - j, ow_n - ow);
        const int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0], ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
        float* out = d + j;
        if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
          for (int64_t t = 0; t < run; ++t) out[t] = 0.f;
        } else {
          const float* row = xc + (id * g.in[1] + ih) * g.in[2];
          if (g.s[2] == 1) {  // valid: 0 <= ow + t + base < in
            const int64_t lo = std::clamp<int64_t>(-base - ow, 0, run),
                          hi = std::clamp<int64_t>(g.in[2] - base - ow, lo, run);
            const float* src = row + ow + base;
            for (int64_t t = 0; t < lo; ++t) out[t] = 0.f;
            for (int64_t t = lo; t < hi; ++t) out[t] = src[t];
            for (int64_t t = hi; t < run; ++t) out[t] = 0.f;
          } else {
            for (int64_t t = 0; t < run; ++t) {
              const int64_t iw = (ow + t) * g.s[2] + base;
              out[t] = (iw >= 0 && iw < g.in[2]) ? row[iw] : 0.f;
            }
          }
        }
        j += run;
      }
      for (; j < panel; ++j) d[j] = 0.f;
    }
  }
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

// Weights [Mg x K] in the layout of `kernel`'s tiles.
std::shared_ptr<const PackedA> pack_weights(ConvKernel kernel, int64_t Mg, int64_t K, const float* w) {
  switch (kernel) {
    case ConvKernel::kDirectPositions:
      return conv_direct_pack_weights(Mg, K, w);
    case ConvKernel::kDirectChannels:
      return conv_channels_pack_weights(Mg, K, w);
    case ConvKernel::kGemm:
      break;
  }
  return sgemm_pack_a(Mg, K, w, K, 1);
}

// Constant weights are packed once and kept (keyed by their storage, which the cache holds alive so the
// key cannot be reused, the group and the kernel whose layout they take). Entries whose weights only the
// cache still holds belong to models that are gone (a runtime that loads and unloads modules) and are
// dropped. Bounded; cleared when full.
std::shared_ptr<const PackedA> packed_weights(const Tensor& W, int64_t gi, int64_t Mg, int64_t K,
                                              ConvKernel kernel) {
  static std::mutex mu;
  static std::map<std::tuple<const void*, int64_t, ConvKernel>,
                  std::pair<Tensor, std::shared_ptr<const PackedA>>>
      cache;
  static size_t bytes = 0;
  std::lock_guard<std::mutex> lk(mu);
  auto key = std::make_tuple(W.raw(), gi, kernel);
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
  auto p = pack_weights(kernel, Mg, K, W.data<float>() + gi * Mg * K);
  bytes += p->data.size() * sizeof(float);
  cache[key] = {W, p};
  return p;
}

// A 1-D or 2-D convolution on the padded layout of conv_direct.h; the caller's buffer holds it.
struct DirectLayout {
  int64_t Hp, Wq, S;
};
DirectLayout direct_layout(const WindowGeom& g) {
  const int64_t Hp = (g.out[1] - 1) * g.s[1] + (g.k[1] - 1) * g.d[1] + 1,
                Wp = (g.out[2] - 1) * g.s[2] + (g.k[2] - 1) * g.d[2] + 1;
  return {Hp, conv_direct_layout(Wp, g.s[2]), g.s[2]};
}

// A planar depthwise convolution's arguments: M outputs over x [C][H][W] in the direct layout dl.
DepthwiseArgs depthwise_args(const WindowGeom& g, const DirectLayout& dl, int64_t M, const float* x,
                             const float* w, const float* b, float* y, const GemmEpilogue& epilogue) {
  return {x,      g.C,    M,      g.in[1], g.in[2],  g.pb[1],  g.pb[2], dl.Hp, dl.S, dl.Wq,   g.k[1],
          g.k[2], g.d[1], g.d[2], g.s[1],  g.out[1], g.out[2], w,       b,     y,    epilogue};
}

// The values a 1x1 convolution without padding reads at stride (sh, sw), gathered from one image's x
// [C][H][W] into [C][OH][OW] (OH, OW its output size), so that the stride-1 pointwise paths run on them.
const float* gather_strided(const WindowGeom& g, const float* x) {
  thread_local std::vector<float> gathered;
  const int64_t OH = g.out[1], OW = g.out[2], H = g.in[1], W = g.in[2], sh = g.s[1], sw = g.s[2];
  gathered.resize(size_t(g.C * OH * OW));
  float* dst = gathered.data();
  parallel_for(
      g.C * OH,
      [&](int64_t s, int64_t e) {
        for (int64_t r = s; r < e; ++r)
          conv_direct_copy_phase(x + (r / OH) * H * W + (r % OH) * sh * W, dst + r * OW, {0, OW}, sw);
      },
      std::max<int64_t>(1, 2048 / std::max<int64_t>(OW, 1)));
  return dst;
}

// General convolution as one GEMM per image and group: weights (packed once) x the implicit im2col matrix
// (pointwise convolutions read the input itself), bias and fused activation in the GEMM's store epilogue.
void run_conv(const KernelContext& c) {
  const Tensor &X = c.in(0), &W = c.in(1);
  const float* b = c.has(2) ? c.in(2).data<float>() : nullptr;
  Tensor& Y = c.out(0);
  const WindowGeom g = window_geom(c.node(), X.shape(), kernel_of(c.node(), W.shape()), false);
  const int64_t G = c.node().attr_int("group", 1), M = W.dim(0), Cg = g.C / G, Mg = M / G;
  const float* x = X.data<float>();
  const float* w = W.data<float>();
  float* y = Y.data<float>();
  // The engine's fused Conv -> Add: input #3 is added before the activation (engine/fusion.h).
  const float* residual =
      c.node().attr_int("dlakit_residual", 0) && c.has(3) ? c.in(3).data<float>() : nullptr;
  const bool planar = g.k[0] == 1 && g.in[0] == 1 && g.out[0] == 1;  // 1-D or 2-D
  const int64_t kvol = g.k_vol(), ovol = g.out_vol(), K = Cg * kvol;
  thread_local std::vector<float> padded;
  const DirectLayout dl = direct_layout(g);
  auto pad = [&](const float* src, int64_t channels) {
    padded.resize(size_t(conv_direct_buffer_size(channels, dl.Hp, dl.S, dl.Wq)));
    conv_direct_pad_input(src, channels, g.in[1], g.in[2], g.pb[1], g.pb[2], dl.Hp, dl.S, dl.Wq,
                          padded.data());
    return padded.data();
  };
  GemmEpilogue epilogue = fused_epilogue(c.node());
  epilogue.ldr = ovol;
  if (G == g.C && G > 1 && Cg == 1 && planar) {  // the residual and activation go with each stored vector
    for (int64_t n = 0; n < g.N; ++n) {
      epilogue.residual = residual ? residual + n * M * ovol : nullptr;
      conv_depthwise_direct(
          depthwise_args(g, dl, M, x + n * g.C * g.in_vol(), w, b, y + n * M * ovol, epilogue));
    }
    return;
  }
  if (G == g.C && G > 1 && Cg == 1) {
    conv_depthwise(g, M, x, w, b, y);
    if (residual)
      parallel_for(
          Y.numel(),
          [&](int64_t s, int64_t e) {
            for (int64_t i = s; i < e; ++i) y[i] = y[i] + residual[i];
          },
          16384);
    return apply_fused_activation(c.node(), y, Y.numel());
  }
  // A 1x1 convolution without padding reads its input in place (the GEMM and the channel tiles), with no
  // padded copy. At a stride (ResNet's downsampling layers) the values it reads are gathered first: read in
  // place, every pass over the weights streamed the whole input, 4 times the values used (3.2 MB at 56x56:
  // ResNet-50's stride-2 1x1 layers 0.84 -> 0.68 ms at 56x56 and 0.90 -> 0.74 at 14x14, two threads).
  bool unpadded_1x1 = kvol == 1;
  for (int i = 0; i < 3; ++i) unpadded_1x1 = unpadded_1x1 && g.pb[size_t(i)] == 0 && g.pe[size_t(i)] == 0;
  const bool strided = planar && unpadded_1x1 && (g.s[1] > 1 || g.s[2] > 1);
  // Gathered, a strided layer reads [C][OH][OW] at stride 1 as a pointwise one reads its input.
  const bool pointwise = unpadded_1x1 && ((g.s[0] == 1 && g.s[1] == 1 && g.s[2] == 1) || strided);
  const int64_t ivol = strided ? ovol : g.in_vol();
  const bool in_place = planar && pointwise;
  // The direct kernels' input layout: the padded copy's, or [C][OH][OW] itself (in place or gathered).
  const DirectLayout in = in_place ? DirectLayout{g.out[1], g.out[2], 1} : dl;
  const int64_t sh = in_place ? 1 : g.s[1];
  const ConvKernel kernel =
      planar ? conv_choose_kernel({Mg, K, g.out[1], g.out[2], in.Wq, in.S, sh, in_place, residual != nullptr})
             : ConvKernel::kGemm;
  for (int64_t n = 0; n < g.N; ++n) {
    // One image at a time, so the gathered values are still in cache when the convolution reads them.
    const float* xn = strided ? gather_strided(g, x + n * g.C * g.in_vol()) : x + n * g.C * ivol;
    for (int64_t gi = 0; gi < G; ++gi) {
      const float* xg = xn + gi * Cg * ivol;
      float* yg = y + (n * M + gi * Mg) * ovol;
      const float* wg = w + gi * Mg * K;
      const float* bg = b ? b + gi * Mg : nullptr;
      epilogue.residual = residual ? residual + (n * M + gi * Mg) * ovol : nullptr;
      if (kernel != ConvKernel::kGemm) {
        const auto pw =
            c.is_constant(1) ? packed_weights(W, gi, Mg, K, kernel) : pack_weights(kernel, Mg, K, wg);
        const ConvDirectArgs args{in_place ? xg : pad(xg, Cg),
                                  Cg,
                                  in.Hp,
                                  in.S,
                                  in.Wq,
                                  g.k[1],
                                  g.k[2],
                                  g.d[1],
                                  g.d[2],
                                  sh,
                                  g.out[1],
                                  g.out[2],
                                  pw.get(),
                                  bg,
                                  yg,
                                  epilogue};
        if (kernel == ConvKernel::kDirectChannels)
          conv_direct_channels(args);
        else
          conv_direct(args);
        continue;
      }
      std::shared_ptr<const PackedA> pw = c.is_constant(1) ? packed_weights(W, gi, Mg, K, kernel) : nullptr;
      const PackB im2col = [&](int64_t k0, int64_t kc, int64_t j0, int64_t nc, int64_t panel, float* dst) {
        pack_im2col(g, xg, k0, kc, j0, nc, panel, dst);
      };
      sgemm({Mg, ovol, K, wg, K, 1, xg, ovol, 1, yg, ovol, false, bg, pw.get(), pointwise ? nullptr : &im2col,
             epilogue});
    }
  }
}

std::vector<TensorType> infer_conv_transpose(const InferContext& c) {
  c.require_inputs(2, 3);
  check_float(c);
  ConvTransposeGeom t = conv_transpose_geom(c.node(), c.shape(0), c.shape(1));
  if (c.has(2) && c.shape(2) != Shape{t.M})
    c.invalid("bias shape ", shape_str(c.shape(2)), " should be ", t.M);
  return {{DType::kF32, t.g.out_shape(t.M)}};
}

// Where the taps of a ConvTranspose never overlap ((k - 1) * d < s on every axis: upsampling by stride k,
// as detectors' heads do) each output takes at most one (input, tap) product: which one, per axis.
struct AxisTaps {
  std::vector<int64_t> in, tap;  // per output index; -1: nothing lands there
};
AxisTaps axis_taps(const WindowGeom& g, size_t j) {
  AxisTaps a{std::vector<int64_t>(size_t(g.out[j]), -1), std::vector<int64_t>(size_t(g.out[j]), -1)};
  for (int64_t i = 0; i < g.in[j]; ++i)
    for (int64_t kk = 0; kk < g.k[j]; ++kk) {
      const int64_t o = i * g.s[j] - g.pb[j] + kk * g.d[j];
      if (o >= 0 && o < g.out[j]) {
        a.in[size_t(o)] = i;
        a.tap[size_t(o)] = kk;
      }
    }
  return a;
}

bool taps_disjoint(const WindowGeom& g) {
  for (size_t j = 0; j < 3; ++j)
    if ((g.k[j] - 1) * g.d[j] >= g.s[j]) return false;
  return true;
}

// y = 0 + col (+ bias), each output written once: the values the accumulating col2im below gives when
// nothing overlaps (0 + v, then + b, in that order), without clearing y first or a second pass for b.
struct DisjointTaps {
  AxisTaps d, h, w;
};
void place_disjoint(const WindowGeom& g, const DisjointTaps& taps, int64_t Mg, const float* col,
                    const float* bias, float* yg) {
  const AxisTaps &td = taps.d, &th = taps.h, &tw = taps.w;
  const int64_t kvol = g.k_vol(), ivol = g.in_vol(), rows = g.out[0] * g.out[1];
  std::vector<int64_t> woff(size_t(g.out[2]), -1);  // tap and input column of each output column
  for (int64_t ow = 0; ow < g.out[2]; ++ow)
    if (tw.in[size_t(ow)] >= 0) woff[size_t(ow)] = tw.tap[size_t(ow)] * ivol + tw.in[size_t(ow)];
  parallel_for(Mg * rows, [&](int64_t s, int64_t e) {
    for (int64_t mr = s; mr < e; ++mr) {
      const int64_t m = mr / rows, od = (mr % rows) / g.out[1], oh = mr % g.out[1];
      float* yrow = yg + m * g.out_vol() + (od * g.out[1] + oh) * g.out[2];
      const bool row_hit = td.in[size_t(od)] >= 0 && th.in[size_t(oh)] >= 0;
      const float* src =
          row_hit ? col + (m * kvol + (td.tap[size_t(od)] * g.k[1] + th.tap[size_t(oh)]) * g.k[2]) * ivol +
                        (td.in[size_t(od)] * g.in[1] + th.in[size_t(oh)]) * g.in[2]
                  : nullptr;
      for (int64_t ow = 0; ow < g.out[2]; ++ow) {
        const int64_t at = woff[size_t(ow)];
        float v = 0.f + (src && at >= 0 ? src[at] : 0.f);
        if (bias) v = v + bias[m];
        yrow[ow] = v;
      }
    }
  });
}

void run_conv_transpose(const KernelContext& c) {
  const Tensor &X = c.in(0), &W = c.in(1);
  const ConvTransposeGeom t = conv_transpose_geom(c.node(), X.shape(), W.shape());
  const WindowGeom& g = t.g;
  const int64_t Cg = g.C / t.G, Mg = t.M / t.G, kvol = g.k_vol(), ivol = g.in_vol(), ovol = g.out_vol();
  const float* x = X.data<float>();
  const float* w = W.data<float>();
  const float* b = c.has(2) ? c.in(2).data<float>() : nullptr;
  float* y = c.out(0).data<float>();
  const bool disjoint = taps_disjoint(g);
  if (!disjoint) std::memset(y, 0, c.out(0).nbytes());  // col2im accumulates into y
  const DisjointTaps taps =
      disjoint ? DisjointTaps{axis_taps(g, 0), axis_taps(g, 1), axis_taps(g, 2)} : DisjointTaps{};
  std::vector<float> col(size_t(Mg * kvol * ivol));
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t gi = 0; gi < t.G; ++gi) {
      // col[m*kvol + k, i] = sum_c W[c, m, k] * X[c, i]
      const float* wg = w + gi * Cg * Mg * kvol;
      sgemm({Mg * kvol, ivol, Cg, wg, 1, Mg * kvol, x + (n * g.C + gi * Cg) * ivol, ivol, 1, col.data(), ivol,
             false});
      float* yg = y + (n * t.M + gi * Mg) * ovol;
      if (disjoint) {
        place_disjoint(g, taps, Mg, col.data(), b ? b + gi * Mg : nullptr, yg);
        continue;
      }
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
  if (!disjoint) add_bias(y, b, g.N, t.M, ovol);
}

}  // namespace

bool run_expand_depthwise(const Node& expand, const Tensor& x, const Tensor& expand_w, const Tensor* expand_b,
                          const Node& depthwise, const Tensor& w, const Tensor* b, Tensor& y) {
  const int64_t N = x.dim(0), C = x.dim(1), E = expand_w.dim(0);
  const WindowGeom g =
      window_geom(depthwise, {N, E, x.dim(2), x.dim(3)}, kernel_of(depthwise, w.shape()), false);
  ExpandDepthwiseArgs args{
      x.data<float>(),
      C,
      nullptr,
      expand_b ? expand_b->data<float>() : nullptr,
      fused_epilogue(expand),
      depthwise_args(g, direct_layout(g), E, nullptr, w.data<float>(), b ? b->data<float>() : nullptr,
                     y.data<float>(), fused_epilogue(depthwise))};
  // The same shape for every image: decided once, before the weights are packed for the fused kernel.
  if (!conv_expand_depthwise_suits(args)) return false;
  const auto packed = packed_weights(expand_w, 0, E, C, ConvKernel::kDirectChannels);
  args.expand_w = packed.get();
  for (int64_t n = 0; n < N; ++n) {
    args.x = x.data<float>() + n * C * g.in[1] * g.in[2];
    args.dw.y = y.data<float>() + n * E * g.out_vol();
    conv_expand_depthwise(args);
  }
  return true;
}

// The activation the fuse-activation pass attached, as a GEMM epilogue (applied while the tile is hot).
GemmEpilogue fused_epilogue(const Node& n) {
  GemmEpilogue e;
  if (!n.has("dlakit_activation")) return e;
  const std::string act = n.attr_str("dlakit_activation", "");
  const auto p = n.attr_floats("dlakit_activation_params", {});
  if (act == "Relu") {
    e.act = GemmEpilogue::Act::kRelu;
  } else if (act == "Clip" && p.size() == 2) {
    e.act = GemmEpilogue::Act::kClip;
    e.lo = p[0];
    e.hi = p[1];
  } else if (act == "LeakyRelu" && p.size() == 1) {
    e.act = GemmEpilogue::Act::kLeakyRelu;
    e.alpha = p[0];
  } else if (act == "HardSigmoidMul" && p.size() == 2) {  // the reference engine's (engine/fusion.cpp)
    e.act = GemmEpilogue::Act::kHardSigmoidMul;
    e.alpha = p[0];
    e.beta = p[1];
  } else {
    fail(Status::kInvalidArgument, n.label(), ": fused activation '", act, "' with ", p.size(),
         " parameter(s); dlakit fuses Relu (no parameters), LeakyRelu (alpha), Clip (min, max) and, in the "
         "reference engine, HardSigmoidMul (alpha, beta)");
  }
  return e;
}

// The activation a fuse-activation pass attached ("dlakit_activation"), applied to the finished output with
// exactly the arithmetic of the separate node, so fusion never changes results.
void apply_fused_activation(const Node& n, float* y, int64_t count) {
  const GemmEpilogue e = fused_epilogue(n);
  if (!e.active()) return;
  parallel_for(
      count, [&](int64_t s, int64_t end) { gemm_epilogue(e, y + s, end - s); }, 16384);
}

}  // namespace dlakit::ref

namespace dlakit {
extern const OpImpl kImpl_Conv{ref::infer_conv, ref::run_conv};
extern const OpImpl kImpl_ConvTranspose{ref::infer_conv_transpose, ref::run_conv_transpose};
}  // namespace dlakit
