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

// One pixel's 16 channels of an atom: 32 bytes of a surface.
union HalfUnit {
  int4 word[2];
  __half h[kAtomHalves];
};

// The pack and unpack threads: one a unit of the surface, (n, atom, pixel) flattened so that consecutive
// threads take consecutive pixels of each channel plane. Returns false past the last unit.
struct UnitPlace {
  unsigned index, n, atom, pixel;
  // Where channel c of the unit lies in float NCHW of C channels.
  __device__ int64_t nchw(int c, int C, unsigned plane) const {
    return (int64_t(n) * C + int(atom) * kAtomHalves + c) * plane + pixel;
  }
};
__device__ inline bool unit_place(unsigned count, FastDivide plane, FastDivide atoms, UnitPlace& u) {
  u.index = blockIdx.x * blockDim.x + threadIdx.x;
  if (u.index >= count) return false;
  const unsigned image_atom = plane.quotient(u.index);
  u.pixel = u.index - image_atom * plane.divisor;
  u.n = atoms.quotient(image_atom), u.atom = image_atom - u.n * atoms.divisor;
  return true;
}

// A unit's 16 channels rounded to fp16 (zero past C), written as two 16-byte stores.
__global__ void pack_half_atoms_kernel(const float* x, unsigned count, FastDivide plane, FastDivide atoms,
                                       int C, __half* out) {
  UnitPlace u;
  if (!unit_place(count, plane, atoms, u)) return;
  HalfUnit v;
#pragma unroll
  for (int c = 0; c < kAtomHalves; ++c)
    v.h[c] = __float2half_rn(int(u.atom) * kAtomHalves + c < C ? x[u.nchw(c, C, plane.divisor)] : 0.f);
  int4* dst = reinterpret_cast<int4*>(out + int64_t(u.index) * kAtomHalves);
  dst[0] = v.word[0], dst[1] = v.word[1];
}

// The inverse: two 16-byte loads, the unit's channels below C as floats.
__global__ void unpack_half_atoms_kernel(const __half* atoms, unsigned count, FastDivide plane,
                                         FastDivide atoms_per_image, int C, float* y) {
  UnitPlace u;
  if (!unit_place(count, plane, atoms_per_image, u)) return;
  HalfUnit v;
  const int4* src = reinterpret_cast<const int4*>(atoms + int64_t(u.index) * kAtomHalves);
  v.word[0] = __ldg(src), v.word[1] = __ldg(src + 1);
#pragma unroll
  for (int c = 0; c < kAtomHalves; ++c)
    if (int(u.atom) * kAtomHalves + c < C) y[u.nchw(c, C, plane.divisor)] = __half2float(v.h[c]);
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
  SplitScratch split;
  // Rules::kSimple's reading of the rules: a ReLU, and which of the three stores round to fp16
  struct {
    bool relu, store_half, add_half, relu_half;
  } simple;
};

// The epilogue's rules: where each store rule is one rounding to fp16 or none (no int8 step) and the
// activation none or a ReLU, the kernel's kSimple form reads them as four flags; kAny calls the general
// functions, which cost more instructions than the arithmetic (ncu counted 2,800-4,500 a warp in short-K
// layers' epilogues). kHalves is kSimple where the last rule (and the convolution's, before a residual
// Add) rounds to fp16 and the result and the residual operand are surfaces (the gpu-fp16 configuration's
// convolutions whose results stay fp16 surfaces): the ReLU and the residual are template arguments, and
// the last rounding is the one that packs the result to halves.
// kHalvesFromSum is kHalves where the convolution's result reaches the residual Add unrounded (ResNet's FP16
// plan keeps the sum for the Add: Store::kFused).
enum class Rules { kAny, kSimple, kHalves, kHalvesFromSum };

bool rules_simple(k::ActParams act, const k::StoreRule& store, const HalfResidual* residual) {
  auto simple = [](const k::StoreRule& r) { return r.kind != k::StoreRule::Kind::kInt8; };
  return (act.act == k::Act::kNone || act.act == k::Act::kRelu) && simple(store) &&
         (!residual || (simple(residual->store) && (!residual->relu || simple(residual->relu_store))));
}

// The rules' form (Rules). kHalves and kHalvesFromSum: kSimple rules from a surface to a surface whose last
// step rounds to fp16. Rounding is idempotent and relu(half(x)) is half(relu(x)), so the pack's rounding
// stands for every rounding after the Add's addition; only one before it (the convolution's) is computed.
Rules rules_of(k::ActParams act, const k::StoreRule& store, const HalfResidual* residual, HalfOutput y) {
  if (!rules_simple(act, store, residual)) return Rules::kAny;
  if (!y.atoms || (residual && !residual->other.atoms)) return Rules::kSimple;
  const bool last_rounds = !residual        ? store.changes()
                           : residual->relu ? residual->relu_store.changes()
                                            : residual->store.changes();
  if (!last_rounds) return Rules::kSimple;
  return !residual || store.changes() ? Rules::kHalves : Rules::kHalvesFromSum;
}

// The layer's activation and store rule on its sum (with the bias).
template <Rules kRules>
__device__ __forceinline__ float conv_result(const HalfConvArgs& a, float v) {
  if constexpr (kRules == Rules::kAny) return k::stored(a.store, k::activate(a.act, v));
  if (a.simple.relu) v = k::activated<k::Act::kRelu>(a.act, v);
  return a.simple.store_half ? k::half_rounded(v) : v;
}

// The fused residual's layers on the convolution's result v and the Add's other operand.
template <Rules kRules>
__device__ __forceinline__ float add_residual(const HalfConvArgs& a, float v, float other) {
  const HalfResidual& res = a.residual;
  if constexpr (kRules == Rules::kAny) {
    v = k::stored(res.store, v + other);
    if (res.relu) v = k::stored(res.relu_store, k::activated<k::Act::kRelu>(a.act, v));
    return v;
  }
  v += other;
  if (a.simple.add_half) v = k::half_rounded(v);
  if (!res.relu) return v;
  v = k::activated<k::Act::kRelu>(a.act, v);
  return a.simple.relu_half ? k::half_rounded(v) : v;
}

// The residual's other operand at filter m of output pixel `pixel` of image n, from either form.
__device__ __forceinline__ float residual_operand(const HalfConvArgs& a, int n, int m, int64_t pixel,
                                                  int64_t plane) {
  const HalfInput& o = a.residual.other;
  if (o.nchw) return __ldg(o.nchw + (int64_t(n) * a.op.g.M + m) * plane + pixel);
  const int64_t unit = (int64_t(n) * a.atoms_out + m / kAtomHalves) * plane + pixel;
  return __half2float(reinterpret_cast<const __half*>(o.atoms)[unit * kAtomHalves + m % kAtomHalves]);
}

// The epilogue under kSimple rules with a surface result (and the residual operand, if any, a surface): the
// residual Add is done in registers too, after which every value is fp16 (the last rule stores fp16: the
// host checks), so the whole tile goes through shared memory at once as halves
// [pixel][filter] (a barrier, 32 stores and 8 wide loads a thread), and each thread writes whole 32-byte
// units of consecutive pixels. The residual operand is read in registers, two filters (4 bytes) a load.
// kValues: Rules::kSimple (the flags) or kHalves / kHalvesFromSum (kRelu, kResidual).
template <int kWarpsM, int kWarpsN, Rules kValues, bool kRelu, bool kResidual>
__device__ __forceinline__ void half_tile_epilogue(const HalfConvArgs& a, float (&acc)[4][4][4],
                                                   int8_t* shared, unsigned p0, int m0) {
  static_assert(kValues != Rules::kAny, "the rules it reads");
  static_assert(kValues != Rules::kHalvesFromSum || kResidual, "a sum kept for the residual Add");
  constexpr bool kHalves = kValues != Rules::kSimple;
  const bool has_residual = kHalves ? kResidual : a.has_residual;
  using B = igemm::Block<kWarpsM, kWarpsN>;
  // rows 68 or 36 words apart: a warp's 4-byte stores (8 rows x 4 filter pairs) and a quarter warp's 16-byte
  // loads (8 rows) meet every bank once
  constexpr int kPitch = B::kCols + 8;
  static_assert(B::kRows * kPitch * 2 <= B::kStagesBytes, "the tile fits the stages' memory");
  static_assert(B::kThreads % B::kRows == 0, "a thread keeps its row");
  const k::ConvGeom& g = a.op.g;
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
  const int64_t plane = g.OH * g.OW, atom_plane = plane * kAtomHalves;
  __half* tile = reinterpret_cast<__half*>(shared);
  const __half* other = reinterpret_cast<const __half*>(a.residual.other.atoms);
  const int f0 = warp_n * kWarpCols + (lane & 3) * 2;  // the lane's filters: f0 + ni * 8 and the next
  float bias[4][2];
#pragma unroll
  for (int ni = 0; ni < 4; ++ni)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int m = m0 + f0 + ni * 8 + e;
      // kHalves adds -0 where there is no bias: x + -0 is x for every x, -0 included
      bias[ni][e] = a.bias && m < g.M ? __ldg(a.bias + m) : kHalves ? -0.f : 0.f;
    }
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = warp_m * kWarpRows + mi * 16 + (lane >> 2) + h * 8;
      const unsigned p = p0 + unsigned(r);
      const __half* row = nullptr;  // the residual operand's pixel, where there is one to read
      if (has_residual && p < a.op.pixels) {
        int n, oh, ow;
        a.op.pixel.split(p, n, oh, ow);
        row = other + int64_t(n) * a.atoms_out * atom_plane + (int64_t(oh) * g.OW + ow) * kAtomHalves;
      }
#pragma unroll
      for (int ni = 0; ni < 4; ++ni) {
        const int f = f0 + ni * 8, m = m0 + f;  // m even: m and m + 1 share an atom
        float2 operand = make_float2(0.f, 0.f);
        if (row && m < g.M)
          operand = __half22float2(*reinterpret_cast<const __half2*>(
              row + int64_t(m / kAtomHalves) * atom_plane + m % kAtomHalves));
        float v[2];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          v[e] = acc[mi][ni][h * 2 + e];
          const float addend = e ? operand.y : operand.x;
          if constexpr (kHalves) {
            // kSimple's steps with every rounding: relu(half(x)) is half(relu(x)), so the Add's ReLU needs no
            // rounding of its own, and the last rounding is the pack's below.
            v[e] += bias[ni][e];
            if constexpr (kRelu) v[e] = k::activated<k::Act::kRelu>(a.act, v[e]);
            if constexpr (kResidual) {
              v[e] = (kValues == Rules::kHalves ? k::half_rounded(v[e]) : v[e]) + addend;
              if (a.residual.relu) v[e] = k::activated<k::Act::kRelu>(a.act, v[e]);
            }
          } else {
            if (a.bias) v[e] += bias[ni][e];  // no bias: the sum as it is (+0 would turn -0 into +0)
            v[e] = conv_result<Rules::kSimple>(a, v[e]);
            if (a.has_residual) v[e] = add_residual<Rules::kSimple>(a, v[e], addend);
          }
          if (m + e >= g.M) v[e] = 0.f;  // padding: zero (the readers' zero weights would not cancel NaN)
        }
        // exact for kSimple (every value on the fp16 grid), kHalves' last rounding
        *reinterpret_cast<__half2*>(tile + r * kPitch + f) = __floats2half2_rn(v[0], v[1]);
      }
    }
  __syncthreads();
  const int r = t % B::kRows;
  const unsigned p = p0 + unsigned(r);
  if (p >= a.op.pixels) return;
  int n, oh, ow;
  a.op.pixel.split(p, n, oh, ow);
  __half* out = reinterpret_cast<__half*>(a.y.atoms) + int64_t(n) * a.atoms_out * atom_plane +
                (int64_t(oh) * g.OW + ow) * kAtomHalves;
  for (int atom = t / B::kRows; atom < B::kCols / kAtomHalves; atom += B::kThreads / B::kRows) {
    const int atom_out = m0 / kAtomHalves + atom;
    if (atom_out >= a.atoms_out) break;
    const int4* src = reinterpret_cast<const int4*>(tile + r * kPitch + atom * kAtomHalves);
    int4* dst = reinterpret_cast<int4*>(out + atom_out * atom_plane);
    dst[0] = src[0], dst[1] = src[1];
  }
}

// The epilogue where half_tile_epilogue does not apply: bias, activation and store rule on the accumulators
// in registers, then, 32 filters (two atoms) at a time, through shared memory as [filter][pixel], so that a
// warp reads the residual's operand and writes the output as 32 consecutive pixels of one NCHW plane, or as
// 32 consecutive pixels' 32-byte units of a surface (a lane's own values are 8 pixels of 4 filters apart).
template <int kWarpsM, int kWarpsN, Rules kRules>
__device__ __forceinline__ void chunk_epilogue(const HalfConvArgs& a, float (&acc)[4][4][4], int8_t* shared,
                                               unsigned p0, int m0) {
  using B = igemm::Block<kWarpsM, kWarpsN>;
  constexpr int kPitch = B::kRows + 4;  // the 4 filters one store instruction covers in 4 bank groups
  static_assert(kWarpCols * kPitch * 4 <= B::kStagesBytes, "the output chunk fits the stages' memory");
  static_assert(kWarpCols == 2 * kAtomHalves, "a chunk is two whole atoms");
  const k::ConvGeom& g = a.op.g;
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
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
          v = conv_result<kRules>(a, v);
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
    if (a.y.atoms) {
      // A thread's step: 8 filters (16 bytes) of one pixel in one of the chunk's two atoms, consecutive
      // threads on consecutive pixels. The padding filters past M are zeros: the readers' weights for them
      // are zero, and 0 x NaN would not be.
      constexpr int kWordHalves = 8;
      for (int i = t; i < 4 * B::kRows; i += B::kThreads) {
        const int word = i / B::kRows, r = i % B::kRows, first_f = word * kWordHalves;
        const int atom = (chunk_m + first_f) / kAtomHalves;
        const unsigned p = p0 + unsigned(r);
        if (p >= a.op.pixels || atom >= a.atoms_out) continue;
        int n, oh, ow;
        a.op.pixel.split(p, n, oh, ow);
        const int64_t pixel = int64_t(oh) * g.OW + ow,
                      at = ((int64_t(n) * a.atoms_out + atom) * plane + pixel) * kAtomHalves +
                           first_f % kAtomHalves;
        union {
          int4 word;
          __half h[kWordHalves];
        } other, out;
        if (a.has_residual && a.residual.other.atoms)
          other.word = __ldg(reinterpret_cast<const int4*>(a.residual.other.atoms + at));
#pragma unroll
        for (int c = 0; c < kWordHalves; ++c) {
          const int f = first_f + c, m = chunk_m + f;
          float v = chunk[f * kPitch + r];
          if (m >= g.M) {  // padding: nothing to read (a float operand has no such plane)
            out.h[c] = __float2half_rn(0.f);
            continue;
          }
          if (a.has_residual)
            v = add_residual<kRules>(
                a, v,
                a.residual.other.atoms ? __half2float(other.h[c]) : residual_operand(a, n, m, pixel, plane));
          out.h[c] = __float2half_rn(v);  // v is on the fp16 grid: exact
        }
        *reinterpret_cast<int4*>(a.y.atoms + at) = out.word;
      }
      continue;
    }
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
        a.y.nchw[at[j]] = a.has_residual ? add_residual<kRules>(a, v[j], other[j]) : v[j];
      }
    }
  }
}

// The kernel: the sums (K whole or, over gridDim.z blocks, split), then the epilogue its rules take.
template <int kWarpsM, int kWarpsN, Rules kRules, bool kRelu = false, bool kResidual = false>
__global__ void __launch_bounds__(32 * kWarpsM * kWarpsN) conv_half_mma_kernel(const HalfConvArgs a) {
  using B = igemm::Block<kWarpsM, kWarpsN>;
  __shared__ __align__(128) int8_t shared[B::kStagesBytes];
  const unsigned p0 = blockIdx.x * unsigned(B::kRows);
  const int m0 = int(blockIdx.y) * B::kCols;
  float acc[4][4][4] = {};
  int first, end;
  igemm::split_stages(a.op, first, end);
  igemm::accumulate<kWarpsM, kWarpsN>(a.op, shared, p0, m0, first, end, acc);
  if (gridDim.z > 1 && !igemm::gather_split<B::kThreads>(a.split, acc)) return;
  if constexpr (kRules == Rules::kHalves || kRules == Rules::kHalvesFromSum) {
    half_tile_epilogue<kWarpsM, kWarpsN, kRules, kRelu, kResidual>(a, acc, shared, p0, m0);
  } else if constexpr (kRules == Rules::kSimple) {
    if (a.y.atoms && (!a.has_residual || a.residual.other.atoms))
      half_tile_epilogue<kWarpsM, kWarpsN, Rules::kSimple, false, false>(a, acc, shared, p0, m0);
    else
      chunk_epilogue<kWarpsM, kWarpsN, kRules>(a, acc, shared, p0, m0);
  } else {
    chunk_epilogue<kWarpsM, kWarpsN, kRules>(a, acc, shared, p0, m0);
  }
}

}  // namespace

size_t half_atoms_bytes(int64_t n, int64_t c, int64_t plane) { return size_t(n * atoms_of(c) * plane * 32); }

size_t half_atoms_bytes(const k::ConvGeom& g) { return half_atoms_bytes(g.N, g.C, g.H * g.W); }

int64_t half_atoms_channels(int64_t channels) { return atoms_of(channels) * kAtomHalves; }

int64_t half_atoms_k_bytes(const k::ConvGeom& g) { return g.KH * g.KW * atoms_of(g.C) * 32; }

int64_t half_atoms_stages(const k::ConvGeom& g) { return igemm::k_stages(half_atoms_k_bytes(g)); }

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
  const k::StoreRule& last = !residual ? store : residual->relu ? residual->relu_store : residual->store;
  return last.leaves_half();
}

void conv_half_mma(const k::ConvGeom& g, MmaShape shape, HalfInput x, void* atoms, const uint16_t* w,
                   const float* bias, k::ActParams act, const k::StoreRule& store,
                   const HalfResidual* residual, HalfOutput y, const SplitScratch& split, cudaStream_t s) {
  if (shape.splits > 1 && !(split.sums && split.arrivals))
    fail(Status::kInternal, "a split K without the memory its blocks meet in");
  if (y.atoms && !half_surface_rules(store, residual))
    fail(Status::kInternal, "an fp16 surface asked of a convolution whose last rule stores other values");
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
  a.split = split;
  const Rules rules = rules_of(act, store, residual, y);
  a.simple = {act.act == k::Act::kRelu, store.changes(), residual && residual->store.changes(),
              residual && residual->relu && residual->relu_store.changes()};
  igemm::launch_tile(shape.tile, [&](auto warps_m, auto warps_n) {
    constexpr int kWarpsM = decltype(warps_m)::value, kWarpsN = decltype(warps_n)::value;
    const dim3 grid = igemm::grid_of<kWarpsM, kWarpsN>(a.op, shape.splits), block(32 * kWarpsM * kWarpsN);
    // gather_split indexes the sums and counts by this grid; the host sized them by split_arrivals' tiles.
    if (shape.splits > 1 && int64_t(grid.x) * grid.y != split_arrivals(g, shape))
      fail(Status::kInternal, "a split K's grid of ", grid.x, " x ", grid.y, " tiles differs from the ",
           split_arrivals(g, shape), " counts allocated for it");
    const bool relu = act.act == k::Act::kRelu;
    if (rules == Rules::kHalvesFromSum) {
      if (relu)
        conv_half_mma_kernel<kWarpsM, kWarpsN, Rules::kHalvesFromSum, true, true><<<grid, block, 0, s>>>(a);
      else
        conv_half_mma_kernel<kWarpsM, kWarpsN, Rules::kHalvesFromSum, false, true><<<grid, block, 0, s>>>(a);
    } else if (rules == Rules::kHalves) {
      if (relu && residual)
        conv_half_mma_kernel<kWarpsM, kWarpsN, Rules::kHalves, true, true><<<grid, block, 0, s>>>(a);
      else if (relu)
        conv_half_mma_kernel<kWarpsM, kWarpsN, Rules::kHalves, true, false><<<grid, block, 0, s>>>(a);
      else if (residual)
        conv_half_mma_kernel<kWarpsM, kWarpsN, Rules::kHalves, false, true><<<grid, block, 0, s>>>(a);
      else
        conv_half_mma_kernel<kWarpsM, kWarpsN, Rules::kHalves, false, false><<<grid, block, 0, s>>>(a);
    } else if (rules == Rules::kSimple) {
      conv_half_mma_kernel<kWarpsM, kWarpsN, Rules::kSimple><<<grid, block, 0, s>>>(a);
    } else {
      conv_half_mma_kernel<kWarpsM, kWarpsN, Rules::kAny><<<grid, block, 0, s>>>(a);
    }
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
