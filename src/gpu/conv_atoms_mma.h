// The INT8 convolution between int8 chw32 surfaces as one implicit GEMM on tensor cores (mma.sync s8, int32
// accumulators) with the epilogue in the same kernel: no im2col matrix and no int32 sums in memory. K runs
// over (tap, input atom), 32 channels at a time, as ConvInt8Gemm::atom_weights orders the weights, so a
// tap's slice of an output pixel's row is the 32 bytes of one input atom, copied to shared memory as they
// are (padding taps zero-filled). The bytes must be ConvInt8Gemm::run_on_atoms's with identity levels (the
// input surface's scale is the layer's input scale). run_on_atoms takes it by default where
// implicit_gemm_tile finds a tile and conv_atoms_mma_aliases is false (DLAKIT_CUDA_IMPLICIT_GEMM=0: never);
// its unit test is tests/gpu/conv_atoms_mma_test.cpp, and the device suite runs every GPU test both ways.
// Host code of the CUDA backend only.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/conv_int8_gemm.h"
#include "gpu/implicit_gemm.h"
#include "gpu/kernels.h"

namespace dlakit::gpu {

// Whether the surface the kernel writes (`out`, or the fused Add's result) shares bytes with its input.
// One launch reads the input while its other blocks already write, so such a layer must keep the im2col
// path, which reads the whole input first: the memory planner may place a fused Add's result over the
// convolution's input, which is dead after the convolution.
bool conv_atoms_mma_aliases(const k::ConvGeom& g, const Int8Atoms& in, const Int8Atoms& written);

// w: atom_weights() ([M rounded up to 4][k_bytes], k_bytes = atom_depth). in, out, add: as run_on_atoms.
void conv_atoms_mma(const k::ConvGeom& g, MmaTile tile, const Int8Atoms& in, const int8_t* w, int64_t k_bytes,
                    const float* mult, const double* bq, const float* bias, k::ActParams act,
                    const k::StoreRule& store, const Int8Atoms& out, const AtomAdd* add, cudaStream_t s);

}  // namespace dlakit::gpu
