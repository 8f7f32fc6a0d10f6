// What a running task is allowed: a deadline and a cancel flag. Every executor of a DLA task checks it
// between layers (with compiled DLA programs: between hardware operations) and once more before it writes
// the outputs, so a task that runs past its timeout (cudlaSetTaskTimeoutInMs) stops at the next check
// instead of running to the end, and its output buffers are left as they were.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>

namespace dlakit::rt {

struct RunControl {
  using Clock = std::chrono::steady_clock;
  Clock::time_point deadline = Clock::time_point::max();  // none by default
  const std::atomic<bool>* cancelled = nullptr;           // another thread sets it to stop the task

  // A deadline `ms` milliseconds from now (a task's timeout starts when the task starts running).
  static RunControl timeout_ms(uint32_t ms, const std::atomic<bool>* cancelled = nullptr) {
    return {Clock::now() + std::chrono::milliseconds(ms), cancelled};
  }
  bool can_stop() const { return cancelled || deadline != Clock::time_point::max(); }
  bool cancel_requested() const { return cancelled && cancelled->load(std::memory_order_relaxed); }
  // Throws RuntimeError(cudlaErrorDlaErrEngineTimeout) when the deadline has passed or the task was
  // cancelled; `layer` names where the task stopped.
  void check(const char* layer) const;
};

}  // namespace dlakit::rt
