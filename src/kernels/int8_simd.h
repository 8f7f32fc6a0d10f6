// AVX-512 pieces shared by the exact INT8 kernels (conv_int8.cpp, int8_atoms.cpp). Each reproduces a scalar
// rule of numerics/quantize.h bit for bit; the kernels that use them are tested against that rule.
#pragma once
#if defined(__x86_64__)
#include <immintrin.h>

#define DLAKIT_VNNI __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))

namespace dlakit::simd {

// quant::quantize of 16 values with ties away from zero: v / scale, rounded to nearest even and a tie
// rounded towards zero moved one step out, saturated to [-128, 127], NaN to 0.
DLAKIT_VNNI inline __m128i quantize16(__m512 x, __m512 scale) {
  const __m512 v = _mm512_div_ps(x, scale);
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
DLAKIT_VNNI inline __m512 dequantize16(__m128i levels, __m512 scale) {
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(levels)), scale);
}

// Whether this CPU runs the functions above.
bool has_avx512_vnni();

}  // namespace dlakit::simd
#endif
