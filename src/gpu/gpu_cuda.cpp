// gpu.h on the CUDA runtime.
#include <cuda_runtime.h>

#include <memory>
#include <mutex>
#include <vector>

#include "base/error.h"
#include "gpu/gpu.h"
#include "gpu/gpu_check.h"

namespace dlakit::gpu {

void check_cuda(int err, const char* what) {
  if (err != cudaSuccess)
    fail(Status::kInternal, "CUDA: ", what, " failed: ", cudaGetErrorName(cudaError_t(err)), " (",
         cudaGetErrorString(cudaError_t(err)), ")");
}

bool available(std::string* why) {
  static const std::pair<bool, std::string> state = [] {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess)
      return std::make_pair(false, std::string("no usable CUDA device: ") + cudaGetErrorString(e));
    if (n == 0) return std::make_pair(false, std::string("no CUDA device"));
    return std::make_pair(true, std::string());
  }();
  if (why) *why = state.second;
  return state.first;
}

std::string device_name() {
  if (!available()) return "";
  int dev = 0;
  cudaDeviceProp p{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&p, dev) != cudaSuccess) return "";
  return std::string(p.name) + " (sm_" + std::to_string(p.major) + std::to_string(p.minor) + ")";
}

MemoryKind memory_kind(const void* p) {
  if (!p || !available()) return MemoryKind::kHost;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error of an unknown pointer
    return MemoryKind::kHost;
  }
  if (a.type == cudaMemoryTypeDevice) return MemoryKind::kDevice;
  if (a.type == cudaMemoryTypeManaged) return MemoryKind::kManaged;
  if (a.type == cudaMemoryTypeHost) return MemoryKind::kPinned;
  return MemoryKind::kHost;  // cudaMemoryTypeUnregistered: pageable
}

Buffer::Buffer(size_t bytes, MemoryKind kind) : n_(bytes), kind_(kind) {
  if (!bytes) return;
  if (kind == MemoryKind::kDevice)
    DLAKIT_CUDA(cudaMalloc(&p_, bytes));
  else
    DLAKIT_CUDA(cudaHostAlloc(&p_, bytes, cudaHostAllocDefault));
}
Buffer::~Buffer() {
  if (p_) kind_ == MemoryKind::kDevice ? cudaFree(p_) : cudaFreeHost(p_);
}

struct Queue::Errors {
  std::mutex mu;
  std::string first;
};

namespace {
struct HostCall {
  std::function<void()> f;
  Queue::Errors* errors;
};

void run_host_call(HostCall& c) {
  try {
    c.f();
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lk(c.errors->mu);
    if (c.errors->first.empty()) c.errors->first = e.what();
  } catch (...) {
    std::lock_guard<std::mutex> lk(c.errors->mu);
    if (c.errors->first.empty()) c.errors->first = "unknown failure in a host step";
  }
}
}  // namespace

struct Queue::Captured {
  cudaGraphExec_t exec = nullptr;
  std::vector<std::unique_ptr<HostCall>> host_steps;  // the graph's host nodes point at these
  ~Captured() {
    if (exec) cudaGraphExecDestroy(exec);
  }
};

Queue::Queue() : errors_(new Errors) {
  std::string why;
  if (!available(&why)) {
    delete errors_;
    fail(Status::kUnsupported, "the CUDA backend needs a GPU: ", why);
  }
  cudaStream_t s;
  cudaEvent_t e;
  DLAKIT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  DLAKIT_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  stream_ = s;
  event_ = e;
}

Queue::~Queue() {
  cudaStreamSynchronize(cudaStream_t(stream_));
  cudaEventDestroy(cudaEvent_t(event_));
  cudaStreamDestroy(cudaStream_t(stream_));
  delete errors_;
}

void Queue::begin(void* user) {
  DLAKIT_CUDA(cudaEventRecord(cudaEvent_t(event_), cudaStream_t(user)));
  DLAKIT_CUDA(cudaStreamWaitEvent(cudaStream_t(stream_), cudaEvent_t(event_), 0));
}

void Queue::end(void* user) {
  DLAKIT_CUDA(cudaEventRecord(cudaEvent_t(event_), cudaStream_t(stream_)));
  DLAKIT_CUDA(cudaStreamWaitEvent(cudaStream_t(user), cudaEvent_t(event_), 0));
}

void Queue::copy(void* dst, const void* src, size_t bytes) {
  if (bytes) DLAKIT_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, cudaStream_t(stream_)));
}

void Queue::host(std::function<void()> f) {
  auto call = std::make_unique<HostCall>(HostCall{std::move(f), errors_});
  if (capturing_) {  // kept with the graph, run on every replay
    DLAKIT_CUDA(cudaLaunchHostFunc(
        cudaStream_t(stream_), [](void* p) { run_host_call(*static_cast<HostCall*>(p)); }, call.get()));
    capturing_->host_steps.push_back(std::move(call));
    return;
  }
  auto once = [](void* p) {
    std::unique_ptr<HostCall> c(static_cast<HostCall*>(p));
    run_host_call(*c);
  };
  DLAKIT_CUDA(cudaLaunchHostFunc(cudaStream_t(stream_), once, call.get()));
  call.release();  // the callback owns it now
}

void Queue::begin_capture() {
  capturing_ = std::make_shared<Captured>();
  const cudaError_t e = cudaStreamBeginCapture(cudaStream_t(stream_), cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) capturing_.reset();
  check_cuda(e, "cudaStreamBeginCapture");
}

std::shared_ptr<Queue::Captured> Queue::end_capture() {
  std::shared_ptr<Captured> c = std::move(capturing_);
  cudaGraph_t graph = nullptr;
  DLAKIT_CUDA(cudaStreamEndCapture(cudaStream_t(stream_), &graph));
  const cudaError_t e = cudaGraphInstantiate(&c->exec, graph, 0);
  cudaGraphDestroy(graph);
  check_cuda(e, "cudaGraphInstantiate");
  return c;
}

std::shared_ptr<Queue::Captured> Queue::record(const std::function<void()>& launches) {
  begin_capture();
  try {
    launches();
  } catch (...) {
    try {
      end_capture();
    } catch (const Error&) {
    }
    throw;
  }
  return end_capture();
}

void Queue::replay(const Captured& graph) { DLAKIT_CUDA(cudaGraphLaunch(graph.exec, cudaStream_t(stream_))); }

std::string Queue::take_error() {
  std::lock_guard<std::mutex> lk(errors_->mu);
  std::string s;
  s.swap(errors_->first);
  return s;
}

void Queue::synchronize() {
  DLAKIT_CUDA(cudaStreamSynchronize(cudaStream_t(stream_)));
  const std::string e = take_error();
  if (!e.empty()) fail(Status::kInternal, e);
}

}  // namespace dlakit::gpu
