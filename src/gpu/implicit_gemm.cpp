// implicit_gemm.h: the tile choice and the switch.
#include "gpu/implicit_gemm.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "gpu/gpu_check.h"

namespace dlakit::gpu {

namespace {

struct TileSize {
  int64_t rows, cols;
};
TileSize size_of(MmaTile tile) {
  const TileWarps w = tile_warps(tile);
  return {int64_t(w.m) * kWarpTileRows, int64_t(w.n) * kWarpTileCols};
}

int64_t tiles_of(const k::ConvGeom& g, MmaTile tile) {
  const TileSize t = size_of(tile);
  return (g.N * g.OH * g.OW + t.rows - 1) / t.rows * ((g.M + t.cols - 1) / t.cols);
}

}  // namespace

bool implicit_gemm_tile(const k::ConvGeom& g, int sms, MmaTile& tile) {
  const int64_t pixels = g.N * g.OH * g.OW;
  if (g.G != 1 || pixels < 1 || pixels > INT32_MAX - 256) return false;
  if (g.M > 64 && tiles_of(g, MmaTile::k128x128) >= sms) {
    tile = MmaTile::k128x128;
  } else if (tiles_of(g, MmaTile::k128x64) >= sms) {
    tile = MmaTile::k128x64;
  } else if (tiles_of(g, MmaTile::k64x64) >= sms) {
    tile = MmaTile::k64x64;
  } else {
    return false;
  }
  return (g.M + 63) / 64 <= 65535;
}

bool implicit_gemm_shape(const k::ConvGeom& g, int64_t stages, int sms, MmaShape& shape) {
  shape.splits = 1;
  if (!implicit_gemm_tile(g, sms, shape.tile)) return false;
  const MmaTile largest = g.M > 64 ? MmaTile::k128x128 : MmaTile::k128x64;
  if (shape.tile == largest) return true;  // blocks for every multiprocessor already
  const TileWarps w = tile_warps(largest);
  const int64_t blocks = sms * 16 / (w.m * w.n);
  const int64_t splits = std::min(blocks / tiles_of(g, largest), stages / kMinSplitStages);
  if (splits >= 2) shape = {largest, int(splits)};
  return true;
}

size_t split_sums_bytes(const k::ConvGeom& g, const MmaShape& shape) {
  if (shape.splits < 2) return 0;
  const TileSize t = size_of(shape.tile);
  return size_t(split_arrivals(g, shape) * shape.splits * t.rows * t.cols) * 4;
}

int64_t split_arrivals(const k::ConvGeom& g, const MmaShape& shape) {
  return shape.splits < 2 ? 0 : tiles_of(g, shape.tile);
}

bool implicit_gemm_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("DLAKIT_CUDA_IMPLICIT_GEMM");
    return !(v && std::string(v) == "0");
  }();
  return on;
}

int multiprocessors() {
  int device = 0, sms = 1;
  DLAKIT_CUDA(cudaGetDevice(&device));
  DLAKIT_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

}  // namespace dlakit::gpu
