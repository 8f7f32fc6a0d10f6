#include "base/fp16_array.h"

#include "base/cpu.h"
#include "base/fp16.h"
#include "base/threadpool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace dlakit {
namespace {

void round_scalar(const float* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = round_to_half(in[i]);
}

#if defined(__x86_64__)
// F16C converts with IEEE round-to-nearest-even, the same result as float_to_half (tests compare them).
DLAKIT_TARGET_F16C void round_f16c(const float* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  round_scalar(in + i, out + i, n - i);
}

DLAKIT_TARGET_F16C void widen_f16c(const uint16_t* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  for (; i < n; ++i) out[i] = half_to_float(in[i]);
}

DLAKIT_TARGET_F16C void narrow_f16c(const float* in, uint16_t* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) out[i] = float_to_half(in[i]);
}
#endif

}  // namespace

void halves_to_floats(const uint16_t* in, float* out, int64_t n) {
#if defined(__x86_64__)
  if (cpu::f16c()) return widen_f16c(in, out, n);
#endif
  for (int64_t i = 0; i < n; ++i) out[i] = half_to_float(in[i]);
}

void floats_to_halves(const float* in, uint16_t* out, int64_t n) {
#if defined(__x86_64__)
  if (cpu::f16c()) return narrow_f16c(in, out, n);
#endif
  for (int64_t i = 0; i < n; ++i) out[i] = float_to_half(in[i]);
}

void round_to_half_inplace(float* p, int64_t n) { round_to_half_into(p, p, n); }

void round_to_half_into(const float* in, float* out, int64_t n) {
  parallel_for(
      n,
      [&](int64_t s, int64_t e) {
#if defined(__x86_64__)
        if (cpu::f16c()) return round_f16c(in + s, out + s, e - s);
#endif
        round_scalar(in + s, out + s, e - s);
      },
      1 << 16);
}

}  // namespace dlakit
