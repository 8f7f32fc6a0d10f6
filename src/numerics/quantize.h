// INT8 arithmetic as TensorRT and the DLA define it: symmetric, signed, zero point 0; scale = amax / 127;
// q = clamp(round(x / scale), -128, 127); x' = q * scale. The DLA rounds half away from zero, the GPU
// (IQuantizeLayer) half to even (dla-constraints.md §4.1).
#pragma once
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ir/tensor.h"

namespace dlakit::quant {

enum class Rounding { kHalfAwayFromZero, kHalfToEven };
const char* rounding_name(Rounding r);

inline float round_with(float v, Rounding r) {
  return r == Rounding::kHalfAwayFromZero ? std::round(v) : std::nearbyint(v);  // nearbyint: ties to even
}

// The scale for a dynamic range; a zero range gives scale 0 (every value quantizes to 0).
inline float scale_from_amax(float amax) { return amax > 0 ? amax / 127.0f : 0.0f; }

// One value to INT8. NaN quantizes to 0; +-inf saturate.
inline int8_t quantize(float x, float scale, Rounding r) {
  if (!(scale > 0) || x != x) return 0;
  const float q = round_with(x / scale, r);
  return int8_t(q < -128.f ? -128.f : q > 127.f ? 127.f : q);
}

// Levels x scale stay normal and finite for every nonzero level, so dividing by the scale gives the levels
// back under any rounding: a tensor already on this scale's grid is its own fake-quantized value, and an
// int8 surface at this scale holds exactly the levels a quantization would give. (A subnormal scale loses
// bits in level x scale.)
inline bool levels_round_trip(float scale) { return scale >= FLT_MIN && std::isfinite(scale * 128.f); }

// Whether every level at scale `from` is the same level at scale `to` (quantize(level * from, to), ties away
// from zero): then a level can be stored as it is. Checked level by level, not assumed from from == to.
inline bool same_levels(float from, float to) {
  for (int level = -128; level <= 127; ++level)
    if (quantize(float(level) * from, to, Rounding::kHalfAwayFromZero) != level) return false;
  return true;
}

// Quantize-dequantize in place ("fake quantization"): every element becomes q * scale.
void fake_quantize(float* x, int64_t n, float scale, Rounding r);
// fake_quantize of x into q: one pass over memory where a copy and fake_quantize would take two.
void fake_quantize_to(const float* x, float* q, int64_t n, float scale, Rounding r);
// The integer levels q (as floats) of x, for integer-exact arithmetic on float hardware.
void quantize_to_levels(const float* x, float* q, int64_t n, float scale, Rounding r);
// quantize() of n values into int8, vectorised, on the calling thread (for runs inside a parallel task).
void quantize_to_int8(const float* x, int8_t* q, int64_t n, float scale, Rounding r);

// Per-output-channel weight scales max|w_k| / 127 along `axis` (0 for KCRS conv weights).
std::vector<float> per_channel_scales(const Tensor& w, int axis);
// The weight's integer levels with those scales (values in [-127, 127], as float32).
Tensor quantize_weights(const Tensor& w, const std::vector<float>& scales, int axis, Rounding r);
// The levels times their channel's scale: the weight on its INT8 grid.
Tensor fake_quantize_weights(const Tensor& w, const std::vector<float>& scales, int axis, Rounding r);

}  // namespace dlakit::quant
