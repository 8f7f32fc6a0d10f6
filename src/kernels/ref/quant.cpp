// QuantizeLinear / DequantizeLinear: per-tensor or per-axis scale and zero point, int8 or uint8.
// Quantization rounds half to even and saturates, as ONNX specifies.
#include <cmath>

#include "kernels/ref/common.h"

namespace dlakit::ref {
namespace {

// Index of the scale that applies to element i.
struct ScaleIndex {
  int64_t inner = 1, axis_len = 1;
  bool per_axis = false;
  int64_t operator()(int64_t i) const { return per_axis ? (i / inner) % axis_len : 0; }
};

ScaleIndex scale_index(const Node& n, const Shape& x, const Shape& scale) {
  ScaleIndex s;
  if (numel(scale) == 1 && scale.size() <= 1) return s;
  if (scale.size() != 1)
    fail(Status::kUnsupported, n.label(), ": scale of shape ", shape_str(scale),
         " (only per-tensor or 1-D per-axis)");
  const int64_t axis = normalize_axis(n, n.attr_int("axis", 1), int64_t(x.size()));
  if (x[size_t(axis)] != scale[0])
    fail(Status::kShapeError, n.label(), ": ", scale[0], " scales for axis ", axis, " of size ",
         x[size_t(axis)]);
  s.per_axis = true;
  s.axis_len = scale[0];
  for (size_t d = size_t(axis) + 1; d < x.size(); ++d) s.inner *= x[d];
  return s;
}

std::vector<TensorType> infer_quantize(const InferContext& c) {
  c.require_inputs(2, 3);
  DType zt = c.has(2) ? c.dtype(2) : DType::kU8;
  if (zt != DType::kU8 && zt != DType::kI8)
    c.unsupported("zero point dtype ", dtype_name(zt), " (int8 and uint8 only)");
  if (c.has(2) && c.shape(2) != c.shape(1))
    c.invalid("zero point shape ", shape_str(c.shape(2)), " differs from scale ", shape_str(c.shape(1)));
  scale_index(c.node(), c.shape(0), c.shape(1));
  return {{zt, c.shape(0)}};
}

void run_quantize(const KernelContext& c) {
  const Tensor &x = c.in(0), &scale = c.in(1);
  Tensor& y = c.out(0);
  const ScaleIndex si = scale_index(c.node(), x.shape(), scale.shape());
  const double lo = y.dtype() == DType::kI8 ? -128 : 0, hi = y.dtype() == DType::kI8 ? 127 : 255;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t k = si(i);
    const double zp = c.has(2) ? c.in(2).at_f64(k) : 0.0;
    double q =
        std::nearbyint(double(float(x.at_f64(i) / scale.at_f64(k)))) + zp;  // FE_TONEAREST: half to even
    store_f64(y, i, std::fmin(std::fmax(q, lo), hi));
  }
}

std::vector<TensorType> infer_dequantize(const InferContext& c) {
  c.require_inputs(2, 3);
  if (c.dtype(0) != DType::kU8 && c.dtype(0) != DType::kI8 && c.dtype(0) != DType::kI32)
    c.unsupported("input dtype ", dtype_name(c.dtype(0)));
  scale_index(c.node(), c.shape(0), c.shape(1));
  return {{DType::kF32, c.shape(0)}};
}

void run_dequantize(const KernelContext& c) {
  const Tensor &x = c.in(0), &scale = c.in(1);
  const ScaleIndex si = scale_index(c.node(), x.shape(), scale.shape());
  float* y = c.out(0).data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t k = si(i);
    const double zp = c.has(2) ? c.in(2).at_f64(k) : 0.0;
    y[i] = float((x.at_f64(i) - zp) * double(float(scale.at_f64(k))));
  }
}

}  // namespace
}  // namespace dlakit::ref

namespace dlakit {
extern const OpImpl kImpl_QuantizeLinear{ref::infer_quantize, ref::run_quantize};
extern const OpImpl kImpl_DequantizeLinear{ref::infer_dequantize, ref::run_dequantize};
}  // namespace dlakit
