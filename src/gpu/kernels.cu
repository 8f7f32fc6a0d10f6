// CUDA kernels of the emulated DLA (see kernels.h). Compiled with -fmad=false so every a * b + c rounds
// twice, as the reference kernels do on the CPU.
#include <cuda_fp16.h>

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "gpu/device_math.cuh"
#include "gpu/fast_divide.h"
#include "gpu/kernels.h"
#include "numerics/exp_float.h"

namespace dlakit::gpu::k {
namespace {

#define GRID_STRIDE(i, n)                                                   \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)

__device__ inline float unary_op(const UnaryParams& p, float v) {
  switch (p.op) {
    case Unary::kCopy:
      return v;
    case Unary::kRelu:
      return v > 0.f ? v : 0.f;
    case Unary::kLeakyRelu:
      return v >= 0.f ? v : v * p.alpha;
    case Unary::kClip:
      return v != v ? v : smin(smax(v, p.lo), p.hi);
    case Unary::kHardSigmoid:
      return smax(0.f, smin(1.f, p.alpha * v + p.beta));
    case Unary::kHardSwish:
      return v * smax(0.f, smin(1.f, v / 6.f + 0.5f));
    case Unary::kNeg:
      return -v;
    case Unary::kAbs:
      return fabsf(v);
    case Unary::kSqrt:
      return float(sqrt(double(v)));
    case Unary::kReciprocal:
      return float(1.0 / double(v));
    case Unary::kFloor:
      return floorf(v);
    case Unary::kCeil:
      return ceilf(v);
    case Unary::kSigmoid:
      return 1.0f / (1.0f + expf(-v));
    case Unary::kTanh:
      return float(tanh(double(v)));
    case Unary::kElu:
      return v >= 0 ? v : float(double(p.alpha) * (exp(double(v)) - 1.0));
    case Unary::kSoftplus:
      return v > 30 ? v : float(log1p(exp(double(v))));
    case Unary::kExp:
      return float(exp(double(v)));
    case Unary::kLog:
      return float(log(double(v)));
    case Unary::kErf:
      return float(erf(double(v)));
  }
  return v;
}

__global__ void unary_kernel(UnaryParams p, StoreRule store, const float* x, float* y, int64_t n) {
  GRID_STRIDE(i, n) y[i] = stored(store, unary_op(p, x[i]));
}

__global__ void channel_affine_kernel(const float* a, const float* b, int64_t C, int64_t vol, StoreRule store,
                                      const float* x, float* y, int64_t n) {
  GRID_STRIDE(i, n) {
    const int64_t c = (i / vol) % C;
    y[i] = stored(store, x[i] * a[c] + b[c]);
  }
}

__global__ void unary_table_kernel(const float* table, StoreRule store, const float* x, float* y, int64_t n) {
  GRID_STRIDE(i, n) y[i] = stored(store, table[__half_as_ushort(__float2half_rn(x[i]))]);
}

// NumPy maximum/minimum: NaN propagates.
__device__ inline float pick(float a, float b, bool max) {
  if (a != a || b != b) return __int_as_float(0x7fc00000);
  return max ? (a > b ? a : b) : (a < b ? a : b);
}

__device__ inline float binary_op(Binary op, float u, float v) {
  switch (op) {
    case Binary::kAdd:
      return u + v;
    case Binary::kSub:
      return u - v;
    case Binary::kMul:
      return u * v;
    case Binary::kDiv:
      return u / v;
    case Binary::kMax:
      return pick(u, v, true);
    case Binary::kMin:
      return pick(u, v, false);
    case Binary::kPow:
      return powf(u, v);
    default:
      return u < 0 ? float(double(u) * double(v)) : u;  // PRelu: the reference's double product
  }
}

// kSame: both operands have the output's shape (no broadcast), so an element's index is its offset in all
// three; otherwise each index is decomposed along the broadcast strides.
template <bool kSame>
__global__ void binary_kernel(Binary op, BroadcastShape sh, StoreRule store, const float* a, const float* b,
                              float* y, int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t ia = i, ib = i;
    if (!kSame) {
      int64_t r = i;
      ia = 0, ib = 0;
      for (int d = sh.rank - 1; d >= 0; --d) {
        const int64_t c = r % sh.out[d];
        r /= sh.out[d];
        ia += c * sh.a_stride[d];
        ib += c * sh.b_stride[d];
      }
    }
    y[i] = stored(store, binary_op(op, a[ia], b[ib]));
  }
}

__global__ void round_half_kernel(const float* x, float* y, int64_t n) {
  GRID_STRIDE(i, n) y[i] = half_rounded(x[i]);
}

__global__ void store_kernel(StoreRule r, float* y, int64_t n) { GRID_STRIDE(i, n) y[i] = stored(r, y[i]); }

__global__ void quantize_kernel(const float* x, float* y, int64_t n, float scale, int rounding,
                                bool dequant) {
  GRID_STRIDE(i, n) {
    if (!(scale > 0)) {
      y[i] = 0.f;
      continue;
    }
    const float q = level(x[i], scale, rounding);
    y[i] = dequant ? q * scale : q;
  }
}

__global__ void quantize_i8_kernel(const float* x, int8_t* y, int64_t n, float scale, int rounding) {
  GRID_STRIDE(i, n) y[i] = scale > 0 ? int8_t(level(x[i], scale, rounding)) : int8_t(0);
}

// Output i of a convolution's [N][M][OH][OW] result: its image, channel, row and column.
struct ConvOutput {
  int64_t n, m, oh, ow;
};
__device__ inline ConvOutput conv_output(const ConvGeom& g, int64_t i) {
  return {i / (g.OW * g.OH * g.M), (i / (g.OW * g.OH)) % g.M, (i / g.OW) % g.OH, i % g.OW};
}

// One thread per output element: a direct convolution (correctness first; see docs/runtime.md).
template <typename In, typename Acc>
__device__ inline Acc conv_sum(const ConvGeom& g, const In* x, const In* w, const ConvOutput& o) {
  const int64_t Cg = g.C / g.G, Mg = g.M / g.G, grp = o.m / Mg;
  Acc acc = 0;
  for (int64_t c = 0; c < Cg; ++c) {
    const In* xc = x + ((o.n * g.C) + grp * Cg + c) * g.H * g.W;
    const In* wc = w + (o.m * Cg + c) * g.KH * g.KW;
    for (int64_t kh = 0; kh < g.KH; ++kh) {
      const int64_t ih = o.oh * g.SH - g.PT + kh * g.DH;
      if (ih < 0 || ih >= g.H) continue;
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        const int64_t iw = o.ow * g.SW - g.PL + kw * g.DW;
        if (iw < 0 || iw >= g.W) continue;
        acc += Acc(xc[ih * g.W + iw]) * Acc(wc[kh * g.KW + kw]);
      }
    }
  }
  return acc;
}

// A ConvTranspose's output: the sum over input channels c of its group and taps (kh, kw) of
// x[c, ih, iw] * w[c, m, kh, kw] where ih * SH - PT + kh * DH = oh (and so for the columns); weights
// [C][M/G][KH][KW] as ONNX stores them.
template <typename In, typename Acc>
__device__ inline Acc conv_transpose_sum(const ConvGeom& g, const In* x, const In* w, const ConvOutput& o) {
  const int64_t Cg = g.C / g.G, Mg = g.M / g.G, grp = o.m / Mg, mg = o.m % Mg;
  Acc acc = 0;
  for (int64_t c = 0; c < Cg; ++c) {
    const int64_t ch = grp * Cg + c;
    const In* xc = x + (o.n * g.C + ch) * g.H * g.W;
    const In* wc = w + (ch * Mg + mg) * g.KH * g.KW;
    for (int64_t kh = 0; kh < g.KH; ++kh) {
      const int64_t th = o.oh + g.PT - kh * g.DH;
      if (th < 0 || th % g.SH || th / g.SH >= g.H) continue;
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        const int64_t tw = o.ow + g.PL - kw * g.DW;
        if (tw < 0 || tw % g.SW || tw / g.SW >= g.W) continue;
        acc += Acc(xc[th / g.SH * g.W + tw / g.SW]) * Acc(wc[kh * g.KW + kw]);
      }
    }
  }
  return acc;
}

template <bool kTransposed, typename In, typename Acc>
__device__ inline Acc window_sum(const ConvGeom& g, const In* x, const In* w, const ConvOutput& o) {
  if constexpr (kTransposed)
    return conv_transpose_sum<In, Acc>(g, x, w, o);
  else
    return conv_sum<In, Acc>(g, x, w, o);
}

template <bool kTransposed>
__global__ void conv_f32_kernel(ConvGeom g, const float* x, const float* w, const float* bias, ActParams act,
                                float* y, int64_t total) {
  GRID_STRIDE(i, total) {
    const ConvOutput o = conv_output(g, i);
    float acc = window_sum<kTransposed, float, float>(g, x, w, o);
    if (bias) acc += bias[o.m];
    y[i] = activate(act, acc);
  }
}

template <bool kTransposed>
__global__ void conv_int8_kernel(ConvGeom g, const int8_t* x, const int8_t* w, const float* mult,
                                 const double* bq, const float* bias, ActParams act, float* y,
                                 int64_t total) {
  GRID_STRIDE(i, total) {
    const ConvOutput o = conv_output(g, i);
    y[i] = int8_conv_output(window_sum<kTransposed, int8_t, long long>(g, x, w, o), o.m, mult, bq, bias, act);
  }
}

// The reference pool's loops for 2-D with the depth axis of size 1 (see src/kernels/ref/pool.cpp). Index
// arithmetic in 32 bits with the output split by multiplication (pool2d_fits; emit_layer keeps the
// others on the host); the maximum without the average's bookkeeping: 64-bit divisions per
// output and a double sum per tap bounded the loop (ResNet-50's stem pool at batch 32, float NCHW: 168 us on
// an H200 against a memory floor of about 27 us).
template <bool kMax>
__global__ void pool2d_kernel(PoolGeom g, PixelSplit split, const float* x, float* y, unsigned total) {
  const int H = int(g.H), W = int(g.W), KH = int(g.KH), KW = int(g.KW);
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    int plane, oh, ow;
    split.split(i, plane, oh, ow);
    const float* xc = x + unsigned(plane) * unsigned(H * W);
    const int ih0 = oh * int(g.SH) - int(g.PT), iw0 = ow * int(g.SW) - int(g.PL);
    float best = -INFINITY;
    double sum = 0;
    int count = 0, padded = 0;
    for (int kh = 0; kh < KH; ++kh) {
      const int ih = ih0 + kh * int(g.DH);
      const bool hin = ih >= 0 && ih < H, hpad = ih >= -int(g.PT) && ih < H + int(g.PB);
      for (int kw = 0; kw < KW; ++kw) {
        const int iw = iw0 + kw * int(g.DW);
        const bool win = iw >= 0 && iw < W;
        if constexpr (!kMax) padded += hpad && iw >= -int(g.PL) && iw < W + int(g.PR);
        if (!(hin && win)) continue;
        const float v = __ldg(xc + ih * W + iw);
        if constexpr (kMax) {
          best = best < v ? v : best;  // std::max(best, v) from -inf, as the reference: NaN never wins
        } else {
          ++count;
          sum += v;
        }
      }
    }
    if constexpr (kMax) {
      y[i] = best;
    } else {
      y[i] = count ? float(sum / double(g.include_pad ? padded : count)) : 0.f;
    }
  }
}

__global__ void resize2d_kernel(ResizeGeom g, const float* x, float* y, int64_t total) {
  GRID_STRIDE(i, total) {
    const int64_t ow = i % g.out_w, oh = (i / g.out_w) % g.out_h, plane = i / (g.out_w * g.out_h);
    const float* in = x + plane * g.in_h * g.in_w;
    const float* first = in + g.row0[oh] * g.in_w;
    const float* second = in + g.row1[oh] * g.in_w;
    const float wh = g.row_w[oh];
    // The blended row's value at column c, as the reference's row pass leaves it.
    auto row_at = [&](int64_t c) { return wh == 0.f ? first[c] : first[c] * (1.f - wh) + second[c] * wh; };
    const float wc = g.col_w[ow];
    const float a = row_at(g.col0[ow]);
    y[i] = wc == 0.f ? a : a * (1.f - wc) + row_at(g.col1[ow]) * wc;
  }
}

__global__ void global_pool_kernel(const float* x, float* y, int64_t planes, int64_t vol, bool is_max) {
  GRID_STRIDE(i, planes) {
    const float* p = x + i * vol;
    double acc = is_max ? -INFINITY : 0.0;
    for (int64_t j = 0; j < vol; ++j) acc = is_max ? (acc < double(p[j]) ? double(p[j]) : acc) : acc + p[j];
    y[i] = float(is_max ? acc : acc / double(vol));
  }
}

// Softmax (ref/softmax.h): a block a row. The maximum and the exponentials in parallel, since neither
// depends on the order (smax skips NaN as std::max does; which signed zero it keeps can change x - max only
// where x is a zero too, whose exponential is 1 either way); the sum by one thread in the row's order, as the
// reference sums in double; then the scaling and the store rule in parallel.
__global__ void softmax_kernel(const float* x, float* y, int64_t rows, int64_t axis, int64_t inner,
                               StoreRule store) {
  __shared__ float block_max[32];
  __shared__ float row_inverse;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t base = row / inner * axis * inner + row % inner;
    const float* px = x + base;
    float* py = y + base;
    float mx = -INFINITY;
    for (int64_t a = threadIdx.x; a < axis; a += blockDim.x) mx = smax(mx, px[a * inner]);
    for (int offset = 16; offset; offset >>= 1) mx = smax(mx, __shfl_xor_sync(0xffffffffu, mx, offset));
    if (lane == 0) block_max[warp] = mx;
    __syncthreads();
    mx = block_max[0];
    for (int w = 1; w < warps; ++w) mx = smax(mx, block_max[w]);
    for (int64_t a = threadIdx.x; a < axis; a += blockDim.x)
      py[a * inner] = numerics::exp_float(px[a * inner] - mx);
    __syncthreads();  // the block's exponentials are in y for the sum
    if (threadIdx.x == 0) {
      double sum = 0;
      for (int64_t a = 0; a < axis; ++a) sum += py[a * inner];
      row_inverse = float(1.0 / sum);
    }
    __syncthreads();
    const float inverse = row_inverse;
    for (int64_t a = threadIdx.x; a < axis; a += blockDim.x)
      py[a * inner] = stored(store, py[a * inner] * inverse);
    __syncthreads();  // the next row's maxima overwrite block_max and row_inverse
  }
}

__global__ void strided_copy_kernel(StridedCopy t, const float* x, float* y, int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t r = i, off = t.base;
    for (int d = t.rank - 1; d >= 0; --d) {
      off += (r % t.out[d]) * t.in_stride[d];
      r /= t.out[d];
    }
    y[i] = x[off];
  }
}

__global__ void gemm_kernel(GemmGeom g, const float* a, const float* b, const float* c, float* y) {
  GRID_STRIDE(i, g.M * g.N) {
    const int64_t m = i / g.N, n = i % g.N;
    float acc = 0;
    for (int64_t k = 0; k < g.K; ++k) {
      const float av = g.trans_a ? a[k * g.M + m] : a[m * g.K + k];
      const float bv = g.trans_b ? b[n * g.K + k] : b[k * g.N + n];
      acc += av * bv;
    }
    float r = g.alpha * acc;
    if (c) r += g.beta * c[m * g.c_stride_m + n * g.c_stride_n];
    y[i] = r;
  }
}

}  // namespace

void unary(const UnaryParams& p, const StoreRule& store, const float* x, float* y, int64_t n,
           cudaStream_t s) {
  if (n) unary_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, store, x, y, n);
}
void channel_affine(const float* a, const float* b, int64_t C, int64_t vol, const StoreRule& store,
                    const float* x, float* y, int64_t n, cudaStream_t s) {
  if (n) channel_affine_kernel<<<blocks_for(n), kThreads, 0, s>>>(a, b, C, vol, store, x, y, n);
}
void unary_table(const float* table, const StoreRule& store, const float* x, float* y, int64_t n,
                 cudaStream_t s) {
  if (n) unary_table_kernel<<<blocks_for(n), kThreads, 0, s>>>(table, store, x, y, n);
}
void binary(Binary op, const BroadcastShape& sh, const StoreRule& store, const float* a, const float* b,
            float* y, cudaStream_t s) {
  int64_t n = 1;
  bool same = true;
  for (int d = sh.rank - 1; d >= 0; --d) {
    same = same && sh.a_stride[d] == n && sh.b_stride[d] == n;
    n *= sh.out[d];
  }
  if (!n) return;
  if (same)
    binary_kernel<true><<<blocks_for(n), kThreads, 0, s>>>(op, sh, store, a, b, y, n);
  else
    binary_kernel<false><<<blocks_for(n), kThreads, 0, s>>>(op, sh, store, a, b, y, n);
}
void round_to_half(const float* x, float* y, int64_t n, cudaStream_t s) {
  if (n) round_half_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, y, n);
}
void quantize(const float* x, float* y, int64_t n, float scale, int rounding, bool dequant, cudaStream_t s) {
  if (n) quantize_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, y, n, scale, rounding, dequant);
}
void apply_store(const StoreRule& r, float* y, int64_t n, cudaStream_t s) {
  if (n && r.changes()) store_kernel<<<blocks_for(n), kThreads, 0, s>>>(r, y, n);
}
void quantize_i8(const float* x, int8_t* y, int64_t n, float scale, int rounding, cudaStream_t s) {
  if (n) quantize_i8_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, y, n, scale, rounding);
}
void conv_f32(const ConvGeom& g, const float* x, const float* w, const float* bias, ActParams act, float* y,
              cudaStream_t s) {
  const int64_t total = g.N * g.M * g.OH * g.OW;
  if (total) conv_f32_kernel<false><<<blocks_for(total), kThreads, 0, s>>>(g, x, w, bias, act, y, total);
}
void conv_int8(const ConvGeom& g, const int8_t* xq, const int8_t* wq, const float* mult, const double* bq,
               const float* bias, ActParams act, float* y, cudaStream_t s) {
  const int64_t total = g.N * g.M * g.OH * g.OW;
  if (total)
    conv_int8_kernel<false><<<blocks_for(total), kThreads, 0, s>>>(g, xq, wq, mult, bq, bias, act, y, total);
}
void conv_transpose_f32(const ConvGeom& g, const float* x, const float* w, const float* bias, float* y,
                        cudaStream_t s) {
  const int64_t total = g.N * g.M * g.OH * g.OW;
  if (total)
    conv_f32_kernel<true><<<blocks_for(total), kThreads, 0, s>>>(g, x, w, bias, ActParams{}, y, total);
}
void conv_transpose_int8(const ConvGeom& g, const int8_t* xq, const int8_t* wq, const float* mult,
                         const double* bq, const float* bias, ActParams act, float* y, cudaStream_t s) {
  const int64_t total = g.N * g.M * g.OH * g.OW;
  if (total)
    conv_int8_kernel<true><<<blocks_for(total), kThreads, 0, s>>>(g, xq, wq, mult, bq, bias, act, y, total);
}
bool pool2d_fits(const PoolGeom& g) {
  constexpr int64_t kSide = int64_t(1) << 30;
  // Each term alone first, so that the sum cannot overflow.
  auto side_fits = [](int64_t extent, int64_t before, int64_t after) {
    return extent <= kSide && before <= kSide && after <= kSide && extent + before + after <= kSide;
  };
  if (!side_fits(g.H, g.PT, g.PB) || !side_fits(g.W, g.PL, g.PR) || g.OH > kSide || g.OW > kSide)
    return false;
  return g.NC <= INT32_MAX / std::max<int64_t>(1, g.H * g.W) &&
         g.NC <= INT32_MAX / std::max<int64_t>(1, g.OH * g.OW);
}
void pool2d(const PoolGeom& g, const float* x, float* y, cudaStream_t s) {
  const int64_t total = g.NC * g.OH * g.OW;
  if (!total) return;
  if (g.is_max) {
    pool2d_kernel<true>
        <<<blocks_for(total), kThreads, 0, s>>>(g, PixelSplit(g.OW, g.OH), x, y, unsigned(total));
  } else {
    pool2d_kernel<false>
        <<<blocks_for(total), kThreads, 0, s>>>(g, PixelSplit(g.OW, g.OH), x, y, unsigned(total));
  }
}
void resize2d(const ResizeGeom& g, const float* x, float* y, cudaStream_t s) {
  const int64_t total = g.planes * g.out_h * g.out_w;
  if (total) resize2d_kernel<<<blocks_for(total), kThreads, 0, s>>>(g, x, y, total);
}
void softmax(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner, const StoreRule& store,
             cudaStream_t s) {
  const int64_t rows = outer * inner;
  if (rows == 0 || axis == 0) return;
  // a warp for short rows (PP-OCR's classifier: 2 values), up to kThreads for long ones
  const int threads = int(std::min<int64_t>(kThreads, (axis + 31) / 32 * 32));
  softmax_kernel<<<grid_blocks(rows), threads, 0, s>>>(x, y, rows, axis, inner, store);
}
void global_pool(const float* x, float* y, int64_t planes, int64_t vol, bool is_max, cudaStream_t s) {
  if (planes) global_pool_kernel<<<blocks_for(planes), kThreads, 0, s>>>(x, y, planes, vol, is_max);
}
void strided_copy(const StridedCopy& t, const float* x, float* y, cudaStream_t s) {
  int64_t n = 1;
  for (int d = 0; d < t.rank; ++d) n *= t.out[d];
  if (n) strided_copy_kernel<<<blocks_for(n), kThreads, 0, s>>>(t, x, y, n);
}
void gemm(const GemmGeom& g, const float* a, const float* b, const float* c, float* y, cudaStream_t s) {
  if (g.M * g.N > 0) gemm_kernel<<<blocks_for(g.M * g.N), kThreads, 0, s>>>(g, a, b, c, y);
}

// Byte offset of element (n, c, h, w) of a surface (rt::io_format.cpp's offset()).
__device__ inline int64_t surface_offset(const SurfaceGeom& g, int64_t n, int64_t c, int64_t h, int64_t w) {
  const int64_t es = g.stride[0];
  switch (g.format) {
    case 0:
      return n * g.stride[3] + c * g.stride[2] + h * g.stride[1] + w * es;
    case 1:
    case 2: {  // an atom of 16 or 32 channels: shifts, not a 64-bit division by a runtime value
      const int shift = g.format == 1 ? 4 : 5;
      return n * g.stride[3] + (c >> shift) * g.stride[2] + h * g.stride[1] +
             ((w << shift) + (c & ((1 << shift) - 1))) * es;
    }
    default: {
      const int64_t cp = g.c == 1 ? 1 : 4;
      return n * g.stride[3] + h * g.stride[1] + (w * cp + c) * es;
    }
  }
}

// Element i of an n x c x h x w index space -> its coordinates: by multiplication (FastDivide) where the
// space has fewer than 2^31 elements, else by 64-bit divisions, which cost several times an element's
// work (ResNet-50's input at batch 32, 4.8 million values, took 48 us on an H200 with them).
struct ElementSplit {
  PixelSplit plane;     // w, h
  FastDivide channels;  // c
  int64_t c = 1, h = 1, w = 1;
  bool narrow = false;
  ElementSplit(int64_t c_, int64_t h_, int64_t w_, int64_t total) : c(c_), h(h_), w(w_) {
    narrow = total <= INT32_MAX;
    if (narrow) plane = PixelSplit(w, h), channels = FastDivide(uint32_t(c));
  }
  __device__ void split(int64_t i, int64_t& n_i, int64_t& c_i, int64_t& h_i, int64_t& w_i) const {
    if (narrow) {
      int planes, row, col;
      plane.split(uint32_t(i), planes, row, col);
      const uint32_t image = channels.quotient(uint32_t(planes));
      n_i = image, c_i = planes - int64_t(image) * c, h_i = row, w_i = col;
    } else {
      w_i = i % w, h_i = (i / w) % h, c_i = (i / (w * h)) % c, n_i = i / (w * h * c);
    }
  }
};

__global__ void unpack_surface_kernel(SurfaceGeom g, ElementSplit split, const uint8_t* base, float* out,
                                      int64_t total) {
  GRID_STRIDE(i, total) {
    int64_t n, c, h, w;
    split.split(i, n, c, h, w);
    const uint8_t* e = base + surface_offset(g, n, c, h, w);
    if (g.int8) {
      out[i] = float(*reinterpret_cast<const int8_t*>(e)) * g.scale;
    } else {
      out[i] = __half2float(__ushort_as_half(*reinterpret_cast<const unsigned short*>(e)));
    }
  }
}

// One thread per element of the padded channel range (chw formats) or of the tensor (others).
__global__ void pack_surface_kernel(SurfaceGeom g, ElementSplit split, const float* in, uint8_t* base,
                                    int64_t total) {
  GRID_STRIDE(i, total) {
    int64_t n, c, h, w;
    split.split(i, n, c, h, w);
    const float v = c < g.c ? in[((n * g.c + c) * g.h + h) * g.w + w] : 0.f;
    uint8_t* e = base + surface_offset(g, n, c, h, w);
    if (g.int8) {
      *reinterpret_cast<int8_t*>(e) = g.scale > 0 ? int8_t(level(v, g.scale, 0)) : int8_t(0);
    } else {
      // One 16-bit store (fp16 elements are 2-byte aligned). Byte stores of the same bits, or a 2-byte
      // memcpy, lost the low byte on sm_90 with CUDA 13.0 (-O3 -fmad=false): tests/gpu/surface_kernels_test.
      *reinterpret_cast<unsigned short*>(e) = __half_as_ushort(__float2half_rn(v));
    }
  }
}

// int8 chw32, the DLA's INT8 feature layout, a block per line (n, atom group, row) or per few lines: their
// W x 32 bytes pass through shared memory, read or written whole along the surface, and along each
// channel's row of floats on the NCHW side. Same arithmetic as the element kernels above.
namespace {

constexpr int64_t kMaxLineBytes = 32768;     // shared memory a block takes for its line
constexpr int64_t kUnpackBlockBytes = 4096;  // the bytes of an unpack block's rows, where a line is shorter

bool line_kernels_fit(const SurfaceGeom& g) {
  return g.format == 2 && g.int8 && g.stride[0] == 1 && g.w * 32 <= kMaxLineBytes;
}

// Line `line` of an int8 chw32 surface: its image n, atom group grp and row h, and the byte offset where
// it starts.
__device__ inline int64_t chw32_line(const SurfaceGeom& g, int64_t line, int64_t& n, int64_t& grp,
                                     int64_t& h) {
  split_line(line, g.h, (g.c + 31) / 32, n, grp, h);
  return n * g.stride[3] + grp * g.stride[2] + h * g.stride[1];
}

// int8 chw32 -> float NCHW, a block per `rows` consecutive rows of one image's atom group (rows divides H):
// their bytes pass through shared memory channel-major ([k][row * W + w]), read along the surface (kQuads:
// 16 bytes a thread, every line 16-byte aligned) and written along each channel's plane, where those rows
// are contiguous. A block per line left short lines (ResNet-50's 7 x 7 x 2048 before its pool: 224 bytes)
// waiting on the block's latency.
template <bool kQuads>
__global__ void unpack_chw32_int8_kernel(SurfaceGeom g, const uint8_t* base, float* out, int rows,
                                         FastDivide width, FastDivide span, int64_t items) {
  extern __shared__ int8_t channel_major[];  // [32][span.divisor]
  const int W = int(g.w), pixels = int(span.divisor);
  const int64_t groups = (g.c + 31) / 32, row_groups = g.h / rows;
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t plane = item / row_groups, h0 = (item - plane * row_groups) * rows;
    const int64_t n = plane / groups, grp = plane - n * groups;
    const uint8_t* first = base + n * g.stride[3] + grp * g.stride[2] + h0 * g.stride[1];
    __syncthreads();  // the previous item's bytes are read
    if constexpr (kQuads) {
      for (int i = threadIdx.x; i < pixels * 2; i += blockDim.x) {
        const int q = i >> 1, half = i & 1, r = int(width.quotient(unsigned(q)));
        const int4 v = *reinterpret_cast<const int4*>(first + r * g.stride[1] + (q - r * W) * 32 + half * 16);
        const int words[4] = {v.x, v.y, v.z, v.w};
        for (int j = 0; j < 16; ++j)
          channel_major[(half * 16 + j) * pixels + q] = int8_t(words[j / 4] >> (8 * (j % 4)));
      }
    } else {
      for (int i = threadIdx.x; i < pixels * 32; i += blockDim.x) {
        const int q = i >> 5, k = i & 31, r = int(width.quotient(unsigned(q)));
        channel_major[k * pixels + q] = int8_t(first[r * g.stride[1] + (q - r * W) * 32 + k]);
      }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < pixels * 32; i += blockDim.x) {
      const int k = int(span.quotient(unsigned(i)));
      const int64_t c = grp * 32 + k;
      if (c < g.c) out[((n * g.c + c) * g.h + h0) * W + (i - k * pixels)] = float(channel_major[i]) * g.scale;
    }
  }
}

__global__ void pack_chw32_int8_kernel(SurfaceGeom g, const float* in, uint8_t* base, int64_t lines) {
  extern __shared__ int8_t line_bytes[];
  const int W = int(g.w), bytes = W * 32;
  for (int64_t line = blockIdx.x; line < lines; line += gridDim.x) {
    int64_t n, grp, h;
    auto* dst = reinterpret_cast<int8_t*>(base + chw32_line(g, line, n, grp, h));
    __syncthreads();  // the previous line's bytes are written
    for (int e = threadIdx.x; e < bytes; e += blockDim.x) {
      const int k = e / W, w = e - k * W;
      const int64_t c = grp * 32 + k;
      const float v = c < g.c ? in[((n * g.c + c) * g.h + h) * g.w + w] : 0.f;  // padding channels: zero
      line_bytes[w * 32 + k] = g.scale > 0 ? int8_t(level(v, g.scale, 0)) : int8_t(0);
    }
    __syncthreads();
    for (int e = threadIdx.x; e < bytes; e += blockDim.x) dst[e] = line_bytes[e];
  }
}

}  // namespace

void unpack_surface(const SurfaceGeom& g, const uint8_t* base, float* out, cudaStream_t s) {
  const int64_t total = g.n * g.c * g.h * g.w;
  if (!total) return;
  if (line_kernels_fit(g)) {
    // The most rows (a divisor of H) whose bytes stay within kUnpackBlockBytes: about 16 values a thread.
    int rows = 1;
    for (int64_t r = 2; r <= g.h && r * g.w * 32 <= kUnpackBlockBytes; ++r)
      if (g.h % r == 0) rows = int(r);
    const int64_t items = g.n * ((g.c + 31) / 32) * (g.h / rows), pixels = rows * g.w;
    const bool quads = (reinterpret_cast<uintptr_t>(base) | uintptr_t(g.stride[1]) | uintptr_t(g.stride[2]) |
                        uintptr_t(g.stride[3])) %
                           16 ==
                       0;
    const auto kernel = quads ? unpack_chw32_int8_kernel<true> : unpack_chw32_int8_kernel<false>;
    kernel<<<grid_blocks(items), kThreads, size_t(pixels * 32), s>>>(
        g, base, out, rows, FastDivide(unsigned(g.w)), FastDivide(unsigned(pixels)), items);
    return;
  }
  unpack_surface_kernel<<<blocks_for(total), kThreads, 0, s>>>(g, ElementSplit(g.c, g.h, g.w, total), base,
                                                               out, total);
}

void pack_surface(const SurfaceGeom& g, const float* in, uint8_t* base, cudaStream_t s) {
  const int64_t atom = g.format == 1 ? 16 : g.format == 2 ? 32 : 1;
  const int64_t channels = (g.c + atom - 1) / atom * atom, total = g.n * channels * g.h * g.w;
  if (!total) return;
  if (line_kernels_fit(g)) {
    const int64_t lines = g.n * (channels / 32) * g.h;
    pack_chw32_int8_kernel<<<grid_blocks(lines), kThreads, size_t(g.w * 32), s>>>(g, in, base, lines);
    return;
  }
  pack_surface_kernel<<<blocks_for(total), kThreads, 0, s>>>(g, ElementSplit(channels, g.h, g.w, total), in,
                                                             base, total);
}

}  // namespace dlakit::gpu::k
