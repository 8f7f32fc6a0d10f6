// The FP16 convolution (FP16 layers, the gpu-fp16 configuration) as one implicit GEMM on tensor cores
// (implicit_gemm.cuh: mma f16, fp32 sums) with its epilogue in the same kernel, so that no im2col matrix and
// no fp32 sums pass through memory:
//   1. its input is an fp16 chw16 surface ([N][atoms][H][W][16 halves]: 32 bytes a pixel in an atom,
//      channels past C zero): a producer's (below), or packed from float NCHW first, each value rounded to
//      fp16 (to nearest even: the layer's input rule),
//   2. conv_half_mma multiplies it by the weights' fp16 values, summing in fp32, then adds the bias, applies
//      the activation and the store rule, as ConvF16Gemm's im2col path does; with a residual Add (and a ReLU
//      after it) it computes their result instead, as those layers would;
//   3. it writes float NCHW, or, where every value it stores is on the fp16 grid, the fp16 chw16 surface
//      that the convolutions reading it take as they are: half the bytes, and no pack.
// ConvF16Gemm::plan chooses it (conv_f16_gemm.h). Host code of the CUDA backend only.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpu/implicit_gemm.h"
#include "gpu/kernels.h"

namespace dlakit::gpu {

// A tensor on the GPU as the FP16 convolution reads or writes it: float NCHW, or an fp16 chw16 surface
// (exactly one of the two is set).
template <class Float, class Half>
struct HalfTensorOf {
  Float* nchw = nullptr;
  Half* atoms = nullptr;
};
using HalfInput = HalfTensorOf<const float, const uint16_t>;
using HalfOutput = HalfTensorOf<float, uint16_t>;

// A residual Add of the convolution's result and `other` (of the output's shape, on the fp16 grid where
// it is a surface; its input rule applied), then optionally a ReLU, each with its layer's store rule:
// y = relu_store(relu(store(conv + other))).
struct HalfResidual {
  HalfInput other;
  k::StoreRule store;
  bool relu = false;
  k::StoreRule relu_store;
};

// Channels rounded up to whole atoms of 16, as the surface and the weights hold them.
int64_t half_atoms_channels(int64_t channels);
// Bytes of the chw16 surface of g's input, of an NCHW shape's; the weights' K bytes a filter ((tap, input
// atom, 16 halves)).
size_t half_atoms_bytes(const k::ConvGeom& g);
size_t half_atoms_bytes(int64_t n, int64_t c, int64_t plane);
int64_t half_atoms_k_bytes(const k::ConvGeom& g);
// Whether g has groups 1 and keeps the kernels' 32-bit indices (the pack's, the K chunks').
bool half_atoms_fit(const k::ConvGeom& g);
// The weights [M][half_atoms_k_bytes / 2] as fp16 bits from w [M][C][KH][KW] (fp16 values), zeros for the
// padding channels.
std::vector<uint16_t> half_atoms_weights(const k::ConvGeom& g, const float* w);

// Whether a convolution with these rules may write a surface: the last of them leaves fp16 values.
bool half_surface_rules(const k::StoreRule& store, const HalfResidual* residual);

// x: the input (float NCHW is packed into `atoms`, half_atoms_bytes of scratch; unused for a surface);
// w: half_atoms_weights on the device; bias: M values or null; residual: null or the fused Add; y: the
// result (the Add's or the ReLU's with a residual); a surface only where half_surface_rules (kInternal
// otherwise); split: where shape.splits > 1, split_sums_bytes and split_arrivals counts (kInternal
// without). A split K adds its parts' fp32 sums in a fixed order, the same in every run.
void conv_half_mma(const k::ConvGeom& g, MmaShape shape, HalfInput x, void* atoms, const uint16_t* w,
                   const float* bias, k::ActParams act, const k::StoreRule& store,
                   const HalfResidual* residual, HalfOutput y, const SplitScratch& split, cudaStream_t s);
// K's 64-byte stages (implicit_gemm_shape's argument).
int64_t half_atoms_stages(const k::ConvGeom& g);
// A surface of n x c channels x plane pixels as float NCHW (for the layers that read floats).
void unpack_half_atoms(const uint16_t* atoms, int64_t n, int64_t c, int64_t plane, float* y, cudaStream_t s);

}  // namespace dlakit::gpu
