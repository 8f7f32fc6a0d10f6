// 3x3 convolutions at stride 1 by Winograd's minimal filtering F(2x2, 3x3) (Lavin and Gray, "Fast
// Algorithms for Convolutional Neural Networks", 2015): each 2x2 block of outputs (a tile) comes from the
// 4x4 block of input around it through 16 element-wise products per pair of input and output channels
// instead of 36, 2.25 times fewer multiply-adds. At each of the 16 positions the products of every channel
// pair over a block of tiles are one matrix product (sgemm), U[xi] [M x C] times V[xi] [C x tiles]; the
// blocks of tiles are small enough that V and the products stay in L2.
//
// Its sums are not the direct kernels' bits: the transforms add and subtract inputs (and halve weights)
// before the products, so each output rounds differently; it is tested against the direct convolution
// within a tolerance (tests/unit/conv_test.cpp). The engine uses it where conv_winograd_suits says.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/gemm.h"

namespace dlakit {

// The 16 transformed weight matrices U[xi] = (G g G^T)[xi / 4][xi % 4], [M x C] each, packed for sgemm.
struct WinogradWeights {
  int64_t M = 0, C = 0;
  std::vector<PackedA> u;
};
// From weights [M][C][3][3].
std::shared_ptr<const WinogradWeights> winograd_pack_weights(int64_t M, int64_t C, const float* w);

// The tiles a 3x3 stride-1 layer has: ceil(OH / 2) x ceil(OW / 2), and the padded input they read, in
// conv_direct_pad_input's layout at stride 2 ([C][Hp][2][Wq]: tile tx's four columns are consecutive
// floats of the two phases for consecutive tiles): Hp = 2 * ceil(OH / 2) + 2, Wq = ceil(OW / 2) + 1.
struct WinogradLayout {
  int64_t Hp, Wq;
};
inline WinogradLayout winograd_layout(int64_t OH, int64_t OW) {
  return {2 * ((OH + 1) / 2) + 2, (OW + 1) / 2 + 1};
}

struct WinogradArgs {
  const float* xp;  // the padded input, winograd_layout's
  int64_t C, Hp, Wq, OH, OW;
  const WinogradWeights* w;
  const float* bias;      // optional, per output channel
  float* y;               // [M][OH][OW]
  GemmEpilogue epilogue;  // residual (if any) [M][OH][OW] with ldr = OH * OW
};

// Whether a 3x3 stride-1 layer of C inputs, M outputs and OH x OW outputs runs faster this way on this CPU
// (measured: docs/benchmarks.md).
bool conv_winograd_suits(int64_t C, int64_t M, int64_t OH, int64_t OW);
void conv_winograd(const WinogradArgs& a);

namespace gemm_isa {
void winograd_avx512(const WinogradArgs& a);
void winograd_avx2(const WinogradArgs& a);
void winograd_generic(const WinogradArgs& a);
void winograd_pack_avx512(WinogradWeights& out, const float* w);
void winograd_pack_avx2(WinogradWeights& out, const float* w);
void winograd_pack_generic(WinogradWeights& out, const float* w);
}  // namespace gemm_isa

}  // namespace dlakit
