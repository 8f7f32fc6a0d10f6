// conv_half_mma (conv_half_mma.h): the pack and unpack kernels and the implicit GEMM with fp16 operands, its
// epilogue writing float NCHW or an fp16 surface through shared memory. Compiled with -fmad=false: the bias
// add and the activation round as the plain kernel's do.
#include <cuda_fp16.h>

#include "base/error.h"
#include "base/fp16.h"
#include "gpu/conv_half_mma.h"
#include "gpu/device_math.cuh"
#include "gpu/gpu_check.h"
#include "gpu/implicit_gemm.cuh"

namespace dlakit::gpu {
namespace {

using igemm::kWarpCols;
using igemm::kWarpRows;

constexpr int kAtomHalves = 16;  // channels a pixel in an atom: 32 bytes, as an int8 chw32 atom

int64_t atoms_of(int64_t channels) { return (channels + kAtomHalves - 1) / kAtomHalves; }

// One thread a (pixel, atom): its 16 channels' values rounded to fp16 (zero past C) as two 16-byte stores.
// Consecutive threads read consecutive pixels of each channel plane.
__global__ void pack_half_atoms_kernel(const float* x, unsigned count, FastDivide plane, FastDivide atoms,
                                       int C, __half* out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;  // (n, atom, pixel) flattened
  if (i >= count) return;
  const unsigned image_atom = plane.quotient(i), pixel = i - image_atom * plane.divisor;
  const unsigned n = atoms.quotient(image_atom), atom = image_atom - n * atoms.divisor;
  union {
    int4 word[2];
    __half h[kAtomHalves];
  } v;
#pragma unroll
  for (int c = 0; c < kAtomHalves; ++c) {
    const int channel = int(atom) * kAtomHalves + c;
    v.h[c] = __float2half_rn(channel < C ? x[(int64_t(n) * C + channel) * plane.divisor + pixel] : 0.f);
  }
  int4* dst = reinterpret_cast<int4*>(out + int64_t(i) * kAtomHalves);
  dst[0] = v.word[0], dst[1] = v.word[1];
}

// The inverse: one thread a (pixel, atom), two 16-byte loads, 16 float stores (consecutive threads,
// consecutive pixels of each plane); the padding channels are not written.
__global__ void unpack_half_atoms_kernel(const __half* atoms, unsigned count, FastDivide plane,
                                         FastDivide atoms_per_image, int C, float* y) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;  // (n, atom, pixel) flattened
  if (i >= count) return;
  const unsigned image_atom = plane.quotient(i), pixel = i - image_atom * plane.divisor;
  const unsigned n = atoms_per_image.quotient(image_atom), atom = image_atom - n * atoms_per_image.divisor;
  union {
    int4 word[2];
    __half h[kAtomHalves];
  } v;
  const int4* src = reinterpret_cast<const int4*>(atoms + int64_t(i) * kAtomHalves);
  v.word[0] = __ldg(src), v.word[1] = __ldg(src + 1);
#pragma unroll
  for (int c = 0; c < kAtomHalves; ++c) {
    const int channel = int(atom) * kAtomHalves + c;
    if (channel < C) y[(int64_t(n) * C + channel) * plane.divisor + pixel] = __half2float(v.h[c]);
  }
}

struct HalfConvArgs {
  igemm::Operands op;
  const float* bias;
  k::ActParams act;
  k::StoreRule store;
  HalfResidual residual;
  bool has_residual;
  HalfOutput y;
  int atoms_out;  // the output surface's atoms an image (y.atoms; a surface residual operand's too)
};

// The fused residual's layers on the convolution's result v and the Add's other operand.
__device__ __forceinline__ float add_residual(const HalfConvArgs& a, float v, float other) {
  const HalfResidual& res = a.residual;
  v = k::stored(res.store, v + other);
  if (res.relu) v = k::stored(res.relu_store, k::activated<k::Act::kRelu>(a.act, v));
  return v;
}

// The residual's other operand at filter m of output pixel `pixel` of image n, from either form.
__device__ __forceinline__ float residual_operand(const HalfConvArgs& a, int n, int m, int64_t pixel,
                                                  int64_t plane) {
  const HalfInput& o = a.residual.other;
  if (o.nchw) return __ldg(o.nchw + (int64_t(n) * a.op.g.M + m) * plane + pixel);
  const int64_t unit = (int64_t(n) * a.atoms_out + m / kAtomHalves) * plane + pixel;
  return __half2float(reinterpret_cast<const __half*>(o.atoms)[unit * kAtomHalves + m % kAtomHalves]);
}

// The epilogue that writes a surface, where every rule stores fp16 values (half_surface_rules): each warp
// rounds its results (bias, activation: the store rule is that rounding) into the block's whole tile as
// halves [pixel][filter] in shared memory at once, then a thread's unit is one pixel's 16 filters of an
// atom, 32 bytes read from the tile and written to the surface (the residual's operand read alike first);
// consecutive threads take consecutive pixels. The padding filters past M are zeros: the readers' weights
// for them are zero, and 0 x NaN would not be.
template <int kWarpsM, int kWarpsN>
__device__ __forceinline__ void surface_epilogue(const HalfConvArgs& a, int8_t* shared, unsigned p0, int m0,
                                                 const float (&acc)[4][4][4]) {
  using B = igemm::Block<kWarpsM, kWarpsN>;
  // 8 halves (16 bytes) past the tile's width: the 8 pixels one store instruction covers fall in 8 bank
  // groups
  constexpr int kPitch = B::kCols + 8, kAtoms = B::kCols / kAtomHalves;
  constexpr int kUnitsPerThread = B::kRows * kAtoms / B::kThreads;
  static_assert(B::kRows * kPitch * 2 <= B::kStagesBytes, "the tile fits the stages' memory");
  static_assert(B::kRows * kAtoms % B::kThreads == 0, "whole units a thread");
  const k::ConvGeom& g = a.op.g;
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
  __half* tile = reinterpret_cast<__half*>(shared);
#pragma unroll
  for (int ni = 0; ni < 4; ++ni) {
    const int f = warp_n * kWarpCols + ni * 8 + (lane & 3) * 2, m = m0 + f;
    const float bias0 = a.bias && m < g.M ? __ldg(a.bias + m) : 0.f,
                bias1 = a.bias && m + 1 < g.M ? __ldg(a.bias + m + 1) : 0.f;
#pragma unroll
    for (int mi = 0; mi < 4; ++mi)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float v0 = acc[mi][ni][h * 2], v1 = acc[mi][ni][h * 2 + 1];
        if (a.bias) v0 += bias0, v1 += bias1;  // no bias: the sum as it is (+0 would turn -0 into +0)
        const int r = warp_m * kWarpRows + mi * 16 + (lane >> 2) + h * 8;
        *reinterpret_cast<__half2*>(tile + r * kPitch + f) =
            __halves2half2(__float2half_rn(k::activate(a.act, v0)), __float2half_rn(k::activate(a.act, v1)));
      }
  }
  __syncthreads();
  int64_t unit[kUnitsPerThread];  // the unit's index in the surface; -1 past the pixels or the atoms
  int image[kUnitsPerThread], pixel[kUnitsPerThread];
  union Unit {
    int4 word[2];
    __half h[kAtomHalves];
  } other[kUnitsPerThread];
  const int64_t plane = g.OH * g.OW;
#pragma unroll
  for (int j = 0; j < kUnitsPerThread; ++j) {
    const int i = t + j * B::kThreads, atom = m0 / kAtomHalves + i / B::kRows;
    const unsigned p = p0 + unsigned(i % B::kRows);
    unit[j] = -1;
    if (p < a.op.pixels && atom < a.atoms_out) {
      int n, oh, ow;
      a.op.pixel.split(p, n, oh, ow);
      image[j] = n, pixel[j] = oh * int(g.OW) + ow;
      unit[j] = (int64_t(n) * a.atoms_out + atom) * plane + pixel[j];
      if (a.has_residual && a.residual.other.atoms) {
        const int4* src = reinterpret_cast<const int4*>(a.residual.other.atoms + unit[j] * kAtomHalves);
        other[j].word[0] = __ldg(src), other[j].word[1] = __ldg(src + 1);
      }
    }
  }
#pragma unroll
  for (int j = 0; j < kUnitsPerThread; ++j) {
    if (unit[j] < 0) continue;
    const int i = t + j * B::kThreads, r = i % B::kRows, first_f = (i / B::kRows) * kAtomHalves;
    Unit out;
    const int4* row = reinterpret_cast<const int4*>(tile + r * kPitch + first_f);
    out.word[0] = row[0], out.word[1] = row[1];
#pragma unroll
    for (int c = 0; c < kAtomHalves; ++c) {
      const int m = m0 + first_f + c;
      if (a.has_residual) {
        const HalfResidual& res = a.residual;
        const float o =
            res.other.atoms ? __half2float(other[j].h[c]) : residual_operand(a, image[j], m, pixel[j], plane);
        float v = __half2float(__float2half_rn(__half2float(out.h[c]) + o));  // the Add's store rule
        if (res.relu) v = k::activated<k::Act::kRelu>(a.act, v);              // fp16 in, fp16 out
        out.h[c] = __float2half_rn(v);
      }
      if (m >= g.M) out.h[c] = __float2half_rn(0.f);
    }
    int4* dst = reinterpret_cast<int4*>(a.y.atoms + unit[j] * kAtomHalves);
    dst[0] = out.word[0], dst[1] = out.word[1];
  }
}

// The epilogue writing float NCHW: bias, activation and store rule on the accumulators in registers, then, 32
// filters at a time, through shared memory as [filter][pixel], so that a warp reads the residual's operand
// and writes the output as 32 consecutive pixels of one NCHW plane (a lane's own values are 8 pixels of 4
// filters apart). A surface takes surface_epilogue.
template <int kWarpsM, int kWarpsN>
__global__ void __launch_bounds__(32 * kWarpsM * kWarpsN) conv_half_mma_kernel(const HalfConvArgs a) {
  using B = igemm::Block<kWarpsM, kWarpsN>;
  constexpr int kPitch = B::kRows + 4;  // the 4 filters one store instruction covers in 4 bank groups
  static_assert(kWarpCols * kPitch * 4 <= B::kStagesBytes, "the output chunk fits the stages' memory");
  __shared__ __align__(128) int8_t shared[B::kStagesBytes];
  const k::ConvGeom& g = a.op.g;
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
  const unsigned p0 = blockIdx.x * unsigned(B::kRows);
  const int m0 = int(blockIdx.y) * B::kCols;
  float acc[4][4][4] = {};
  igemm::accumulate<kWarpsM, kWarpsN>(a.op, shared, p0, m0, acc);
  if (a.y.atoms) return surface_epilogue<kWarpsM, kWarpsN>(a, shared, p0, m0, acc);

#pragma unroll
  for (int ni = 0; ni < 4; ++ni)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int m = m0 + warp_n * kWarpCols + ni * 8 + (lane & 3) * 2 + e;
      const float bias_m = a.bias && m < g.M ? __ldg(a.bias + m) : 0.f;
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float& v = acc[mi][ni][h * 2 + e];
          if (a.bias) v += bias_m;  // no bias: the sum as it is (+0 would turn -0 into +0)
          v = k::stored(a.store, k::activate(a.act, v));
        }
    }
  float* chunk = reinterpret_cast<float*>(shared);  // [kWarpCols][kPitch]
  const int64_t plane = g.OH * g.OW;
  for (int part = 0; part < kWarpsN; ++part) {
    if (part) __syncthreads();  // every thread is done with the previous chunk
    if (warp_n == part) {
#pragma unroll
      for (int ni = 0; ni < 4; ++ni)
#pragma unroll
        for (int mi = 0; mi < 4; ++mi)
#pragma unroll
          for (int v = 0; v < 4; ++v) {
            const int f = ni * 8 + (lane & 3) * 2 + (v & 1),
                      r = warp_m * kWarpRows + mi * 16 + (lane >> 2) + (v >> 1) * 8;
            chunk[f * kPitch + r] = acc[mi][ni][v];
          }
    }
    __syncthreads();
    const int chunk_m = m0 + part * kWarpCols;
    // 8 values a thread at a time, their loads before their stores: the compiler cannot know that y does not
    // alias the residual's operand, so a load after a store would wait for it.
    constexpr int kBatch = 8, kPerThread = kWarpCols * B::kRows / B::kThreads;
    static_assert(kPerThread % kBatch == 0, "whole batches");
    for (int first = 0; first < kPerThread; first += kBatch) {
      int64_t at[kBatch];
      float v[kBatch], other[kBatch];
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const int i = t + (first + j) * B::kThreads, f = i / B::kRows, r = i % B::kRows;
        const int m = chunk_m + f;
        const unsigned p = p0 + unsigned(r);
        at[j] = -1;
        if (p < a.op.pixels && m < g.M) {
          int n, oh, ow;
          a.op.pixel.split(p, n, oh, ow);
          const int64_t pixel = int64_t(oh) * g.OW + ow;
          at[j] = (int64_t(n) * g.M + m) * plane + pixel;
          v[j] = chunk[f * kPitch + r];
          if (a.has_residual) other[j] = residual_operand(a, n, m, pixel, plane);
        }
      }
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        if (at[j] < 0) continue;
        a.y.nchw[at[j]] = a.has_residual ? add_residual(a, v[j], other[j]) : v[j];
      }
    }
  }
}

}  // namespace

size_t half_atoms_bytes(int64_t n, int64_t c, int64_t plane) { return size_t(n * atoms_of(c) * plane * 32); }

size_t half_atoms_bytes(const k::ConvGeom& g) { return half_atoms_bytes(g.N, g.C, g.H * g.W); }

int64_t half_atoms_channels(int64_t channels) { return atoms_of(channels) * kAtomHalves; }

int64_t half_atoms_k_bytes(const k::ConvGeom& g) { return g.KH * g.KW * atoms_of(g.C) * 32; }

bool half_atoms_fit(const k::ConvGeom& g) {
  // the pack's (pixel, atom) index and the count of K chunks in 32 bits
  return g.G == 1 && g.N * atoms_of(g.C) * g.H * g.W <= INT32_MAX && half_atoms_k_bytes(g) / 32 <= INT32_MAX;
}

std::vector<uint16_t> half_atoms_weights(const k::ConvGeom& g, const float* w) {
  const int64_t atoms = atoms_of(g.C), k_halves = half_atoms_k_bytes(g) / 2, taps = g.KH * g.KW;
  std::vector<uint16_t> out(size_t(g.M * k_halves), 0);
  for (int64_t m = 0; m < g.M; ++m)
    for (int64_t c = 0; c < g.C; ++c)
      for (int64_t tap = 0; tap < taps; ++tap) {
        const int64_t k = (tap * atoms + c / kAtomHalves) * kAtomHalves + c % kAtomHalves;
        out[size_t(m * k_halves + k)] = float_to_half(w[(m * g.C + c) * taps + tap]);
      }
  return out;
}

bool half_surface_rules(const k::StoreRule& store, const HalfResidual* residual) {
  return store.leaves_half() && (!residual || (residual->store.leaves_half() &&
                                               (!residual->relu || residual->relu_store.leaves_half())));
}

void conv_half_mma(const k::ConvGeom& g, MmaTile tile, HalfInput x, void* atoms, const uint16_t* w,
                   const float* bias, k::ActParams act, const k::StoreRule& store,
                   const HalfResidual* residual, HalfOutput y, cudaStream_t s) {
  if (y.atoms && !half_surface_rules(store, residual))
    fail(Status::kInternal, "an fp16 surface asked of a convolution whose rules store other values");
  const int64_t atoms_in = atoms_of(g.C), plane = g.H * g.W;
  const void* surface = x.atoms;
  if (x.nchw) {
    const unsigned count = unsigned(g.N * atoms_in * plane);
    pack_half_atoms_kernel<<<(count + k::kThreads - 1) / k::kThreads, k::kThreads, 0, s>>>(
        x.nchw, count, FastDivide(uint32_t(plane)), FastDivide(uint32_t(atoms_in)), int(g.C),
        static_cast<__half*>(atoms));
    DLAKIT_CUDA(cudaGetLastError());
    surface = atoms;
  }
  HalfConvArgs a;
  const int64_t line = g.W * 32, group = plane * 32;
  a.op = igemm::operands(g, static_cast<const int8_t*>(surface), atoms_in * group, group, line, atoms_in,
                         reinterpret_cast<const int8_t*>(w), half_atoms_k_bytes(g));
  a.bias = bias, a.act = act, a.store = store, a.y = y, a.atoms_out = int(atoms_of(g.M));
  a.residual = residual ? *residual : HalfResidual{}, a.has_residual = residual != nullptr;
  igemm::launch_tile(tile, [&](auto warps_m, auto warps_n) {
    constexpr int kWarpsM = decltype(warps_m)::value, kWarpsN = decltype(warps_n)::value;
    conv_half_mma_kernel<kWarpsM, kWarpsN>
        <<<igemm::grid_of<kWarpsM, kWarpsN>(a.op), 32 * kWarpsM * kWarpsN, 0, s>>>(a);
  });
}

void unpack_half_atoms(const uint16_t* atoms, int64_t n, int64_t c, int64_t plane, float* y, cudaStream_t s) {
  const unsigned count = unsigned(n * atoms_of(c) * plane);
  if (count == 0) return;
  unpack_half_atoms_kernel<<<(count + k::kThreads - 1) / k::kThreads, k::kThreads, 0, s>>>(
      reinterpret_cast<const __half*>(atoms), count, FastDivide(uint32_t(plane)),
      FastDivide(uint32_t(atoms_of(c))), int(c), y);
  DLAKIT_CUDA(cudaGetLastError());
}

}  // namespace dlakit::gpu
