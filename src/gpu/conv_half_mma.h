// The FP16 convolution (FP16 layers, the gpu-fp16 configuration) as one implicit GEMM on tensor cores
// (implicit_gemm.cuh: mma f16, fp32 sums) with its epilogue in the same kernel, so that no im2col matrix and
// no fp32 sums pass through memory:
//   1. pack_half_atoms rounds the float NCHW input to fp16 (to nearest even: the layer's input rule) into an
//      fp16 chw16 surface (16 channels a pixel, 32 bytes; channels past C zero),
//   2. conv_half_mma multiplies it by the weights' fp16 values, summing in fp32, then adds the bias, applies
//      the activation and the store rule and writes float NCHW, as ConvF16Gemm's im2col path does; with a
//      residual Add (and a ReLU after it) it writes their result instead, as those layers would compute it.
// ConvF16Gemm::plan chooses it (conv_f16_gemm.h). Host code of the CUDA backend only.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpu/implicit_gemm.h"
#include "gpu/kernels.h"

namespace dlakit::gpu {

// A residual Add of the convolution's result and `other` (float NCHW of the output's shape, its input rule
// applied), then optionally a ReLU, each with its layer's store rule: y = relu_store(relu(store(conv +
// other))).
struct HalfResidual {
  const float* other = nullptr;
  k::StoreRule store;
  bool relu = false;
  k::StoreRule relu_store;
};

// Channels rounded up to whole atoms of 16, as the surface and the weights hold them.
int64_t half_atoms_channels(int64_t channels);
// Bytes of the chw16 surface of g's input; the weights' K bytes a filter ((tap, input atom, 16 halves)).
size_t half_atoms_bytes(const k::ConvGeom& g);
int64_t half_atoms_k_bytes(const k::ConvGeom& g);
// Whether g has groups 1 and keeps the kernels' 32-bit indices (the pack's, the K chunks').
bool half_atoms_fit(const k::ConvGeom& g);
// The weights [M][half_atoms_k_bytes / 2] as fp16 bits from w [M][C][KH][KW] (fp16 values), zeros for the
// padding channels.
std::vector<uint16_t> half_atoms_weights(const k::ConvGeom& g, const float* w);

// x: float NCHW; atoms: half_atoms_bytes of scratch; w: half_atoms_weights on the device; bias: M values or
// null; residual: null or the fused Add; y: float NCHW (the Add's or the ReLU's result with a residual).
void conv_half_mma(const k::ConvGeom& g, MmaTile tile, const float* x, void* atoms, const uint16_t* w,
                   const float* bias, k::ActParams act, const k::StoreRule& store,
                   const HalfResidual* residual, float* y, cudaStream_t s);

}  // namespace dlakit::gpu
