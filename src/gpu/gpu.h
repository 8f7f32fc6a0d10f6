// The CUDA side of dlakit, behind an interface free of CUDA headers: whether a GPU is usable, what kind of
// memory a pointer is, pinned host buffers, and a queue (a CUDA stream of its own) that orders work after
// a caller's stream and makes the caller's stream wait for it: how a DLA task sits between GPU kernels.
// Built without CUDA (DLAKIT_CUDA=OFF) every query says "no GPU" and constructors throw kUnsupported.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace dlakit::gpu {

// What a CUDA-less build says when CUDA is asked for.
inline constexpr const char* kNoCudaBuild = "dlakit was built without CUDA (configure with -DDLAKIT_CUDA=ON)";

// True when dlakit was built with CUDA and a device answers. `why` gets the reason when not.
bool available(std::string* why = nullptr);
std::string device_name();  // "NVIDIA H200 (sm_90)"; empty when unavailable

// Whether work that could run on CUDA or on the CPU goes to CUDA: a GPU answers and the environment
// variable `env_var` is not "cpu" (DLAKIT_DLA_BACKEND for DLA tasks, DLAKIT_GPU_BACKEND for plan GPU
// segments).
inline bool cuda_chosen(const char* env_var) {
  const char* v = std::getenv(env_var);
  return available() && !(v && std::string(v) == "cpu");
}

// kHost: pageable host memory (malloc, new) or anything CUDA does not know; kPinned: page-locked host
// memory CUDA knows (cudaHostAlloc, cudaMallocHost, cudaHostRegister).
enum class MemoryKind { kHost, kPinned, kDevice, kManaged };
MemoryKind memory_kind(const void* p);  // unknown to CUDA (or no GPU): kHost

// CUDA-allocated memory owned by one object: page-locked host memory (kPinned: fast asynchronous copies)
// or device memory (kDevice).
class Buffer {
 public:
  Buffer() = default;
  Buffer(size_t bytes, MemoryKind kind);
  ~Buffer();
  Buffer(Buffer&& o) noexcept : p_(o.p_), n_(o.n_), kind_(o.kind_) { o.p_ = nullptr, o.n_ = 0; }
  Buffer& operator=(Buffer&& o) noexcept {
    std::swap(p_, o.p_), std::swap(n_, o.n_), std::swap(kind_, o.kind_);
    return *this;
  }
  void* data() const { return p_; }
  size_t size() const { return n_; }

 private:
  void* p_ = nullptr;
  size_t n_ = 0;
  MemoryKind kind_ = MemoryKind::kPinned;
};
struct PinnedBuffer : Buffer {
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t bytes) : Buffer(bytes, MemoryKind::kPinned) {}
};
struct DeviceBuffer : Buffer {
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : Buffer(bytes, MemoryKind::kDevice) {}
};

// A stream of dlakit's own. Work goes on it in order; begin(s) makes it wait for what stream `s` (a
// cudaStream_t, null = the legacy default stream) has queued so far, end(s) makes `s` wait for it.
class Queue {
 public:
  Queue();
  ~Queue();
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;
  void* stream() const { return stream_; }
  void begin(void* user_stream);
  void end(void* user_stream);
  void copy(void* dst, const void* src, size_t bytes);  // any memory kinds, in queue order
  // Runs f on a CUDA host thread in queue order. f must not call CUDA; exceptions are caught and kept.
  void host(std::function<void()> f);
  // Between these two calls, work queued here is recorded into a CUDA graph (stream capture) instead of
  // running; the graph replays it in queue order. Host steps recorded meanwhile run on every replay, so
  // they live as long as what end_capture returns (the graph with them; release it after the queue has
  // finished its replays).
  struct Captured;
  void begin_capture();
  std::shared_ptr<Captured> end_capture();
  // begin_capture, `launches` (which queue their work here), end_capture; where `launches` throws, the
  // capture is ended and discarded and the exception goes on.
  std::shared_ptr<Captured> record(const std::function<void()>& launches);
  void replay(const Captured& graph);
  void synchronize();        // waits for the queue, then rethrows the first failure of a host step
  std::string take_error();  // the first host-step failure since the last call ("" if none)
  struct Errors;

 private:
  void* stream_ = nullptr;
  void* event_ = nullptr;
  Errors* errors_;
  std::shared_ptr<Captured> capturing_;  // while recording a graph
};

}  // namespace dlakit::gpu
