#include "loadable/plan_executor.h"

#include "engine/gpu_engine.h"
#include "loadable/plan.h"
#include "onnx/importer.h"

namespace dlakit::rt {

struct PlanExecutor::Stage {
  bool dla = false;
  std::vector<std::string> inputs, outputs;
  std::unique_ptr<Device> device;  // DLA
  Task task;
  std::vector<void*> buffers;
  Graph graph;  // GPU
  std::unique_ptr<ReferenceEngine> engine;
  std::unique_ptr<gpu::GpuEngine> cuda;  // the GPU segment on the CUDA backend, where a GPU answers
  ~Stage() {
    if (device) device->synchronize();
    for (void* p : buffers) std::free(p);
  }
};

PlanExecutor::PlanExecutor(const uint8_t* data, size_t size, int dla_core) {
  PlanContents plan = read_plan(data, size);
  inputs_ = plan.inputs;
  outputs_ = plan.outputs;
  for (const PlanSegment& s : plan.segments) {
    auto st = std::make_unique<Stage>();
    st->inputs = s.inputs;
    st->outputs = s.outputs;
    st->dla = s.dla;
    if (st->dla) {
      st->device = std::make_unique<Device>(dla_core);
      try {
        st->device->load(reinterpret_cast<const uint8_t*>(s.payload.data()), s.payload.size());
      } catch (const RuntimeError& e) {
        fail(Status::kParseError, "plan segment ", stages_.size(), ": ", e.what());
      }
      const Module& m = st->device->module();
      auto alloc = [&](const TensorDesc& d) {
        st->buffers.push_back(std::aligned_alloc(64, (d.size + 63) / 64 * 64));
        return st->device->register_memory(st->buffers.back(), d.size);
      };
      for (const auto& d : m.inputs()) st->task.inputs.push_back(alloc(d));
      for (const auto& d : m.outputs()) st->task.outputs.push_back(alloc(d));
    } else {
      st->graph = import_onnx_bytes(s.payload.data(), s.payload.size(), {},
                                    "plan GPU segment " + std::to_string(stages_.size()));
      if (gpu::cuda_chosen("DLAKIT_GPU_BACKEND"))
        st->cuda = std::make_unique<gpu::GpuEngine>(
            st->graph, quant::plan_uniform(st->graph, quant::Mode::kFP32, nullptr));
      else
        st->engine = std::make_unique<ReferenceEngine>(st->graph);
    }
    stages_.push_back(std::move(st));
  }
}

PlanExecutor::~PlanExecutor() = default;

Shape PlanExecutor::input_shape(const std::string& name) const {
  for (auto& st : stages_) {
    if (st->dla) {
      for (const auto& d : st->device->module().inputs())
        if (d.name == name) return d.network_shape;
    } else if (auto id = st->graph.find_value(name)) {
      return st->graph.value(*id).type.shape;
    }
  }
  fail(Status::kInvalidArgument, "plan: no segment reads '", name, "'");
}

size_t PlanExecutor::dla_segments() const {
  size_t n = 0;
  for (auto& s : stages_) n += s->dla;
  return n;
}
size_t PlanExecutor::gpu_segments() const { return stages_.size() - dla_segments(); }
bool PlanExecutor::gpu_on_cuda() const {
  for (auto& s : stages_)
    if (s->cuda) return true;
  return false;
}
bool PlanExecutor::int8() const {
  for (auto& s : stages_)
    if (s->dla && s->device->module().program().int8) return true;
  return false;
}

TensorMap PlanExecutor::run(const TensorMap& inputs) {
  TensorMap values = inputs;
  auto get = [&](const std::string& name) -> const Tensor& {
    auto it = values.find(name);
    if (it == values.end())
      fail(Status::kInvalidArgument, "plan: tensor '", name, "' is neither an input nor produced earlier");
    return it->second;
  };
  for (auto& st : stages_) {
    if (st->dla) {
      const Module& m = st->device->module();
      for (size_t i = 0; i < m.inputs().size(); ++i)
        pack(get(m.inputs()[i].name), m.inputs()[i], st->buffers[i]);
      st->device->submit(st->task, nullptr);
      const cudlaStatus err = st->device->take_last_error();
      if (err != cudlaSuccess) throw RuntimeError(err, "DLA segment failed");
      for (size_t i = 0; i < m.outputs().size(); ++i)
        values[m.outputs()[i].name] = unpack(st->buffers[m.inputs().size() + i], m.outputs()[i]);
    } else {
      TensorMap feeds;
      for (int id : st->graph.inputs) feeds[st->graph.value(id).name] = get(st->graph.value(id).name);
      for (auto& [name, t] : st->cuda ? st->cuda->run(feeds) : st->engine->run(feeds)) values[name] = t;
    }
  }
  TensorMap out;
  for (auto& n : outputs_) out[n] = get(n);
  return out;
}

}  // namespace dlakit::rt
