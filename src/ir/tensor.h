// A dense, row-major tensor with shared, 64-byte aligned storage. Copies share data; clone() copies.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "base/error.h"
#include "ir/types.h"

namespace dlakit {

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, Shape shape);  // zero-filled
  // Uninitialised storage, for outputs a kernel overwrites completely.
  static Tensor uninitialized(DType dtype, Shape shape);
  static Tensor scalar_f32(float v);
  static Tensor from_f32(const Shape& shape, const std::vector<float>& v);
  static Tensor from_i64(const Shape& shape, const std::vector<int64_t>& v);

  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  const TensorType& type() const { return type_; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return size_t(numel_) * dtype_size(type_.dtype); }
  int rank() const { return int(type_.shape.size()); }
  int64_t dim(int i) const { return type_.shape[size_t(i)]; }
  bool empty() const { return !data_; }
  // No other Tensor shares this storage, so it can be handed over (to a numpy array, without a copy).
  bool sole_owner() const { return data_.use_count() == 1; }
  long storage_users() const { return data_.use_count(); }  // tensors sharing this storage (caches ask)

  void* raw() { return data_.get(); }
  const void* raw() const { return data_.get(); }
  template <typename T>
  T* data() {
    return static_cast<T*>(raw());
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(raw());
  }

  Tensor clone() const;
  // Same data, new shape with the same element count.
  Tensor reshaped(const Shape& shape) const;
  // Element i converted to double / int64 whatever the dtype (for shape logic and tests).
  double at_f64(int64_t i) const;
  int64_t at_i64(int64_t i) const;
  std::vector<int64_t> to_i64() const;
  std::vector<float> to_f32() const;

 private:
  Tensor(DType dtype, Shape shape, bool zero);
  TensorType type_;
  int64_t numel_ = 0;
  std::shared_ptr<uint8_t> data_;
};

}  // namespace dlakit
