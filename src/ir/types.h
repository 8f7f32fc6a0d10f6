// Element types and shapes of the IR.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlakit {

enum class DType : uint8_t { kF32, kF16, kI8, kU8, kI32, kI64, kBool };

using Shape = std::vector<int64_t>;

size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "f32", "f16", ...
std::optional<DType> dtype_from_name(const std::string& name);
bool is_float(DType t);

int64_t numel(const Shape& s);
std::string shape_str(const Shape& s);  // "1x3x224x224"; "scalar" for rank 0

struct TensorType {
  DType dtype = DType::kF32;
  Shape shape;
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
};
std::string type_str(const TensorType& t);  // "f32[1x3x224x224]"
size_t nbytes(const TensorType& t);         // dense storage size

}  // namespace dlakit

namespace dlakit {
// ONNX TensorProto.DataType codes <-> DType. Codes without a DType (double, int16, string, bfloat16...)
// give nullopt; onnx_dtype_name names them for error messages.
std::optional<DType> dtype_from_onnx(int32_t code);
int32_t onnx_code(DType t);
const char* onnx_dtype_name(int32_t code);
}  // namespace dlakit
