// Device functions shared by the CUDA kernel files: the comparisons and the INT8 convolution epilogue,
// each written once so that every kernel computes them the same way (and as the CPU does).
#pragma once
#include <cuda_fp16.h>

#include "gpu/kernels.h"
#include "numerics/fast_level.h"

namespace dlakit::gpu::k {

// Launch sizes of the grid-stride kernels: kThreads a block, at most kMaxBlocks blocks (the loops cover the
// rest). grid_blocks caps a count of blocks (one a line, say); blocks_for covers `threads` threads.
constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 1048576;
inline unsigned grid_blocks(int64_t blocks) {
  return unsigned(blocks < 1 ? 1 : blocks > kMaxBlocks ? kMaxBlocks : blocks);
}
inline unsigned blocks_for(int64_t threads) { return grid_blocks((threads + kThreads - 1) / kThreads); }

// std::max / std::min exactly (the first argument wins ties, so signed zeros match the CPU).
__device__ inline float smax(float a, float b) { return a < b ? b : a; }
__device__ inline float smin(float a, float b) { return b < a ? b : a; }

// quantize() of src/numerics/quantize.h: x / scale, round (ties by mode), clamp to [-128, 127], NaN -> 0;
// the one rule, numerics::exact_level, dividing (kernels that quantize every value they write pass the
// scale's usable_inverse to numerics::fast_level instead).
__device__ inline float level(float x, float scale, int rounding) {
  return numerics::exact_level(x, scale, 0.f, rounding);
}

// A chw surface's line index -> (n, atom group, row), in 32-bit arithmetic where it fits (a 64-bit
// division costs several times more, and short lines leave few bytes per thread to spread it over).
__device__ inline void split_line(int64_t line, int64_t rows, int64_t groups, int64_t& n, int64_t& g,
                                  int64_t& h) {
  if (line <= INT32_MAX && rows * groups <= INT32_MAX) {
    const unsigned l = unsigned(line), r = unsigned(rows), gs = unsigned(groups);
    h = l % r, g = (l / r) % gs, n = l / (r * gs);
  } else {
    h = line % rows, g = (line / rows) % groups, n = line / (rows * groups);
  }
}

// An output pixel's index (n, oh, ow flattened) -> its coordinates; below 2^31 where the kernels call it.
__device__ inline void split_pixel(unsigned p, int OW, int OH, int& n, int& oh, int& ow) {
  ow = int(p % unsigned(OW)), oh = int((p / unsigned(OW)) % unsigned(OH)), n = int(p / unsigned(OW * OH));
}

__device__ inline float half_rounded(float v) { return __half2float(__float2half_rn(v)); }

// A result as its layer stores it (StoreRule; numerics' store(): fp16, or quantize() and back).
__device__ inline float stored(const StoreRule& r, float v) {
  if (r.half_first) v = half_rounded(v);
  if (r.kind == StoreRule::Kind::kFp16) return half_rounded(v);
  if (r.kind == StoreRule::Kind::kInt8) return r.scale > 0 ? level(v, r.scale, r.rounding) * r.scale : 0.f;
  return v;
}

// The fused activation, as a template argument where a kernel is instantiated per activation (a switch per
// value costs the INT8 epilogues several instructions of a few dozen) and as a runtime choice.
template <Act kAct>
__device__ inline float activated(ActParams a, float v) {
  if constexpr (kAct == Act::kRelu) return v > 0.f ? v : 0.f;
  if constexpr (kAct == Act::kClip) return v != v ? v : smin(smax(v, a.a), a.b);
  if constexpr (kAct == Act::kLeakyRelu) return v >= 0.f ? v : v * a.a;
  return v;
}
__device__ inline float activate(ActParams a, float v) {
  switch (a.act) {
    case Act::kRelu:
      return activated<Act::kRelu>(a, v);
    case Act::kClip:
      return activated<Act::kClip>(a, v);
    case Act::kLeakyRelu:
      return activated<Act::kLeakyRelu>(a, v);
    default:
      return v;
  }
}

// An INT8 convolution's output from its exact integer sum (numerics::Int8Conv): the level sum plus the
// bias in levels, in double, rounded to float once and scaled; a channel without a scale gives its bias.
// int8_conv_sum (before the activation) takes filter m's three numbers themselves (bias_m: its bias, 0
// without one) and the sum as a double (exact: below 2^53).
__device__ inline float int8_conv_sum(double acc, float mult_m, double bq_m, float bias_m) {
  return mult_m > 0 ? float(acc + bq_m) * mult_m : bias_m;
}
__device__ inline float int8_conv_output(long long acc, int64_t m, const float* mult, const double* bq,
                                         const float* bias, ActParams act) {
  return activate(act, int8_conv_sum(double(acc), mult[m], bq[m], bias ? bias[m] : 0.f));
}

// One level of the int8 surface Add (kernels/int8_atoms.cpp's arithmetic in its order) from the two
// inputs' levels as floats (exact integers); atom_add_byte: from their bytes, padding channels zero.
// inv_sy: numerics::usable_inverse(sy).
__device__ inline float atom_add_level(float la, float lb, float sa, float sb, float sy, float inv_sy,
                                       bool relu) {
  float v = la * sa + lb * sb;
  if (relu) v = v > 0.f ? v : 0.f;
  return numerics::fast_level(v, sy, inv_sy, 0);
}
__device__ inline int8_t atom_add_byte(int8_t qa, int8_t qb, float sa, float sb, float sy, float inv_sy,
                                       bool relu, bool padding) {
  if (padding) return 0;
  return numerics::level_byte(
      atom_add_level(numerics::byte_value(qa), numerics::byte_value(qb), sa, sb, sy, inv_sy, relu));
}

}  // namespace dlakit::gpu::k
