// The calibration cache parser must accept or reject any text with dlakit::Error, never crash; what it
// accepts must write back and parse to the same scales.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "base/error.h"
#include "quant/calib_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlakit::quant;
  try {
    const ScaleTable t = parse_calib_cache(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    const ScaleTable back = parse_calib_cache(format_calib_cache(t), "round-trip");
    if (back.scales.size() != t.scales.size()) std::abort();
    for (size_t i = 0; i < t.scales.size(); ++i)
      if (back.scales[i].first != t.scales[i].first ||
          scale_to_hex(back.scales[i].second) != scale_to_hex(t.scales[i].second))
        std::abort();
  } catch (const dlakit::Error&) {
  }
  return 0;
}
