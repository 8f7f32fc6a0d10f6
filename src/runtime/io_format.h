// DLA I/O tensor formats and their memory layouts (dla-constraints.md §2), the cuDLA tensor descriptor
// for each, and conversion between NCHW float32 and a descriptor's buffer (the only model-specific code
// a cuDLA user writes by hand today).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace dlakit::rt {

enum class IoFormat { kDlaLinear, kChw16, kChw32, kDlaHwc4 };
const char* io_format_name(IoFormat f);

struct IoSpec {
  DType dtype = DType::kF16;  // kF16 or kI8
  IoFormat format = IoFormat::kChw16;
};
// trtexec's --inputIOFormats/--outputIOFormats: "fp16:chw16,int8:dla_hwc4" (one per tensor, or one for all).
std::vector<IoSpec> parse_io_formats(const std::string& spec, size_t count, bool inputs);

// Every field of cudlaModuleTensorDescriptor plus the format. Strides are bytes (docs/runtime.md):
// stride[0] element, stride[1] line (one row of W), stride[2] surface (one channel plane or C-group),
// stride[3] image (one batch item); stride[4..7] are 0.
struct TensorDesc {
  std::string name;
  uint64_t size = 0, n = 1, c = 1, h = 1, w = 1;
  uint8_t data_format = 0, data_type = 0, data_category = 0, pixel_format = 0, pixel_mapping = 0;
  std::array<uint32_t, 8> stride{};
  IoFormat format = IoFormat::kDlaLinear;
  DType dtype = DType::kF16;
  Shape network_shape;  // the network tensor's shape (rank <= 4), for unpacking
  // int8 tensors: the quantization scale (the loadable's activation scale of this tensor, amax / 127);
  // element value = q * scale. 0 for fp16 tensors.
  float scale = 0;
};

// Descriptor of a network tensor in a format; `line_align` is 64 bytes on Orin, 32 on Xavier.
TensorDesc make_desc(const std::string& name, const Shape& shape, const IoSpec& spec, int line_align);

// A descriptor another library reported through cuDLA (only the cudlaModuleTensorDescriptor fields set):
// fills format and dtype from the data format and type codes (the inverse of make_desc; that TensorRT
// uses the same codes is an assumption [U], cudla-api.md §6.1), network_shape = [n, c, h, w], and checks
// that the strides lay the tensor out inside `size` bytes without overlap, so pack/unpack stay in bounds.
// Throws kUnsupported for a format dlakit cannot pack, naming the tensor and its codes.
TensorDesc adopt_cudla_desc(TensorDesc d);

// chw16/chw32 with lines of exactly w atoms (every dlakit descriptor; the surface reader and writer
// address pixels that way).
bool dense_atom_lines(const TensorDesc& d);

// NCHW float32 (the network's shape) -> descriptor buffer; padding zeroed. fp16: rounded to nearest even;
// int8: q = clamp(round(x / scale), -128, 127), ties away from zero (the DLA's rounding).
void pack(const Tensor& nchw, const TensorDesc& d, void* buffer);
// Descriptor buffer -> NCHW float32 of the network's shape (int8: q * scale).
Tensor unpack(const void* buffer, const TensorDesc& d);

}  // namespace dlakit::rt
