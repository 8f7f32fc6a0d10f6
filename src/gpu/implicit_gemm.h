// Choosing the implicit GEMM on tensor cores (implicit_gemm.cuh) for a convolution: whether it is on, the
// block tile for the current GPU and, for the FP16 kernel, how many blocks share a tile's K. Read by the INT8
// (conv_atoms_mma.h) and FP16 (conv_half_mma.h) convolutions. Host code of the CUDA backend only.
#pragma once
#include <cstddef>
#include <cstdint>

#include "gpu/kernels.h"

namespace dlakit::gpu {

// A block's tile of output pixels x filters (warps of 64 x 32 each).
enum class MmaTile { k128x128, k128x64, k64x64 };
constexpr int kWarpTileRows = 64, kWarpTileCols = 32;
// A tile's warps, pixels x filters: the one mapping the launches (implicit_gemm.cuh) and the grid arithmetic
// read.
struct TileWarps {
  int m, n;
};
constexpr TileWarps tile_warps(MmaTile tile) {
  return tile == MmaTile::k128x128  ? TileWarps{2, 4}
         : tile == MmaTile::k128x64 ? TileWarps{2, 2}
                                    : TileWarps{1, 2};
}

// The largest tile whose grid gives every one of `sms` multiprocessors a block, or none (a grid of few
// blocks leaves the GPU idle: cuBLASLt's split-K kernels serve those shapes better). With the kernels'
// limits: groups 1, 32-bit pixel indices (the callers' planners hold the in-image offsets).
bool implicit_gemm_tile(const k::ConvGeom& g, int sms, MmaTile& tile);

// A block tile, and the blocks each tile's K is split over (gridDim.z): they add their sums through memory
// in a fixed order (implicit_gemm.cuh: gather_split), so a result does not depend on which block ends last.
struct MmaShape {
  MmaTile tile = MmaTile::k64x64;
  int splits = 1;
};

// For a kernel that can split K (`stages`: K's 64-byte steps): implicit_gemm_tile's choice, except where its
// grid leaves the multiprocessors few warps (a batch's last stages: ResNet-50's 7 x 7 x 512 layers at batch
// 32 ran 3 warps a multiprocessor, 4.7 % occupancy). There: the largest tile, K split so that the blocks
// come to about 16 warps a multiprocessor (what the kernels reach where grids are large: 25 %), each part
// at least kMinSplitStages long. The same rule as implicit_gemm_tile for whether the GEMM applies at all.
bool implicit_gemm_shape(const k::ConvGeom& g, int64_t stages, int sms, MmaShape& shape);
constexpr int64_t kMinSplitStages = 8;

// The memory a split K needs (none for splits 1): every block's fp32 sums, and a count a tile of its blocks
// done, zero before the first run (gather_split leaves it zero again, so a buffer serves every run).
size_t split_sums_bytes(const k::ConvGeom& g, const MmaShape& shape);
int64_t split_arrivals(const k::ConvGeom& g, const MmaShape& shape);
struct SplitScratch {
  void* sums = nullptr;
  unsigned* arrivals = nullptr;
};

// On by default, since the INT8 kernel passed the GPU tests on an H100 (2026-12-06);
// DLAKIT_CUDA_IMPLICIT_GEMM=0 keeps every convolution on im2col + cuBLASLt, so that the device suite tests
// that path on every model too and the benchmarks time both.
bool implicit_gemm_enabled();

// The current device's multiprocessors (the launches size their grids by them).
int multiprocessors();

}  // namespace dlakit::gpu
