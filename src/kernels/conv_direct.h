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

// Floats per phase row for a padded width Wp (the columns a convolution reads) and horizontal stride S.
int64_t conv_direct_layout(int64_t Wp, int64_t S);
// In a padded row of stride S, phase `phase` holds input column q * S + phase - pl at slot q: the slots
// [lo, hi) whose column lies inside the input's W (the others are padding).
struct PhaseSpan {
  int64_t lo, hi;
};
inline PhaseSpan conv_direct_phase_span(int64_t W, int64_t pl, int64_t S, int64_t Wq, int64_t phase) {
  const int64_t lo = std::clamp<int64_t>((pl - phase + S - 1) / S, 0, Wq);
  return {lo, std::clamp<int64_t>((W + pl - phase + S - 1) / S, lo, Wq)};
}
// Size in floats of the padded buffer, with slack so a tile's vector loads past the last row stay inside.
int64_t conv_direct_buffer_size(int64_t C, int64_t Hp, int64_t S, int64_t Wq);
// x [C][H][W] -> xp: pt rows and pl columns of zeros first, zeros past the input, Hp padded rows; the
// slack past the last row zeroed too.
void conv_direct_pad_input(const float* x, int64_t C, int64_t H, int64_t W, int64_t pt, int64_t pl,
                           int64_t Hp, int64_t S, int64_t Wq, float* xp);
// Weights [M x K] (row-major) packed for conv_direct on this CPU.
std::shared_ptr<const PackedA> conv_direct_pack_weights(int64_t M, int64_t K, const float* w);
// Output columns one tile covers; the direct path pays off when OW is not much smaller.
int64_t conv_direct_tile_cols();

void conv_direct(const ConvDirectArgs& a);

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

namespace gemm_isa {
void conv_direct_avx512(const ConvDirectArgs& a);
void conv_direct_avx2(const ConvDirectArgs& a);
void conv_direct_generic(const ConvDirectArgs& a);
void conv_pack_avx512(PackedA& p, const float* w);
void conv_pack_avx2(PackedA& p, const float* w);
void conv_pack_generic(PackedA& p, const float* w);
void depthwise_avx512(const DepthwiseArgs& a);
void depthwise_avx2(const DepthwiseArgs& a);
void depthwise_generic(const DepthwiseArgs& a);
}  // namespace gemm_isa

}  // namespace dlakit
