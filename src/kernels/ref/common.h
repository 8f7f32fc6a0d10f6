// Helpers shared by the reference kernels: axes, broadcasting, dtype dispatch.
#pragma once
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "base/fp16.h"
#include "base/threadpool.h"
#include "kernels/registry.h"

namespace dlakit::ref {

// Maps a possibly negative axis into [0, rank); an error names the node and the valid range.
int64_t normalize_axis(const Node& n, int64_t axis, int64_t rank, const char* what = "axis");

// NumPy broadcasting of two or more shapes; an error names both shapes.
Shape broadcast_shapes(const Node& n, const std::vector<Shape>& shapes);

// Row-major strides of `in` seen through broadcasting to `out` (0 where broadcast).
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

std::vector<int64_t> row_strides(const Shape& s);

// Calls f(out_index, in_offsets[...]) for the elements [begin, end) of `out`, walking inner-most dim fastest.
template <typename F>
void walk_broadcast(const Shape& out, const std::vector<std::vector<int64_t>>& strides, int64_t begin,
                    int64_t end, F&& f) {
  if (begin >= end) return;  // also: an empty shape has a zero extent to divide by below
  const size_t rank = out.size(), k = strides.size();
  std::vector<int64_t> idx(rank, 0), off(k, 0);
  for (int64_t rest = begin, d = int64_t(rank) - 1; d >= 0; --d) {
    idx[size_t(d)] = rest % out[size_t(d)];
    rest /= out[size_t(d)];
    for (size_t j = 0; j < k; ++j) off[j] += idx[size_t(d)] * strides[j][size_t(d)];
  }
  for (int64_t i = begin; i < end; ++i) {
    f(i, off);
    for (size_t d = rank; d-- > 0;) {
      ++idx[d];
      for (size_t j = 0; j < k; ++j) off[j] += strides[j][d];
      if (idx[d] < out[d]) break;
      for (size_t j = 0; j < k; ++j) off[j] -= strides[j][d] * out[d];
      idx[d] = 0;
    }
  }
}

// Calls f(out_index, in_offsets[...]) for every element of `out`, walking inner-most dim fastest.
template <typename F>
void for_each_broadcast(const Shape& out, const std::vector<std::vector<int64_t>>& strides, F&& f) {
  walk_broadcast(out, strides, 0, numel(out), f);
}

// for_each_broadcast over the thread pool, in chunks of at least min_chunk elements; f must only write
// what its own index owns.
template <typename F>
void parallel_for_each_broadcast(const Shape& out, const std::vector<std::vector<int64_t>>& strides,
                                 int64_t min_chunk, F&& f) {
  parallel_for(
      numel(out), [&](int64_t begin, int64_t end) { walk_broadcast(out, strides, begin, end, f); },
      min_chunk);
}

// Dispatches on a numeric dtype. f16 is not dispatched: kernels convert it through float.
#define DLAKIT_DISPATCH_NUMERIC(dtype, T, ...)                                           \
  switch (dtype) {                                                                       \
    case DType::kF32: {                                                                  \
      using T = float;                                                                   \
      __VA_ARGS__;                                                                       \
      break;                                                                             \
    }                                                                                    \
    case DType::kI8: {                                                                   \
      using T = int8_t;                                                                  \
      __VA_ARGS__;                                                                       \
      break;                                                                             \
    }                                                                                    \
    case DType::kU8: {                                                                   \
      using T = uint8_t;                                                                 \
      __VA_ARGS__;                                                                       \
      break;                                                                             \
    }                                                                                    \
    case DType::kBool: {                                                                 \
      using T = uint8_t;                                                                 \
      __VA_ARGS__;                                                                       \
      break;                                                                             \
    }                                                                                    \
    case DType::kI32: {                                                                  \
      using T = int32_t;                                                                 \
      __VA_ARGS__;                                                                       \
      break;                                                                             \
    }                                                                                    \
    case DType::kI64: {                                                                  \
      using T = int64_t;                                                                 \
      __VA_ARGS__;                                                                       \
      break;                                                                             \
    }                                                                                    \
    default:                                                                             \
      fail(Status::kUnsupported, "dtype ", dtype_name(dtype), " is not supported here"); \
  }

// A float-valued view of any tensor, converting f16 (and ints) on the fly.
inline float load_f(const Tensor& t, int64_t i) {
  if (t.dtype() == DType::kF32) return t.data<float>()[i];
  return float(t.at_f64(i));
}

// Converts a double to T with saturation (never UB for out-of-range or NaN values).
template <typename T>
T saturate_cast(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return T(v);
  } else {
    if (v != v) return T(0);
    if (v <= double(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    if (v >= double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return T(v);
  }
}

// Stores a double into element i of t (f16 rounded to nearest even, ints saturated).
void store_f64(Tensor& t, int64_t i, double v);

// The element count of one "row" when a tensor is viewed as [outer, axis, inner].
struct AxisSplit {
  int64_t outer = 1, axis = 1, inner = 1;
};
AxisSplit split_at(const Shape& s, int64_t axis);

}  // namespace dlakit::ref
