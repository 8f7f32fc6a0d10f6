#include "base/checked.h"

#include <string>

namespace dlakit {
namespace {

std::string dims_text(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

}  // namespace

int64_t checked_numel(std::span<const int64_t> dims, int64_t limit, std::string_view what, Status status) {
  // The product of the non-zero dims is bounded too, so a zero dim cannot hide huge others (strides and
  // loop bounds over the other axes are formed from them).
  int64_t nonzero = 1;
  bool has_zero = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = dims[i];
    if (d < 0) fail(status, what, ": dimension ", i, " of ", dims_text(dims), " is negative (", d, ")");
    if (d == 0) {
      has_zero = true;
      continue;
    }
    // Compare before multiplying: nonzero * d > limit  <=>  nonzero > limit / d (integer division floors).
    if (nonzero > limit / d)
      fail(status, what, ": shape ", dims_text(dims), " has more than ", limit, " elements (the limit)");
    nonzero *= d;
  }
  return has_zero ? 0 : nonzero;
}

size_t checked_bytes(int64_t count, size_t elem_size, size_t limit, std::string_view what, Status status) {
  if (count < 0) fail(status, what, ": negative element count ", count);
  if (elem_size != 0 && uint64_t(count) > limit / elem_size)
    fail(status, what, ": ", count, " elements of ", elem_size, " bytes exceed the limit of ", limit,
         " bytes");
  return size_t(count) * elem_size;
}

}  // namespace dlakit
