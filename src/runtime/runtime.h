// The runtime's C++ API, with cuDLA semantics, on the emulated DLA (CPU). RAII objects; failures throw
// RuntimeError carrying the cuDLA status, its readable name and the context. libcudla.so.1 is a thin
// noexcept shim over these classes.
//
// Without a GPU: "device pointers" are host pointers; register_memory returns the same address. A task
// submitted with a null stream runs before submit() returns; with any other stream handle, tasks are
// queued on the device's core and run in order, and synchronize() waits.
// With a GPU (CUDA backend) and a task whose buffers are CUDA device memory: the stream is a cudaStream_t.
// The task is queued after the work already on it and later work waits for the task, so GPU
// pre-processing, the DLA task and GPU post-processing run in stream order. It runs on the emulated DLA on
// CUDA (gpu::GpuEngine) or, with DLAKIT_DLA_BACKEND=cpu, on the CPU emulator between two copies.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cudla.h"
#include "gpu/gpu.h"
#include "gpu/program_engine.h"
#include "program/program.h"
#include "runtime/cpu_executor.h"
#include "runtime/prepared_program.h"
#include "runtime/run_control.h"

namespace dlakit::rt {

const char* status_name(cudlaStatus s);

class RuntimeError : public std::runtime_error {
 public:
  RuntimeError(cudlaStatus s, const std::string& context)
      : std::runtime_error(std::string(status_name(s)) + ": " + context), status_(s) {}
  cudlaStatus status() const { return status_; }

 private:
  cudlaStatus status_;
};

// A loaded DLA program: a verified loadable, prepared for execution, with its CPU executor (and its CUDA
// executor, built on first use where a GPU answers). Thread-safe to execute (runs are serialised).
class Module {
 public:
  Module(const uint8_t* data,
         size_t size);             // RuntimeError(cudlaErrorUmd) for a bad loadable, like the real UMD
  Module(const Module&) = delete;  // the executors refer to this object's program
  Module& operator=(const Module&) = delete;
  ~Module();
  const std::vector<TensorDesc>& inputs() const { return inputs_; }
  const std::vector<TensorDesc>& outputs() const { return outputs_; }
  const prog::Program& program() const { return prepared_.program(); }
  const PreparedProgram& prepared() const { return prepared_; }
  // Runs on buffers laid out per the descriptors: one per input and output, each at least desc.size
  // bytes. `control` is checked before every operation and before the outputs are written; a task that
  // must stop throws RuntimeError(cudlaErrorDlaErrEngineTimeout) with its outputs untouched. Wrong buffer
  // counts or null buffers: RuntimeError(cudlaErrorInvalidParam). Every failure is a RuntimeError.
  void execute(const std::vector<const void*>& in, const std::vector<void*>& out,
               const RunControl& control = {}) const;
  // Milliseconds per operation of one run on the given buffers (named by the operation's first layer).
  std::vector<std::pair<std::string, double>> profile(const std::vector<const void*>& in,
                                                      const std::vector<void*>& out) const;
  // The emulated DLA on CUDA for this module, built on first use (throws without a GPU).
  gpu::ProgramEngine& gpu_engine() const;
  bool has_gpu_engine() const {
    std::lock_guard<std::mutex> lk(gpu_mu_);
    return gpu_ != nullptr;
  }

 private:
  PreparedProgram prepared_;
  std::vector<TensorDesc> inputs_, outputs_;
  std::unique_ptr<CpuExecutor> cpu_;
  mutable std::mutex gpu_mu_;
  mutable std::unique_ptr<gpu::ProgramEngine> gpu_;
};

// One emulated DLA core: a worker thread running submitted jobs in order. Two cores run concurrently.
class Core {
 public:
  static Core& get(int index);  // 0 or 1
  void enqueue(std::function<void()> job);
  void wait(uint64_t ticket);  // until job `ticket` (from last_ticket) has run
  uint64_t last_ticket();
  ~Core();

 private:
  Core();
  void loop();
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<std::function<void()>> jobs_;
  uint64_t queued_ = 0, done_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

struct Task {
  std::vector<const uint64_t*> inputs;  // registered addresses, one per input descriptor
  std::vector<uint64_t*> outputs;
};

// What register_memory accepts. kAnyHost: host memory of any kind and CUDA memory (dlakit's C++ API and
// CLI). kLikeCudla: what cuDLA's hybrid mode accepts. Where a GPU answers that is CUDA memory only
// (device, managed, pinned host); pageable host memory (malloc, new) is cudlaErrorInvalidAddress, so a
// program tested here does not fail on the board. Without a GPU both accept host memory, the only kind.
enum class MemoryPolicy { kAnyHost, kLikeCudla };

class Device {
 public:
  // RuntimeError(cudlaErrorInvalidDevice) unless core is 0 or 1.
  explicit Device(int core, MemoryPolicy memory = MemoryPolicy::kAnyHost);
  ~Device();  // cancels this device's queued tasks (each stops at its next check), then waits for them
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  int core() const { return core_; }
  void load(const uint8_t* data, size_t size);  // one module per device
  bool has_module() const;
  const Module& module() const;  // valid until unload(); queued tasks keep their module alive
  // The module, held: a concurrent unload() cannot free it. RuntimeError(InvalidModule) without one.
  std::shared_ptr<const Module> loaded_module() const;
  void unload();

  uint64_t* register_memory(const void* ptr, size_t size);  // 32-byte aligned; MemoryRegistered if known
  void unregister_memory(const uint64_t* ptr);
  bool is_registered(const void* ptr, size_t size) const;

  // All or nothing: every task is validated (module, buffer counts, registrations and sizes) before any
  // runs; a bad one throws and none runs. Then they run in order (stream == nullptr: before submit
  // returns; else queued on the core, or in CUDA stream order for CUDA buffers).
  void submit(const std::vector<Task>& tasks, void* stream, bool noop = false);
  void submit(const Task& t, void* stream, bool noop = false) { submit(std::vector<Task>{t}, stream, noop); }
  void synchronize();  // waits for every task this device queued
  void set_timeout_ms(uint32_t ms);
  uint32_t timeout_ms() const { return timeout_ms_.load(); }
  cudlaStatus take_last_error();  // the failure of the most recent failed task, then cleared

 private:
  // What queued tasks share with the device: they hold it, not the device, so a task never reaches a
  // destroyed device.
  struct TaskState {
    std::mutex mu;
    cudlaStatus last_error = cudlaSuccess;
    std::atomic<bool> cancelled{false};
    void record(cudlaStatus s);
  };
  struct Registration {
    size_t size;
    bool cuda;  // CUDA memory (device, managed or pinned host): the task runs in CUDA stream order
  };
  std::optional<Registration> registration(const void* ptr, size_t size) const;  // covering [ptr, +size)
  void run_now_or_queue(const std::shared_ptr<const Module>& m, const Task& t, void* stream);
  void submit_cuda(const std::shared_ptr<const Module>& m, const Task& t, void* stream);
  int core_;
  MemoryPolicy memory_;
  bool dla_on_cuda_;  // tasks on CUDA buffers run the emulated DLA on CUDA (else the CPU emulator)
  std::shared_ptr<TaskState> state_ = std::make_shared<TaskState>();
  std::unique_ptr<gpu::Queue> queue_;       // CUDA tasks of this device, in order
  std::vector<gpu::PinnedBuffer> staging_;  // CUDA tasks on the CPU emulator: inputs then outputs
  std::shared_ptr<const Module> module_;
  std::map<uintptr_t, Registration> registered_;
  mutable std::mutex mu_;
  std::atomic<uint32_t> timeout_ms_{30000};
  uint64_t last_ticket_ = 0;
};

}  // namespace dlakit::rt
