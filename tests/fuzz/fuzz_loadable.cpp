// Any byte string given as a loadable must load cleanly or fail with a clear error: never crash or hang.
// Loading is what cudlaModuleLoadFromMemory does: read and verify the program, then prepare it (constants
// expanded, every step's result types inferred again and checked).
#include <cstddef>
#include <cstdint>

#include "runtime/runtime.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    dlakit::rt::Module m(data, size);
  } catch (const dlakit::rt::RuntimeError&) {
  }
  return 0;
}
