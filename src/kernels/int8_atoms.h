// SDP and PDP operations on int8 levels in the DLA's chw32 feature layout, computing exactly what the
// float emulation computes (a surface read dequantizes a level to float(level) * scale; a write quantizes
// with quant::quantize, ties away from zero) without converting whole surfaces to float and back:
// the residual Add (+ ReLU) of two int8 surfaces, and MaxPool.
#pragma once
#include <cstdint>

namespace dlakit {

// An int8 chw32 surface: element (n, c, h, w) at data + n*batch + (c / 32)*group + h*line + w*32 + c % 32.
struct Int8Atoms {
  int8_t* data = nullptr;
  int64_t batch = 0, group = 0, line = 0;
  float scale = 0;
  int8_t* at(int64_t n, int64_t c, int64_t h, int64_t w) const {
    return data + n * batch + (c / 32) * group + h * line + w * 32 + c % 32;
  }
  // Whether every line starts `bytes`-aligned (a power of two): the vector widths kernels may read it in.
  bool lines_aligned(uint64_t bytes) const {
    return (reinterpret_cast<uintptr_t>(data) | uint64_t(batch) | uint64_t(group) | uint64_t(line)) % bytes ==
           0;
  }
};

// y = quantize(act(float(a) * a.scale + float(b) * b.scale), y.scale) over N x C x H x W, act = ReLU or
// none; y's padding channels (C to the next multiple of 32) are zeroed, line tails are not written.
void add_int8_atoms(int64_t N, int64_t C, int64_t H, int64_t W, const Int8Atoms& a, const Int8Atoms& b,
                    bool relu, const Int8Atoms& y);

// MaxPool over KH x KW windows (strides sh, sw; leading padding pt, pl; padded positions ignored) of an
// N x C x H x W input into OH x OW: y = quantize(float(max level) * x.scale, y.scale), which is the float
// emulation's quantize(max(float(level) * x.scale)) since multiplying by a positive scale keeps the order.
// Every window must hold an input position. keep_levels: quant::same_levels(x.scale, y.scale), decided by
// the caller once (the maximum level is then stored as it is).
struct PoolWindow {
  int64_t KH = 1, KW = 1, sh = 1, sw = 1, pt = 0, pl = 0, OH = 0, OW = 0;
};
void max_pool_int8_atoms(int64_t N, int64_t C, int64_t H, int64_t W, const PoolWindow& p, const Int8Atoms& x,
                         bool keep_levels, const Int8Atoms& y);

// Both run on the kernel kernels/int8_kernel.h selects (AVX-512, AVX2 or the plain loops).

}  // namespace dlakit
