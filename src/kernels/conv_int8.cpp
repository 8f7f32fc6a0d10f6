#include "kernels/conv_int8.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "base/error.h"
#include "base/threadpool.h"
#include "kernels/int8_simd.h"
#include "numerics/fast_level.h"
#include "numerics/quantize.h"

namespace dlakit {
namespace {

constexpr int64_t kLanes = 16;      // output channels per block (one 512-bit vector of int32)
constexpr int kMaxPixels = 12;      // output pixels per tile: 2 blocks x 12 pixels = 24 accumulators
constexpr int64_t kMaxTaps = 1024;  // kernel windows up to 32 x 32

// One tile: up to 2 blocks of 16 output channels x up to kMaxPixels consecutive pixels of one output row.
// `x` points at the tile's first pixel for tap 0 in the padded input, `tap_offset` gives each tap's offset
// from there, and consecutive output pixels are `pixel_step` apart (in elements: bytes in `x`, 16-bit
// values in `x16`).
struct Tile {
  const uint8_t* x;
  const int64_t* tap_offset;
  int64_t taps, quads, pixel_step;
  const int8_t* w;       // the first block's packed weights
  int64_t block_stride;  // bytes from one block's weights to the next
  const int32_t* compensation;
  Int8Requant rq;  // at the tile's first channel
  const Int8Output* out;
  float out_inv;          // numerics::usable_inverse(out->scale), once per layer
  int64_t M, OH, OW;      // the output's size
  int64_t n, m0, oh, ow;  // the tile's image, first channel, row and first pixel
  int64_t channels_left;  // output channels from this tile's first block to the group's end
  // The AVX2 kernel's copies: the padded input widened to 16 bits (same offsets, in elements) and the
  // first block's 16-bit weights.
  const uint16_t* x16;
  const int16_t* w16;
  int64_t block_stride16;  // elements from one block's 16-bit weights to the next
};

// One requantized value to its place: as it is, or quantized into the int8 surface.
void put(const Int8Output& o, int64_t M, int64_t OH, int64_t OW, int64_t n, int64_t m, int64_t oh, int64_t ow,
         float v) {
  if (o.atoms)
    *o.atom_at(n, m, oh, ow) = quant::quantize(v, o.scale, quant::Rounding::kHalfAwayFromZero);
  else
    o.y[((n * M + m) * OH + oh) * OW + ow] = v;
}

inline int32_t load_quad(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The plain loop on the same layouts (CPUs without VNNI).
void tile_generic(const Tile& t, int blocks, int pixels) {
  for (int b = 0; b < blocks; ++b)
    for (int j = 0; j < pixels; ++j) {
      int32_t sum[kLanes] = {};
      for (int64_t tap = 0; tap < t.taps; ++tap) {
        const uint8_t* x = t.x + t.tap_offset[tap] + j * t.pixel_step;
        const int8_t* w = t.w + b * t.block_stride + tap * t.quads * 64;
        for (int64_t q = 0; q < t.quads * 4; ++q)
          for (int64_t lane = 0; lane < kLanes; ++lane)
            sum[lane] += int32_t(x[q]) * int32_t(w[(q / 4) * 64 + lane * 4 + q % 4]);
      }
      const int64_t n = std::min<int64_t>(kLanes, t.channels_left - b * kLanes);
      for (int64_t lane = 0; lane < n; ++lane) {
        const int64_t m = b * kLanes + lane;
        put(*t.out, t.M, t.OH, t.OW, t.n, t.m0 + m, t.oh, t.ow + j,
            int8_requantize(t.rq, m, sum[lane] - t.compensation[m]));
      }
    }
}

#if defined(__x86_64__)

// The requantization of 16 sums at once: the per-channel values, broadcast or loaded.
struct Requant16 {
  __m512 mult, bias;
  __m512d bias_q_lo, bias_q_hi;
  __mmask16 scaled;  // channels with mult > 0
  const GemmEpilogue* act;
};

// int32 -> double + bias_q -> float, * mult (the scalar formula's operations in the same order), the bias
// where there is no multiplier, then the activations of ref::f32 (relu, clip, leaky_relu), NaN included:
// max_ps(a, b) is a > b ? a : b and min_ps(a, b) is a < b ? a : b.
DLAKIT_TARGET_AVX512_VNNI inline __m512 requantize16(const Requant16& q, __m512i sum) {
  const __m512d lo = _mm512_add_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(sum)), q.bias_q_lo);
  const __m512d hi = _mm512_add_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(sum, 1)), q.bias_q_hi);
  const __m512 v = _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
  const __m512 r = _mm512_mask_blend_ps(q.scaled, q.bias, _mm512_mul_ps(v, q.mult));
  const __m512 zero = _mm512_setzero_ps();
  switch (q.act->act) {
    case GemmEpilogue::Act::kRelu:
      return _mm512_max_ps(r, zero);
    case GemmEpilogue::Act::kClip:
      return _mm512_min_ps(_mm512_set1_ps(q.act->hi), _mm512_max_ps(_mm512_set1_ps(q.act->lo), r));
    case GemmEpilogue::Act::kLeakyRelu:
      return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(r, zero, _CMP_GE_OQ),
                                  _mm512_mul_ps(r, _mm512_set1_ps(q.act->alpha)), r);
    case GemmEpilogue::Act::kHardSigmoidMul:  // refused by conv_int8_exact
    case GemmEpilogue::Act::kNone:
      break;
  }
  return r;
}

// 16 channels of one pixel, requantized, quantized into the int8 surface (n: how many are real channels).
DLAKIT_TARGET_AVX512_VNNI inline void put16(const Int8Output& o, const Tile& t, int64_t m, int64_t ow,
                                            __m512 v, const simd::Scale16& scale, int64_t n) {
  const __m128i q = simd::quantize16(v, scale);
  if (m % 32 + n <= 32) {  // within one atom (always, unless a group's channels start mid-block)
    _mm_mask_storeu_epi8(o.atom_at(t.n, m, t.oh, ow),
                         n >= kLanes ? __mmask16(0xffff) : __mmask16((1u << n) - 1), q);
    return;
  }
  alignas(16) int8_t levels[kLanes];
  _mm_store_si128(reinterpret_cast<__m128i*>(levels), q);
  for (int64_t lane = 0; lane < n;) {  // the block crosses into the next 32-channel atom
    const int64_t run = std::min(n - lane, 32 - (m + lane) % 32);
    std::memcpy(o.atom_at(t.n, m + lane, t.oh, ow), levels + lane, size_t(run));
    lane += run;
  }
}

template <int kBlocks, int kPixels>
DLAKIT_TARGET_AVX512_VNNI void tile_vnni(const Tile& t) {
  __m512i acc[kBlocks][kPixels];
  for (int b = 0; b < kBlocks; ++b)
    for (int j = 0; j < kPixels; ++j) acc[b][j] = _mm512_setzero_si512();
  for (int64_t tap = 0; tap < t.taps; ++tap) {
    const uint8_t* x = t.x + t.tap_offset[tap];
    const int8_t* w = t.w + tap * t.quads * 64;
    for (int64_t q = 0; q < t.quads; ++q) {
      __m512i wv[kBlocks];
      for (int b = 0; b < kBlocks; ++b) wv[b] = _mm512_loadu_si512(w + b * t.block_stride + q * 64);
      for (int j = 0; j < kPixels; ++j) {
        const __m512i xv = _mm512_set1_epi32(load_quad(x + j * t.pixel_step + q * 4));
        for (int b = 0; b < kBlocks; ++b) acc[b][j] = _mm512_dpbusd_epi32(acc[b][j], xv, wv[b]);
      }
    }
  }
  // 16 channels of a pixel are requantized at once, then each channel's run of pixels is written.
  for (int b = 0; b < kBlocks; ++b) {
    const int64_t n = std::min<int64_t>(kLanes, t.channels_left - b * kLanes);
    const __mmask16 mask = n >= kLanes ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
    const int64_t m0 = b * kLanes;
    const __m512i comp = _mm512_maskz_loadu_epi32(mask, t.compensation + m0);
    Requant16 q;
    q.mult = _mm512_maskz_loadu_ps(mask, t.rq.mult + m0);
    q.bias = t.rq.bias ? _mm512_maskz_loadu_ps(mask, t.rq.bias + m0) : _mm512_setzero_ps();
    q.bias_q_lo = _mm512_maskz_loadu_pd(__mmask8(mask), t.rq.bias_q + m0);
    q.bias_q_hi = _mm512_maskz_loadu_pd(__mmask8(mask >> 8), t.rq.bias_q + m0 + 8);
    q.scaled = _mm512_cmp_ps_mask(q.mult, _mm512_setzero_ps(), _CMP_GT_OQ);
    q.act = &t.rq.act;
    if (t.out->atoms) {
      const simd::Scale16 scale = simd::scale16(t.out->scale, t.out_inv);
      for (int j = 0; j < kPixels; ++j)
        put16(*t.out, t, t.m0 + m0, t.ow + j, requantize16(q, _mm512_sub_epi32(acc[b][j], comp)), scale, n);
      continue;
    }
    // Float output: each channel's run of pixels is contiguous, so the tile is transposed on the stack.
    alignas(64) float out[kPixels][kLanes];
    for (int j = 0; j < kPixels; ++j)
      _mm512_store_ps(out[j], requantize16(q, _mm512_sub_epi32(acc[b][j], comp)));
    float* y = t.out->y + ((t.n * t.M + t.m0 + m0) * t.OH + t.oh) * t.OW + t.ow;
    for (int64_t lane = 0; lane < n; ++lane)
      for (int j = 0; j < kPixels; ++j) y[lane * t.OH * t.OW + j] = out[j][lane];
  }
}

using TileFn = void (*)(const Tile&);
template <int kBlocks, size_t... kPixels>
constexpr std::array<TileFn, sizeof...(kPixels)> vnni_table(std::index_sequence<kPixels...>) {
  return {&tile_vnni<kBlocks, int(kPixels + 1)>...};
}
const auto kVnni1 = vnni_table<1>(std::make_index_sequence<kMaxPixels>());
const auto kVnni2 = vnni_table<2>(std::make_index_sequence<kMaxPixels>());

// The AVX2 kernel. 8 output channels per 256-bit vector of int32; one 16-bit multiply-add sums a pair of
// input channels, each product of a level (+ 128, at most 255) and a weight level exact in int32.

// The requantization of 8 sums at once (requantize16's operations, in the same order).
struct Requant8 {
  __m256 mult, bias, scaled;  // scaled: all ones where mult > 0
  __m256d bias_q_lo, bias_q_hi;
  const GemmEpilogue* act;
};

// Channels [m, m + count) of rq (count <= 8; the others read as 0 and are never stored).
DLAKIT_TARGET_AVX2_FMA inline Requant8 requant8_at(const Int8Requant& rq, int64_t m, int64_t count) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(std::min<int64_t>(count, 8))), lane);
  Requant8 q;
  q.mult = _mm256_maskload_ps(rq.mult + m, keep);
  q.bias = rq.bias ? _mm256_maskload_ps(rq.bias + m, keep) : _mm256_setzero_ps();
  q.bias_q_lo = _mm256_maskload_pd(rq.bias_q + m, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(keep)));
  q.bias_q_hi =
      _mm256_maskload_pd(rq.bias_q + m + 4, _mm256_cvtepi32_epi64(_mm256_extracti128_si256(keep, 1)));
  q.scaled = _mm256_cmp_ps(q.mult, _mm256_setzero_ps(), _CMP_GT_OQ);
  q.act = &rq.act;
  return q;
}

DLAKIT_TARGET_AVX2_FMA inline __m256 requantize8(const Requant8& q, __m256i sum) {
  const __m256d lo = _mm256_add_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(sum)), q.bias_q_lo);
  const __m256d hi = _mm256_add_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(sum, 1)), q.bias_q_hi);
  const __m256 v = _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
  const __m256 r = _mm256_blendv_ps(q.bias, _mm256_mul_ps(v, q.mult), q.scaled);
  const __m256 zero = _mm256_setzero_ps();
  switch (q.act->act) {
    case GemmEpilogue::Act::kRelu:
      return _mm256_max_ps(r, zero);
    case GemmEpilogue::Act::kClip:
      return _mm256_min_ps(_mm256_set1_ps(q.act->hi), _mm256_max_ps(_mm256_set1_ps(q.act->lo), r));
    case GemmEpilogue::Act::kLeakyRelu:
      return _mm256_blendv_ps(_mm256_mul_ps(r, _mm256_set1_ps(q.act->alpha)), r,
                              _mm256_cmp_ps(r, zero, _CMP_GE_OQ));
    case GemmEpilogue::Act::kHardSigmoidMul:  // refused by conv_int8_exact
    case GemmEpilogue::Act::kNone:
      break;
  }
  return r;
}

inline int32_t load_pair(const uint16_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// One block of 16 output channels x kPixels pixels (from pixel j0 of the tile): sums, then requantized
// and stored 8 channels at a time.
template <int kPixels>
DLAKIT_TARGET_AVX2_FMA void block_avx2(const Tile& t, int b, int j0) {
  __m256i acc[kPixels][2];
  for (int j = 0; j < kPixels; ++j) acc[j][0] = acc[j][1] = _mm256_setzero_si256();
  const int16_t* wb = t.w16 + b * t.block_stride16;
  for (int64_t tap = 0; tap < t.taps; ++tap) {
    const uint16_t* x = t.x16 + t.tap_offset[tap] + j0 * t.pixel_step;
    const int16_t* w = wb + tap * t.quads * 64;
    for (int64_t q = 0; q < t.quads; ++q, w += 64, x += 4) {
      const __m256i w01_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
      const __m256i w01_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16));
      const __m256i w23_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 32));
      const __m256i w23_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 48));
      for (int j = 0; j < kPixels; ++j) {
        const uint16_t* xp = x + j * t.pixel_step;
        const __m256i x01 = _mm256_set1_epi32(load_pair(xp)), x23 = _mm256_set1_epi32(load_pair(xp + 2));
        acc[j][0] = _mm256_add_epi32(
            acc[j][0], _mm256_add_epi32(_mm256_madd_epi16(x01, w01_lo), _mm256_madd_epi16(x23, w23_lo)));
        acc[j][1] = _mm256_add_epi32(
            acc[j][1], _mm256_add_epi32(_mm256_madd_epi16(x01, w01_hi), _mm256_madd_epi16(x23, w23_hi)));
      }
    }
  }
  const int64_t channels = std::min<int64_t>(kLanes, t.channels_left - b * kLanes);
  for (int half = 0; half < 2; ++half) {
    const int64_t m0 = b * kLanes + half * 8, n = std::min<int64_t>(8, channels - half * 8);
    if (n <= 0) break;
    const Requant8 q = requant8_at(t.rq, m0, n);
    const __m256i comp = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.compensation + m0));
    alignas(32) float out[kPixels][8];
    for (int j = 0; j < kPixels; ++j)
      _mm256_store_ps(out[j], requantize8(q, _mm256_sub_epi32(acc[j][half], comp)));
    if (t.out->atoms) {
      const __m256 scale = _mm256_set1_ps(t.out->scale);
      for (int j = 0; j < kPixels; ++j) {
        alignas(16) int8_t levels[16];
        _mm_store_si128(reinterpret_cast<__m128i*>(levels), simd::quantize8(_mm256_load_ps(out[j]), scale));
        for (int64_t lane = 0; lane < n;) {  // 8 channels may cross into the next 32-channel atom
          const int64_t m = t.m0 + m0 + lane, run = std::min(n - lane, 32 - m % 32);
          std::memcpy(t.out->atom_at(t.n, m, t.oh, t.ow + j0 + j), levels + lane, size_t(run));
          lane += run;
        }
      }
      continue;
    }
    float* y = t.out->y + ((t.n * t.M + t.m0 + m0) * t.OH + t.oh) * t.OW + t.ow + j0;
    for (int64_t lane = 0; lane < n; ++lane)
      for (int j = 0; j < kPixels; ++j) y[lane * t.OH * t.OW + j] = out[j][lane];
  }
}

constexpr int kAvx2Pixels = 4;  // 8 accumulators, 4 weight vectors and 2 broadcasts of 16 registers

void tile_avx2(const Tile& t, int blocks, int pixels) {
  for (int b = 0; b < blocks; ++b) {
    int j = 0;
    for (; j + kAvx2Pixels <= pixels; j += kAvx2Pixels) block_avx2<kAvx2Pixels>(t, b, j);
    switch (pixels - j) {
      case 3:
        block_avx2<3>(t, b, j);
        break;
      case 2:
        block_avx2<2>(t, b, j);
        break;
      case 1:
        block_avx2<1>(t, b, j);
        break;
      default:
        break;
    }
  }
}
#endif

void run_tile(const Tile& t, int blocks, int pixels) {
#if defined(__x86_64__)
  if (t.x16) return tile_avx2(t, blocks, pixels);  // decided once per call, with its buffer
  if (int8_kernel() == Int8Kernel::kAvx512Vnni) return (blocks == 2 ? kVnni2 : kVnni1)[size_t(pixels - 1)](t);
#endif
  tile_generic(t, blocks, pixels);
}

// The taps [k0, k1) of a window starting at input position `start`, `dilation` apart, that land inside
// [0, size): the taps outside add level 0, so the depthwise kernels on int8 surfaces skip them.
struct TapRange {
  int64_t k0, k1;
};
TapRange taps_inside(int64_t start, int64_t taps, int64_t dilation, int64_t size) {
  const int64_t k0 = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
  const int64_t k1 = start >= size ? 0 : std::min(taps, (size - start + dilation - 1) / dilation);
  return {k0, std::max(k0, k1)};
}

int64_t padded_rows(const Int8ConvGeometry& g) { return (g.OH - 1) * g.sh + (g.KH - 1) * g.dh + 1; }
int64_t padded_cols(const Int8ConvGeometry& g) { return (g.OW - 1) * g.sw + (g.KW - 1) * g.dw + 1; }

// Channels [c0, c0 + Cg) of image n -> (level + 128) in [Hp][Wp][C4], 128 elsewhere (bytes, or 16-bit values
// for the AVX2 kernel). Channel atoms are copied a pixel's run of channels at a time, planar input a
// channel's row at a time.
template <typename T>
void pad_input(const Int8ConvGeometry& g, int64_t C4, const Int8Input& x, int64_t n, int64_t c0, int64_t Cg,
               T* xb) {
  const int64_t Hp = padded_rows(g), Wp = padded_cols(g);
  parallel_for(
      Hp,
      [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          T* row = xb + r * Wp * C4;
          std::fill(row, row + Wp * C4, T(128));
          const int64_t ih = r - g.pt;
          if (ih < 0 || ih >= g.H) continue;
          const int64_t iw0 = std::max<int64_t>(0, -g.pl), iw1 = std::min(g.W, Wp - g.pl);
          if (iw0 >= iw1) continue;
          if (x.lane == 1) {  // a run of channels within one atom at a time, along the row
            for (int64_t c = 0; c < Cg;) {
              const int64_t run = std::min(Cg - c, x.atom - (c0 + c) % x.atom);
              const int8_t* src = x.at(n, c0 + c, ih, iw0);
              T* dst = row + (iw0 + g.pl) * C4 + c;
              // x's fields in locals: the stores may alias them (bytes), which kept the loops scalar
              const int64_t pixel = x.pixel, count = iw1 - iw0;
              if constexpr (std::is_same_v<T, uint8_t>) {
                if (run == 32) {  // a whole atom as four 8-byte words
                  for (int64_t i = 0; i < count; ++i) {
                    uint64_t words[4];
                    std::memcpy(words, src + i * pixel, sizeof(words));
                    for (uint64_t& word : words) word ^= 0x8080808080808080ull;
                    std::memcpy(dst + i * C4, words, sizeof(words));
                  }
                  c += run;
                  continue;
                }
              }
              for (int64_t i = 0; i < count; ++i)
                for (int64_t k = 0; k < run; ++k) dst[i * C4 + k] = T(uint8_t(src[i * pixel + k]) ^ 0x80);
              c += run;
            }
            continue;
          }
          // (the same locals as above: the stores may alias x's and g's fields)
          const int64_t pixel = x.pixel, pl = g.pl;
          for (int64_t c = 0; c < Cg; ++c) {
            const int8_t* src = x.at(n, c0 + c, ih, 0);
            T* dst = row + pl * C4 + c;
            for (int64_t iw = iw0; iw < iw1; ++iw) dst[iw * C4] = T(uint8_t(src[iw * pixel]) ^ 0x80);
          }
        }
      },
      4);
}

// Depthwise: one channel's padded levels as int32 in the stride-phase-split layout [Hp][S][Wq] (padded
// column pc sits in phase pc % S at pc / S), so a run of stride-S outputs reads consecutive values.
struct DepthwiseRow {
  const int32_t* plane;  // the channel's padded levels
  int64_t S, Wq, KH, KW, dh, dw, sh;
  const int32_t* w;  // the channel's taps
  int64_t m;         // the channel (for its requantization)
  const Int8Requant* rq;
  const Int8Output* out;
  int64_t n, M, OH, OW;
};

int32_t depthwise_sum(const DepthwiseRow& r, int64_t oh, int64_t ow) {
  int32_t sum = 0;
  for (int64_t kh = 0; kh < r.KH; ++kh)
    for (int64_t kw = 0; kw < r.KW; ++kw) {
      const int64_t row = oh * r.sh + kh * r.dh, col = ow * r.S + kw * r.dw;
      sum += r.plane[(row * r.S + col % r.S) * r.Wq + col / r.S] * r.w[kh * r.KW + kw];
    }
  return sum;
}

void depthwise_row_generic(const DepthwiseRow& r, int64_t oh) {
  for (int64_t ow = 0; ow < r.OW; ++ow)
    put(*r.out, r.M, r.OH, r.OW, r.n, r.m, oh, ow, int8_requantize(*r.rq, r.m, depthwise_sum(r, oh, ow)));
}

// A weight level in the low 16 bits of a 32-bit lane, the high bits zero: a 16-bit multiply-add (vpmaddwd,
// twice the rate of a 32-bit multiply) of it and a sign-extended level in the same lane is their exact
// product (the high halves add level_high * 0).
inline int32_t low16(int32_t w) { return int32_t(uint16_t(int16_t(w))); }

#if defined(__x86_64__)

DLAKIT_TARGET_AVX512_VNNI void depthwise_row_vnni(const DepthwiseRow& r, int64_t oh) {
  Requant16 q;
  q.mult = _mm512_set1_ps(r.rq->mult[r.m]);
  q.bias = _mm512_set1_ps(r.rq->bias ? r.rq->bias[r.m] : 0.f);
  q.bias_q_lo = q.bias_q_hi = _mm512_set1_pd(r.rq->bias_q[r.m]);
  q.scaled = r.rq->mult[r.m] > 0 ? __mmask16(0xffff) : __mmask16(0);
  q.act = &r.rq->act;
  const simd::Scale16 scale = simd::scale16(r.out->scale);
  for (int64_t ow = 0; ow < r.OW; ow += kLanes) {
    const int64_t n = std::min(kLanes, r.OW - ow);
    const __mmask16 mask = n >= kLanes ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
    __m512i acc = _mm512_setzero_si512();
    for (int64_t kh = 0; kh < r.KH; ++kh) {
      const int32_t* row = r.plane + (oh * r.sh + kh * r.dh) * r.S * r.Wq;
      for (int64_t kw = 0; kw < r.KW; ++kw) {
        const int64_t off = kw * r.dw;
        const __m512i x = _mm512_maskz_loadu_epi32(mask, row + (off % r.S) * r.Wq + ow + off / r.S);
        acc = _mm512_add_epi32(acc, _mm512_madd_epi16(x, _mm512_set1_epi32(low16(r.w[kh * r.KW + kw]))));
      }
    }
    const __m512 v = requantize16(q, acc);
    if (!r.out->atoms) {
      _mm512_mask_storeu_ps(r.out->y + ((r.n * r.M + r.m) * r.OH + oh) * r.OW + ow, mask, v);
      continue;
    }
    alignas(16) int8_t levels[kLanes];
    _mm_store_si128(reinterpret_cast<__m128i*>(levels), simd::quantize16(v, scale));
    int8_t* dst = r.out->atom_at(r.n, r.m, oh, ow);
    for (int64_t j = 0; j < n; ++j) dst[j * 32] = levels[j];
  }
}
#endif

#if defined(__x86_64__)
// Depthwise with input and output in int8 chw32 surfaces: 16 channels of a pixel are contiguous in both,
// so each tap is one 16-byte load, widened, times the 16 channels' weights; no padded copy (taps outside
// the input are skipped: they would add level 0). One output row of image n.
DLAKIT_TARGET_AVX512_VNNI void depthwise_atoms_row(const PackedInt8Conv& p, const Int8ConvGeometry& g,
                                                   const Int8Input& x, const Int8Requant& rq,
                                                   const Int8Output& out, int64_t n, int64_t oh) {
  const int64_t taps = g.KH * g.KW, blocks = (g.M + kLanes - 1) / kLanes;
  const simd::Scale16 scale = simd::scale16(out.scale);
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t c = b * kLanes, count = std::min(kLanes, g.M - c);
    const __mmask16 mask = count >= kLanes ? __mmask16(0xffff) : __mmask16((1u << count) - 1);
    const int32_t* w = p.depthwise_w16.data() + b * taps * kLanes;
    Requant16 q;
    q.mult = _mm512_maskz_loadu_ps(mask, rq.mult + c);
    q.bias = rq.bias ? _mm512_maskz_loadu_ps(mask, rq.bias + c) : _mm512_setzero_ps();
    q.bias_q_lo = _mm512_maskz_loadu_pd(__mmask8(mask), rq.bias_q + c);
    q.bias_q_hi = _mm512_maskz_loadu_pd(__mmask8(mask >> 8), rq.bias_q + c + 8);
    q.scaled = _mm512_cmp_ps_mask(q.mult, _mm512_setzero_ps(), _CMP_GT_OQ);
    q.act = &rq.act;
    const int8_t* const first = x.at(n, c, 0, 0);  // the block's channels at (0, 0); x.at divides
    // The geometry in locals: the byte stores below may alias the structs' fields, which the loops would
    // otherwise reload for every tap (perf: the loads and address products were a fifth of the time).
    const int64_t line = x.line, pixel = x.pixel, KW = g.KW, dh = g.dh, dw = g.dw, sw = g.sw, pl = g.pl;
    const int64_t W = g.W, OW = g.OW;
    int8_t* const out_row = out.atom_at(n, c, oh, 0);
    const int64_t out_pixel = out.atom_at(n, c, oh, 1) - out_row;
    const int64_t ih0 = oh * g.sh - g.pt;
    const TapRange rows = taps_inside(ih0, g.KH, dh, g.H);
    for (int64_t ow = 0; ow < OW; ++ow) {
      __m512i acc = _mm512_setzero_si512();
      const int64_t iw0 = ow * sw - pl;
      const TapRange cols = taps_inside(iw0, KW, dw, W);
      for (int64_t kh = rows.k0; kh < rows.k1; ++kh) {
        const int8_t* const in_row = first + (ih0 + kh * dh) * line;
        const int32_t* const w_row = w + kh * KW * kLanes;
        for (int64_t kw = cols.k0; kw < cols.k1; ++kw) {
          const __m512i xv =
              _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(mask, in_row + (iw0 + kw * dw) * pixel));
          acc = _mm512_add_epi32(acc, _mm512_madd_epi16(xv, _mm512_loadu_si512(w_row + kw * kLanes)));
        }
      }
      _mm_mask_storeu_epi8(out_row + ow * out_pixel, mask, simd::quantize16(requantize16(q, acc), scale));
    }
  }
}

// depthwise_row_vnni on AVX2: 8 outputs of the row at a time.
DLAKIT_TARGET_AVX2_FMA void depthwise_row_avx2(const DepthwiseRow& r, int64_t oh) {
  Requant8 q;
  q.mult = _mm256_set1_ps(r.rq->mult[r.m]);
  q.bias = _mm256_set1_ps(r.rq->bias ? r.rq->bias[r.m] : 0.f);
  q.bias_q_lo = q.bias_q_hi = _mm256_set1_pd(r.rq->bias_q[r.m]);
  q.scaled = _mm256_castsi256_ps(_mm256_set1_epi32(r.rq->mult[r.m] > 0 ? -1 : 0));
  q.act = &r.rq->act;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t ow = 0; ow < r.OW; ow += 8) {
    const int64_t n = std::min<int64_t>(8, r.OW - ow);
    // Masked loads and stores only for the row's last, partial run (they are slow on some CPUs).
    const bool full = n == 8;
    const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n)), lane);
    __m256i acc = _mm256_setzero_si256();
    for (int64_t kh = 0; kh < r.KH; ++kh) {
      const int32_t* row = r.plane + (oh * r.sh + kh * r.dh) * r.S * r.Wq;
      for (int64_t kw = 0; kw < r.KW; ++kw) {
        const int64_t off = kw * r.dw;
        const int32_t* src = row + (off % r.S) * r.Wq + ow + off / r.S;
        const __m256i x = full ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src))
                               : _mm256_maskload_epi32(src, keep);
        acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(x, _mm256_set1_epi32(r.w[kh * r.KW + kw])));
      }
    }
    const __m256 v = requantize8(q, acc);
    if (!r.out->atoms) {
      float* y = r.out->y + ((r.n * r.M + r.m) * r.OH + oh) * r.OW + ow;
      if (full)
        _mm256_storeu_ps(y, v);
      else
        _mm256_maskstore_ps(y, keep, v);
      continue;
    }
    alignas(16) int8_t levels[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(levels), simd::quantize8(v, _mm256_set1_ps(r.out->scale)));
    int8_t* dst = r.out->atom_at(r.n, r.m, oh, ow);
    for (int64_t j = 0; j < n; ++j) dst[j * 32] = levels[j];
  }
}

// 16 int8 levels as int16.
DLAKIT_TARGET_AVX2_FMA inline __m256i widen16(const int8_t* src) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
}

// depthwise_atoms_row on AVX2: 16 channels of a pixel at a time (half a 32-channel atom), two taps of a
// kernel row per 16-bit multiply-add (levels in [-128, 127]: a pair of products stays within int32, and
// each sum is exact). The accumulators hold channels {0-3, 8-11} and {4-7, 12-15}; they are put back in
// order once per pixel.
DLAKIT_TARGET_AVX2_FMA void depthwise_atoms_row_avx2(const PackedInt8Conv& p, const Int8ConvGeometry& g,
                                                     const Int8Input& x, const Int8Requant& rq,
                                                     const Int8Output& out, int64_t n, int64_t oh) {
  const int64_t taps = g.KH * g.KW;
  const __m256 scale = _mm256_set1_ps(out.scale);
  for (int64_t c = 0; c < g.M; c += kLanes) {
    const int64_t count = std::min<int64_t>(kLanes, g.M - c);
    const int16_t* w = p.depthwise_pairs.data() + (c / kLanes) * taps * 4 * kLanes;
    const Requant8 q0 = requant8_at(rq, c, count), q1 = requant8_at(rq, c + 8, count - 8);
    const int8_t* const first = x.at(n, c, 0, 0);  // the block's channels at (0, 0); x.at divides
    const int64_t ih0 = oh * g.sh - g.pt;
    const TapRange rows = taps_inside(ih0, g.KH, g.dh, g.H);
    for (int64_t ow = 0; ow < g.OW; ++ow) {
      __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
      const int64_t iw0 = ow * g.sw - g.pl;
      const TapRange cols = taps_inside(iw0, g.KW, g.dw, g.W);
      for (int64_t kh = rows.k0; kh < rows.k1; ++kh) {
        const int8_t* row = first + (ih0 + kh * g.dh) * x.line + iw0 * x.pixel;
        for (int64_t kw = cols.k0; kw < cols.k1; kw += 2) {
          const bool pair = kw + 1 < cols.k1;
          const __m256i a = widen16(row + kw * g.dw * x.pixel);
          const __m256i b = pair ? widen16(row + (kw + 1) * g.dw * x.pixel) : _mm256_setzero_si256();
          const int16_t* wt = w + ((kh * g.KW + kw) * 2 + (pair ? 0 : 1)) * 2 * kLanes;
          lo = _mm256_add_epi32(lo,
                                _mm256_madd_epi16(_mm256_unpacklo_epi16(a, b),
                                                  _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wt))));
          hi = _mm256_add_epi32(
              hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(a, b),
                                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wt + kLanes))));
        }
      }
      const __m128i first8 = simd::quantize8(requantize8(q0, _mm256_permute2x128_si256(lo, hi, 0x20)), scale);
      const __m128i next8 = simd::quantize8(requantize8(q1, _mm256_permute2x128_si256(lo, hi, 0x31)), scale);
      alignas(16) int8_t levels[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(levels), _mm_unpacklo_epi64(first8, next8));
      std::memcpy(out.atom_at(n, c, oh, ow), levels, size_t(count));
    }
  }
}

// Depthwise between int8 chw32 surfaces, a row per work item, on the SIMD kernel in use.
void depthwise_atoms(const PackedInt8Conv& p, const Int8ConvGeometry& g, int64_t N, const Int8Input& x,
                     const Int8Requant& rq, const Int8Output& out) {
  const bool vnni = int8_kernel() == Int8Kernel::kAvx512Vnni;
  parallel_for(N * g.OH, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      (vnni ? depthwise_atoms_row : depthwise_atoms_row_avx2)(p, g, x, rq, out, i / g.OH, i % g.OH);
  });
}
#endif

void conv_int8_depthwise(const PackedInt8Conv& p, const Int8ConvGeometry& g, int64_t N, const Int8Input& x,
                         const Int8Requant& rq, const Int8Output& out) {
  const int64_t Hp = padded_rows(g), Wp = padded_cols(g), S = g.sw, Wq = (Wp + S - 1) / S;
  const int64_t taps = g.KH * g.KW;
  parallel_for(N * g.M, [&](int64_t i0, int64_t i1) {
    std::vector<int32_t> plane(size_t(Hp * S * Wq));
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t n = i / g.M, m = i % g.M;
      std::fill(plane.begin(), plane.end(), 0);
      const int64_t iw_end = std::min(g.W, Wp - g.pl);
      for (int64_t ih = 0; ih < g.H; ++ih) {
        const int64_t row = ih + g.pt;
        if (row < 0 || row >= Hp) continue;
        // Column iw + pl goes to phase (iw + pl) % S at (iw + pl) / S, stepped without dividing.
        int32_t* dst = plane.data() + row * S * Wq;
        const int8_t* src = x.at(n, m, ih, 0);
        if (S == 1) {  // one phase: column iw + pl, a plain widening copy (vectorised where x is planar)
          const int64_t pixel = x.pixel;
          int32_t* to = dst + g.pl;
          for (int64_t iw = 0; iw < iw_end; ++iw) to[iw] = src[iw * pixel];
          continue;
        }
        int64_t phase = g.pl % S, at = g.pl / S;
        for (int64_t iw = 0; iw < iw_end; ++iw) {
          dst[phase * Wq + at] = src[iw * x.pixel];
          if (++phase == S) phase = 0, ++at;
        }
      }
      DepthwiseRow r{plane.data(), S,    Wq, g.KH, g.KW, g.dh, g.dw, g.sh, p.depthwise_w.data() + m * taps, m,
                     &rq,          &out, n,  g.M,  g.OH, g.OW};
      for (int64_t oh = 0; oh < g.OH; ++oh) {
#if defined(__x86_64__)
        if (int8_kernel() == Int8Kernel::kAvx512Vnni) {
          depthwise_row_vnni(r, oh);
          continue;
        }
        if (int8_kernel() == Int8Kernel::kAvx2) {
          depthwise_row_avx2(r, oh);
          continue;
        }
#endif
        depthwise_row_generic(r, oh);
      }
    }
  });
}

}  // namespace

bool is_depthwise(int64_t M, int64_t Cg, int64_t groups) { return Cg == 1 && M == groups; }

bool int8_conv_supported(int64_t M, int64_t Cg, int64_t groups, int64_t KH, int64_t KW) {
  const int64_t taps = KH * KW, C4 = (Cg + 3) / 4 * 4;
  if (KH < 1 || KW < 1 || taps > kMaxTaps || groups < 1 || M % groups || Cg < 1) return false;
  if (!is_depthwise(M, Cg, groups) && M / groups < 8) return false;
  return double(taps) * double(C4) * 255.0 * 128.0 < 2147483648.0;
}

std::shared_ptr<const PackedInt8Conv> pack_int8_conv(int64_t M, int64_t Cg, int64_t groups, int64_t KH,
                                                     int64_t KW, const float* w_levels) {
  if (!int8_conv_supported(M, Cg, groups, KH, KW))
    fail(Status::kInternal, "pack_int8_conv: ", M, " outputs, ", Cg, " inputs per group, ", groups,
         " groups, kernel ", KH, "x", KW, " is not for the exact INT8 fast path");
  auto p = std::make_shared<PackedInt8Conv>();
  *p = PackedInt8Conv{M, Cg, groups, KH, KW, (Cg + 3) / 4 * 4, (M / groups + kLanes - 1) / kLanes, {}, {}};
  const int64_t Mg = M / groups, taps = KH * KW;
  if (is_depthwise(M, Cg, groups)) {
    p->depthwise = true;
    for (int64_t i = 0; i < M * taps; ++i) p->depthwise_w.push_back(int32_t(w_levels[i]));
    p->depthwise_w16.assign(size_t((M + kLanes - 1) / kLanes * taps * kLanes), 0);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t tap = 0; tap < taps; ++tap)
        p->depthwise_w16[size_t(((m / kLanes) * taps + tap) * kLanes + m % kLanes)] =
            low16(int32_t(w_levels[m * taps + tap]));
    // unpacklo over 16 channels takes channels 0-3 and 8-11, unpackhi 4-7 and 12-15, each beside its
    // partner tap's.
    p->depthwise_pairs.assign(size_t((M + kLanes - 1) / kLanes * taps * 2 * 2 * kLanes), 0);
    for (int64_t m = 0; m < M; ++m) {
      const int64_t lane = m % kLanes, half = lane / 8, within = lane % 8;
      const int64_t vec = within / 4, at = half * 8 + (within % 4) * 2;
      for (int64_t tap = 0; tap < taps; ++tap) {
        const bool partner = tap % KW + 1 < KW;
        const int16_t w = int16_t(w_levels[m * taps + tap]);
        const int16_t next = partner ? int16_t(w_levels[m * taps + tap + 1]) : int16_t(0);
        int16_t* pair = p->depthwise_pairs.data() + (((m / kLanes) * taps + tap) * 2) * 2 * kLanes;
        int16_t* alone = pair + 2 * kLanes;
        pair[vec * kLanes + at] = w;
        pair[vec * kLanes + at + 1] = next;
        alone[vec * kLanes + at] = w;
      }
    }
    return p;
  }
  const int64_t quads = p->C4 / 4, block_bytes = taps * quads * 64;
  p->w.assign(size_t(groups * p->blocks * block_bytes), 0);
  p->compensation.assign(size_t(groups * p->blocks * kLanes), 0);
  for (int64_t grp = 0; grp < groups; ++grp)
    for (int64_t m = 0; m < Mg; ++m) {
      const int64_t block = grp * p->blocks + m / kLanes, lane = m % kLanes;
      int32_t sum = 0;
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t tap = 0; tap < taps; ++tap) {
          const int32_t v = int32_t(w_levels[((grp * Mg + m) * Cg + c) * taps + tap]);
          p->w[size_t(block * block_bytes + (tap * quads + c / 4) * 64 + lane * 4 + c % 4)] = int8_t(v);
          sum += v;
        }
      p->compensation[size_t(block * kLanes + lane)] = 128 * sum;
    }
  if (int8_kernel() == Int8Kernel::kAvx2) {  // channel c of a quad: pair c / 2, place c % 2
    p->w16.resize(p->w.size());
    for (size_t quad = 0; quad < p->w.size() / 64; ++quad)
      for (int64_t lane = 0; lane < kLanes; ++lane)
        for (int64_t c = 0; c < 4; ++c)
          p->w16[quad * 64 + size_t((c / 2) * 32 + lane * 2 + c % 2)] =
              p->w[quad * 64 + size_t(lane * 4 + c)];
  }
  return p;
}

void conv_int8_exact(const PackedInt8Conv& p, const Int8ConvGeometry& g, int64_t N, const Int8Input& x,
                     const Int8Requant& rq, const Int8Output& out) {
  if (g.M != p.M || g.C != p.Cg * p.groups || g.groups != p.groups || g.KH != p.KH || g.KW != p.KW)
    fail(Status::kInternal, "conv_int8_exact: the geometry does not match the packed weights");
  if (rq.act.act == GemmEpilogue::Act::kHardSigmoidMul)  // its vector epilogues know the DLA's activations
    fail(Status::kUnsupported,
         "conv_int8_exact: HardSigmoidMul is the FP32 engine's fusion, not a DLA activation");
  if (out.atoms && g.M % 32)  // the last atom's padding channels, as a surface write zeroes them
    for (int64_t n = 0; n < N; ++n)
      for (int64_t oh = 0; oh < g.OH; ++oh)
        for (int64_t ow = 0; ow < g.OW; ++ow)
          std::memset(out.atom_at(n, g.M, oh, ow), 0, size_t(32 - g.M % 32));
  if (p.depthwise) {
#if defined(__x86_64__)
    if (x.lane == 1 && x.atom == 32 && out.atoms && int8_kernel() != Int8Kernel::kGeneric)
      return depthwise_atoms(p, g, N, x, rq, out);
#endif
    return conv_int8_depthwise(p, g, N, x, rq, out);
  }
  const int64_t Cg = p.Cg, Mg = g.M / g.groups, taps = g.KH * g.KW, quads = p.C4 / 4;
  const int64_t Hp = padded_rows(g), Wp = padded_cols(g);
  const int64_t block_bytes = taps * quads * 64;
  std::vector<int64_t> tap_offset(static_cast<size_t>(taps));
  for (int64_t kh = 0; kh < g.KH; ++kh)
    for (int64_t kw = 0; kw < g.KW; ++kw)
      tap_offset[size_t(kh * g.KW + kw)] = (kh * g.dh * Wp + kw * g.dw) * p.C4;
  // The calling thread's buffer, kept between calls (no fresh pages per inference); the workers get its
  // address, not their own thread_local.
  thread_local std::vector<uint8_t> padded;
  thread_local std::vector<uint16_t> padded16;
  // The AVX2 kernel reads the padded input widened to 16 bits, the others read bytes.
  const bool wide = int8_kernel() == Int8Kernel::kAvx2 && !p.w16.empty();
  if (wide)
    padded16.resize(size_t(Hp * Wp * p.C4));
  else
    padded.resize(size_t(Hp * Wp * p.C4));
  uint8_t* const xb = wide ? nullptr : padded.data();
  uint16_t* const xb16 = wide ? padded16.data() : nullptr;
  // Work items are (output row, pair of blocks); a row is covered kMaxPixels pixels at a time. A thread's
  // items run pair by pair where the weights outweigh the padded input (deep layers on small images: a pair's
  // weights then stay in cache over its rows), else row by row (the input row stays in cache over the pairs).
  const int64_t pairs = (p.blocks + 1) / 2;
  const bool pair_major = int64_t(p.w.size()) / g.groups > Hp * Wp * p.C4;  // one group's, in elements
  const float out_inv = numerics::usable_inverse(out.scale);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      if (wide)
        pad_input(g, p.C4, x, n, grp * Cg, Cg, xb16);
      else
        pad_input(g, p.C4, x, n, grp * Cg, Cg, xb);
      parallel_for(g.OH * pairs, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
          const int64_t oh = pair_major ? i % g.OH : i / pairs, pair = pair_major ? i / g.OH : i % pairs;
          const int64_t block = grp * p.blocks + pair * 2, m0 = grp * Mg + pair * 2 * kLanes;
          const int blocks = int(std::min<int64_t>(2, p.blocks - pair * 2));
          const Int8Requant at{rq.mult + m0, rq.bias_q + m0, rq.bias ? rq.bias + m0 : nullptr, rq.act};
          for (int64_t ow = 0; ow < g.OW; ow += kMaxPixels) {
            const int pixels = int(std::min<int64_t>(kMaxPixels, g.OW - ow));
            const int64_t first = (oh * g.sh * Wp + ow * g.sw) * p.C4;
            const Tile t{wide ? nullptr : xb + first,
                         tap_offset.data(),
                         taps,
                         quads,
                         g.sw * p.C4,
                         p.w.data() + block * block_bytes,
                         block_bytes,
                         p.compensation.data() + block * kLanes,
                         at,
                         &out,
                         out_inv,
                         g.M,
                         g.OH,
                         g.OW,
                         n,
                         m0,
                         oh,
                         ow,
                         Mg - pair * 2 * kLanes,
                         wide ? xb16 + first : nullptr,
                         wide ? p.w16.data() + block * block_bytes : nullptr,
                         block_bytes};
            run_tile(t, blocks, pixels);
          }
        }
      });
    }
}

}  // namespace dlakit
