// Division of an index below 2^31 by a divisor fixed for a launch, as a multiply-high, an add and a shift
// (Granlund and Montgomery, "Division by invariant integers using multiplication", PLDI 1994, theorem 4.2
// with N = 32): a kernel's division by a runtime value is a long instruction sequence, and the index splits
// of the epilogue and im2col kernels do several per few values. Plain C++ that CUDA compiles too.
#pragma once
#include <cstdint>

#ifdef __CUDACC__
#define DLAKIT_FAST_DIVIDE_DEVICE __host__ __device__
#else
#define DLAKIT_FAST_DIVIDE_DEVICE
#endif

namespace dlakit::gpu {

struct FastDivide {
  uint32_t divisor = 1, magic = 0, shift = 0;

  FastDivide() = default;
  // 1 <= d < 2^31. shift = ceil(log2 d), magic = floor(2^32 (2^shift - d) / d) + 1.
  explicit FastDivide(uint32_t d) : divisor(d) {
    while ((uint64_t(1) << shift) < d) ++shift;
    magic = uint32_t((uint64_t(1) << 32) * ((uint64_t(1) << shift) - d) / d + 1);
  }

  // n / divisor for n < 2^31 (where the sum below cannot wrap).
  DLAKIT_FAST_DIVIDE_DEVICE uint32_t quotient(uint32_t n) const {
#ifdef __CUDA_ARCH__
    const uint32_t high = __umulhi(n, magic);
#else
    const uint32_t high = uint32_t((uint64_t(n) * magic) >> 32);
#endif
    return (high + n) >> shift;
  }
};

// An output pixel's index (n, oh, ow flattened, below 2^31) -> its coordinates.
struct PixelSplit {
  FastDivide width, height;  // OW, OH
  PixelSplit() = default;
  PixelSplit(int64_t OW, int64_t OH) : width(uint32_t(OW)), height(uint32_t(OH)) {}
  DLAKIT_FAST_DIVIDE_DEVICE void split(uint32_t p, int& n, int& oh, int& ow) const {
    const uint32_t row = width.quotient(p), image = height.quotient(row);
    ow = int(p - row * width.divisor), oh = int(row - image * height.divisor), n = int(image);
  }
};

}  // namespace dlakit::gpu
