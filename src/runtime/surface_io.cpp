#include "runtime/surface_io.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "base/fp16.h"
#include "base/fp16_array.h"
#include "base/threadpool.h"
#include "numerics/quantize.h"

namespace dlakit::rt {
namespace {

// The atom formats are read and written here only with unpadded lines (pixel p of a plane at p atoms);
// others go through pack/unpack, which address every element.
bool chw(const TensorDesc& d) { return dense_atom_lines(d); }

void check(const Tensor& x, const TensorDesc& d, const char* what) {
  DLAKIT_CHECK(x.dtype() == DType::kF32 && x.shape() == d.network_shape, Status::kInvalidArgument, what,
               ": tensor ", type_str(x.type()), " does not match surface '", d.name, "' (f32[",
               shape_str(d.network_shape), "])");
  DLAKIT_CHECK(d.dtype != DType::kI8 || d.scale > 0, Status::kInvalidArgument, what, ": int8 surface '",
               d.name, "' has no scale");
}

}  // namespace

// The chw layouts keep each group of `atom` channels interleaved per pixel: [n][c / atom][h][w][atom].
// Both directions convert one pixel's atom at a time (F16C where the CPU has it) and run one
// (image, channel group) per task of the thread pool.
Tensor read_surface(const TensorDesc& d, const uint8_t* base) {
  if (!chw(d)) return unpack(base, d);
  DLAKIT_CHECK(d.dtype != DType::kI8 || d.scale > 0, Status::kInvalidArgument, "read: int8 surface '", d.name,
               "' has no scale");
  Tensor x = Tensor::uninitialized(DType::kF32, d.network_shape);
  const uint64_t atom = d.format == IoFormat::kChw16 ? 16 : 32, plane = d.h * d.w;
  const uint64_t groups = (d.c + atom - 1) / atom;
  float* out = x.data<float>();
  // Tasks are (image, channel group, span of pixels), so one image of one group (a network input) still
  // uses every thread.
  constexpr uint64_t kRun = 64, kSpan = 16 * kRun;
  const uint64_t spans = (plane + kSpan - 1) / kSpan;
  parallel_for(int64_t(d.n * groups * spans), [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const uint64_t n = uint64_t(task) / (groups * spans), g = uint64_t(task) / spans % groups;
      const uint64_t first = uint64_t(task) % spans * kSpan, last = std::min(plane, first + kSpan);
      const uint64_t c0 = g * atom, count = std::min(atom, d.c - c0);
      const uint8_t* src = base + n * d.stride[3] + g * d.stride[2];
      float* dst = out + (n * d.c + c0) * plane;
      if (d.dtype == DType::kI8) {
        // A block of pixels at a time, channel by channel: contiguous writes, reads inside a few KB.
        const uint64_t step = atom * d.stride[0];
        for (uint64_t p0 = first; p0 < last; p0 += kRun) {
          const uint64_t len = std::min(kRun, last - p0);
          for (uint64_t k = 0; k < count; ++k) {
            const int8_t* e = reinterpret_cast<const int8_t*>(src + p0 * step) + k;
            float* row = dst + k * plane + p0;
            for (uint64_t p = 0; p < len; ++p) row[p] = float(e[p * step]) * d.scale;
          }
        }
        continue;
      }
      // fp16: a block of pixels' whole atoms converted at once (F16C), then each channel's run written.
      uint16_t bits[kRun * 32];
      float block[kRun * 32];
      for (uint64_t p0 = first; p0 < last; p0 += kRun) {
        const uint64_t len = std::min(kRun, last - p0);
        std::memcpy(bits, src + p0 * atom * 2, len * atom * 2);
        halves_to_floats(bits, block, int64_t(len * atom));
        for (uint64_t k = 0; k < count; ++k)
          for (uint64_t p = 0; p < len; ++p) dst[k * plane + p0 + p] = block[p * atom + k];
      }
    }
  });
  return x;
}

void write_surface(const Tensor& x, const TensorDesc& d, uint8_t* base) {
  check(x, d, "write");
  if (!chw(d)) return pack(x, d, base);
  const uint64_t atom = d.format == IoFormat::kChw16 ? 16 : 32, plane = d.h * d.w;
  const uint64_t groups = (d.c + atom - 1) / atom;
  const float* in = x.data<float>();
  // Tasks as in read_surface: (image, channel group, span of pixels).
  constexpr uint64_t kRun = 64, kSpan = 16 * kRun;
  const uint64_t spans = (plane + kSpan - 1) / kSpan;
  parallel_for(int64_t(d.n * groups * spans), [&](int64_t begin, int64_t end) {
    float values[32] = {};  // channels past d.c stay zero: the padding of the last atom
    int8_t levels[32][kRun] = {};
    for (int64_t task = begin; task < end; ++task) {
      const uint64_t n = uint64_t(task) / (groups * spans), g = uint64_t(task) / spans % groups;
      const uint64_t first = uint64_t(task) % spans * kSpan, last = std::min(plane, first + kSpan);
      const uint64_t c0 = g * atom, count = std::min(atom, d.c - c0);
      uint8_t* dst = base + n * d.stride[3] + g * d.stride[2];
      const float* src = in + (n * d.c + c0) * plane;
      if (d.dtype == DType::kI8) {
        // Each channel's run of pixels quantized at once, then interleaved into the atoms.
        for (uint64_t p0 = first; p0 < last; p0 += kRun) {
          const uint64_t len = std::min(kRun, last - p0);
          for (uint64_t k = 0; k < count; ++k)
            quant::quantize_to_int8(src + k * plane + p0, levels[k], int64_t(len), d.scale,
                                    quant::Rounding::kHalfAwayFromZero);
          for (uint64_t p = 0; p < len; ++p) {
            int8_t* e = reinterpret_cast<int8_t*>(dst + (p0 + p) * atom * d.stride[0]);
            for (uint64_t k = 0; k < atom; ++k) e[k] = k < count ? levels[k][p] : int8_t(0);
          }
        }
        continue;
      }
      for (uint64_t k = count; k < atom; ++k) values[k] = 0.f;
      for (uint64_t p = first; p < last; ++p) {
        for (uint64_t k = 0; k < count; ++k) values[k] = src[k * plane + p];
        uint16_t bits[32];
        floats_to_halves(values, bits, int64_t(atom));
        std::memcpy(dst + p * atom * d.stride[0], bits, atom * 2);
      }
    }
  });
}

}  // namespace dlakit::rt
