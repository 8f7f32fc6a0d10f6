// Choosing the implicit GEMM on tensor cores (implicit_gemm.cuh) for a convolution: whether it is on, and
// the block tile for the current GPU. Read by the INT8 (conv_atoms_mma.h) and FP16 (conv_half_mma.h)
// convolutions. Host code of the CUDA backend only.
#pragma once
#include "gpu/kernels.h"

namespace dlakit::gpu {

// A block's tile of output pixels x filters (warps of 64 x 32 each).
enum class MmaTile { k128x128, k128x64, k64x64 };

// The largest tile whose grid gives every one of `sms` multiprocessors a block, or none (a grid of few
// blocks leaves the GPU idle: cuBLASLt's split-K kernels serve those shapes better). With the kernels'
// limits: groups 1, 32-bit pixel indices (the callers' planners hold the in-image offsets).
bool implicit_gemm_tile(const k::ConvGeom& g, int sms, MmaTile& tile);

// On by default, since the INT8 kernel passed the GPU tests on an H100 (2026-12-06);
// DLAKIT_CUDA_IMPLICIT_GEMM=0 keeps every convolution on im2col + cuBLASLt, so that the device suite tests
// that path on every model too and the benchmarks time both.
bool implicit_gemm_enabled();

// The current device's multiprocessors (the launches size their grids by them).
int multiprocessors();

}  // namespace dlakit::gpu
