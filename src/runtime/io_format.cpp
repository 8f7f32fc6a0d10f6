#include "runtime/io_format.h"

#include <cstring>
#include <sstream>

#include "base/error.h"
#include "base/fp16.h"
#include "numerics/quantize.h"
#include "runtime/surface_io.h"

namespace dlakit::rt {
namespace {

// cuDLA descriptor codes (the values of cudla.h's macros).
constexpr uint8_t kFmtNCHW = 1, kFmtNHWC = 2, kFmtNCxHWx = 3;
constexpr uint8_t kTypeHalf = 2, kTypeInt8 = 4;
constexpr uint8_t kCatImage = 0, kCatFeature = 2;
constexpr uint8_t kPixR8 = 0, kPixR16F = 5, kPixA16B16G16R16F = 8, kPixR8G8B8A8 = 15, kPixFeature = 36;

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Byte offset of element (n, c, h, w) in the buffer.
uint64_t offset(const TensorDesc& d, uint64_t n, uint64_t c, uint64_t h, uint64_t w) {
  const uint64_t es = d.stride[0];
  switch (d.format) {
    case IoFormat::kDlaLinear:
      return n * d.stride[3] + c * d.stride[2] + h * d.stride[1] + w * es;
    case IoFormat::kChw16:
    case IoFormat::kChw32: {
      const uint64_t v = d.format == IoFormat::kChw16 ? 16 : 32;
      return n * d.stride[3] + (c / v) * d.stride[2] + h * d.stride[1] + (w * v + c % v) * es;
    }
    case IoFormat::kDlaHwc4: {
      const uint64_t cp = d.c == 1 ? 1 : 4;
      return n * d.stride[3] + h * d.stride[1] + (w * cp + c) * es;
    }
  }
  return 0;
}

}  // namespace

const char* io_format_name(IoFormat f) {
  switch (f) {
    case IoFormat::kDlaLinear:
      return "dla_linear";
    case IoFormat::kChw16:
      return "chw16";
    case IoFormat::kChw32:
      return "chw32";
    case IoFormat::kDlaHwc4:
      return "dla_hwc4";
  }
  return "?";
}

std::vector<IoSpec> parse_io_formats(const std::string& spec, size_t count, bool inputs) {
  std::vector<IoSpec> out;
  const char* flag = inputs ? "--inputIOFormats" : "--outputIOFormats";
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const size_t c = item.find(':');
    if (c == std::string::npos)
      fail(Status::kInvalidArgument, flag, " entry '", item, "' should be type:format, e.g. fp16:chw16");
    const std::string type = item.substr(0, c), fmt = item.substr(c + 1);
    IoSpec s;
    if (type == "fp16")
      s.dtype = DType::kF16;
    else if (type == "int8")
      s.dtype = DType::kI8;
    else
      fail(Status::kInvalidArgument, flag, " type '", type, "': DLA I/O is fp16 or int8");
    if (fmt == "dla_linear" || fmt == "chw")
      s.format = IoFormat::kDlaLinear;
    else if (fmt == "chw16")
      s.format = IoFormat::kChw16;
    else if (fmt == "chw32")
      s.format = IoFormat::kChw32;
    else if (fmt == "dla_hwc4" || fmt == "chw4")
      s.format = IoFormat::kDlaHwc4;
    else
      fail(Status::kInvalidArgument, flag, " format '", fmt,
           "' (DLA formats: dla_linear, chw16, chw32, dla_hwc4)");
    if (s.format == IoFormat::kChw16 && s.dtype != DType::kF16)
      fail(Status::kInvalidArgument, flag, " '", item, "': chw16 is the fp16 format (int8 uses chw32)");
    if (s.format == IoFormat::kChw32 && s.dtype != DType::kI8)
      fail(Status::kInvalidArgument, flag, " '", item, "': chw32 is the int8 format (fp16 uses chw16)");
    if (s.format == IoFormat::kDlaHwc4 && !inputs)
      fail(Status::kInvalidArgument, flag, " '", item, "': dla_hwc4 is an input-only format");
    out.push_back(s);
  }
  if (out.empty()) out.push_back({DType::kF16, IoFormat::kChw16});
  if (out.size() == 1) out.resize(count, out[0]);
  if (out.size() != count)
    fail(Status::kInvalidArgument, flag, " gives ", out.size(), " formats for ", count,
         " tensors (give one, or one per tensor)");
  return out;
}

TensorDesc make_desc(const std::string& name, const Shape& shape, const IoSpec& spec, int line_align) {
  if (shape.size() > 4 || shape.empty())
    fail(Status::kShapeError, "tensor '", name, "' of shape ", shape_str(shape),
         ": DLA I/O tensors have rank 1..4");
  if (name.size() > 80)
    fail(Status::kInvalidArgument, "tensor name '", name.substr(0, 40), "...' is ", name.size(),
         " characters; cuDLA allows 80");
  TensorDesc d;
  d.name = name;
  d.format = spec.format;
  d.dtype = spec.dtype;
  d.network_shape = shape;
  Shape s = shape;
  s.resize(4, 1);  // [N,C] -> [N,C,1,1]: trailing dims of 1 keep the element order
  d.n = uint64_t(s[0]);
  d.c = uint64_t(s[1]);
  d.h = uint64_t(s[2]);
  d.w = uint64_t(s[3]);
  const uint64_t es = spec.dtype == DType::kF16 ? 2 : 1;
  d.data_type = spec.dtype == DType::kF16 ? kTypeHalf : kTypeInt8;
  d.data_category = kCatFeature;
  d.pixel_format = kPixFeature;
  d.pixel_mapping = 0;  // pitch linear
  d.stride[0] = uint32_t(es);
  switch (spec.format) {
    case IoFormat::kDlaLinear: {
      d.data_format = kFmtNCHW;
      d.stride[1] = uint32_t(round_up(d.w * es, uint64_t(line_align)));
      d.stride[2] = uint32_t(d.stride[1] * d.h);
      d.stride[3] = uint32_t(uint64_t(d.stride[2]) * d.c);
      break;
    }
    case IoFormat::kChw16:
    case IoFormat::kChw32: {
      const uint64_t v = spec.format == IoFormat::kChw16 ? 16 : 32;
      d.data_format = kFmtNCxHWx;
      d.stride[1] = uint32_t(d.w * v * es);  // 32-byte atoms per pixel: naturally aligned
      d.stride[2] = uint32_t(uint64_t(d.stride[1]) * d.h);
      d.stride[3] = uint32_t(uint64_t(d.stride[2]) * ((d.c + v - 1) / v));
      break;
    }
    case IoFormat::kDlaHwc4: {
      if (d.c != 1 && d.c != 3 && d.c != 4)
        fail(Status::kInvalidArgument, "dla_hwc4 input '", name, "' has ", d.c,
             " channels; the format takes 1, 3 or 4");
      const uint64_t cp = d.c == 1 ? 1 : 4;
      d.data_format = kFmtNHWC;
      d.data_category = kCatImage;
      d.pixel_format = spec.dtype == DType::kF16 ? (cp == 1 ? kPixR16F : kPixA16B16G16R16F)
                                                 : (cp == 1 ? kPixR8 : kPixR8G8B8A8);
      d.stride[1] = uint32_t(round_up(d.w * cp * es, uint64_t(line_align)));
      d.stride[2] = uint32_t(uint64_t(d.stride[1]) * d.h);
      d.stride[3] = d.stride[2];
      break;
    }
  }
  d.size = d.n * d.stride[3];
  if (d.size > (uint64_t(1) << 32))
    fail(Status::kShapeError, "tensor '", name, "' needs ", d.size, " bytes; DLA buffers are < 4 GiB");
  return d;
}

TensorDesc adopt_cudla_desc(TensorDesc d) {
  const bool half = d.data_type == kTypeHalf, int8 = d.data_type == kTypeInt8;
  if (!half && !int8)
    fail(Status::kUnsupported, "tensor '", d.name, "': cuDLA data type ", int(d.data_type),
         " (DLA I/O is fp16 = 2 or int8 = 4)");
  d.dtype = half ? DType::kF16 : DType::kI8;
  if (d.data_format == kFmtNCHW)
    d.format = IoFormat::kDlaLinear;
  else if (d.data_format == kFmtNCxHWx)
    d.format = half ? IoFormat::kChw16 : IoFormat::kChw32;
  else if (d.data_format == kFmtNHWC && d.data_category == kCatImage)
    d.format = IoFormat::kDlaHwc4;
  else
    fail(Status::kUnsupported, "tensor '", d.name, "': cuDLA data format ", int(d.data_format), ", category ",
         int(d.data_category), " is not one dlakit can pack (NCHW, NCxHWx, or NHWC images)");
  const uint64_t es = half ? 2 : 1, lanes = d.format == IoFormat::kChw16                 ? 16
                                            : d.format == IoFormat::kChw32               ? 32
                                            : d.format == IoFormat::kDlaHwc4 && d.c != 1 ? 4
                                                                                         : 1;
  const uint64_t planes = d.format == IoFormat::kDlaLinear ? d.c
                          : d.format == IoFormat::kDlaHwc4 ? 1
                                                           : (d.c + lanes - 1) / lanes;
  auto bad = [&](const char* why) {
    fail(Status::kUnsupported, "tensor '", d.name, "' (", io_format_name(d.format), ", n", d.n, " c", d.c,
         " h", d.h, " w", d.w, ", strides ", d.stride[0], "/", d.stride[1], "/", d.stride[2], "/",
         d.stride[3], ", ", d.size, " bytes): ", why);
  };
  if (d.n == 0 || d.c == 0 || d.h == 0 || d.w == 0 || d.n * d.c * d.h * d.w > (uint64_t(1) << 32))
    bad("dimensions out of range");
  if (d.format == IoFormat::kDlaHwc4 && d.c > 4) bad("dla_hwc4 holds at most 4 channels");
  // Each stride covers the extent below it, and the last image ends inside the buffer: no overlap, and
  // every offset pack/unpack compute is below `size`.
  if (d.stride[0] != es || uint64_t(d.stride[1]) < d.w * lanes * es ||
      uint64_t(d.stride[2]) < (d.format == IoFormat::kDlaHwc4 ? 0 : uint64_t(d.stride[1]) * d.h) ||
      uint64_t(d.stride[3]) <
          (d.format == IoFormat::kDlaHwc4 ? uint64_t(d.stride[1]) * d.h : uint64_t(d.stride[2]) * planes) ||
      d.n * uint64_t(d.stride[3]) > d.size)
    bad("the strides do not lay the tensor out inside the buffer");
  d.network_shape = {int64_t(d.n), int64_t(d.c), int64_t(d.h), int64_t(d.w)};
  return d;
}

bool dense_atom_lines(const TensorDesc& d) {
  if (d.format != IoFormat::kChw16 && d.format != IoFormat::kChw32) return false;
  const uint64_t atom = d.format == IoFormat::kChw16 ? 16 : 32;
  return d.stride[0] == dtype_size(d.dtype) && d.stride[1] == d.w * atom * d.stride[0];
}

void pack(const Tensor& x, const TensorDesc& d, void* buffer) {
  DLAKIT_CHECK(x.dtype() == DType::kF32 && x.shape() == d.network_shape, Status::kInvalidArgument,
               "pack: tensor ", type_str(x.type()), " does not match descriptor '", d.name, "' (f32[",
               shape_str(d.network_shape), "])");
  const bool i8 = d.dtype == DType::kI8;
  DLAKIT_CHECK(!i8 || d.scale > 0, Status::kInvalidArgument, "pack: int8 tensor '", d.name,
               "' has no quantization scale (", d.scale, "); it comes from the INT8 loadable's calibration");
  uint8_t* b = static_cast<uint8_t*>(buffer);
  std::memset(b, 0, d.size);
  // The DLA's channel-atom formats with unpadded lines (dlakit's own) have a vectorised, threaded writer
  // with the same rounding; a descriptor another library reported may pad its lines.
  if (dense_atom_lines(d)) return write_surface(x, d, b);
  const float* p = x.data<float>();
  for (uint64_t n = 0; n < d.n; ++n)
    for (uint64_t c = 0; c < d.c; ++c)
      for (uint64_t h = 0; h < d.h; ++h)
        for (uint64_t w = 0; w < d.w; ++w) {
          uint8_t* dst = b + offset(d, n, c, h, w);
          if (i8) {
            *reinterpret_cast<int8_t*>(dst) =
                quant::quantize(*p++, d.scale, quant::Rounding::kHalfAwayFromZero);
          } else {
            const uint16_t v = float_to_half(*p++);
            std::memcpy(dst, &v, 2);
          }
        }
}

Tensor unpack(const void* buffer, const TensorDesc& d) {
  const bool i8 = d.dtype == DType::kI8;
  DLAKIT_CHECK(!i8 || d.scale > 0, Status::kInvalidArgument, "unpack: int8 tensor '", d.name,
               "' has no quantization scale (", d.scale, ")");
  const uint8_t* b = static_cast<const uint8_t*>(buffer);
  if (dense_atom_lines(d)) return read_surface(d, b);
  Tensor x(DType::kF32, d.network_shape);
  float* p = x.data<float>();
  for (uint64_t n = 0; n < d.n; ++n)
    for (uint64_t c = 0; c < d.c; ++c)
      for (uint64_t h = 0; h < d.h; ++h)
        for (uint64_t w = 0; w < d.w; ++w) {
          const uint8_t* src = b + offset(d, n, c, h, w);
          if (i8) {
            *p++ = float(*reinterpret_cast<const int8_t*>(src)) * d.scale;
          } else {
            uint16_t v;
            std::memcpy(&v, src, 2);
            *p++ = half_to_float(v);
          }
        }
  return x;
}

}  // namespace dlakit::rt
