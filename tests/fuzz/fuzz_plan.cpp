// The hybrid plan reader must load or reject any byte string with dlakit::Error, never crash; a plan it
// loads must run on inputs of its declared shapes (when they are small) or fail with dlakit::Error.
#include <cstddef>
#include <cstdint>

#include "base/error.h"
#include "loadable/plan_executor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    dlakit::rt::PlanExecutor plan(data, size);
    dlakit::TensorMap inputs;
    int64_t total = 0;
    for (const std::string& name : plan.input_names()) {
      dlakit::Tensor x(dlakit::DType::kF32, plan.input_shape(name));
      total += x.numel();
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float(i % 7) - 3.f;
      inputs[name] = x;
    }
    if (total <= 4096) (void)plan.run(inputs);
  } catch (const dlakit::Error&) {
  } catch (const dlakit::rt::RuntimeError&) {
  }
  return 0;
}
