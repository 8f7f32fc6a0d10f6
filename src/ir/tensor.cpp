#include "ir/tensor.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "base/fp16.h"

namespace dlakit {
namespace {

// Large tensor blocks are cached and reused: a fresh multi-megabyte allocation is an mmap whose first
// touch page-faults, which cost more than the kernels themselves on the target VMs. Bounded at 1 GiB.
class BlockCache {
 public:
  static BlockCache& get() {
    static BlockCache* c = new BlockCache;  // never destroyed: tensors may outlive static destruction
    return *c;
  }
  void* acquire(size_t bytes) {
    if (bytes >= kMinCached) {
      std::lock_guard<std::mutex> lk(mu_);
      auto it = free_.find(bytes);
      if (it != free_.end()) {
        void* p = it->second;
        free_.erase(it);
        cached_ -= bytes;
        return p;
      }
    }
    return std::aligned_alloc(64, bytes);
  }
  void release(void* p, size_t bytes) {
    if (bytes >= kMinCached) {
      std::lock_guard<std::mutex> lk(mu_);
      if (cached_ + bytes <= kMaxCached) {
        free_.emplace(bytes, p);
        cached_ += bytes;
        return;
      }
    }
    std::free(p);
  }

 private:
  static constexpr size_t kMinCached = 64 << 10, kMaxCached = size_t(1) << 30;
  std::mutex mu_;
  std::multimap<size_t, void*> free_;
  size_t cached_ = 0;
};

}  // namespace

Tensor::Tensor(DType dtype, Shape shape) : Tensor(dtype, std::move(shape), true) {}

Tensor Tensor::uninitialized(DType dtype, Shape shape) { return Tensor(dtype, std::move(shape), false); }

Tensor::Tensor(DType dtype, Shape shape, bool zero)
    : type_{dtype, std::move(shape)}, numel_(dlakit::numel(type_.shape)) {  // refuses negative dims
  size_t bytes = (nbytes() + 63) / 64 * 64;
  DLAKIT_CHECK(bytes < (size_t(1) << 40), Status::kInvalidArgument, "tensor of ", shape_str(type_.shape),
               " is too large (", bytes, " bytes)");
  if (bytes >= (size_t(1) << 20)) bytes = (bytes + 4095) / 4096 * 4096;  // page granularity helps reuse
  if (bytes == 0) bytes = 64;
  void* p = BlockCache::get().acquire(bytes);
  if (!p) fail(Status::kInvalidArgument, "out of memory allocating ", bytes, " bytes");
  if (zero) std::memset(p, 0, bytes);
  data_ = std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p),
                                   [bytes](uint8_t* q) { BlockCache::get().release(q, bytes); });
}

Tensor Tensor::scalar_f32(float v) {
  Tensor t(DType::kF32, {});
  *t.data<float>() = v;
  return t;
}

Tensor Tensor::from_f32(const Shape& shape, const std::vector<float>& v) {
  Tensor t(DType::kF32, shape);
  DLAKIT_CHECK(int64_t(v.size()) == t.numel(), Status::kInvalidArgument, "from_f32: ", v.size(),
               " values for shape ", shape_str(shape));
  std::memcpy(t.raw(), v.data(), t.nbytes());
  return t;
}

Tensor Tensor::from_i64(const Shape& shape, const std::vector<int64_t>& v) {
  Tensor t(DType::kI64, shape);
  DLAKIT_CHECK(int64_t(v.size()) == t.numel(), Status::kInvalidArgument, "from_i64: ", v.size(),
               " values for shape ", shape_str(shape));
  std::memcpy(t.raw(), v.data(), t.nbytes());
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = uninitialized(type_.dtype, type_.shape);  // every byte is copied below
  if (nbytes()) std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

Tensor Tensor::reshaped(const Shape& shape) const {
  DLAKIT_CHECK(dlakit::numel(shape) == numel_, Status::kShapeError, "cannot reshape ", shape_str(type_.shape),
               " to ", shape_str(shape));
  Tensor t = *this;
  t.type_.shape = shape;
  return t;
}

double Tensor::at_f64(int64_t i) const {
  switch (type_.dtype) {
    case DType::kF32:
      return data<float>()[i];
    case DType::kF16:
      return half_to_float(data<uint16_t>()[i]);
    case DType::kI8:
      return data<int8_t>()[i];
    case DType::kU8:
    case DType::kBool:
      return data<uint8_t>()[i];
    case DType::kI32:
      return data<int32_t>()[i];
    case DType::kI64:
      return double(data<int64_t>()[i]);
  }
  return 0;
}

int64_t Tensor::at_i64(int64_t i) const {
  switch (type_.dtype) {
    case DType::kI64:
      return data<int64_t>()[i];
    case DType::kI32:
      return data<int32_t>()[i];
    case DType::kI8:
      return data<int8_t>()[i];
    case DType::kU8:
    case DType::kBool:
      return data<uint8_t>()[i];
    default: {
      double v = at_f64(i);
      if (!(v > -9.2e18 && v < 9.2e18)) return v > 0 ? INT64_MAX : INT64_MIN;
      return int64_t(v);
    }
  }
}

std::vector<int64_t> Tensor::to_i64() const {
  std::vector<int64_t> r(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) r[size_t(i)] = at_i64(i);
  return r;
}

std::vector<float> Tensor::to_f32() const {
  std::vector<float> r(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) r[size_t(i)] = float(at_f64(i));
  return r;
}

}  // namespace dlakit
