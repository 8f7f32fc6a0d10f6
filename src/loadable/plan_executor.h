// Runs a hybrid plan: DLA segments on the emulated DLA through rt::Device (packed/unpacked per their
// descriptors; FP16 or INT8 loadables), GPU segments in FP32 on the CUDA backend where a GPU answers
// (DLAKIT_GPU_BACKEND=cpu: the reference engine), else on the reference engine. Loading verifies the plan
// and every segment.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "runtime/runtime.h"

namespace dlakit::rt {

class PlanExecutor {
 public:
  PlanExecutor(const uint8_t* data, size_t size, int dla_core = 0);
  ~PlanExecutor();
  TensorMap run(const TensorMap& inputs);
  const std::vector<std::string>& input_names() const { return inputs_; }
  const std::vector<std::string>& output_names() const { return outputs_; }
  Shape input_shape(const std::string& name) const;  // from the first segment that reads it
  size_t dla_segments() const;
  size_t gpu_segments() const;
  bool int8() const;         // some DLA segment is an INT8 loadable
  bool gpu_on_cuda() const;  // GPU segments run on the CUDA backend (a GPU answers; DLAKIT_GPU_BACKEND!=cpu)

 private:
  struct Stage;
  std::vector<std::unique_ptr<Stage>> stages_;
  std::vector<std::string> inputs_, outputs_;
};

}  // namespace dlakit::rt
