// Direct 2-D convolution kernels (the fast path of the reference Conv): no im2col. The input of one image
// and group is copied once into a zero-padded, stride-phase-split buffer, so that for every kernel tap a
// run of consecutive outputs reads consecutive floats; a micro-kernel then keeps a tile of output
// channels x output columns in registers over all input channels and taps. Vectorised per CPU like sgemm.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/gemm.h"

namespace dlakit {

// One image (and group) of a 2-D convolution in the padded layout below.
struct ConvDirectArgs {
  // Padded input [C][Hp][S][Wq]: padded column iw sits in phase iw % S at index iw / S, so a stride-S run
  // of outputs reads consecutive floats of one phase. Built by conv_direct_pad_input.
  const float* xp;
  int64_t C, Hp, S, Wq;
  int64_t KH, KW, dh, dw, sh;  // kernel size, dilations, vertical stride (the horizontal one is S)
  int64_t OH, OW;
  const PackedA* w;       // conv_direct_pack_weights layout: panels of whole-K rows
  const float* bias;      // optional, per output channel
  float* y;               // [M][OH][OW]
  GemmEpilogue epilogue;  // residual (if any) is [M][OH][OW] with ldr = OH*OW
};

// The lanes the position tiles compute over n consecutive positions in tiles of nr (vl a vector): whole
// tiles, and a last tile of one vector where its positions fit one (a row of 112 outputs: 3.5 tiles of 32).
inline int64_t conv_direct_lanes(int64_t n, int64_t nr, int64_t vl) {
  const int64_t rest = n % nr;
  return n / nr * nr + (rest == 0 ? 0 : rest <= vl ? vl : nr);
}
// How the position tiles cover OH x OW outputs (padded rows of Wq floats): along each output row, or at
// stride 1 flat along the padded rows where that computes fewer lanes (short rows fill whole tiles; the
// columns past OW are computed and dropped). The kernel runs this choice over its tiles and the cost model
// charges its lanes.
struct PositionTiling {
  bool flat;
  int64_t lanes;
  int64_t tiles;  // of nr positions, the last of a row (or of the flat run) possibly one vector
};
inline PositionTiling conv_direct_position_tiling(int64_t OH, int64_t OW, int64_t Wq, bool stride1,
                                                  int64_t nr, int64_t vl) {
  const int64_t rows = OH * conv_direct_lanes(OW, nr, vl), flat = conv_direct_lanes(OH * Wq, nr, vl);
  if (stride1 && flat < rows) return {true, flat, (OH * Wq + nr - 1) / nr};
  return {false, rows, OH * ((OW + nr - 1) / nr)};
}

// Floats per phase row for a padded width Wp (the columns a convolution reads) and horizontal stride S.
int64_t conv_direct_layout(int64_t Wp, int64_t S);
// In a padded row of stride S, phase `phase` holds input column q * S + phase - pl at slot q: the slots
// [lo, hi) whose column lies inside the input's W (the others are padding).
struct PhaseSpan {
  int64_t lo, hi;
};
// Every phase's span, computed once for all the rows of a plane (two divisions a phase cost more than
// copying a row of a stride-2 layer).
inline std::vector<PhaseSpan> conv_direct_phase_spans(int64_t W, int64_t pl, int64_t S, int64_t Wq) {
  std::vector<PhaseSpan> spans;
  for (int64_t phase = 0; phase < S; ++phase) {
    const int64_t lo = std::clamp<int64_t>((pl - phase + S - 1) / S, 0, Wq);
    spans.push_back({lo, std::clamp<int64_t>((W + pl - phase + S - 1) / S, lo, Wq)});
  }
  return spans;
}
// Slots [lo, hi) of one phase row: out[q] = in[q * S], the input column of slot q at in + q * S.
inline void conv_direct_copy_phase(const float* in, float* out, PhaseSpan span, int64_t S) {
  if (S == 2)  // a constant stride the compiler vectorises (even/odd lanes)
    for (int64_t q = span.lo; q < span.hi; ++q) out[q] = in[q * 2];
  else
    for (int64_t q = span.lo; q < span.hi; ++q) out[q] = in[q * S];
}
// Size in floats of the padded buffer, with slack so a tile's vector loads past the last row stay inside.
int64_t conv_direct_buffer_size(int64_t C, int64_t Hp, int64_t S, int64_t Wq);
// x [C][H][W] -> xp: pt rows and pl columns of zeros first, zeros past the input, Hp padded rows; the
// slack past the last row zeroed too.
void conv_direct_pad_input(const float* x, int64_t C, int64_t H, int64_t W, int64_t pt, int64_t pl,
                           int64_t Hp, int64_t S, int64_t Wq, float* xp);
// Weights [M x K] (row-major) packed for conv_direct on this CPU.
std::shared_ptr<const PackedA> conv_direct_pack_weights(int64_t M, int64_t K, const float* w);
void conv_direct(const ConvDirectArgs& a);

// The same convolution with the other tiling: output channels in the vector lanes, a tile being a few
// positions of one output row (each position's input value broadcast) x two vectors of channels, stored
// transposed. No lane is wasted on short rows, so small images with many channels (the 7x7 and 14x14
// stages of ResNets) run at the kernel's speed. It sums in direct_micro's order: the same bits. Weights
// packed by conv_channels_pack_weights; the input in conv_direct's padded layout, which a pointwise
// convolution's input already is (Hp = H, S = 1, Wq = W: the kernel reads no slack).
void conv_direct_channels(const ConvDirectArgs& a);
std::shared_ptr<const PackedA> conv_channels_pack_weights(int64_t M, int64_t K, const float* w);
// A row of OW outputs in as few channel tiles of at most `most` positions as possible, of equal width
// (14 = 7 + 7, not 8 + 6): per_row tiles of `width` positions, the last one possibly narrower.
struct ConvChannelTiles {
  int64_t per_row, width;
};
inline ConvChannelTiles conv_channel_tiles(int64_t OW, int64_t most) {
  const int64_t per_row = (OW + most - 1) / most;
  return {per_row, (OW + per_row - 1) / per_row};
}

// Which kernel a planar convolution (one group: M output channels, K = input channels x taps) runs on: the
// GEMM on an implicit im2col (a pointwise convolution's input read as it is), the direct kernel with
// positions in the lanes, or with channels in the lanes. The one that computes the fewest wasted lanes, in
// a cost model of this CPU's tile shapes (gemm.cpp).
enum class ConvKernel { kGemm, kDirectPositions, kDirectChannels };
struct ConvShape2d {
  int64_t M, K, OH, OW;
  int64_t Wq, S, sh;  // the padded layout's row length, the horizontal and the vertical stride
  bool in_place;      // 1x1, no padding: the channel tiles and the GEMM read the input (gathered first at a
                      // stride) in place, at stride 1
  bool residual = false;  // the epilogue adds a residual, which the channel tiles read transposed
};
ConvKernel conv_choose_kernel(const ConvShape2d& shape);

// Depthwise (one filter per output channel over input channel m / mult): each thread places one channel
// at a time into the layout above ([Hp][S][Wq], in its own buffer, which stays in cache: the whole image
// is not copied), then computes outputs a vector at a time with all taps in registers.
struct DepthwiseArgs {
  const float* x;  // [C][H][W], not padded
  int64_t C, M, H, W, pt, pl;
  int64_t Hp, S, Wq;
  int64_t KH, KW, dh, dw, sh;
  int64_t OH, OW;
  const float* w;         // [M][KH*KW]
  const float* bias;      // optional
  float* y;               // [M][OH][OW]
  GemmEpilogue epilogue;  // residual (if any) is [M][OH][OW]
};
void conv_depthwise_direct(const DepthwiseArgs& a);
// Whether conv_depthwise_direct runs `a` with channels in the lanes (where the CPU has that kernel).
bool depthwise_lanes_suit(const DepthwiseArgs& a);
// That kernel's padded rows, in cells of 16 channels: the columns its outputs read.
inline int64_t depthwise_lanes_width(const DepthwiseArgs& a) {
  return (a.OW - 1) * a.S + (a.KW - 1) * a.dw + 1;
}

// A pointwise convolution (the expansion: 1x1, stride 1, no padding, one group) whose output only a
// depthwise convolution reads, as in MobileNet's inverted residual blocks, in one pass: the expansion's
// sums of a pair of 16-channel groups go straight into the channels-in-lanes depthwise kernel's cells,
// which then computes those channels, so the expanded tensor is never written, nor transposed twice (its
// channel tiles' store, the depthwise kernel's placing). Bit for bit the two convolutions one after the
// other: the expansion's sums are the channel tile's chain, its bias and epilogue (the same bits as its
// GEMM while the input channels fit one k-block), the cells hold what the depthwise kernel would place.
struct ExpandDepthwiseArgs {
  const float* x;  // [C][H][W]: the expansion's input
  int64_t C;
  const PackedA* expand_w;       // conv_channels_pack_weights layout, [E x C]
  const float* expand_bias;      // optional
  GemmEpilogue expand_epilogue;  // without a residual
  DepthwiseArgs dw;              // over the expanded [E][H][W] (C = M = E); its x is not read
};
// Whether this CPU has the fused kernel, the depthwise suits it (depthwise_lanes_suit) and the expansion's
// input channels fit one GEMM k-block (its bits); where not, the caller runs the two layers. Reads the
// geometry and C only, so it can decide before the weights are packed.
bool conv_expand_depthwise_suits(const ExpandDepthwiseArgs& a);
// Runs `a` where conv_expand_depthwise_suits(a); elsewhere an internal error.
void conv_expand_depthwise(const ExpandDepthwiseArgs& a);

namespace gemm_isa {
// Each ISA's register tiles (the macros of gemm_<isa>.cpp), for conv_choose_kernel: sgemm's rows x
// columns, the direct kernel's channels x positions, the channel tile's most positions x channels.
struct TileShapes {
  int64_t gemm_mr, gemm_nr, direct_mr, direct_nr, channel_p, channel_nr;
  int64_t gemm_kc;  // sgemm's k-block: up to it, its sums are one chain of FMAs, as the direct kernels' are
  int64_t vl;       // floats a vector
};
extern const TileShapes tile_shapes_avx512, tile_shapes_avx2, tile_shapes_generic;
void conv_direct_avx512(const ConvDirectArgs& a);
void conv_direct_avx2(const ConvDirectArgs& a);
void conv_direct_generic(const ConvDirectArgs& a);
void conv_pack_avx512(PackedA& p, const float* w);
void conv_pack_avx2(PackedA& p, const float* w);
void conv_pack_generic(PackedA& p, const float* w);
void conv_channels_avx512(const ConvDirectArgs& a);
void conv_channels_avx2(const ConvDirectArgs& a);
void conv_channels_generic(const ConvDirectArgs& a);
void conv_channels_pack_avx512(PackedA& p, const float* w);
void conv_channels_pack_avx2(PackedA& p, const float* w);
void conv_channels_pack_generic(PackedA& p, const float* w);
void depthwise_avx512(const DepthwiseArgs& a);
// The same sums with channels in the lanes (16 at a time, transposed through a padded buffer), horizontal
// stride 1 or 2. AVX-512 only.
void depthwise_lanes_avx512(const DepthwiseArgs& a);
void expand_depthwise_avx512(const ExpandDepthwiseArgs& a);
void depthwise_avx2(const DepthwiseArgs& a);
void depthwise_generic(const DepthwiseArgs& a);
}  // namespace gemm_isa
// conv_choose_kernel with another ISA's tiles: the tests check every ISA's choices on one CPU.
ConvKernel conv_choose_kernel(const ConvShape2d& shape, const gemm_isa::TileShapes& tiles);

}  // namespace dlakit
