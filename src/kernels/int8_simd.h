// AVX-512 and AVX2 pieces shared by the exact INT8 kernels (conv_int8.cpp, int8_atoms.cpp). Each reproduces a
// scalar rule of numerics/quantize.h bit for bit; the kernels that use them are tested against that rule.
// The quantize forms assume a positive finite scale (the scalar rule gives 0 for scale 0): callers store
// into a surface only at a scale whose levels round-trip (quant::levels_round_trip).
#pragma once
#if defined(__x86_64__)
#include <immintrin.h>

#include "base/cpu.h"
#include "numerics/fast_level.h"
#include "numerics/fast_level_avx512.h"

namespace dlakit::simd {

// A scale as quantize16 takes it: with its reciprocal where numerics::usable_inverse gives one, so that the
// quotient is a multiply and two FMA corrections (numerics/fast_level.h: the same bits as the division,
// which costs several times more), else divided.
struct Scale16 {
  __m512 scale, inv;
  bool fast;
};
// inv: numerics::usable_inverse(scale), where a caller has it already.
DLAKIT_TARGET_AVX512_VNNI inline Scale16 scale16(float scale, float inv) {
  return {_mm512_set1_ps(scale), _mm512_set1_ps(inv), inv != 0.f};
}
DLAKIT_TARGET_AVX512_VNNI inline Scale16 scale16(float scale) {
  return scale16(scale, numerics::usable_inverse(scale));
}
// x / scale as IEEE division rounds it (numerics::quotient: from 2^22 on, or NaN, the first product, which
// saturates alike).
DLAKIT_TARGET_AVX512_VNNI inline __m512 quotient16(__m512 x, const Scale16& s) {
  if (!s.fast) return _mm512_div_ps(x, s.scale);
  const __m512 q = _mm512_mul_ps(x, s.inv);
  const __mmask16 far = _mm512_cmp_ps_mask(_mm512_abs_ps(q), _mm512_set1_ps(4194304.f), _CMP_NLT_UQ);
  __m512 residual = _mm512_fnmadd_ps(q, s.scale, x);
  __m512 corrected = _mm512_fmadd_ps(residual, s.inv, q);
  residual = _mm512_fnmadd_ps(corrected, s.scale, x);
  corrected = _mm512_fmadd_ps(residual, s.inv, corrected);
  return _mm512_mask_blend_ps(far, corrected, q);
}

// quant::quantize of 16 values with ties away from zero: v / scale, rounded to nearest even and a tie
// rounded towards zero moved one step out, saturated to [-128, 127], NaN to 0.
DLAKIT_TARGET_AVX512_VNNI inline __m128i quantize16(__m512 x, const Scale16& scale) {
  if (scale.fast) {  // numerics::fast_level's shortcut, where every lane takes it
    const numerics::FastLevels16 fast = numerics::fast_levels16(x, scale.inv);
    if (fast.far == 0xffff) return _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(fast.level));
  }
  const __m512 v = quotient16(x, scale);
  __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 av = _mm512_abs_ps(v), at = _mm512_abs_ps(t);
  const __mmask16 tie =
      _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(v, t)), _mm512_set1_ps(0.5f), _CMP_EQ_OQ);
  const __mmask16 towards_zero = _mm512_cmp_ps_mask(at, av, _CMP_LT_OQ);
  const __m512 step = _mm512_or_ps(_mm512_and_ps(v, _mm512_set1_ps(-0.f)), _mm512_set1_ps(1.f));
  t = _mm512_mask_add_ps(t, tie & towards_zero, t, step);
  t = _mm512_min_ps(_mm512_max_ps(t, _mm512_set1_ps(-128.f)), _mm512_set1_ps(127.f));
  t = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), t);
  return _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(t));
}

// 16 int8 levels -> float(level) * scale (how a surface read dequantizes them).
DLAKIT_TARGET_AVX512_VNNI inline __m512 dequantize16(__m128i levels, __m512 scale) {
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(levels)), scale);
}

// quant::quantize of 8 values on AVX2; the levels are the low 8 bytes. std::round as truncation plus a step
// away from zero where the dropped part is at least one half: v - trunc(v) is exact for every float (0 for
// |v| >= 2^23, NaN for infinities, whose step is then skipped), so this is the scalar rule, ties included.
DLAKIT_TARGET_AVX2_FMA inline __m128i quantize8(__m256 x, __m256 scale) {
  const __m256 sign = _mm256_set1_ps(-0.f);
  const __m256 v = _mm256_div_ps(x, scale);
  const __m256 whole = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 half_or_more =
      _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_sub_ps(v, whole)), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  const __m256 step = _mm256_or_ps(_mm256_and_ps(v, sign), _mm256_set1_ps(1.f));
  __m256 t = _mm256_add_ps(whole, _mm256_and_ps(half_or_more, step));
  t = _mm256_min_ps(_mm256_max_ps(t, _mm256_set1_ps(-128.f)), _mm256_set1_ps(127.f));
  t = _mm256_and_ps(t, _mm256_cmp_ps(v, v, _CMP_ORD_Q));
  const __m256i levels = _mm256_cvtps_epi32(t);
  const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(levels), _mm256_extracti128_si256(levels, 1));
  return _mm_packs_epi16(words, words);
}

}  // namespace dlakit::simd
#endif
