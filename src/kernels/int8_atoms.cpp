#include "kernels/int8_atoms.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "base/threadpool.h"
#include "kernels/int8_kernel.h"
#include "kernels/int8_simd.h"
#include "numerics/quantize.h"

namespace dlakit {
namespace {

int8_t quantize(float v, float scale) {
  return quant::quantize(v, scale, quant::Rounding::kHalfAwayFromZero);
}

// One output row (image n, channel atom g, row h): 32 lanes per pixel, `lanes` of them real channels.
void add_row_generic(const int8_t* a, float sa, const int8_t* b, float sb, bool relu, int8_t* y, float sy,
                     int64_t W, int lanes) {
  for (int64_t w = 0; w < W; ++w)
    for (int k = 0; k < 32; ++k) {
      const int64_t i = w * 32 + k;
      if (k >= lanes) {
        y[i] = 0;
        continue;
      }
      const float fa = float(a[i]) * sa, fb = float(b[i]) * sb;
      float v = fa + fb;
      if (relu) v = v > 0.f ? v : 0.f;
      y[i] = quantize(v, sy);
    }
}

#if defined(__x86_64__)
DLAKIT_TARGET_AVX512_VNNI void add_row_avx512(const int8_t* a, float sa, const int8_t* b, float sb, bool relu,
                                              int8_t* y, float sy, int64_t W, int lanes) {
  const simd::Scale16 vy = simd::scale16(sy);
  const __m512 va = _mm512_set1_ps(sa), vb = _mm512_set1_ps(sb), zero = _mm512_setzero_ps();
  const __m256i keep =
      _mm256_cmpgt_epi8(_mm256_set1_epi8(char(lanes)),
                        _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
                                         20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31));
  for (int64_t w = 0; w < W; ++w) {
    __m128i half[2];
    for (int h = 0; h < 2; ++h) {
      const int64_t i = w * 32 + h * 16;
      const __m512 fa = simd::dequantize16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)), va);
      const __m512 fb = simd::dequantize16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)), vb);
      __m512 v = _mm512_add_ps(fa, fb);
      // v > 0 ? v : 0, NaN to 0 as in the scalar ReLU.
      if (relu) v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ), v);
      half[h] = simd::quantize16(v, vy);
    }
    const __m256i levels = _mm256_and_si256(_mm256_set_m128i(half[1], half[0]), keep);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + w * 32), levels);
  }
}
#endif

// The taps [kh0, kh1) x [kw0, kw1) of output (oh, ow)'s window that read inside the input; tap (kh, kw)
// reads input (ih + kh, iw + kw).
struct WindowTaps {
  int64_t kh0, kh1, kw0, kw1, ih, iw;
};
WindowTaps window_taps(int64_t H, int64_t W, const PoolWindow& p, int64_t oh, int64_t ow) {
  const int64_t ih = oh * p.sh - p.pt, iw = ow * p.sw - p.pl;
  return {std::max<int64_t>(0, -ih),
          std::min(p.KH, H - ih),
          std::max<int64_t>(0, -iw),
          std::min(p.KW, W - iw),
          ih,
          iw};
}

// The largest level of each of the 32 lanes over the window of output (oh, ow), within the input.
void window_max_generic(const Int8Atoms& x, int64_t n, int64_t g, const WindowTaps& t, int8_t* out) {
  std::memset(out, -128, 32);
  for (int64_t kh = t.kh0; kh < t.kh1; ++kh)
    for (int64_t kw = t.kw0; kw < t.kw1; ++kw) {
      const int8_t* src = x.at(n, g * 32, t.ih + kh, t.iw + kw);
      for (int k = 0; k < 32; ++k) out[k] = std::max(out[k], src[k]);
    }
}

#if defined(__x86_64__)
// Levels at x.scale -> levels at y.scale, as quantize(float(level) * x.scale, y.scale).
DLAKIT_TARGET_AVX512_VNNI void rescale32_avx512(int8_t* levels, float sx, float sy) {
  const __m512 vx = _mm512_set1_ps(sx);
  const simd::Scale16 vy = simd::scale16(sy);
  for (int h = 0; h < 2; ++h) {
    __m128i* p = reinterpret_cast<__m128i*>(levels + h * 16);
    _mm_storeu_si128(p, simd::quantize16(simd::dequantize16(_mm_loadu_si128(p), vx), vy));
  }
}

// The AVX2 kernel: the same operations, 8 lanes at a time.
DLAKIT_TARGET_AVX2_FMA inline __m256 dequantize8(const int8_t* levels, __m256 scale) {
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(levels));
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)), scale);
}

DLAKIT_TARGET_AVX2_FMA void add_row_avx2(const int8_t* a, float sa, const int8_t* b, float sb, bool relu,
                                         int8_t* y, float sy, int64_t W, int lanes) {
  const __m256 va = _mm256_set1_ps(sa), vb = _mm256_set1_ps(sb), vy = _mm256_set1_ps(sy),
               zero = _mm256_setzero_ps();
  for (int64_t w = 0; w < W; ++w) {
    alignas(32) int8_t levels[32];
    for (int e = 0; e < 4; ++e) {
      const int64_t i = w * 32 + e * 8;
      __m256 v = _mm256_add_ps(dequantize8(a + i, va), dequantize8(b + i, vb));
      if (relu) v = _mm256_and_ps(v, _mm256_cmp_ps(v, zero, _CMP_GT_OQ));  // NaN to 0, as the scalar ReLU
      _mm_storel_epi64(reinterpret_cast<__m128i*>(levels + e * 8), simd::quantize8(v, vy));
    }
    std::memset(levels + lanes, 0, size_t(32 - lanes));
    std::memcpy(y + w * 32, levels, 32);
  }
}

// 32 lanes in one 256-bit vector: AVX2, the AVX-512 kernel's too.
DLAKIT_TARGET_AVX2_FMA void window_max_avx2(const Int8Atoms& x, int64_t n, int64_t g, const WindowTaps& t,
                                            int8_t* out) {
  __m256i m = _mm256_set1_epi8(-128);
  for (int64_t kh = t.kh0; kh < t.kh1; ++kh)
    for (int64_t kw = t.kw0; kw < t.kw1; ++kw)
      m = _mm256_max_epi8(
          m, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.at(n, g * 32, t.ih + kh, t.iw + kw))));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), m);
}

DLAKIT_TARGET_AVX2_FMA void rescale32_avx2(int8_t* levels, float sx, float sy) {
  const __m256 vx = _mm256_set1_ps(sx), vy = _mm256_set1_ps(sy);
  for (int e = 0; e < 4; ++e)
    _mm_storel_epi64(reinterpret_cast<__m128i*>(levels + e * 8),
                     simd::quantize8(dequantize8(levels + e * 8, vx), vy));
}
#endif

}  // namespace

void add_int8_atoms(int64_t N, int64_t C, int64_t H, int64_t W, const Int8Atoms& a, const Int8Atoms& b,
                    bool relu, const Int8Atoms& y) {
  const int64_t groups = (C + 31) / 32;
  const Int8Kernel kernel = int8_kernel();
  parallel_for(
      N * groups * H,
      [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t n = r / (groups * H), g = (r / H) % groups, h = r % H;
          const int lanes = int(std::min<int64_t>(32, C - g * 32));
          const int8_t *ra = a.at(n, g * 32, h, 0), *rb = b.at(n, g * 32, h, 0);
          int8_t* ry = y.at(n, g * 32, h, 0);
#if defined(__x86_64__)
          if (kernel == Int8Kernel::kAvx512Vnni) {
            add_row_avx512(ra, a.scale, rb, b.scale, relu, ry, y.scale, W, lanes);
            continue;
          }
          if (kernel == Int8Kernel::kAvx2) {
            add_row_avx2(ra, a.scale, rb, b.scale, relu, ry, y.scale, W, lanes);
            continue;
          }
#endif
          add_row_generic(ra, a.scale, rb, b.scale, relu, ry, y.scale, W, lanes);
        }
      },
      4);
}

void max_pool_int8_atoms(int64_t N, int64_t C, int64_t H, int64_t W, const PoolWindow& p, const Int8Atoms& x,
                         bool keep_levels, const Int8Atoms& y) {
  const int64_t groups = (C + 31) / 32;
  const Int8Kernel kernel = int8_kernel();
  parallel_for(
      N * groups * p.OH,
      [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t n = r / (groups * p.OH), g = (r / p.OH) % groups, oh = r % p.OH;
          const int lanes = int(std::min<int64_t>(32, C - g * 32));
          for (int64_t ow = 0; ow < p.OW; ++ow) {
            int8_t* out = y.at(n, g * 32, oh, ow);
            const WindowTaps taps = window_taps(H, W, p, oh, ow);
#if defined(__x86_64__)
            if (kernel == Int8Kernel::kAvx512Vnni) {
              window_max_avx2(x, n, g, taps, out);
              if (!keep_levels) rescale32_avx512(out, x.scale, y.scale);
            } else if (kernel == Int8Kernel::kAvx2) {
              window_max_avx2(x, n, g, taps, out);
              if (!keep_levels) rescale32_avx2(out, x.scale, y.scale);
            } else
#endif
            {
              window_max_generic(x, n, g, taps, out);
              if (!keep_levels)
                for (int k = 0; k < 32; ++k) out[k] = quantize(float(out[k]) * x.scale, y.scale);
            }
            for (int k = lanes; k < 32; ++k) out[k] = 0;  // padding channels, as a surface write leaves them
          }
        }
      },
      4);
}

}  // namespace dlakit
