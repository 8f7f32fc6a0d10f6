// Any byte string given as a loadable must load cleanly or fail with dlakit::Error: never crash or hang.
#include <cstddef>
#include <cstdint>

#include "base/error.h"
#include "loadable/loadable.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    dlakit::Loadable l = dlakit::read_loadable(data, size, "fuzz");
    l.graph.verify();
  } catch (const dlakit::Error&) {
  }
  return 0;
}
