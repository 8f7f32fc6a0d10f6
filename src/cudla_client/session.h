// One loadable on one DLA core through a dlopen'ed cuDLA library, the way a hybrid-mode cuDLA program
// does it (cudla-api.md §6): create a device handle, load the module, read its tensor descriptors,
// allocate and register one buffer per tensor, submit tasks, then unregister, unload and destroy.
// Buffers are CUDA device memory where a GPU answers (NVIDIA's cuDLA registers CUDA memory only), with
// tasks on a CUDA stream; host memory with the NULL stream otherwise (dlakit's library accepts both).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cudla_client/library.h"
#include "gpu/gpu.h"
#include "runtime/io_format.h"

namespace dlakit::cudla_client {

// What the cuDLA descriptors do not say: a tensor's network shape (they give n, c, h, w) and an int8
// tensor's scale. From dlakit's own loadable, or a calibration cache for loadables TensorRT built.
struct TensorHint {
  Shape shape;
  float scale = 0;
};

class Session {
 public:
  Session(std::shared_ptr<Library> lib, const uint8_t* loadable, size_t size, int core,
          const std::map<std::string, TensorHint>& hints = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::vector<rt::TensorDesc>& inputs() const { return inputs_; }
  const std::vector<rt::TensorDesc>& outputs() const { return outputs_; }
  bool cuda_buffers() const { return stream_ != nullptr; }
  // Host copies of the tensors, laid out per the descriptors: pack inputs into these, unpack outputs.
  void* host_input(size_t i) { return host_[i]; }
  const void* host_output(size_t i) const { return host_[inputs_.size() + i]; }

  void copy_in();   // host inputs -> the registered buffers (a no-op for host memory)
  void execute();   // submit one task and wait for it; a failed task throws with cudlaGetLastError's status
  void copy_out();  // the registered buffers -> host outputs (a no-op for host memory)

 private:
  void release() noexcept;
  std::shared_ptr<Library> lib_;
  const Api& api_;
  cudlaDevHandle dev_ = nullptr;
  cudlaModule module_ = nullptr;
  std::vector<rt::TensorDesc> inputs_, outputs_;
  std::vector<void*> host_;                // inputs then outputs
  std::vector<gpu::DeviceBuffer> device_;  // CUDA buffers: inputs then outputs
  std::vector<uint64_t*> registered_;      // what cudlaMemRegister returned, inputs then outputs
  std::unique_ptr<gpu::Queue> stream_;     // CUDA buffers: the stream tasks and copies go on
};

}  // namespace dlakit::cudla_client
