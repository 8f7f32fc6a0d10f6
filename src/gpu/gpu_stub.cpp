// gpu.h and engine.h when dlakit is built without CUDA (DLAKIT_CUDA=OFF): no GPU, clear errors.
#include "base/error.h"
#include "gpu/engine.h"
#include "gpu/gpu.h"
#include "gpu/program_engine.h"

namespace dlakit::gpu {

namespace {
constexpr const char* kNoCuda = "dlakit was built without CUDA (configure with -DDLAKIT_CUDA=ON)";
}

bool available(std::string* why) {
  if (why) *why = kNoCuda;
  return false;
}
std::string device_name() { return ""; }
MemoryKind memory_kind(const void*) { return MemoryKind::kHost; }

Buffer::Buffer(size_t, MemoryKind) { fail(Status::kUnsupported, kNoCuda); }
Buffer::~Buffer() = default;

struct Queue::Errors {};
Queue::Queue() : errors_(nullptr) { fail(Status::kUnsupported, kNoCuda); }
Queue::~Queue() = default;
void Queue::begin(void*) {}
void Queue::end(void*) {}
void Queue::copy(void*, const void*, size_t) {}
void Queue::host(std::function<void()>) {}
void Queue::synchronize() {}
std::string Queue::take_error() { return ""; }

struct GpuEngine::Impl {};
GpuEngine::GpuEngine(const Graph&, quant::NumericsPlan) { fail(Status::kUnsupported, kNoCuda); }
GpuEngine::~GpuEngine() = default;
void* GpuEngine::input(size_t) { return nullptr; }
const void* GpuEngine::output(size_t) { return nullptr; }
void GpuEngine::enqueue(void*) {}
TensorMap GpuEngine::run(const TensorMap&) { fail(Status::kUnsupported, kNoCuda); }
void GpuEngine::synchronize() {}
const std::vector<GpuEngine::NodeInfo>& GpuEngine::nodes() const {
  static const std::vector<NodeInfo> none;
  return none;
}
int GpuEngine::gpu_nodes() const { return 0; }
std::vector<double> GpuEngine::profile(const TensorMap&) { fail(Status::kUnsupported, kNoCuda); }

struct ProgramEngine::Impl {};
ProgramEngine::ProgramEngine(const rt::PreparedProgram&) { fail(Status::kUnsupported, kNoCuda); }
ProgramEngine::~ProgramEngine() = default;
void ProgramEngine::enqueue(const std::vector<const void*>&, const std::vector<void*>&, void*) {}
void ProgramEngine::run(const std::vector<const void*>&, const std::vector<void*>&) {
  fail(Status::kUnsupported, kNoCuda);
}
void ProgramEngine::synchronize() {}
const std::vector<ProgramEngine::StepInfo>& ProgramEngine::steps() const {
  static const std::vector<StepInfo> none;
  return none;
}
int ProgramEngine::gpu_steps() const { return 0; }
std::vector<double> ProgramEngine::profile(const std::vector<const void*>&, const std::vector<void*>&) {
  fail(Status::kUnsupported, kNoCuda);
}

}  // namespace dlakit::gpu
