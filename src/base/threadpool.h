// A small fixed thread pool with a blocking parallel_for. The caller's thread takes part.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

namespace dlakit {

// Number of threads used by kernels: DLAKIT_NUM_THREADS, else 2 (the target machines have 2 cores).
int num_threads();
void set_num_threads(int n);
// Which of the pool's threads this is: 0 for the caller of parallel_for (and any thread outside the pool),
// 1.. for the workers.
int thread_index();

// Calls fn(begin, end) on disjoint chunks covering [0, n). Runs inline when n is small or 1 thread.
void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t min_chunk = 1);

// Tasks [0, n) in one contiguous block per thread. Each thread takes its own block's tasks first, in
// order, then helps with the others' (from their front). With the same n and thread count the same thread
// starts on the same block in every region: each thread walks contiguous output rows, layer after layer.
class HomeTasks {
 public:
  HomeTasks(int64_t n, int threads);
  // The next task for `thread` (thread_index()), or -1 when every task is taken.
  int64_t next(int thread);

 private:
  struct alignas(64) Block {
    std::atomic<int64_t> next{0};
    int64_t end = 0;
  };
  std::vector<Block> blocks_;
};

}  // namespace dlakit
