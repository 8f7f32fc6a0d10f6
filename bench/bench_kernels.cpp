// Kernel micro-benchmarks (Google Benchmark): sgemm at conv-like shapes, reported in GFLOP/s.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "kernels/gemm.h"

static void BM_Sgemm(benchmark::State& st) {
  const int64_t M = st.range(0), N = st.range(1), K = st.range(2);
  std::vector<float> A(size_t(M * K)), B(size_t(K * N)), C(size_t(M * N));
  std::mt19937 g(1);
  std::uniform_real_distribution<float> d(-1, 1);
  for (auto& x : A) x = d(g);
  for (auto& x : B) x = d(g);
  for (auto _ : st) {
    dlakit::sgemm({M, N, K, A.data(), K, 1, B.data(), N, 1, C.data(), N, false});
    benchmark::DoNotOptimize(C.data());
  }
  st.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * double(M * N * K), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  st.SetLabel(dlakit::sgemm_isa());
}
// resnet50 layer shapes: 1x1 64->256 @56x56, 3x3 128->128 @28x28, 1x1 2048->512 @7x7, FC 1x2048x1000
BENCHMARK(BM_Sgemm)
    ->Args({256, 3136, 64})
    ->Args({128, 784, 1152})
    ->Args({512, 49, 2048})
    ->Args({1, 1000, 2048})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
