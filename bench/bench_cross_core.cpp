// What a mismatched split of work between two layers costs: two threads pinned to cores 0 and 1 each write
// half of a buffer, then each reads either its own half (what the next layer does when it splits the work
// as the last one did) or the other half (when it does not). Prints the mean read time per half, for halves
// of 0.2 to 6 MB. dlakit_bench_cross_core [repetitions]; docs/benchmarks.md reads it.
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

// Both threads wait here until the other has arrived (a spinning two-party barrier).
class Barrier {
 public:
  void wait(int& generation) {
    const int g = ++generation;
    if (arrived_.fetch_add(1) % 2 == 1)
      released_.store(g);
    else
      while (released_.load() < g) {
      }
  }

 private:
  std::atomic<int> arrived_{0}, released_{0};
};

void pin(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0) {
    std::fprintf(stderr, "bench_cross_core: cannot pin a thread to core %d (it needs two cores)\n", core);
    std::exit(1);
  }
}

struct Times {
  double own_us = 0, other_us = 0;
};

Times run(size_t half_floats, int repetitions) {
  std::vector<float> data(2 * half_floats, 1.f);
  Barrier barrier;
  Times times[2];
  auto body = [&](int me) {
    pin(me);
    int generation = 0;
    float sink = 0;
    for (int r = 0; r < repetitions; ++r)
      for (int other = 0; other < 2; ++other) {
        float* mine = data.data() + me * half_floats;
        for (size_t i = 0; i < half_floats; ++i) mine[i] = float(r) + float(i & 7);
        barrier.wait(generation);
        const float* read = data.data() + (other ? 1 - me : me) * half_floats;
        const auto t0 = std::chrono::steady_clock::now();
        float lanes[16] = {};  // 16 independent sums: the loop runs at load speed, not add latency
        for (size_t i = 0; i + 16 <= half_floats; i += 16)
          for (int j = 0; j < 16; ++j) lanes[j] += read[i + j];
        float sum = 0;
        for (float v : lanes) sum += v;
        const double us =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        sink += sum;
        (other ? times[me].other_us : times[me].own_us) += us / repetitions;
        barrier.wait(generation);
      }
    if (sink == -1.f) std::printf(" ");  // keeps the sums
  };
  std::thread second(body, 1);
  body(0);
  second.join();
  return {(times[0].own_us + times[1].own_us) / 2, (times[0].other_us + times[1].other_us) / 2};
}

}  // namespace

int main(int argc, char** argv) {
  const int repetitions = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
  std::printf("half (MB)  own half (us)  other core's half (us)  ratio\n");
  for (double mb : {0.2, 0.5, 0.9, 1.8, 3.0, 6.0}) {
    const Times t = run(size_t(mb * 1024 * 1024 / 4), repetitions);
    std::printf("%9.1f  %13.1f  %22.1f  %5.2f\n", mb, t.own_us, t.other_us, t.other_us / t.own_us);
  }
  return 0;
}
