// Any byte string given to the runtime's public entry point rt::Module(data, size) must load or fail with
// rt::RuntimeError, and a module that loads must execute (under a deadline) on buffers of its descriptors'
// sizes or fail with rt::RuntimeError: never crash, hang or leak. Only the public API is used, so the
// target keeps working when the loadable format changes (re-seed its corpus then: seed_corpora.sh).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/runtime.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlakit::rt;
  try {
    const Module m(data, size);
    size_t total = 0;
    for (const auto& d : m.inputs()) total += d.size;
    for (const auto& d : m.outputs()) total += d.size;
    if (total > (size_t(1) << 22)) return 0;  // big tensors only slow the fuzzer down
    // Inputs are the fuzzer's own bytes repeated: any fp16/int8 pattern, NaN and infinities included.
    std::vector<std::vector<uint8_t>> in, out;
    for (const auto& d : m.inputs()) {
      in.emplace_back(d.size);
      for (size_t i = 0; i < d.size; ++i) in.back()[i] = data[i % size];
    }
    for (const auto& d : m.outputs()) out.emplace_back(d.size, 0xAB);
    std::vector<const void*> ip;
    std::vector<void*> op;
    for (auto& b : in) ip.push_back(b.data());
    for (auto& b : out) op.push_back(b.data());
    m.execute(ip, op, RunControl::timeout_ms(2000));
  } catch (const RuntimeError&) {
  }
  return 0;
}
