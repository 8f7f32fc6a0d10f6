// Element and byte counts that cannot wrap. Every reader of a size from outside (ONNX dims, .npy shapes,
// loadable weights, graph inputs) and Tensor itself count through here: each product is compared with the
// limit before it is formed, so dims like [2^34, 2^30] are refused instead of wrapping to 0.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "base/error.h"

namespace dlakit {

// The most elements a tensor may have anywhere in dlakit (2^40): any count at or below it, times the
// largest element size (8 bytes), still fits in int64 and size_t.
inline constexpr int64_t kMaxElements = int64_t(1) << 40;

// The product of `dims` (every partial product bounded too). Throws Error(status) naming `what` (e.g. "tensor
// 'conv1.weight'"), the offending dimension and the limit when a dim is negative or the product would exceed
// `limit`.
int64_t checked_numel(std::span<const int64_t> dims, int64_t limit, std::string_view what,
                      Status status = Status::kShapeError);

// count * elem_size bytes, refused (as above) when it would exceed `limit` bytes.
size_t checked_bytes(int64_t count, size_t elem_size, size_t limit, std::string_view what,
                     Status status = Status::kShapeError);

}  // namespace dlakit
