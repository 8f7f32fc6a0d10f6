// Runs a built engine (a DLA loadable or a hybrid plan) on float32 NCHW tensors, on one of the backends
// `dlakit run`, `dlakit bench` and the Python module offer: dlakit's runtime (the emulated DLA; hybrid
// plans with their GPU segments), or any cuDLA library through dlopen (NVIDIA's on a Jetson: the real DLA).
// Each step is separate so callers time only the DLA work.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "quant/calib_cache.h"

namespace dlakit::rt {

struct RunnerOptions {
  int dla_core = 0;
  // "cpu" (dlakit's runtime: the emulated DLA on the CPU; a plan's GPU segments on CUDA where a GPU
  // answers), "cudla" (the system's libcudla.so.1) or "cudla:PATH".
  std::string backend = "cpu";
  // The cudla backend on a loadable dlakit did not build: ranges of its int8 I/O tensors by name (the
  // cuDLA descriptors carry no scale).
  const quant::ScaleTable* io_scales = nullptr;
};

struct EngineInput {
  std::string name;
  Shape shape;  // float32 NCHW, what set_inputs takes
  std::string
      layout;  // how the engine takes it, for reports: "fp16 chw16 (12288 bytes)", "hybrid plan (...)"
};

class EngineRunner {
 public:
  // Errors: a backend name that is none of the above, a missing or foreign cuDLA library, a hybrid plan
  // on the cudla backend (cuDLA runs DLA loadables), a loadable the backend rejects.
  static std::unique_ptr<EngineRunner> open(const std::string& engine, const RunnerOptions& o);
  virtual ~EngineRunner() = default;

  virtual const std::vector<EngineInput>& inputs() const = 0;
  virtual const std::vector<std::string>& output_names() const = 0;
  virtual std::string where() const = 0;  // "emulated DLA, FP16", "cuDLA (libcudla.so.1 ...), core 0"...
  // Checks every input (names, float32, shape) and lays it out for the engine.
  virtual void set_inputs(const TensorMap& feeds) = 0;
  virtual void execute() = 0;
  virtual TensorMap outputs() = 0;

  TensorMap run(const TensorMap& feeds) {
    set_inputs(feeds);
    execute();
    return outputs();
  }
};

// "cudla" -> "" (the system's library), "cudla:/x/libcudla.so.1" -> that path; false for other backends.
bool parse_cudla_backend(const std::string& backend, std::string* library_path);

}  // namespace dlakit::rt
