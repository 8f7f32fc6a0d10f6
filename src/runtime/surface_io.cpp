#include "runtime/surface_io.h"

#include <cstring>

#include "base/error.h"
#include "base/fp16.h"
#include "numerics/quantize.h"

namespace dlakit::rt {
namespace {

bool chw(const TensorDesc& d) { return d.format == IoFormat::kChw16 || d.format == IoFormat::kChw32; }

void check(const Tensor& x, const TensorDesc& d, const char* what) {
  DLAKIT_CHECK(x.dtype() == DType::kF32 && x.shape() == d.network_shape, Status::kInvalidArgument, what,
               ": tensor ", type_str(x.type()), " does not match surface '", d.name, "' (f32[",
               shape_str(d.network_shape), "])");
  DLAKIT_CHECK(d.dtype != DType::kI8 || d.scale > 0, Status::kInvalidArgument, what, ": int8 surface '",
               d.name, "' has no scale");
}

}  // namespace

Tensor read_surface(const TensorDesc& d, const uint8_t* base) {
  if (!chw(d)) return unpack(base, d);
  DLAKIT_CHECK(d.dtype != DType::kI8 || d.scale > 0, Status::kInvalidArgument, "read: int8 surface '", d.name,
               "' has no scale");
  Tensor x = Tensor::uninitialized(DType::kF32, d.network_shape);
  const uint64_t atom = d.format == IoFormat::kChw16 ? 16 : 32, plane = d.h * d.w;
  float* out = x.data<float>();
  for (uint64_t n = 0; n < d.n; ++n)
    for (uint64_t c = 0; c < d.c; ++c) {
      const uint8_t* src = base + n * d.stride[3] + (c / atom) * d.stride[2] + (c % atom) * d.stride[0];
      float* dst = out + (n * d.c + c) * plane;
      for (uint64_t p = 0; p < plane; ++p) {
        const uint8_t* e = src + p * atom * d.stride[0];
        if (d.dtype == DType::kI8) {
          dst[p] = float(*reinterpret_cast<const int8_t*>(e)) * d.scale;
        } else {
          uint16_t h;
          std::memcpy(&h, e, 2);
          dst[p] = half_to_float(h);
        }
      }
    }
  return x;
}

void write_surface(const Tensor& x, const TensorDesc& d, uint8_t* base) {
  check(x, d, "write");
  if (!chw(d)) return pack(x, d, base);
  const uint64_t atom = d.format == IoFormat::kChw16 ? 16 : 32, plane = d.h * d.w, es = d.stride[0];
  const float* in = x.data<float>();
  const uint64_t padded = (d.c + atom - 1) / atom * atom;
  for (uint64_t n = 0; n < d.n; ++n)
    for (uint64_t c = 0; c < padded; ++c) {
      uint8_t* dst = base + n * d.stride[3] + (c / atom) * d.stride[2] + (c % atom) * es;
      const float* src = c < d.c ? in + (n * d.c + c) * plane : nullptr;
      for (uint64_t p = 0; p < plane; ++p) {
        uint8_t* e = dst + p * atom * es;
        const float v = src ? src[p] : 0.f;
        if (d.dtype == DType::kI8) {
          *reinterpret_cast<int8_t*>(e) = quant::quantize(v, d.scale, quant::Rounding::kHalfAwayFromZero);
        } else {
          const uint16_t h = float_to_half(v);
          std::memcpy(e, &h, 2);
        }
      }
    }
}

}  // namespace dlakit::rt
