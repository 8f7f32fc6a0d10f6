// The .npy reader must accept or reject any byte string with dlakit::Error, never crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    dlakit::Tensor t = dlakit::parse_npy(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    (void)dlakit::serialize_npy(t);
  } catch (const dlakit::Error&) {
  }
  return 0;
}
