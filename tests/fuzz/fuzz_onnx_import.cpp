// Any byte string must import cleanly or fail with dlakit::Error: never crash, hang or leak.
#include <cstddef>
#include <cstdint>

#include "base/error.h"
#include "onnx/importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    dlakit::Graph g = dlakit::import_onnx_bytes(data, size, {}, "fuzz");
    g.verify();
  } catch (const dlakit::Error&) {
  }
  return 0;
}
