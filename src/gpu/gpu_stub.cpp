// gpu.h and program_engine.h when dlakit is built without CUDA (DLAKIT_CUDA=OFF): no GPU, clear errors.
#include "base/error.h"
#include "gpu/gpu.h"
#include "gpu/program_engine.h"

namespace dlakit::gpu {

bool available(std::string* why) {
  if (why) *why = kNoCudaBuild;
  return false;
}
std::string device_name() { return ""; }
MemoryKind memory_kind(const void*) { return MemoryKind::kHost; }

Buffer::Buffer(size_t, MemoryKind) { fail(Status::kUnsupported, kNoCudaBuild); }
Buffer::~Buffer() = default;

struct Queue::Errors {};
Queue::Queue() : errors_(nullptr) { fail(Status::kUnsupported, kNoCudaBuild); }
Queue::~Queue() = default;
void Queue::begin(void*) {}
void Queue::end(void*) {}
void Queue::copy(void*, const void*, size_t) {}
void Queue::host(std::function<void()>) {}
void Queue::synchronize() {}
std::string Queue::take_error() { return ""; }
struct Queue::Captured {};
void Queue::begin_capture() {}
std::shared_ptr<Queue::Captured> Queue::end_capture() { return nullptr; }
std::shared_ptr<Queue::Captured> Queue::record(const std::function<void()>&) { return nullptr; }
void Queue::replay(const Captured&) {}

struct ProgramEngine::Impl {};
ProgramEngine::ProgramEngine(const rt::PreparedProgram&) { fail(Status::kUnsupported, kNoCudaBuild); }
ProgramEngine::~ProgramEngine() = default;
void ProgramEngine::enqueue(const std::vector<const void*>&, const std::vector<void*>&, void*) {}
void ProgramEngine::run(const std::vector<const void*>&, const std::vector<void*>&) {
  fail(Status::kUnsupported, kNoCudaBuild);
}
void ProgramEngine::synchronize() {}
void ProgramEngine::run_prefix(const std::vector<const void*>&, const std::vector<void*>&, size_t) {
  fail(Status::kUnsupported, kNoCudaBuild);
}
std::vector<uint8_t> ProgramEngine::arena(prog::Pool) { fail(Status::kUnsupported, kNoCudaBuild); }
const std::vector<ProgramEngine::StepInfo>& ProgramEngine::steps() const {
  static const std::vector<StepInfo> none;
  return none;
}
int ProgramEngine::gpu_steps() const { return 0; }
int ProgramEngine::fused_adds() const { return 0; }
std::vector<double> ProgramEngine::profile(const std::vector<const void*>&, const std::vector<void*>&) {
  fail(Status::kUnsupported, kNoCudaBuild);
}

}  // namespace dlakit::gpu
