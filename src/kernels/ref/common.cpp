#include "kernels/ref/common.h"

#include <algorithm>
#include <limits>

namespace dlakit::ref {

int64_t normalize_axis(const Node& n, int64_t axis, int64_t rank, const char* what) {
  if (rank <= 0)
    fail(Status::kShapeError, n.label(), ": ", what, " ", axis, " given for a scalar input (rank 0)");
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    fail(Status::kShapeError, n.label(), ": ", what, " ", axis, " is out of range for rank ", rank,
         " (valid ", -rank, "..", rank - 1, ")");
  return a;
}

Shape broadcast_shapes(const Node& n, const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (auto& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (auto& s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[rank - s.size() + i];
      int64_t d = s[i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::string all;
      for (auto& t : shapes) all += (all.empty() ? "" : ", ") + shape_str(t);
      fail(Status::kShapeError, n.label(), ": shapes ", all, " cannot be broadcast (dimension ", d, " vs ", o,
           ")");
    }
  }
  return out;
}

std::vector<int64_t> row_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  auto rs = row_strides(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) st[off + i] = in[i] == 1 ? 0 : rs[i];
  return st;
}

void store_f64(Tensor& t, int64_t i, double v) {
  switch (t.dtype()) {
    case DType::kF32:
      t.data<float>()[i] = float(v);
      break;
    case DType::kF16:
      t.data<uint16_t>()[i] = float_to_half(float(v));
      break;
    case DType::kI8:
      t.data<int8_t>()[i] = saturate_cast<int8_t>(v);
      break;
    case DType::kU8:
      t.data<uint8_t>()[i] = saturate_cast<uint8_t>(v);
      break;
    case DType::kBool:
      t.data<uint8_t>()[i] = v != 0;
      break;
    case DType::kI32:
      t.data<int32_t>()[i] = saturate_cast<int32_t>(v);
      break;
    case DType::kI64:
      t.data<int64_t>()[i] = saturate_cast<int64_t>(v);
      break;
  }
}

AxisSplit split_at(const Shape& s, int64_t axis) {
  AxisSplit r;
  for (int64_t i = 0; i < int64_t(s.size()); ++i) {
    if (i < axis)
      r.outer *= s[size_t(i)];
    else if (i == axis)
      r.axis = s[size_t(i)];
    else
      r.inner *= s[size_t(i)];
  }
  return r;
}

}  // namespace dlakit::ref
