// The float arithmetic of the element-wise ops on float32, in one place: the reference kernels
// (activation.cpp, elementwise.cpp) and the engine's fused element-wise steps (engine/fusion.cpp) both
// call these, so fusing never changes a bit.
#pragma once
#include <algorithm>

namespace dlakit::ref::f32 {

inline float relu(float v) { return v > 0.f ? v : 0.f; }
inline float clip(float v, float lo, float hi) { return v != v ? v : std::min(std::max(v, lo), hi); }
inline float leaky_relu(float v, float alpha) { return v >= 0.f ? v : v * alpha; }
inline float hard_sigmoid(float v, float alpha, float beta) {
  return std::max(0.f, std::min(1.f, alpha * v + beta));
}
inline float hard_swish(float v) { return v * std::max(0.f, std::min(1.f, v / 6.f + 0.5f)); }

}  // namespace dlakit::ref::f32
