// Exact INT8 2-D convolution: int8 input levels x int8 weight levels summed in int32, as the DLA's MAC
// array sums them. int8 x int8 products summed in int32 are exact, so this fast path gives the same sums
// as the plain reference convolution of the levels (the oracle it is tested against) while running on the
// CPU's integer dot-product instructions (AVX-512 VNNI: 64 multiply-adds of bytes per instruction; AVX2:
// 16 of 16-bit values, exact as well, since a level fits 16 bits and a pair of products 32).
//
// Layouts. The input of one image and group is copied once, quantized, as unsigned bytes (level + 128) in
// a padded pixel-major buffer [Hp][Wp][C4] (C4: channels rounded up to 4, the dot product's width), the
// border filled with 128 (level 0), so the inner loop has no bounds checks. Weights are packed once per
// layer as [block of 16 output channels][tap][C4/4][16][4] signed bytes. Since the products are
// (level + 128) * w, 128 * sum(w) of each output channel is subtracted at the end (exact in int32). The
// AVX2 kernel reads the same buffer widened to 16 bits and weights packed as [block][tap][C4/4][pair of
// channels][16][2] int16 (pairs: what one 16-bit multiply-add instruction sums).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/int8_kernel.h"

namespace dlakit {

struct Int8ConvGeometry {
  int64_t C = 0, H = 0, W = 0;  // input channels (all groups), size
  int64_t M = 0, groups = 1;    // output channels (all groups)
  int64_t KH = 1, KW = 1;       // kernel
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0;  // leading padding (trailing padding follows from OH, OW)
  int64_t OH = 0, OW = 0;
};

// A layer's weights packed for conv_int8_exact, once at load time (they do not depend on the input size).
struct PackedInt8Conv {
  int64_t M = 0, Cg = 0, groups = 1, KH = 1, KW = 1;
  int64_t C4 = 0, blocks = 0;         // per group: input channels rounded up to 4, blocks of 16 outputs
  std::vector<int8_t> w;              // [group][block][tap][C4/4][16][4]
  std::vector<int16_t> w16;           // [group][block][tap][C4/4][2][16][2]; packed for the AVX2 kernel only
  std::vector<int32_t> compensation;  // [group][block][16]: 128 * sum of each output channel's weights
  // Depthwise layers (one input channel per output channel) instead: [M][tap] for planar input (the sums
  // run along an output row, 16 pixels at a time), and [M / 16][tap][16] for input and output in int8
  // chw32 surfaces (16 channels of a pixel at a time, read and written in place), there each level in the
  // low 16 bits of its lane and the high bits zero, for a 16-bit multiply-add (vpmaddwd) with the
  // sign-extended input levels. On AVX2, two taps of a
  // kernel row go into one 16-bit multiply-add: depthwise_pairs is [M / 16][tap][pair, alone][2][16] int16,
  // tap t's weights interleaved with tap t + 1's (of the same row; 0 past its end) or with 0, in the order
  // of _mm256_unpacklo/hi_epi16 over 16 channels; packed whatever the kernel in use (a few KB a layer),
  // since the AVX2 depthwise kernel has no other form to fall back to.
  bool depthwise = false;
  std::vector<int32_t> depthwise_w, depthwise_w16;
  std::vector<int16_t> depthwise_pairs;
};

// Whether the fast path handles this layer's weights exactly: the int32 sums of (level + 128) * w cannot
// overflow (taps * C4 * 255 * 128 < 2^31), and it is depthwise or each group has enough output channels
// for the 16-channel blocks to pay (other grouped layers stay on the reference path).
bool int8_conv_supported(int64_t M, int64_t Cg, int64_t groups, int64_t KH, int64_t KW);
// Packs weight levels [M][Cg][KH][KW] (float values that are integers in [-128, 127]).
std::shared_ptr<const PackedInt8Conv> pack_int8_conv(int64_t M, int64_t Cg, int64_t groups, int64_t KH,
                                                     int64_t KW, const float* w_levels);
// The DLA's requantization of each output channel's exact sum, fused into the store:
// y = mult > 0 ? float(double(sum) + bias_q) * mult : bias (bias_q: the bias as an integer at the sum's
// scale).
// Then the fused activation (`act`'s activation only; no residual), with the separate node's arithmetic.
struct Int8Requant {
  const float* mult;     // [M]
  const double* bias_q;  // [M]
  const float* bias;     // [M], or null (zero)
  GemmEpilogue act;
};
// Input levels where they are: planar NCHW, or the DLA's channel atoms (an int8 chw32 surface read in
// place: [N][C / atom][H][line][atom]). Element (n, c, h, w) is at
// data + n*batch + (c / atom)*group + (c % atom)*lane + h*line + w*pixel.
struct Int8Input {
  const int8_t* data = nullptr;
  int64_t batch = 0, group = 0, atom = 1, lane = 0, line = 0, pixel = 0;
  const int8_t* at(int64_t n, int64_t c, int64_t h, int64_t w) const {
    return data + n * batch + (c / atom) * group + (c % atom) * lane + h * line + w * pixel;
  }
  static Int8Input planar(const int8_t* x, int64_t C, int64_t H, int64_t W) {
    return {x, C * H * W, 0, C, H * W, W, 1};
  }
  static Int8Input atoms(const int8_t* x, int64_t atom, int64_t batch, int64_t group, int64_t line) {
    return {x, batch, group, atom, 1, line, atom};
  }
};
// Where the requantized outputs go: float y [N][M][OH][OW], or, when `atoms` is set, straight into an
// int8 chw32 surface ([N][M / 32][OH][line][32]) as levels at `scale` (quant::quantize with ties away from
// zero: what writing the float outputs to that surface would store), its padding channels zeroed.
struct Int8Output {
  float* y = nullptr;
  int8_t* atoms = nullptr;
  int64_t batch = 0, group = 0, line = 0;
  float scale = 0;
  int8_t* atom_at(int64_t n, int64_t m, int64_t oh, int64_t ow) const {
    return atoms + n * batch + (m / 32) * group + oh * line + ow * 32 + m % 32;
  }
};
// Input levels x -> requantized outputs.
void conv_int8_exact(const PackedInt8Conv& p, const Int8ConvGeometry& g, int64_t N, const Int8Input& x,
                     const Int8Requant& rq, const Int8Output& out);
// The plain reference of one output value's requantization (what the vector store computes).
inline float int8_requantize(const Int8Requant& rq, int64_t m, int32_t sum) {
  const float v =
      rq.mult[m] > 0 ? float(double(sum) + rq.bias_q[m]) * rq.mult[m] : (rq.bias ? rq.bias[m] : 0.f);
  return gemm_epilogue_scalar(rq.act, v, 0.f);
}

}  // namespace dlakit
