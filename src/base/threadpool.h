// A small fixed thread pool with a blocking parallel_for. The caller's thread takes part.
#pragma once
#include <cstdint>
#include <functional>

namespace dlakit {

// Number of threads used by kernels: DLAKIT_NUM_THREADS, else 2 (the target machines have 2 cores).
int num_threads();
void set_num_threads(int n);

// Calls fn(begin, end) on disjoint chunks covering [0, n). Runs inline when n is small or 1 thread.
void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t min_chunk = 1);

}  // namespace dlakit
