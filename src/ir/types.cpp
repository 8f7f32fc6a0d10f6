#include "ir/types.h"

#include "base/checked.h"
#include "base/error.h"

namespace dlakit {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF16:
      return 2;
    case DType::kI8:
    case DType::kU8:
    case DType::kBool:
      return 1;
    case DType::kI64:
      return 8;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kI8:
      return "i8";
    case DType::kU8:
      return "u8";
    case DType::kI32:
      return "i32";
    case DType::kI64:
      return "i64";
    case DType::kBool:
      return "bool";
  }
  return "?";
}

std::optional<DType> dtype_from_name(const std::string& n) {
  for (DType t : {DType::kF32, DType::kF16, DType::kI8, DType::kU8, DType::kI32, DType::kI64, DType::kBool})
    if (n == dtype_name(t)) return t;
  return std::nullopt;
}

bool is_float(DType t) { return t == DType::kF32 || t == DType::kF16; }

int64_t numel(const Shape& s) { return checked_numel(s, kMaxElements, "tensor"); }

size_t nbytes(const TensorType& t) { return size_t(numel(t.shape)) * dtype_size(t.dtype); }

std::string shape_str(const Shape& s) {
  if (s.empty()) return "scalar";
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "x" : "") + std::to_string(s[i]);
  return r;
}

std::string type_str(const TensorType& t) { return cat(dtype_name(t.dtype), "[", shape_str(t.shape), "]"); }

}  // namespace dlakit

namespace dlakit {

std::optional<DType> dtype_from_onnx(int32_t code) {
  switch (code) {
    case 1:
      return DType::kF32;
    case 2:
      return DType::kU8;
    case 3:
      return DType::kI8;
    case 6:
      return DType::kI32;
    case 7:
      return DType::kI64;
    case 9:
      return DType::kBool;
    case 10:
      return DType::kF16;
    default:
      return std::nullopt;
  }
}

int32_t onnx_code(DType t) {
  switch (t) {
    case DType::kF32:
      return 1;
    case DType::kU8:
      return 2;
    case DType::kI8:
      return 3;
    case DType::kI32:
      return 6;
    case DType::kI64:
      return 7;
    case DType::kBool:
      return 9;
    case DType::kF16:
      return 10;
  }
  return 0;
}

const char* onnx_dtype_name(int32_t code) {
  static const char* names[] = {"UNDEFINED", "FLOAT",  "UINT8",     "INT8",       "UINT16",  "INT16",
                                "INT32",     "INT64",  "STRING",    "BOOL",       "FLOAT16", "DOUBLE",
                                "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
  return code >= 0 && code <= 16 ? names[code] : "UNKNOWN";
}

}  // namespace dlakit
