// quantize() (quantize.h) without a division or a float-to-integer conversion, for kernels that quantize
// every value they write: on a GPU those two run on the slow pipes (a reciprocal, a conversion at a
// sixteenth of the float rate) and bound the INT8 epilogues. Same results bit for bit, because:
// - most quotients are far from a half-integer, and the product x * inv rounds as they do (kTieMargin);
// - otherwise x / scale is the correctly rounded quotient from inv = RN(1 / scale) and two FMA corrections
//   (the first brings the product x * inv within an ulp of the quotient, the second is then exact by
//   Markstein's theorem: a quotient within an ulp, a reciprocal within half an ulp, an exact FMA residual);
// - rounding to an integer is the magic-number sum (v + 1.5 * 2^23) - 1.5 * 2^23 (ties to even), exact once
//   v is clamped to [-129, 128], which saturates as the clamp after rounding would;
// - the int8 is the low byte of the bits of level + 1.5 * 2^23 (an integer's float is 0x4B400000 + level).
// The corrections are exact while nothing underflows: where the scale is below 2^-100 or 1 / scale would not
// be normal (usable_inverse), callers divide (inv = 0). A scale that is not positive gives level 0, NaN
// inputs and quotients too, as quantize() does.
// Plain C++ that CUDA compiles too (every step an explicit operation, so no contraction changes it).
#pragma once
#include <math.h>
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define DLAKIT_HOST_DEVICE __host__ __device__
#define DLAKIT_OUT_OF_LINE __noinline__
#else
#define DLAKIT_HOST_DEVICE
#define DLAKIT_OUT_OF_LINE
#endif

namespace dlakit::numerics {

// RN(1 / scale) where the fast path applies, else 0.
DLAKIT_HOST_DEVICE inline float usable_inverse(float scale) {
  // From 2^-100: below it the FMA residuals of small quotients fall into subnormals and lose bits, so the
  // corrected quotient can miss by an ulp (a review found such ties at scales up to ~2^-110). Up to 1e36:
  // the inverse stays normal.
  if (!(scale >= 0x1p-100f && scale <= 1.0e36f)) return 0.f;
  return 1.f / scale;
}

// x / scale as IEEE division rounds it, for |x| from 2^-100 (the residuals stay normal) and |x / scale|
// below 2^22 (above it: a value at least as large, with x's sign, which the callers saturate). Smaller |x|
// may miss by an ulp, at quotients below 2^-3 (scale >= 2^-100), where every level is 0.
DLAKIT_HOST_DEVICE inline float quotient(float x, float scale, float inv) {
  float q = x * inv;
  if (!(fabsf(q) < 4194304.f)) return q;
  float residual = fmaf(-q, scale, x);
  q = fmaf(residual, inv, q);
  residual = fmaf(-q, scale, x);
  return fmaf(residual, inv, q);
}

// The shortcut's margin: x * inv is within 2^-15 of the IEEE quotient while |x * inv| <= 129 (two roundings
// of at most 2^-24 relative each, and the quotient's own half ulp), so a product further than this from
// every half-integer rounds to the same integer as the quotient would; the others (about 1 in 4000 of
// evenly spread values) take the corrections.
constexpr float kTieMargin = 0x1p-13f;

// 1.5 * 2^23: a float at this magnitude has one unit in its last place, so adding and subtracting it rounds
// to an integer (ties to even), and an integer's float plus it has the integer in its low bits.
constexpr float kMagic = 12582912.f;

// quantize(x, scale, rounding) as a float level (rounding 0: half away from zero, 1: half to even) from the
// corrected quotient (inv: usable_inverse(scale)) or the division (inv = 0).
DLAKIT_HOST_DEVICE inline float exact_level(float x, float scale, float inv, int rounding) {
  if (x != x || !(scale > 0.f)) return 0.f;
  float v = inv != 0.f ? quotient(x, scale, inv) : x / scale;
  if (v != v) return 0.f;  // inf / inf: quantize()'s NaN level converts to 0
  v = v < -129.f ? -129.f : v > 128.f ? 128.f : v;
  float t = (v + kMagic) - kMagic;
  if (rounding == 0 && fabsf(v - t) == 0.5f && fabsf(t) < fabsf(v)) t += v < 0.f ? -1.f : 1.f;
  return t < -128.f ? -128.f : t > 127.f ? 127.f : t;
}

// exact_level for the values fast_level's shortcut leaves (near a tie, NaN, a scale without a usable
// inverse), out of line in CUDA code: a copy per quantized value of an unrolled epilogue multiplies the code
// (and ptxas's time) for about 1 value in 4000.
DLAKIT_HOST_DEVICE DLAKIT_OUT_OF_LINE inline float exact_level_call(float x, float scale, float inv,
                                                                    int rounding) {
  return exact_level(x, scale, inv, rounding);
}

// quantize(x, scale, rounding) as a float level; inv: usable_inverse(scale), or 0 to divide.
DLAKIT_HOST_DEVICE inline float fast_level(float x, float scale, float inv, int rounding) {
  if (inv != 0.f) {
    float v = x * inv;
    // Saturated first: a product beyond a bound is within 2^-15 of a quotient that rounds to the bound or
    // past it. NaN stays NaN and fails the test below.
    v = v < -128.f ? -128.f : v > 127.f ? 127.f : v;
    const float t = (v + kMagic) - kMagic;
    if (fabsf(fabsf(v - t) - 0.5f) > kTieMargin) return t;
  }
  return exact_level_call(x, scale, inv, rounding);
}

// fast_level's int8, read from the float's bits instead of converted.
DLAKIT_HOST_DEVICE inline int8_t level_byte(float level) {
  const float shifted = level + kMagic;
  uint32_t bits;
  std::memcpy(&bits, &shifted, 4);
  return int8_t(uint8_t(bits & 0xffu));
}

// An int8's float (exact) without a conversion: 0x4B400000 + q is the bits of 1.5 * 2^23 + q.
DLAKIT_HOST_DEVICE inline float byte_value(int8_t q) {
  const uint32_t bits = 0x4B400000u + uint32_t(int32_t(q));
  float f;
  std::memcpy(&f, &bits, 4);
  return f - kMagic;
}

// double(acc) without a conversion: the double with high word 0x43300000 and low word acc + 2^31 is
// 2^52 + 2^31 + acc, from which an exact subtraction leaves acc.
DLAKIT_HOST_DEVICE inline double int_value(int32_t acc) {
  const uint64_t bits = (uint64_t(0x43300000u) << 32) | uint64_t(uint32_t(acc) ^ 0x80000000u);
  double d;
  std::memcpy(&d, &bits, 8);
  return d - 4503601774854144.0;  // 2^52 + 2^31
}

}  // namespace dlakit::numerics
