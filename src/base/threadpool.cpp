#include "base/threadpool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace dlakit {
namespace {
thread_local int t_index = 0;  // the pool's workers are 1..W; every other thread is 0

// Waits for `ready` by spinning for up to kSpin (the gap between two parallel regions of one inference is
// usually shorter: sleeping on a condition variable and being woken costs more than that), then returns
// false so the caller blocks; with `spin` false it returns false at once.
constexpr auto kSpin = std::chrono::microseconds(200);
// Spinning threads beyond the cores would take them from the caller's serial work.
bool may_spin(int threads) { return threads <= int(std::max(1u, std::thread::hardware_concurrency())); }

template <typename Ready>
bool spin_until(bool spin, Ready ready) {
  if (!spin) return false;
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (ready()) return true;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
    if (i % 64 == 63 && std::chrono::steady_clock::now() > deadline) return false;
  }
}

class Pool {
 public:
  explicit Pool(int workers) : spin_(may_spin(workers + 1)) {
    for (int i = 0; i < workers; ++i)
      threads_.emplace_back([this, i] {
        t_index = i + 1;
        loop();
      });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  int size() const { return int(threads_.size()) + 1; }

  // Runs job(i) for i in [0, count) across the workers and the caller; rethrows the first exception.
  void run(int count, const std::function<void(int)>& job) {
    std::unique_lock<std::mutex> call(call_mu_);  // one parallel region at a time
    {
      std::lock_guard<std::mutex> lk(mu_);
      job_ = &job;
      count_ = count;
      next_ = 0;
      done_ = 0;
      error_ = nullptr;
      generation_.fetch_add(1);
    }
    cv_.notify_all();
    work();
    spin_until(spin_, [&] { return done_.load() == count && active_.load() == 0; });
    // Confirmed under the lock: a worker that has not yet joined this region finds job_ cleared.
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [&] { return done_ == count_ && active_ == 0; });
    job_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void work() {
    for (;;) {
      int i = next_.fetch_add(1);
      if (i >= count_) return;
      try {
        (*job_)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lk(mu_);
        if (!error_) error_ = std::current_exception();
      }
      if (done_.fetch_add(1) + 1 == count_) {
        std::lock_guard<std::mutex> lk(mu_);
        done_cv_.notify_all();
      }
    }
  }
  void loop() {
    uint64_t seen = 0;
    for (;;) {
      spin_until(spin_, [&] { return stop_.load() || generation_.load() != seen; });
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        // A region this worker was woken for but reached after the others finished it: back to spinning
        // for the next one, not to sleep. Sleeping again here kept a worker that once slept (a gap longer
        // than kSpin) out of every short region after it: each one woke it too late (5-20 us on a VM).
        if (job_ == nullptr) continue;
        ++active_;  // run() waits for every worker to leave work() before the next region starts
      }
      work();
      std::lock_guard<std::mutex> lk(mu_);
      if (--active_ == 0) done_cv_.notify_all();
    }
  }

  const bool spin_;
  std::vector<std::thread> threads_;
  std::mutex mu_, call_mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int)>* job_ = nullptr;
  int count_ = 0;
  std::atomic<int> next_{0}, done_{0}, active_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;
};

int default_threads() {
  if (const char* env = std::getenv("DLAKIT_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n >= 1 && n <= 256) return n;
  }
  return 2;
}

std::atomic<int> g_threads{default_threads()};
std::mutex g_pool_mu;
std::unique_ptr<Pool> g_pool;
thread_local bool t_inside = false;  // nested parallel_for runs inline

Pool& pool() {
  std::lock_guard<std::mutex> lk(g_pool_mu);
  if (!g_pool || g_pool->size() != g_threads) {
    g_pool.reset();
    g_pool = std::make_unique<Pool>(g_threads - 1);
  }
  return *g_pool;
}

}  // namespace

int num_threads() { return g_threads; }
int thread_index() { return t_index; }

HomeTasks::HomeTasks(int64_t n, int threads) : blocks_(size_t(std::max(threads, 1))) {
  const int64_t parts = int64_t(blocks_.size());
  for (int64_t k = 0; k < parts; ++k) {
    blocks_[size_t(k)].next = k * n / parts;
    blocks_[size_t(k)].end = (k + 1) * n / parts;
  }
}

int64_t HomeTasks::next(int thread) {
  const size_t parts = blocks_.size();
  for (size_t k = 0; k < parts; ++k) {
    Block& b = blocks_[(size_t(thread) + k) % parts];
    if (b.next.load(std::memory_order_relaxed) >= b.end) continue;
    const int64_t t = b.next.fetch_add(1);
    if (t < b.end) return t;
  }
  return -1;
}
void set_num_threads(int n) { g_threads = std::clamp(n, 1, 256); }

void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t min_chunk) {
  if (n <= 0) return;
  int threads = g_threads;
  int64_t chunks = std::min<int64_t>(threads * 4, (n + min_chunk - 1) / std::max<int64_t>(min_chunk, 1));
  if (threads == 1 || chunks <= 1 || t_inside) {
    fn(0, n);
    return;
  }
  int64_t step = (n + chunks - 1) / chunks;
  pool().run(int((n + step - 1) / step), [&](int c) {
    t_inside = true;
    int64_t b = c * step, e = std::min(n, b + step);
    try {
      fn(b, e);
    } catch (...) {
      t_inside = false;
      throw;
    }
    t_inside = false;
  });
}

}  // namespace dlakit
