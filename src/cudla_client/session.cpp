#include "cudla_client/session.h"

#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "runtime/runtime.h"

namespace dlakit::cudla_client {
namespace {

rt::TensorDesc read_desc(const cudlaModuleTensorDescriptor& c,
                         const std::map<std::string, TensorHint>& hints) {
  rt::TensorDesc d;
  d.name = std::string(c.name, strnlen(c.name, sizeof c.name));
  d.size = c.size;
  d.n = c.n, d.c = c.c, d.h = c.h, d.w = c.w;
  d.data_format = c.dataFormat, d.data_type = c.dataType, d.data_category = c.dataCategory;
  d.pixel_format = c.pixelFormat, d.pixel_mapping = c.pixelMapping;
  for (size_t i = 0; i < 8; ++i) d.stride[i] = c.stride[i];
  d = rt::adopt_cudla_desc(d);
  if (auto it = hints.find(d.name); it != hints.end()) {
    if (!it->second.shape.empty()) {
      int64_t numel = 1;
      for (int64_t x : it->second.shape) numel *= x;
      if (numel != int64_t(d.n * d.c * d.h * d.w))
        fail(Status::kInvalidArgument, "tensor '", d.name, "': shape ", shape_str(it->second.shape),
             " does not match the descriptor's n", d.n, " c", d.c, " h", d.h, " w", d.w);
      d.network_shape = it->second.shape;
    }
    d.scale = it->second.scale;
  }
  return d;
}

}  // namespace

Session::Session(std::shared_ptr<Library> lib, const uint8_t* loadable, size_t size, int core,
                 const std::map<std::string, TensorHint>& hints)
    : lib_(std::move(lib)), api_(lib_->api()) {
  try {
    // Hybrid mode needs a CUDA context before cudlaCreateDevice (cudla-api.md §4.3): the stream makes one.
    if (gpu::available()) stream_ = std::make_unique<gpu::Queue>();
    check(api_.CreateDevice(uint64_t(core), &dev_, CUDLA_CUDA_DLA),
          cat("cudlaCreateDevice(", core, ", CUDLA_CUDA_DLA)"));
    check(api_.ModuleLoadFromMemory(dev_, loadable, size, &module_, 0),
          "cudlaModuleLoadFromMemory (is it a DLA loadable, e.g. from trtexec --buildDLAStandalone?)");
    cudlaModuleAttribute a{};
    check(api_.ModuleGetAttributes(module_, CUDLA_NUM_INPUT_TENSORS, &a), "cudlaModuleGetAttributes(inputs)");
    std::vector<cudlaModuleTensorDescriptor> in(a.numInputTensors);
    check(api_.ModuleGetAttributes(module_, CUDLA_NUM_OUTPUT_TENSORS, &a),
          "cudlaModuleGetAttributes(outputs)");
    std::vector<cudlaModuleTensorDescriptor> out(a.numOutputTensors);
    a.inputTensorDesc = in.data();
    check(api_.ModuleGetAttributes(module_, CUDLA_INPUT_TENSOR_DESCRIPTORS, &a),
          "cudlaModuleGetAttributes(input descriptors)");
    a.outputTensorDesc = out.data();
    check(api_.ModuleGetAttributes(module_, CUDLA_OUTPUT_TENSOR_DESCRIPTORS, &a),
          "cudlaModuleGetAttributes(output descriptors)");
    for (auto& c : in) inputs_.push_back(read_desc(c, hints));
    for (auto& c : out) outputs_.push_back(read_desc(c, hints));
    for (const auto* list : {&inputs_, &outputs_})
      for (const rt::TensorDesc& d : *list) {
        const size_t bytes = (d.size + 63) / 64 * 64;  // cuDLA wants 32-byte alignment; 64 suits the CPU
        host_.push_back(std::aligned_alloc(64, bytes));
        if (!host_.back()) fail(Status::kInternal, "out of memory for tensor '", d.name, "'");
        std::memset(host_.back(), 0, bytes);
        void* target = host_.back();
        if (stream_) target = device_.emplace_back(d.size).data();
        uint64_t* reg = nullptr;
        check(
            api_.MemRegister(dev_, static_cast<const uint64_t*>(target), d.size, &reg, 0),
            cat("cudlaMemRegister('", d.name, "', ", d.size, " bytes of ", stream_ ? "CUDA" : "host",
                " memory)", stream_ ? "" : "; NVIDIA's cuDLA registers CUDA memory only: use a CUDA build"));
        registered_.push_back(reg);
      }
  } catch (...) {
    release();
    throw;
  }
}

Session::~Session() { release(); }

void Session::release() noexcept {
  for (uint64_t* r : registered_) api_.MemUnregister(dev_, r);
  registered_.clear();
  if (module_) api_.ModuleUnload(module_, 0);
  module_ = nullptr;
  if (dev_) api_.DestroyDevice(dev_);
  dev_ = nullptr;
  for (void* p : host_) std::free(p);
  host_.clear();
}

void Session::copy_in() {
  if (!stream_) return;
  for (size_t i = 0; i < inputs_.size(); ++i) stream_->copy(device_[i].data(), host_[i], inputs_[i].size);
  stream_->synchronize();
}

void Session::execute() {
  cudlaTask t{};
  t.moduleHandle = module_;
  t.numInputTensors = uint32_t(inputs_.size());
  t.inputTensor = registered_.data();
  t.numOutputTensors = uint32_t(outputs_.size());
  t.outputTensor = registered_.data() + inputs_.size();
  check(api_.SubmitTask(dev_, &t, 1, stream_ ? stream_->stream() : nullptr, 0), "cudlaSubmitTask");
  if (stream_) stream_->synchronize();
  check(api_.GetLastError(dev_), "the DLA task (cudlaGetLastError)");
}

void Session::copy_out() {
  if (!stream_) return;
  const size_t nin = inputs_.size();
  for (size_t i = 0; i < outputs_.size(); ++i)
    stream_->copy(host_[nin + i], device_[nin + i].data(), outputs_[i].size);
  stream_->synchronize();
}

}  // namespace dlakit::cudla_client
