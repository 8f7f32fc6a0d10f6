// numerics::fast_level's shortcut (fast_level.h) on sixteen lanes, for the AVX-512 kernels that quantize
// (quantize.cpp's levels, kernels/int8_simd.h's quantize16): the product by RN(1 / scale), saturated to
// [-128, 127] first as fast_level saturates it, rounded to nearest. A lane's level is that where the product
// lies further than kTieMargin from every half-integer ("far"; a NaN product never is); the other lanes
// need the exact rule. x86-64 only.
#pragma once
#if defined(__x86_64__)
#include <immintrin.h>

#include "base/cpu.h"
#include "numerics/fast_level.h"

namespace dlakit::numerics {

struct FastLevels16 {
  __m512 level;  // saturated; only the far lanes' are the levels
  __mmask16 far;
};

DLAKIT_TARGET_AVX512 inline FastLevels16 fast_levels16(__m512 x, __m512 inv) {
  const __m512 product = _mm512_mul_ps(x, inv);
  const __m512 v = _mm512_min_ps(_mm512_max_ps(product, _mm512_set1_ps(-128.f)), _mm512_set1_ps(127.f));
  const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 off_half =
      _mm512_abs_ps(_mm512_sub_ps(_mm512_abs_ps(_mm512_sub_ps(v, t)), _mm512_set1_ps(0.5f)));
  // Ordered compares: the clamps turn a NaN product into -128, which the second compare sends to the exact
  // rule (level 0).
  const __mmask16 far = _mm512_cmp_ps_mask(off_half, _mm512_set1_ps(kTieMargin), _CMP_GT_OQ) &
                        _mm512_cmp_ps_mask(product, product, _CMP_ORD_Q);
  return {t, far};
}

}  // namespace dlakit::numerics
#endif
