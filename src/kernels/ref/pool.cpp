// MaxPool (dilations, ceil_mode, Indices output), AveragePool (count_include_pad, ceil_mode), and the
// global pools. 1-D/2-D/3-D through the shared window geometry.
#include <algorithm>
#include <cmath>
#include <limits>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "base/cpu.h"
#include "base/threadpool.h"
#include "kernels/ref/common.h"
#include "kernels/ref/conv_geom.h"

namespace dlakit::ref {
namespace {

WindowGeom pool_geom(const Node& n, const Shape& x) {
  if (!n.has("kernel_shape")) fail(Status::kParseError, n.label(), ": attribute kernel_shape is required");
  if (n.op == OpKind::AveragePool && n.has("dilations")) {
    for (int64_t d : n.attr_ints("dilations"))
      if (d != 1)
        fail(Status::kUnsupported, n.label(),
             ": AveragePool dilations other than 1 (opset 19) are not supported");
  }
  return window_geom(n, x, n.attr_ints("kernel_shape"), n.attr_int("ceil_mode", 0) != 0);
}

std::vector<TensorType> infer_pool(const InferContext& c) {
  c.require_inputs(1, 1);
  WindowGeom g = pool_geom(c.node(), c.shape(0));
  std::vector<TensorType> out{{c.dtype(0), g.out_shape(g.C)}};
  if (c.node().op == OpKind::MaxPool) out.push_back({DType::kI64, g.out_shape(g.C)});
  return out;
}

#if defined(__x86_64__)
// max_row at column stride 2 (ResNet's stem pool), 16 outputs in a register while the window passes over
// them in max_row's order, so each output takes the same std::max sequence: their inputs, every other value,
// picked from two loads. _mm512_max_ps(v, r) is std::max(r, v) in every lane: v where r < v, else r, NaN
// and signed zeros alike. Outputs whose window leaves the row (the ends) go value by value.
DLAKIT_TARGET_AVX512 void max_row_s2_avx512(const float* xc, int64_t W, int64_t hs, int64_t he,
                                            int64_t kernel_w, int64_t pad_w, int64_t OW, float* yr) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  // Outputs [lo, hi) read every tap inside the row (max_row's first for kw = 0, end for the last kw).
  const int64_t lo = (pad_w + 1) / 2, last = W - 1 + pad_w - (kernel_w - 1);
  const int64_t hi = std::min(OW, std::max(lo, last < 0 ? 0 : last / 2 + 1));  // lo may pass OW (wide pads)
  auto one = [&](int64_t ow) {
    float r = -std::numeric_limits<float>::infinity();
    for (int64_t ih = hs; ih < he; ++ih)
      for (int64_t kw = 0; kw < kernel_w; ++kw) {
        const int64_t iw = ow * 2 - pad_w + kw;
        if (iw >= 0 && iw < W) r = std::max(r, xc[ih * W + iw]);
      }
    yr[ow] = r;
  };
  int64_t ow = 0;
  for (; ow < std::min(lo, OW); ++ow) one(ow);
  for (; ow + 16 <= hi; ow += 16) {
    __m512 r = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    for (int64_t ih = hs; ih < he; ++ih)
      for (int64_t kw = 0; kw < kernel_w; ++kw) {
        const float* p = xc + ih * W + ow * 2 - pad_w + kw;  // the last value read is p[30]
        r = _mm512_max_ps(
            _mm512_permutex2var_ps(_mm512_loadu_ps(p), even, _mm512_maskz_loadu_ps(0x7fff, p + 16)), r);
      }
    _mm512_storeu_ps(yr + ow, r);
  }
  for (; ow < OW; ++ow) one(ow);
}
#endif

// One output row of a max pool: each window position (input row ih, column tap kw), in the scalar loop's
// order, taken for every output whose window holds it inside the input, so the inner loop runs along the
// row (vectorised; S: the column stride, 0 for one known only at run time). std::max(r, v) in the same
// order per output gives the same result, signed zeros and NaN included.
template <int S>
void max_row(const float* xc, int64_t W, int64_t hs, int64_t he, int64_t kernel_w, int64_t stride_w,
             int64_t pad_w, int64_t OW, float* yr) {
  const int64_t sw = S ? S : stride_w;
#if defined(__x86_64__)
  if (S == 2 && cpu::avx512()) return max_row_s2_avx512(xc, W, hs, he, kernel_w, pad_w, OW, yr);
#endif
  std::fill(yr, yr + OW, -std::numeric_limits<float>::infinity());
  for (int64_t ih = hs; ih < he; ++ih)
    for (int64_t kw = 0; kw < kernel_w; ++kw) {
      // outputs ow with 0 <= ow * sw - pad_w + kw < W
      const int64_t first = std::max<int64_t>(0, (pad_w - kw + sw - 1) / sw);
      const int64_t end = std::min(OW, W - 1 + pad_w - kw < 0 ? 0 : (W - 1 + pad_w - kw) / sw + 1);
      const float* xr = xc + ih * W - pad_w + kw;
      for (int64_t ow = first; ow < end; ++ow) yr[ow] = std::max(yr[ow], xr[ow * sw]);
    }
}

// 2-D, dilation 1, no Indices: the window is clipped to the input once per output, so the inner loops
// carry no bounds checks. Same results as the general loop below (the conformance suite; MaxPool against its
// definition in tests/unit/pool_test.cpp).
void pool2d_fast(const WindowGeom& g, bool is_max, bool include_pad, const float* x, float* y) {
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  parallel_for(g.N * g.C, [&](int64_t s, int64_t e) {
    for (int64_t nc = s; nc < e; ++nc) {
      const float* xc = x + nc * H * W;
      float* yc = y + nc * OH * OW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        const int64_t h0 = oh * g.s[1] - g.pb[1];
        const int64_t hs = std::max<int64_t>(h0, 0), he = std::min(h0 + g.k[1], H);
        const int64_t hp = std::min(h0 + g.k[1], H + g.pe[1]) - h0;  // rows inside the padded input
        if (is_max) {
          auto row = g.s[2] == 1 ? &max_row<1> : g.s[2] == 2 ? &max_row<2> : &max_row<0>;
          row(xc, W, hs, he, g.k[2], g.s[2], g.pb[2], OW, yc + oh * OW);
          continue;
        }
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t w0 = ow * g.s[2] - g.pb[2];
          const int64_t ws = std::max<int64_t>(w0, 0), we = std::min(w0 + g.k[2], W);
          double sum = 0;
          for (int64_t ih = hs; ih < he; ++ih)
            for (int64_t iw = ws; iw < we; ++iw) sum += xc[ih * W + iw];
          const int64_t wp = std::min(w0 + g.k[2], W + g.pe[2]) - w0;
          const int64_t count = include_pad ? hp * wp : (he - hs) * (we - ws);
          yc[oh * OW + ow] = count > 0 ? float(sum / double(count)) : 0.f;
        }
      }
    }
  });
}

void run_pool(const KernelContext& c) {
  const Tensor& X = c.in(0);
  const WindowGeom g = pool_geom(c.node(), X.shape());
  const bool is_max = c.node().op == OpKind::MaxPool;
  const bool include_pad = c.node().attr_int("count_include_pad", 0) != 0;
  const bool column_major = c.node().attr_int("storage_order", 0) != 0;  // Indices order only
  Tensor& Y = c.out(0);
  int64_t* idx = c.has_out(1) ? c.out(1).data<int64_t>() : nullptr;
  std::vector<float> xf;
  const float* x = X.dtype() == DType::kF32 ? X.data<float>() : (xf = X.to_f32(), xf.data());
  if (!idx && X.dtype() == DType::kF32 && g.in[0] == 1 && g.k[0] == 1 && g.d[1] == 1 && g.d[2] == 1)
    return pool2d_fast(g, is_max, include_pad, x, Y.data<float>());
  parallel_for(g.N * g.C, [&](int64_t s, int64_t e) {
    for (int64_t nc = s; nc < e; ++nc) {
      const float* xc = x + nc * g.in_vol();
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh)
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            float best = -std::numeric_limits<float>::infinity();
            int64_t best_i = -1;
            double sum = 0;
            int64_t count = 0, padded_count = 0;
            for (int64_t kd = 0; kd < g.k[0]; ++kd) {
              const int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
              const bool din = id >= 0 && id < g.in[0], dpad = id >= -g.pb[0] && id < g.in[0] + g.pe[0];
              for (int64_t kh = 0; kh < g.k[1]; ++kh) {
                const int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
                const bool hin = ih >= 0 && ih < g.in[1], hpad = ih >= -g.pb[1] && ih < g.in[1] + g.pe[1];
                for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                  const int64_t iw = ow * g.s[2] - g.pb[2] + kw * g.d[2];
                  const bool win = iw >= 0 && iw < g.in[2], wpad = iw >= -g.pb[2] && iw < g.in[2] + g.pe[2];
                  if (dpad && hpad && wpad) ++padded_count;
                  if (!(din && hin && win)) continue;
                  const int64_t off = (id * g.in[1] + ih) * g.in[2] + iw;
                  const float v = xc[off];
                  ++count;
                  sum += v;
                  // The value is std::max's from -inf in window order, as the fast path's (a NaN never
                  // replaces it); the index is where it last grew, or the window's first value.
                  if (best < v || best_i < 0) {
                    best = best < v ? v : best;
                    best_i = nc * g.in_vol() + (column_major ? (iw * g.in[1] + ih) * g.in[0] + id : off);
                  }
                }
              }
            }
            const int64_t o = nc * g.out_vol() + (od * g.out[1] + oh) * g.out[2] + ow;
            double r =
                is_max ? double(best) : (count ? sum / double(include_pad ? padded_count : count) : 0.0);
            store_f64(Y, o, r);
            if (idx) idx[o] = best_i;
          }
    }
  });
}

std::vector<TensorType> infer_global(const InferContext& c) {
  c.require_inputs(1, 1);
  Shape s = c.shape(0);
  if (s.size() < 3) c.invalid("input ", shape_str(s), " must have rank >= 3");
  for (size_t i = 2; i < s.size(); ++i) s[i] = 1;
  return {{c.dtype(0), s}};
}

void run_global(const KernelContext& c) {
  const Tensor& X = c.in(0);
  const int64_t nc = X.dim(0) * X.dim(1), vol = X.numel() / std::max<int64_t>(nc, 1);
  const bool is_max = c.node().op == OpKind::GlobalMaxPool;
  Tensor& Y = c.out(0);
  parallel_for(
      nc,
      [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i) {
          double acc = is_max ? -INFINITY : 0.0;
          if (X.dtype() == DType::kF32) {
            const float* p = X.data<float>() + i * vol;
            for (int64_t j = 0; j < vol; ++j) acc = is_max ? std::max(acc, double(p[j])) : acc + p[j];
          } else {
            for (int64_t j = 0; j < vol; ++j) {
              double v = X.at_f64(i * vol + j);
              acc = is_max ? std::max(acc, v) : acc + v;
            }
          }
          store_f64(Y, i, is_max ? acc : acc / double(vol));
        }
      },
      4);
}

}  // namespace
}  // namespace dlakit::ref

namespace dlakit {
extern const OpImpl kImpl_MaxPool{ref::infer_pool, ref::run_pool};
extern const OpImpl kImpl_AveragePool{ref::infer_pool, ref::run_pool};
extern const OpImpl kImpl_GlobalAveragePool{ref::infer_global, ref::run_global};
extern const OpImpl kImpl_GlobalMaxPool{ref::infer_global, ref::run_global};
}  // namespace dlakit
