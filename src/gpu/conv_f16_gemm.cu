// ConvF16Gemm (conv_f16_gemm.h): the im2col and epilogue kernels around cuBLASLt's fp16 product.
#include <cuda_fp16.h>

#include <algorithm>

#include "base/error.h"
#include "base/fp16.h"
#include "gpu/conv_f16_gemm.h"
#include "gpu/conv_half_mma.h"
#include "gpu/device_math.cuh"

namespace dlakit::gpu {
namespace {

using k::ConvGeom;

// cols[k][p] = input tap k of output pixel p rounded to fp16, zero outside the image and past K or the
// pixels. grid.y: k, so the tap's channel and offsets are the block's; a thread writes 8 pixels' halves as
// one 16-byte store (pixels_padded is a multiple of 8), stepping along the output row instead of dividing
// per pixel.
__global__ void im2col_half_kernel(ConvGeom g, const float* x, int pixels, int pixels_padded, __half* cols) {
  const int p0 = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
  if (p0 >= pixels_padded) return;
  const int kk = blockIdx.y, window = int(g.KH * g.KW), c = kk / window, kh = (kk % window) / int(g.KW),
            kw = kk % int(g.KW);
  const int OW = int(g.OW), OH = int(g.OH), H = int(g.H), W = int(g.W);
  int n, oh, ow;
  k::split_pixel(unsigned(p0), OW, OH, n, oh, ow);
  union {
    int4 word;
    __half h[8];
  } out;
  for (int j = 0; j < 8; ++j) {
    float v = 0.f;
    if (p0 + j < pixels && c < g.C) {
      const int ih = oh * int(g.SH) - int(g.PT) + kh * int(g.DH),
                iw = ow * int(g.SW) - int(g.PL) + kw * int(g.DW);
      if (ih >= 0 && ih < H && iw >= 0 && iw < W) v = x[((int64_t(n) * g.C + c) * H + ih) * W + iw];
    }
    out.h[j] = __float2half_rn(v);
    if (++ow == OW) {
      ow = 0;
      if (++oh == OH) oh = 0, ++n;
    }
  }
  *reinterpret_cast<int4*>(cols + int64_t(kk) * pixels_padded + p0) = out.word;
}

// y (NCHW) = the store rule of the activation of sums[m][p] + bias[m] (conv_f32_kernel, then apply_store).
// grid.y: the filter; a thread reads 4 pixels' sums in one 16-byte load and steps along the pixels.
// whole_fours: the planes are multiples of 4 pixels and y is 16-byte aligned, so each thread's four pixels
// are one 16-byte store (ResNet-50's stem at batch 32 took 128 us on an H200 storing them one by one).
__global__ void sums_to_output_half_kernel(ConvGeom g, int pixels, int pixels_padded, const float* sums,
                                           const float* bias, k::ActParams act, k::StoreRule store,
                                           bool whole_fours, float* y) {
  const int p0 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  if (p0 >= pixels) return;
  const int m = blockIdx.y, plane = int(g.OH * g.OW);
  const float bias_m = bias ? bias[m] : 0.f;
  union {
    float4 word;
    float v[4];
  } in;
  in.word = *reinterpret_cast<const float4*>(sums + int64_t(m) * pixels_padded + p0);
  // no bias: the sum as it is (+0 would turn -0 into +0)
  auto result = [&](float v) { return k::stored(store, k::activate(act, bias ? v + bias_m : v)); };
  int n = p0 / plane, at = p0 % plane;
  if (whole_fours) {  // the four pixels in one plane (pixels is then a multiple of 4 too)
    for (int j = 0; j < 4; ++j) in.v[j] = result(in.v[j]);
    *reinterpret_cast<float4*>(y + (int64_t(n) * g.M + m) * plane + at) = in.word;
    return;
  }
  for (int j = 0; j < 4 && p0 + j < pixels; ++j) {
    y[(int64_t(n) * g.M + m) * plane + at] = result(in.v[j]);
    if (++at == plane) at = 0, ++n;
  }
}

int64_t round_up_8(int64_t v) { return (v + 7) / 8 * 8; }

}  // namespace

ConvF16Gemm::ConvF16Gemm(const ConvGeom& g)
    : g_(g),
      k_padded_(round_up_8(g.C * g.KH * g.KW)),
      pixels_(g.N * g.OH * g.OW),
      pixels_padded_(round_up_8(g.N * g.OH * g.OW)) {}

ConvF16Gemm::~ConvF16Gemm() = default;

std::shared_ptr<const ConvF16Gemm> ConvF16Gemm::plan(const ConvGeom& g, Route route) {
  MmaShape shape;
  if (route == Route::kChoose && implicit_gemm_enabled() && half_atoms_fit(g) &&
      4 * (half_atoms_channels(g.C) - g.C) <= g.C &&
      implicit_gemm_shape(g, half_atoms_stages(g), multiprocessors(), shape)) {
    std::shared_ptr<ConvF16Gemm> c(new ConvF16Gemm(g));
    c->shape_ = shape;
    return c;
  }
  // grid.y runs over K (im2col) and over the filters (epilogue); pixels and their offsets in 32 bits.
  const int64_t k_padded = round_up_8(g.C * g.KH * g.KW), pixels_padded = round_up_8(g.N * g.OH * g.OW);
  if (g.G != 1 || pixels_padded < 8 || pixels_padded > INT32_MAX || k_padded > 65535 || g.M > 65535 ||
      g.N * g.C * g.H * g.W > INT32_MAX)
    return nullptr;
  std::shared_ptr<ConvF16Gemm> c(new ConvF16Gemm(g));
  // Column-major, as cuBLASLt counts: sums (pixels x M) = cols (pixels x K) * weights (K x M), with the
  // pixels contiguous in cols and sums and K contiguous in the weights ("NN").
  c->lt_ = LtMatmul::plan(LtMatmul::Kind::kHalf, {pixels_padded, k_padded, pixels_padded},
                          {k_padded, g.M, k_padded}, {pixels_padded, g.M, pixels_padded});
  if (!c->lt_) return nullptr;
  return c;
}

size_t ConvF16Gemm::cols_bytes() const {
  return lt_ ? size_t(k_padded_ * pixels_padded_) * 2 : half_atoms_bytes(g_);
}

bool ConvF16Gemm::half_values(const float* w, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!(round_to_half(w[i]) == w[i])) return false;  // NaN included: no exact product claim
  return true;
}

std::vector<uint16_t> ConvF16Gemm::weights(const float* w) const {
  if (!lt_) return half_atoms_weights(g_, w);
  const int64_t k = g_.C * g_.KH * g_.KW;
  std::vector<uint16_t> out(size_t(g_.M * k_padded_), 0);
  for (int64_t m = 0; m < g_.M; ++m)
    for (int64_t i = 0; i < k; ++i) out[size_t(m * k_padded_ + i)] = float_to_half(w[m * k + i]);
  return out;
}

void ConvF16Gemm::run(HalfInput x, const uint16_t* w, const float* bias, k::ActParams act,
                      const k::StoreRule& store, const HalfResidual* residual, HalfOutput y, void* cols,
                      void* sums, void* workspace, unsigned* arrivals, cudaStream_t s) const {
  if (!lt_) return conv_half_mma(g_, shape_, x, cols, w, bias, act, store, residual, y, {sums, arrivals}, s);
  if (residual || !x.nchw || !y.nchw)
    fail(Status::kInternal, "a surface or a fused residual Add on the im2col route");
  const int pixels = int(pixels_), padded = int(pixels_padded_);
  auto* cols_h = static_cast<__half*>(cols);
  const unsigned eights = unsigned(padded / 8), quads = unsigned((pixels + 3) / 4);
  const bool whole_fours = (g_.OH * g_.OW) % 4 == 0 && reinterpret_cast<uintptr_t>(y.nchw) % 16 == 0;
  im2col_half_kernel<<<dim3((eights + k::kThreads - 1) / k::kThreads, unsigned(k_padded_)), k::kThreads, 0,
                       s>>>(g_, x.nchw, pixels, padded, cols_h);
  lt_->run(cols, w, sums, workspace, s);
  sums_to_output_half_kernel<<<dim3((quads + k::kThreads - 1) / k::kThreads, unsigned(g_.M)), k::kThreads, 0,
                               s>>>(g_, pixels, padded, static_cast<const float*>(sums), bias, act, store,
                                    whole_fours, y.nchw);
}

}  // namespace dlakit::gpu
