// The in-place INT8 surface operations (runtime/atom_ops.h) on CUDA: the residual Add (+ ReLU) and MaxPool
// on int8 chw32 surfaces, one thread per byte of the lines they write, with kernels/int8_atoms.cpp's
// arithmetic in its order (compiled with -fmad=false, as the CPU file is with -ffp-contract=off).
#include "gpu/device_math.cuh"
#include "gpu/kernels.h"

namespace dlakit::gpu::k {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 1 ? 1 : (b > 1048576 ? 1048576 : b));
}

__device__ inline int64_t atom_offset(const Int8Atoms& s, int64_t n, int64_t g, int64_t h, int64_t w,
                                      int64_t k) {
  return n * s.batch + g * s.group + h * s.line + w * 32 + k;
}

__global__ void add_atoms_kernel(int64_t C, int64_t H, int64_t W, int64_t groups, Int8Atoms a, Int8Atoms b,
                                 bool relu, Int8Atoms y, int64_t total) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = i % 32, w = (i / 32) % W, h = (i / (32 * W)) % H, g = (i / (32 * W * H)) % groups,
                  n = i / (32 * W * H * groups);
    int8_t* out = y.data + atom_offset(y, n, g, h, w, k);
    if (g * 32 + k >= C) {  // padding channels
      *out = 0;
      continue;
    }
    const float fa = float(a.data[atom_offset(a, n, g, h, w, k)]) * a.scale,
                fb = float(b.data[atom_offset(b, n, g, h, w, k)]) * b.scale;
    float v = fa + fb;
    if (relu) v = v > 0.f ? v : 0.f;
    *out = int8_t(level(v, y.scale, 0));
  }
}

__global__ void max_pool_atoms_kernel(int64_t C, int64_t H, int64_t W, int64_t groups, PoolWindow p,
                                      Int8Atoms x, bool same_scale, Int8Atoms y, int64_t total) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = i % 32, ow = (i / 32) % p.OW, oh = (i / (32 * p.OW)) % p.OH,
                  g = (i / (32 * p.OW * p.OH)) % groups, n = i / (32 * p.OW * p.OH * groups);
    int8_t* out = y.data + atom_offset(y, n, g, oh, ow, k);
    if (g * 32 + k >= C) {
      *out = 0;
      continue;
    }
    const int64_t ih = oh * p.sh - p.pt, iw = ow * p.sw - p.pl;
    const int64_t kh0 = ih < 0 ? -ih : 0, kh1 = p.KH < H - ih ? p.KH : H - ih;
    const int64_t kw0 = iw < 0 ? -iw : 0, kw1 = p.KW < W - iw ? p.KW : W - iw;
    int8_t m = -128;
    for (int64_t kh = kh0; kh < kh1; ++kh)
      for (int64_t kw = kw0; kw < kw1; ++kw) {
        const int8_t v = x.data[atom_offset(x, n, g, ih + kh, iw + kw, k)];
        m = v > m ? v : m;
      }
    *out = same_scale ? m : int8_t(level(float(m) * x.scale, y.scale, 0));
  }
}

}  // namespace

void add_int8_atoms(int64_t N, int64_t C, int64_t H, int64_t W, const Int8Atoms& a, const Int8Atoms& b,
                    bool relu, const Int8Atoms& y, cudaStream_t s) {
  const int64_t groups = (C + 31) / 32, total = N * groups * H * W * 32;
  if (total) add_atoms_kernel<<<blocks_for(total), kThreads, 0, s>>>(C, H, W, groups, a, b, relu, y, total);
}

void max_pool_int8_atoms(int64_t N, int64_t C, int64_t H, int64_t W, const PoolWindow& p, const Int8Atoms& x,
                         bool same_scale, const Int8Atoms& y, cudaStream_t s) {
  const int64_t groups = (C + 31) / 32, total = N * groups * p.OH * p.OW * 32;
  if (total)
    max_pool_atoms_kernel<<<blocks_for(total), kThreads, 0, s>>>(C, H, W, groups, p, x, same_scale, y, total);
}

}  // namespace dlakit::gpu::k
