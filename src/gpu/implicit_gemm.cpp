// implicit_gemm.h: the tile choice and the switch.
#include "gpu/implicit_gemm.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "gpu/gpu_check.h"

namespace dlakit::gpu {

bool implicit_gemm_tile(const k::ConvGeom& g, int sms, MmaTile& tile) {
  const int64_t pixels = g.N * g.OH * g.OW;
  if (g.G != 1 || pixels < 1 || pixels > INT32_MAX - 256) return false;
  auto blocks = [&](int64_t rows, int64_t cols) {
    return (pixels + rows - 1) / rows * ((g.M + cols - 1) / cols);
  };
  if (g.M > 64 && blocks(128, 128) >= sms) {
    tile = MmaTile::k128x128;
  } else if (blocks(128, 64) >= sms) {
    tile = MmaTile::k128x64;
  } else if (blocks(64, 64) >= sms) {
    tile = MmaTile::k64x64;
  } else {
    return false;
  }
  return (g.M + 63) / 64 <= 65535;
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
