// The INT8 convolution as an implicit GEMM on tensor cores (kernels.h, conv_int8_mma). Each block computes
// a 64 x 64 tile of one group's output (rows: output pixels n, oh, ow; columns: filters), four warps of
// 32 x 32 each, over K in steps of 32: the input patch is gathered into shared memory through a table of
// taps (zeros outside the image, as the padding's level is 0), the weights are read as 16-byte rows. The
// int32 sums are exact, so the epilogue (device_math.cuh) gives conv_int8's result bit for bit.
#include <mma.h>

#include <algorithm>

#include "gpu/device_math.cuh"
#include "gpu/gpu_check.h"
#include "gpu/kernels.h"

namespace dlakit::gpu::k {
namespace {

using namespace nvcuda;

constexpr int kRows = 64, kCols = 64, kBlockThreads = 128;
constexpr int kOutside = -(1 << 29);  // a row or tap offset that puts every read outside the image

// grid: (pixel tiles, filter tiles, groups x splits). With splits > 1 each block sums one slice of K and
// adds it to `partial` (int32 NCHW, zeroed before; integer atomics, so the order does not matter), and
// conv_int8_epilogue_kernel finishes; otherwise the block writes y itself.
__global__ void __launch_bounds__(kBlockThreads)
    conv_int8_mma_kernel(ConvGeom g, int64_t k_padded, int splits, const int8_t* x, const int8_t* w,
                         const int32_t* taps, const float* mult, const double* bq, const float* bias,
                         ActParams act, float* y, int32_t* partial) {
  // Operand tiles split at k = 16 (one WMMA step each), so every fragment starts 32-byte aligned.
  __shared__ __align__(32) int8_t a_tile[2][kRows][16];
  __shared__ __align__(32) int8_t b_tile[2][kCols][16];
  __shared__ __align__(32) int c_tile[kCols][kRows];  // column-major: the epilogue walks rows
  __shared__ int64_t row_x[kRows], row_y[kRows];
  __shared__ int row_ih[kRows], row_iw[kRows];
  __shared__ int tap[kMmaK][3];

  const int64_t pixels = g.N * g.OH * g.OW, plane = g.OH * g.OW;
  const int64_t cg = g.C / g.G, mg = g.M / g.G, grp = blockIdx.z / splits, split = blockIdx.z % splits;
  const int64_t k_tiles = k_padded / kMmaK, slice = (k_tiles + splits - 1) / splits;
  const int64_t k_begin = split * slice * kMmaK, k_end = min(k_padded, (split + 1) * slice * kMmaK);
  const int64_t p0 = int64_t(blockIdx.x) * kRows, m0 = int64_t(blockIdx.y) * kCols;
  const int t = threadIdx.x;
  if (t < kRows) {
    const int64_t p = p0 + t;
    if (p < pixels) {
      const int64_t ow = p % g.OW, oh = (p / g.OW) % g.OH, n = p / plane;
      row_ih[t] = int(oh * g.SH - g.PT);
      row_iw[t] = int(ow * g.SW - g.PL);
      row_x[t] = (n * g.C + grp * cg) * g.H * g.W + int64_t(row_ih[t]) * g.W + row_iw[t];
      row_y[t] = n * g.M * plane + oh * g.OW + ow;
    } else {
      row_ih[t] = kOutside, row_iw[t] = 0, row_x[t] = 0, row_y[t] = 0;
    }
  }
  const int warp = t / 32, wr = warp / 2, wc = warp % 2;
  wmma::fragment<wmma::accumulator, 16, 16, 16, int> acc[2][2];
  for (auto& row : acc)
    for (auto& f : row) wmma::fill_fragment(f, 0);

  for (int64_t k0 = k_begin; k0 < k_end; k0 += kMmaK) {
    if (t < kMmaK)
      for (int j = 0; j < 3; ++j) tap[t][j] = taps[(k0 + t) * 3 + j];
    __syncthreads();  // taps (and row data) written; the previous step's MMAs are done with the tiles
    {
      const int r = t >> 1, half = t & 1;
      alignas(16) int8_t v[16];
      for (int kk = 0; kk < 16; ++kk) {
        const int* tp = tap[half * 16 + kk];
        const int ih = row_ih[r] + tp[1], iw = row_iw[r] + tp[2];
        v[kk] = ih >= 0 && ih < g.H && iw >= 0 && iw < g.W ? x[row_x[r] + tp[0]] : int8_t(0);
      }
      *reinterpret_cast<int4*>(&a_tile[half][r][0]) = *reinterpret_cast<const int4*>(v);
    }
    {
      const int col = t >> 1, half = t & 1;
      const int64_t m = m0 + col;
      int4 v = make_int4(0, 0, 0, 0);
      if (m < mg) v = *reinterpret_cast<const int4*>(w + (grp * mg + m) * k_padded + k0 + half * 16);
      *reinterpret_cast<int4*>(&b_tile[half][col][0]) = v;
    }
    __syncthreads();
    for (int half = 0; half < 2; ++half) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> fb[2];
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], &a_tile[half][wr * 32 + i * 16][0], 16);
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], &b_tile[half][wc * 32 + j * 16][0], 16);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(&c_tile[wc * 32 + j * 16][wr * 32 + i * 16], acc[i][j], kRows,
                              wmma::mem_col_major);
  __syncthreads();
  for (int e = t; e < kRows * kCols; e += kBlockThreads) {
    const int r = e % kRows, col = e / kRows;
    const int64_t m = m0 + col;
    if (p0 + r >= pixels || m >= mg) continue;
    const int64_t channel = grp * mg + m, at = row_y[r] + channel * plane;
    if (splits > 1) {
      atomicAdd(&partial[at], c_tile[col][r]);
    } else {
      y[at] = int8_conv_output(c_tile[col][r], channel, mult, bq, bias, act);
    }
  }
}

__global__ void conv_int8_epilogue_kernel(ConvGeom g, const int32_t* partial, const float* mult,
                                          const double* bq, const float* bias, ActParams act, float* y,
                                          int64_t total) {
  const int64_t plane = g.OH * g.OW;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = int8_conv_output(partial[i], (i / plane) % g.M, mult, bq, bias, act);
}

// Blocks a launch should have to fill the GPU (H200: 132 SMs, several blocks of 128 threads each).
constexpr int64_t kBusyBlocks = 264;

}  // namespace

bool conv_int8_mma_fits(const ConvGeom& g) {
  const int64_t cg = g.C / g.G, mg = g.M / g.G, k = cg * g.KH * g.KW, small = int64_t(1) << 28;
  // 16 filters a group at least (depthwise layers stay on conv_int8); int32 sums exact (K * 128 * 128 <
  // 2^31); a group per grid layer. The kernel keeps tap offsets (< 2^30 + 2^29 + 2^28) and window origins
  // (within +-2^28, kOutside at -2^29 still outside) in int: every term below 2^28 or as noted. A loadable
  // may carry pads and dilations up to 2^31 (the schema's bound); those stay on the int64 kernel.
  return mg >= 16 && k <= 65536 && cg * g.H * g.W < (int64_t(1) << 30) && g.H < small && g.W < small &&
         g.PT < small && g.PL < small && (g.KH - 1) * g.DH < small && (g.KW - 1) * g.DW < small &&
         (g.KH - 1) * g.DH * g.W < (int64_t(1) << 29) && (g.OH - 1) * g.SH < small &&
         (g.OW - 1) * g.SW < small && g.G <= 65535 && (mg + kCols - 1) / kCols <= 65535;
}

MmaConvOperands conv_int8_mma_operands(const ConvGeom& g, const int8_t* wq) {
  const int64_t cg = g.C / g.G, window = g.KH * g.KW, k = cg * window;
  MmaConvOperands o;
  o.k_padded = (k + kMmaK - 1) / kMmaK * kMmaK;
  o.weights.assign(size_t(g.M * o.k_padded), 0);
  for (int64_t m = 0; m < g.M; ++m)
    for (int64_t i = 0; i < k; ++i) o.weights[size_t(m * o.k_padded + i)] = wq[m * k + i];
  o.taps.assign(size_t(o.k_padded * 3), 0);
  for (int64_t i = 0; i < o.k_padded; ++i) {
    int32_t* tp = &o.taps[size_t(i * 3)];
    if (i >= k) {
      tp[1] = kOutside;
      continue;
    }
    const int64_t c = i / window, kh = (i / g.KW) % g.KH, kw = i % g.KW;
    tp[0] = int32_t(c * g.H * g.W + kh * g.DH * g.W + kw * g.DW);
    tp[1] = int32_t(kh * g.DH);
    tp[2] = int32_t(kw * g.DW);
  }
  return o;
}

int conv_int8_mma_splits(const ConvGeom& g, int64_t k_padded) {
  const int64_t tiles = (g.N * g.OH * g.OW + kRows - 1) / kRows * ((g.M / g.G + kCols - 1) / kCols) * g.G;
  // Slices of at least two K steps, while the grid is small; a group per grid layer still fits.
  const int64_t k_steps = k_padded / kMmaK;
  int64_t splits = std::min<int64_t>((kBusyBlocks + tiles - 1) / tiles, k_steps / 2);
  splits = std::max<int64_t>(std::min<int64_t>(splits, 65535 / g.G), 1);
  // Equal slices of whole steps; no slice left empty by the rounding.
  const int64_t slice = (k_steps + splits - 1) / splits;
  return int((k_steps + slice - 1) / slice);
}

void conv_int8_mma(const ConvGeom& g, int64_t k_padded, int splits, const int8_t* xq, const int8_t* wq_padded,
                   const int32_t* taps, const float* mult, const double* bq, const float* bias, ActParams act,
                   float* y, int32_t* partial, cudaStream_t s) {
  const int64_t pixels = g.N * g.OH * g.OW, mg = g.M / g.G, total = pixels * g.M;
  if (!pixels || !mg) return;
  if (splits > 1) DLAKIT_CUDA(cudaMemsetAsync(partial, 0, size_t(total) * 4, s));
  const dim3 grid(unsigned((pixels + kRows - 1) / kRows), unsigned((mg + kCols - 1) / kCols),
                  unsigned(g.G * splits));
  conv_int8_mma_kernel<<<grid, kBlockThreads, 0, s>>>(g, k_padded, splits, xq, wq_padded, taps, mult, bq,
                                                      bias, act, y, partial);
  if (splits > 1) {
    const int64_t blocks = std::min<int64_t>((total + 255) / 256, 1 << 20);
    conv_int8_epilogue_kernel<<<unsigned(blocks), 256, 0, s>>>(g, partial, mult, bq, bias, act, y, total);
  }
}

}  // namespace dlakit::gpu::k
