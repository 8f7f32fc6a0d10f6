// GpuEngine when dlakit is built without CUDA (DLAKIT_CUDA=OFF): no GPU, a clear error.
#include "base/error.h"
#include "engine/gpu_engine.h"
#include "gpu/gpu.h"

namespace dlakit::gpu {

struct GpuEngine::Impl {};
GpuEngine::GpuEngine(const Graph&, quant::NumericsPlan) { fail(Status::kUnsupported, kNoCudaBuild); }
GpuEngine::~GpuEngine() = default;
void* GpuEngine::input(size_t) { return nullptr; }
const void* GpuEngine::output(size_t) { return nullptr; }
void GpuEngine::enqueue(void*) {}
TensorMap GpuEngine::run(const TensorMap&) { fail(Status::kUnsupported, kNoCudaBuild); }
void GpuEngine::synchronize() {}
const std::vector<GpuEngine::NodeInfo>& GpuEngine::nodes() const {
  static const std::vector<NodeInfo> none;
  return none;
}
int GpuEngine::gpu_nodes() const { return 0; }
std::vector<double> GpuEngine::profile(const TensorMap&) { fail(Status::kUnsupported, kNoCudaBuild); }

}  // namespace dlakit::gpu
