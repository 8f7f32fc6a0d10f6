#include "runtime/runtime.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "program/format.h"

namespace dlakit::rt {

const char* status_name(cudlaStatus s) {
  switch (s) {
    case cudlaSuccess:
      return "cudlaSuccess";
    case cudlaErrorInvalidParam:
      return "cudlaErrorInvalidParam";
    case cudlaErrorOutOfResources:
      return "cudlaErrorOutOfResources";
    case cudlaErrorCreationFailed:
      return "cudlaErrorCreationFailed";
    case cudlaErrorInvalidAddress:
      return "cudlaErrorInvalidAddress";
    case cudlaErrorOs:
      return "cudlaErrorOs";
    case cudlaErrorCuda:
      return "cudlaErrorCuda";
    case cudlaErrorUmd:
      return "cudlaErrorUmd";
    case cudlaErrorInvalidDevice:
      return "cudlaErrorInvalidDevice";
    case cudlaErrorInvalidAttribute:
      return "cudlaErrorInvalidAttribute";
    case cudlaErrorIncompatibleDlaSWVersion:
      return "cudlaErrorIncompatibleDlaSWVersion";
    case cudlaErrorMemoryRegistered:
      return "cudlaErrorMemoryRegistered";
    case cudlaErrorInvalidModule:
      return "cudlaErrorInvalidModule";
    case cudlaErrorUnsupportedOperation:
      return "cudlaErrorUnsupportedOperation";
    case cudlaErrorNvSci:
      return "cudlaErrorNvSci";
    case cudlaErrorDriverNotFound:
      return "cudlaErrorDriverNotFound";
    case cudlaErrorDlaErrInvalidInput:
      return "cudlaErrorDlaErrInvalidInput";
    case cudlaErrorDlaErrInvalidPreAction:
      return "cudlaErrorDlaErrInvalidPreAction";
    case cudlaErrorDlaErrNoMem:
      return "cudlaErrorDlaErrNoMem";
    case cudlaErrorDlaErrProcessorBusy:
      return "cudlaErrorDlaErrProcessorBusy";
    case cudlaErrorDlaErrTaskStatusMismatch:
      return "cudlaErrorDlaErrTaskStatusMismatch";
    case cudlaErrorDlaErrEngineTimeout:
      return "cudlaErrorDlaErrEngineTimeout";
    case cudlaErrorDlaErrDataMismatch:
      return "cudlaErrorDlaErrDataMismatch";
    case cudlaErrorUnknown:
      return "cudlaErrorUnknown";
  }
  return "cudlaError(unrecognised)";
}

// ---- RunControl
void RunControl::check(const char* layer) const {
  if (cancel_requested())
    throw RuntimeError(cudlaErrorDlaErrEngineTimeout,
                       std::string("task cancelled (its device was destroyed) at ") + layer);
  if (Clock::now() > deadline)
    throw RuntimeError(cudlaErrorDlaErrEngineTimeout, std::string("task timed out at ") + layer);
}

namespace {
// Runs f, turning every failure that is not already a RuntimeError into one with `status`, so nothing but
// RuntimeError leaves the runtime's C++ API.
template <typename F>
auto as_runtime_error(cudlaStatus status, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const RuntimeError&) {
    throw;
  } catch (const Error& e) {
    throw RuntimeError(status, e.what());
  } catch (const std::bad_alloc&) {
    throw RuntimeError(cudlaErrorOutOfResources, "out of memory");
  } catch (const std::exception& e) {
    throw RuntimeError(cudlaErrorUnknown, std::string("internal error: ") + e.what());
  }
}
}  // namespace

// ---- Module
// A bad loadable is cudlaErrorUmd, like the real UMD.
Module::Module(const uint8_t* data, size_t size) try : prepared_(prog::deserialize(data, size, "loadable")) {
  for (size_t i = 0; i < program().inputs.size(); ++i) inputs_.push_back(program().input_desc(i));
  for (size_t i = 0; i < program().outputs.size(); ++i) outputs_.push_back(program().output_desc(i));
  cpu_ = std::make_unique<CpuExecutor>(prepared_);
} catch (const Error& e) {
  throw RuntimeError(cudlaErrorUmd, e.what());
} catch (const std::bad_alloc&) {
  throw RuntimeError(cudlaErrorOutOfResources, "out of memory while loading the program");
} catch (const std::exception& e) {
  throw RuntimeError(cudlaErrorUmd, std::string("the loadable is inconsistent: ") + e.what());
}

Module::~Module() = default;

void Module::execute(const std::vector<const void*>& in, const std::vector<void*>& out,
                     const RunControl& control) const {
  if (in.size() != inputs_.size() || out.size() != outputs_.size())
    throw RuntimeError(cudlaErrorInvalidParam,
                       "execute: " + std::to_string(in.size()) + " input / " + std::to_string(out.size()) +
                           " output buffers; the module has " + std::to_string(inputs_.size()) + " / " +
                           std::to_string(outputs_.size()));
  for (size_t i = 0; i < in.size() + out.size(); ++i)
    if (!(i < in.size() ? in[i] : out[i - in.size()]))
      throw RuntimeError(cudlaErrorInvalidParam,
                         "execute: buffer for " +
                             std::string(i < in.size() ? "input '" + inputs_[i].name
                                                       : "output '" + outputs_[i - in.size()].name) +
                             "' is null");
  as_runtime_error(cudlaErrorDlaErrInvalidInput, [&] {
    control.check("the start");
    cpu_->run(in, out, control);
  });
}

std::vector<std::pair<std::string, double>> Module::profile(const std::vector<const void*>& in,
                                                            const std::vector<void*>& out) const {
  return cpu_->profile(in, out);
}

gpu::ProgramEngine& Module::gpu_engine() const {
  std::lock_guard<std::mutex> lk(gpu_mu_);
  if (!gpu_) gpu_ = std::make_unique<gpu::ProgramEngine>(prepared_);
  return *gpu_;
}

// ---- Core
Core& Core::get(int index) {
  static Core* cores[2] = {new Core, new Core};  // never destroyed: devices may outlive static teardown
  return *cores[index & 1];
}

Core::Core() : thread_([this] { loop(); }) {}

Core::~Core() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Core::enqueue(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    jobs_.push_back(std::move(job));
    ++queued_;
  }
  cv_.notify_all();
}

uint64_t Core::last_ticket() {
  std::lock_guard<std::mutex> lk(mu_);
  return queued_;
}

void Core::wait(uint64_t ticket) {
  std::unique_lock<std::mutex> lk(mu_);
  done_cv_.wait(lk, [&] { return done_ >= ticket; });
}

void Core::loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return stop_ || !jobs_.empty(); });
      if (stop_ && jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();  // jobs catch their own failures
    {
      std::lock_guard<std::mutex> lk(mu_);
      ++done_;
    }
    done_cv_.notify_all();
  }
}

// ---- Device
void Device::TaskState::record(cudlaStatus s) {
  std::lock_guard<std::mutex> lk(mu);
  last_error = s;
}

Device::Device(int core, MemoryPolicy memory)
    : core_(core), memory_(memory), dla_on_cuda_(gpu::cuda_chosen("DLAKIT_DLA_BACKEND")) {
  if (core != 0 && core != 1)
    throw RuntimeError(cudlaErrorInvalidDevice,
                       "DLA core " + std::to_string(core) + " does not exist (0 or 1)");
}

Device::~Device() {
  state_->cancelled = true;  // queued tasks stop at their next check; the caller's buffers are freed next
  synchronize();
}

void Device::load(const uint8_t* data, size_t size) {
  std::lock_guard<std::mutex> lk(mu_);
  if (module_)
    throw RuntimeError(cudlaErrorUnsupportedOperation,
                       "this device handle already has a module (one per handle)");
  module_ = std::make_shared<const Module>(data, size);
}

bool Device::has_module() const {
  std::lock_guard<std::mutex> lk(mu_);
  return module_ != nullptr;
}

std::shared_ptr<const Module> Device::loaded_module() const {
  std::lock_guard<std::mutex> lk(mu_);
  if (!module_) throw RuntimeError(cudlaErrorInvalidModule, "no module loaded on this device");
  return module_;
}

const Module& Device::module() const { return *loaded_module(); }

void Device::unload() {
  synchronize();
  std::lock_guard<std::mutex> lk(mu_);
  module_.reset();  // a task queued meanwhile holds its own reference
}

uint64_t* Device::register_memory(const void* ptr, size_t size) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  if (!ptr || size == 0) throw RuntimeError(cudlaErrorInvalidAddress, "null pointer or zero size");
  if (p & 31u)
    throw RuntimeError(cudlaErrorInvalidAddress, "address is not 32-byte aligned (the DLA requires it)");
  if (p + size < p) throw RuntimeError(cudlaErrorInvalidAddress, "the buffer wraps around the address space");
  const gpu::MemoryKind kind = gpu::memory_kind(ptr);  // asked once, here, not per task
  if (memory_ == MemoryPolicy::kLikeCudla && kind == gpu::MemoryKind::kHost && gpu::available())
    throw RuntimeError(cudlaErrorInvalidAddress,
                       "pageable host memory (malloc/new) cannot be registered in hybrid mode; allocate it "
                       "with cudaMalloc, cudaMallocManaged or cudaHostAlloc, as cuDLA requires on the board");
  std::lock_guard<std::mutex> lk(mu_);
  auto it = registered_.upper_bound(p);
  if (it != registered_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second.size > p)
      throw RuntimeError(cudlaErrorMemoryRegistered, "memory is already registered");
  }
  if (it != registered_.end() && it->first < p + size)
    throw RuntimeError(cudlaErrorMemoryRegistered, "memory overlaps a registered buffer");
  registered_[p] = {size, kind != gpu::MemoryKind::kHost};
  return reinterpret_cast<uint64_t*>(p);
}

void Device::unregister_memory(const uint64_t* ptr) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!registered_.erase(reinterpret_cast<uintptr_t>(ptr)))
    throw RuntimeError(cudlaErrorInvalidAddress, "this address was not registered on this device");
}

std::optional<Device::Registration> Device::registration(const void* ptr, size_t size) const {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lk(mu_);
  auto it = registered_.upper_bound(p);
  if (it == registered_.begin()) return std::nullopt;
  --it;
  if (p >= it->first && p + size >= p && p + size <= it->first + it->second.size) return it->second;
  return std::nullopt;
}

bool Device::is_registered(const void* ptr, size_t size) const { return registration(ptr, size).has_value(); }

void Device::submit(const std::vector<Task>& tasks, void* stream, bool noop) {
  const std::shared_ptr<const Module> m = loaded_module();
  // Every task is checked before any runs.
  std::vector<char> on_gpu(tasks.size(), 0);  // some buffer is CUDA memory: the task goes in stream order
  for (size_t k = 0; k < tasks.size(); ++k) {
    const Task& t = tasks[k];
    const std::string task = tasks.size() > 1 ? "task " + std::to_string(k) + ": " : "";
    if (t.inputs.size() != m->inputs().size() || t.outputs.size() != m->outputs().size())
      throw RuntimeError(cudlaErrorInvalidParam, task + std::to_string(t.inputs.size()) + " inputs / " +
                                                     std::to_string(t.outputs.size()) +
                                                     " outputs; the module has " +
                                                     std::to_string(m->inputs().size()) + " / " +
                                                     std::to_string(m->outputs().size()));
    auto check = [&](const auto& buffers, const std::vector<TensorDesc>& descs, const char* what) {
      for (size_t i = 0; i < buffers.size(); ++i) {
        const auto r = buffers[i] ? registration(buffers[i], descs[i].size) : std::nullopt;
        if (!r)
          throw RuntimeError(cudlaErrorInvalidAddress, task + what + " " + std::to_string(i) + " ('" +
                                                           descs[i].name + "', " +
                                                           std::to_string(descs[i].size) +
                                                           " bytes) is not a registered buffer of that size");
        on_gpu[k] = on_gpu[k] || r->cuda;
      }
    };
    check(t.inputs, m->inputs(), "input");
    check(t.outputs, m->outputs(), "output");
  }
  if (noop) return;
  for (size_t k = 0; k < tasks.size(); ++k)
    on_gpu[k] ? submit_cuda(m, tasks[k], stream) : run_now_or_queue(m, tasks[k], stream);
}

// On the device's emulated core: now (null stream) or queued in order. The job holds the module and the
// task state, never the device.
void Device::run_now_or_queue(const std::shared_ptr<const Module>& m, const Task& t, void* stream) {
  std::vector<const void*> in(t.inputs.begin(), t.inputs.end());
  std::vector<void*> out(t.outputs.begin(), t.outputs.end());
  auto job = [state = state_, m, in, out, timeout = timeout_ms_.load()] {
    try {
      m->execute(in, out, RunControl::timeout_ms(timeout, &state->cancelled));
    } catch (const RuntimeError& e) {
      state->record(e.status() == cudlaErrorDlaErrEngineTimeout ? e.status() : cudlaErrorDlaErrInvalidInput);
    } catch (...) {
      state->record(cudlaErrorDlaErrInvalidInput);
    }
  };
  Core& core = Core::get(core_);
  core.enqueue(job);
  const uint64_t ticket = core.last_ticket();
  {
    std::lock_guard<std::mutex> lk(mu_);
    last_ticket_ = std::max(last_ticket_, ticket);
  }
  if (!stream) core.wait(ticket);
}

// The DLA task between the stream's earlier and later work, in this device's queue: the emulated DLA on
// CUDA reading and writing the task's device buffers in place, or (DLAKIT_DLA_BACKEND=cpu) the CPU
// executor in a host step between copies to and from pinned staging buffers. The host step holds the
// module and the task state, never the device.
void Device::submit_cuda(const std::shared_ptr<const Module>& held, const Task& t, void* stream) {
  const Module& m = *held;
  std::lock_guard<std::mutex> lk(mu_);
  try {
    if (!queue_) queue_ = std::make_unique<gpu::Queue>();
    gpu::Queue& q = *queue_;
    const size_t ni = m.inputs().size(), no = m.outputs().size();
    q.begin(stream);
    if (dla_on_cuda_) {
      m.gpu_engine().enqueue(std::vector<const void*>(t.inputs.begin(), t.inputs.end()),
                             std::vector<void*>(t.outputs.begin(), t.outputs.end()), q.stream());
    } else {
      if (staging_.empty()) {
        for (auto& d : m.inputs()) staging_.emplace_back(d.size);
        for (auto& d : m.outputs()) staging_.emplace_back(d.size);
      }
      std::vector<const void*> in;
      std::vector<void*> out;
      for (size_t i = 0; i < ni; ++i) in.push_back(staging_[i].data());
      for (size_t i = 0; i < no; ++i) out.push_back(staging_[ni + i].data());
      for (size_t i = 0; i < ni; ++i) q.copy(staging_[i].data(), t.inputs[i], m.inputs()[i].size);
      // The outputs' staging starts as the outputs: a task stopped by its timeout copies back what was there.
      for (size_t i = 0; i < no; ++i) q.copy(staging_[ni + i].data(), t.outputs[i], m.outputs()[i].size);
      q.host([state = state_, held, in, out, timeout = timeout_ms_.load()] {
        try {
          held->execute(in, out, RunControl::timeout_ms(timeout, &state->cancelled));
        } catch (const RuntimeError& e) {
          state->record(e.status() == cudlaErrorDlaErrEngineTimeout ? e.status()
                                                                    : cudlaErrorDlaErrInvalidInput);
        } catch (...) {
          state->record(cudlaErrorDlaErrInvalidInput);
        }
      });
      for (size_t i = 0; i < no; ++i) q.copy(t.outputs[i], staging_[ni + i].data(), m.outputs()[i].size);
    }
    q.end(stream);
  } catch (const RuntimeError&) {
    throw;
  } catch (const std::exception& e) {
    throw RuntimeError(cudlaErrorCuda, std::string("CUDA backend: ") + e.what());
  }
}

void Device::synchronize() {
  if (queue_) {
    try {
      queue_->synchronize();
      const std::shared_ptr<const Module> m = [&] {
        std::lock_guard<std::mutex> lk(mu_);
        return module_;
      }();
      if (m && m->has_gpu_engine()) m->gpu_engine().synchronize();
    } catch (...) {
      state_->record(cudlaErrorDlaErrInvalidInput);
    }
  }
  uint64_t t;
  {
    std::lock_guard<std::mutex> lk(mu_);
    t = last_ticket_;
  }
  if (t) Core::get(core_).wait(t);
}

void Device::set_timeout_ms(uint32_t ms) {
  if (ms == 0 || ms > 1000u * 1000u)
    throw RuntimeError(cudlaErrorInvalidParam,
                       "task timeout must be 1..1000000 ms, got " + std::to_string(ms));
  timeout_ms_ = ms;
}

cudlaStatus Device::take_last_error() {
  std::lock_guard<std::mutex> lk(state_->mu);
  const cudlaStatus s = state_->last_error;
  state_->last_error = cudlaSuccess;
  return s;
}

}  // namespace dlakit::rt
