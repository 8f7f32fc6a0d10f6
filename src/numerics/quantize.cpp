#include "numerics/quantize.h"

#include <algorithm>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "base/cpu.h"
#include "base/threadpool.h"
#include "numerics/fast_level.h"
#include "numerics/fast_level_avx512.h"

namespace dlakit::quant {

const char* rounding_name(Rounding r) {
  return r == Rounding::kHalfAwayFromZero ? "half away from zero (DLA)" : "half to even (GPU)";
}

namespace {

// One value's level (times the scale when `dequant`), by the scalar rule: the vector kernels' tails and the
// lanes they leave.
inline float level_of(float x, float scale, Rounding r, bool dequant) {
  const float level = float(quantize(x, scale, r));
  return dequant ? level * scale : level;
}

// q[i] = quantize(x[i]) (* scale when `dequant`), eight lanes at a time; the same arithmetic as
// quantize(): x / scale, round (ties by the mode), clamp to [-128, 127], NaN -> 0.
#if defined(__x86_64__)
DLAKIT_TARGET_AVX2 void levels_avx2(const float* x, float* q, int64_t n, float scale, Rounding r,
                                    bool dequant) {
  const __m256 s = _mm256_set1_ps(scale), lo = _mm256_set1_ps(-128.f), hi = _mm256_set1_ps(127.f),
               half = _mm256_set1_ps(0.5f), sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + i), s);
    __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    if (r == Rounding::kHalfAwayFromZero) {  // a tie rounded to even towards zero moves one step out
      const __m256 diff = _mm256_andnot_ps(sign, _mm256_sub_ps(v, t));
      const __m256 tie = _mm256_cmp_ps(diff, half, _CMP_EQ_OQ);
      const __m256 away = _mm256_cmp_ps(_mm256_andnot_ps(sign, t), _mm256_andnot_ps(sign, v), _CMP_LT_OQ);
      const __m256 step = _mm256_or_ps(_mm256_and_ps(v, sign), one);  // +-1 with v's sign
      t = _mm256_add_ps(t, _mm256_and_ps(_mm256_and_ps(tie, away), step));
    }
    t = _mm256_min_ps(_mm256_max_ps(t, lo), hi);
    t = _mm256_and_ps(t, _mm256_cmp_ps(v, v, _CMP_ORD_Q));  // NaN -> 0
    if (dequant) t = _mm256_mul_ps(t, s);
    _mm256_storeu_ps(q + i, t);
  }
  for (; i < n; ++i) q[i] = level_of(x[i], scale, r, dequant);
}

// levels_avx2's results by fast_level's shortcut (fast_levels16), sixteen lanes at a time; the lanes near a
// tie or NaN take quantize() itself. inv: usable_inverse(scale), not 0.
DLAKIT_TARGET_AVX512 void levels_avx512(const float* x, float* q, int64_t n, float scale, float inv,
                                        Rounding r, bool dequant) {
  const __m512 s = _mm512_set1_ps(scale), vinv = _mm512_set1_ps(inv);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 xv = _mm512_loadu_ps(x + i);
    const numerics::FastLevels16 fast = numerics::fast_levels16(xv, vinv);
    alignas(64) float original[16];
    if (fast.far != 0xffff) _mm512_store_ps(original, xv);  // q may be x: keep the inputs of the near lanes
    _mm512_storeu_ps(q + i, dequant ? _mm512_mul_ps(fast.level, s) : fast.level);
    for (unsigned near = ~unsigned(fast.far) & 0xffffu; near; near &= near - 1) {
      const int lane = __builtin_ctz(near);
      q[i + lane] = level_of(original[lane], scale, r, dequant);
    }
  }
  for (; i < n; ++i) q[i] = level_of(x[i], scale, r, dequant);
}
#endif

// The vector kernel for a run of values; the plain loop without x86 vectors.
void levels_run(const float* x, float* q, int64_t n, float scale, float inv, Rounding r, bool dequant) {
#if defined(__x86_64__)
  if (cpu::avx512() && inv != 0.f) return levels_avx512(x, q, n, scale, inv, r, dequant);
  if (cpu::avx2()) return levels_avx2(x, q, n, scale, r, dequant);
#endif
  for (int64_t i = 0; i < n; ++i) q[i] = level_of(x[i], scale, r, dequant);
}

void levels(const float* x, float* q, int64_t n, float scale, Rounding r, bool dequant) {
  if (!(scale > 0)) {  // zero range: everything quantizes to 0
    std::fill(q, q + n, 0.f);
    return;
  }
  const float inv = numerics::usable_inverse(scale);
  parallel_for(
      n, [&](int64_t s, int64_t e) { levels_run(x + s, q + s, e - s, scale, inv, r, dequant); }, 16384);
}

}  // namespace

void quantize_to_int8(const float* x, int8_t* q, int64_t n, float scale, Rounding r) {
  if (!(scale > 0)) {
    std::fill(q, q + n, int8_t(0));
    return;
  }
  const float inv = numerics::usable_inverse(scale);
  float levels[256];
  for (int64_t i = 0; i < n; i += 256) {
    const int64_t len = std::min<int64_t>(256, n - i);
    levels_run(x + i, levels, len, scale, inv, r, false);
    for (int64_t k = 0; k < len; ++k) q[i + k] = int8_t(levels[k]);
  }
}

void fake_quantize(float* x, int64_t n, float scale, Rounding r) { levels(x, x, n, scale, r, true); }

void fake_quantize_to(const float* x, float* q, int64_t n, float scale, Rounding r) {
  levels(x, q, n, scale, r, true);
}

void quantize_to_levels(const float* x, float* q, int64_t n, float scale, Rounding r) {
  levels(x, q, n, scale, r, false);
}

namespace {
// Splits a tensor as [outer, channels, inner] around `axis`.
void split_dims(const Tensor& w, int axis, int64_t& outer, int64_t& ch, int64_t& inner) {
  if (axis < 0 || axis >= w.rank())
    fail(Status::kInvalidArgument, "per-channel axis ", axis, " is out of range for a rank-", w.rank(),
         " weight");
  outer = inner = 1;
  for (int i = 0; i < axis; ++i) outer *= w.dim(i);
  ch = w.dim(axis);
  for (int i = axis + 1; i < w.rank(); ++i) inner *= w.dim(i);
}
}  // namespace

std::vector<float> per_channel_scales(const Tensor& w, int axis) {
  if (w.dtype() != DType::kF32) fail(Status::kInvalidArgument, "weights must be float32 to quantize");
  int64_t outer, ch, inner;
  split_dims(w, axis, outer, ch, inner);
  std::vector<float> amax(size_t(ch), 0.f);
  const float* p = w.data<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < ch; ++c)
      for (int64_t i = 0; i < inner; ++i)
        amax[size_t(c)] = std::max(amax[size_t(c)], std::fabs(p[(o * ch + c) * inner + i]));
  for (float& a : amax) a = scale_from_amax(a);
  return amax;
}

Tensor quantize_weights(const Tensor& w, const std::vector<float>& scales, int axis, Rounding r) {
  int64_t outer, ch, inner;
  split_dims(w, axis, outer, ch, inner);
  if (int64_t(scales.size()) != ch)
    fail(Status::kInvalidArgument, "weight has ", ch, " channels on axis ", axis, " but ", scales.size(),
         " scales were given");
  Tensor q = Tensor::uninitialized(DType::kF32, w.shape());
  const float* p = w.data<float>();
  float* d = q.data<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < ch; ++c)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t k = (o * ch + c) * inner + i;
        d[k] = float(quantize(p[k], scales[size_t(c)], r));
      }
  return q;
}

Tensor fake_quantize_weights(const Tensor& w, const std::vector<float>& scales, int axis, Rounding r) {
  Tensor q = quantize_weights(w, scales, axis, r);
  int64_t outer, ch, inner;
  split_dims(w, axis, outer, ch, inner);
  float* d = q.data<float>();
  for (int64_t e = 0; e < q.numel(); ++e) d[e] *= scales[size_t((e / inner) % ch)];
  return q;
}

}  // namespace dlakit::quant
