#include "workflow/engine_runner.h"

#include <cstdlib>

#include "base/error.h"
#include "cudla_client/session.h"
#include "loadable/plan.h"
#include "loadable/plan_executor.h"
#include "runtime/runtime.h"

namespace dlakit::rt {
namespace {

const uint8_t* bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

std::string layout_text(const TensorDesc& d) {
  return cat(d.dtype == DType::kI8 ? "int8 " : "fp16 ", io_format_name(d.format), " (", d.size, " bytes)");
}

// The feed for `in`: present, float32, of its shape. Names the engine does not have are errors too.
void check_feeds(const TensorMap& feeds, const std::vector<EngineInput>& inputs) {
  for (const auto& [name, t] : feeds) {
    bool known = false;
    for (const auto& in : inputs) known = known || in.name == name;
    if (!known) {
      std::string names;
      for (const auto& in : inputs) names += (names.empty() ? "" : ", ") + in.name;
      fail(Status::kInvalidArgument, "unknown input '", name, "'; the engine's inputs are: ", names);
    }
  }
  for (const auto& in : inputs) {
    auto it = feeds.find(in.name);
    if (it == feeds.end())
      fail(Status::kInvalidArgument, "missing input '", in.name, "' (f32[", shape_str(in.shape), "])");
    if (it->second.dtype() != DType::kF32 || it->second.shape() != in.shape)
      fail(Status::kInvalidArgument, "input '", in.name, "' is ", type_str(it->second.type()),
           " but the engine takes f32[", shape_str(in.shape), "]");
  }
}

// Aligned, zeroed host buffers, freed with the owner.
struct HostBuffers {
  std::vector<void*> p;
  void* add(size_t size) {
    const size_t bytes = (size + 63) / 64 * 64;
    p.push_back(std::aligned_alloc(64, bytes ? bytes : 64));
    if (!p.back()) fail(Status::kInternal, "out of memory (", size, " bytes)");
    return p.back();
  }
  ~HostBuffers() {
    for (void* x : p) std::free(x);
  }
};

// A DLA loadable on dlakit's runtime (the emulated DLA), the cuDLA steps through the C++ API.
class BuiltinLoadable : public EngineRunner {
 public:
  BuiltinLoadable(const std::string& engine, int core) : dev_(core) {
    dev_.load(bytes(engine), engine.size());
    const Module& m = dev_.module();
    for (const auto& d : m.inputs()) {
      inputs_.push_back({d.name, d.network_shape, layout_text(d)});
      task_.inputs.push_back(dev_.register_memory(buffers_.add(d.size), d.size));
    }
    for (const auto& d : m.outputs()) {
      outputs_.push_back(d.name);
      task_.outputs.push_back(dev_.register_memory(buffers_.add(d.size), d.size));
    }
  }
  const std::vector<EngineInput>& inputs() const override { return inputs_; }
  const std::vector<std::string>& output_names() const override { return outputs_; }
  std::string where() const override {
    return dev_.module().program().int8 ? "emulated DLA, INT8" : "emulated DLA, FP16";
  }
  void set_inputs(const TensorMap& feeds) override {
    check_feeds(feeds, inputs_);
    for (size_t i = 0; i < inputs_.size(); ++i)
      pack(feeds.at(inputs_[i].name), dev_.module().inputs()[i], buffers_.p[i]);
  }
  void execute() override { dev_.submit(task_, nullptr); }
  TensorMap outputs() override {
    TensorMap r;
    const auto& descs = dev_.module().outputs();
    for (size_t i = 0; i < descs.size(); ++i)
      r[descs[i].name] = unpack(buffers_.p[inputs_.size() + i], descs[i]);
    return r;
  }

 private:
  HostBuffers buffers_;  // inputs then outputs; destroyed after the device unregisters them
  Device dev_;
  Task task_;
  std::vector<EngineInput> inputs_;
  std::vector<std::string> outputs_;
};

// A hybrid plan: DLA loadables on the emulated DLA, GPU segments on CUDA or the reference engine.
class BuiltinPlan : public EngineRunner {
 public:
  BuiltinPlan(const std::string& engine, int core) : plan_(bytes(engine), engine.size(), core) {
    for (const auto& name : plan_.input_names())
      inputs_.push_back(
          {name, plan_.input_shape(name),
           cat("hybrid plan (", plan_.dla_segments(), " DLA + ", plan_.gpu_segments(), " GPU segments)")});
  }
  const std::vector<EngineInput>& inputs() const override { return inputs_; }
  const std::vector<std::string>& output_names() const override { return plan_.output_names(); }
  std::string where() const override {
    return std::string("hybrid plan: emulated DLA ") + (plan_.int8() ? "INT8" : "FP16") + " + GPU FP32" +
           (plan_.gpu_on_cuda() ? " (CUDA)" : " (reference engine)");
  }
  void set_inputs(const TensorMap& feeds) override {
    check_feeds(feeds, inputs_);
    feeds_ = feeds;
  }
  void execute() override { results_ = plan_.run(feeds_); }
  TensorMap outputs() override { return results_; }

 private:
  PlanExecutor plan_;
  std::vector<EngineInput> inputs_;
  TensorMap feeds_, results_;
};

// A DLA loadable through a cuDLA library opened with dlopen: the 16 public functions only.
class CudlaLoadable : public EngineRunner {
 public:
  CudlaLoadable(const std::string& engine, const std::string& library, const RunnerOptions& o)
      : lib_(cudla_client::Library::open(library)),
        session_(lib_, bytes(engine), engine.size(), o.dla_core, hints(engine, o)),
        core_(o.dla_core) {
    for (const auto& d : session_.inputs()) inputs_.push_back({d.name, d.network_shape, layout_text(d)});
    for (const auto& d : session_.outputs()) outputs_.push_back(d.name);
  }
  const std::vector<EngineInput>& inputs() const override { return inputs_; }
  const std::vector<std::string>& output_names() const override { return outputs_; }
  std::string where() const override {
    const uint64_t v = lib_->version();
    return cat("cuDLA ", v / 1000000, ".", v / 1000 % 1000, ".", v % 1000, " (", lib_->path(), "), DLA core ",
               core_, session_.cuda_buffers() ? ", CUDA buffers" : ", host buffers");
  }
  void set_inputs(const TensorMap& feeds) override {
    check_feeds(feeds, inputs_);
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const TensorDesc& d = session_.inputs()[i];
      if (d.dtype == DType::kI8 && d.scale <= 0)
        fail(Status::kInvalidArgument, "int8 input '", d.name,
             "': cuDLA descriptors carry no scale and the loadable is not dlakit's; give its range with "
             "--calib=CACHE (the calibration cache it was built with)");
      pack(feeds.at(d.name), d, session_.host_input(i));
    }
    session_.copy_in();
  }
  void execute() override { session_.execute(); }
  TensorMap outputs() override {
    session_.copy_out();
    TensorMap r;
    for (size_t i = 0; i < outputs_.size(); ++i) {
      const TensorDesc& d = session_.outputs()[i];
      if (d.dtype == DType::kI8 && d.scale <= 0)
        fail(Status::kInvalidArgument, "int8 output '", d.name,
             "': cuDLA descriptors carry no scale and the loadable is not dlakit's; give its range with "
             "--calib=CACHE");
      r[d.name] = unpack(session_.host_output(i), d);
    }
    return r;
  }

 private:
  // Network shapes and int8 scales: dlakit's own loadable states them; otherwise the given ranges.
  static std::map<std::string, cudla_client::TensorHint> hints(const std::string& engine,
                                                               const RunnerOptions& o) {
    std::map<std::string, cudla_client::TensorHint> h;
    try {
      const Module m(bytes(engine), engine.size());
      for (const auto* list : {&m.inputs(), &m.outputs()})
        for (const TensorDesc& d : *list) h[d.name] = {d.network_shape, d.scale};
      return h;
    } catch (const RuntimeError&) {  // not dlakit's: TensorRT's, or corrupt (the library will say)
    }
    if (o.io_scales)
      for (const auto& [name, scale] : o.io_scales->scales) h[name].scale = scale;
    return h;
  }
  std::shared_ptr<cudla_client::Library> lib_;
  cudla_client::Session session_;
  int core_;
  std::vector<EngineInput> inputs_;
  std::vector<std::string> outputs_;
};

}  // namespace

bool parse_cudla_backend(const std::string& backend, std::string* library_path) {
  if (backend == "cudla") {
    library_path->clear();
    return true;
  }
  if (backend.rfind("cudla:", 0) != 0) return false;
  *library_path = backend.substr(6);
  if (library_path->empty())
    fail(Status::kInvalidArgument, "--backend=cudla: needs a library path after the colon, or none at all");
  return true;
}

std::unique_ptr<EngineRunner> EngineRunner::open(const std::string& engine, const RunnerOptions& o) {
  const bool plan = is_plan(bytes(engine), engine.size());
  std::string library;
  if (parse_cudla_backend(o.backend, &library)) {
    if (plan)
      fail(Status::kInvalidArgument,
           "a hybrid plan (DLA + GPU segments) runs on dlakit's own runtime only (--backend=cpu); cuDLA runs "
           "DLA "
           "loadables (build one with --buildDLAStandalone)");
    return std::make_unique<CudlaLoadable>(engine, library, o);
  }
  if (o.backend != "cpu")
    fail(Status::kInvalidArgument, "backend '", o.backend,
         "': use cpu (dlakit's emulated DLA), cudla (the system's libcudla.so.1) or cudla:PATH");
  if (plan) return std::make_unique<BuiltinPlan>(engine, o.dla_core);
  return std::make_unique<BuiltinLoadable>(engine, o.dla_core);
}

}  // namespace dlakit::rt
