// The blocked, vectorised sgemm against the naive triple loop, on random data and awkward sizes.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>

#include "../common/cpu_isas.h"
#include "base/threadpool.h"
#include "kernels/gemm.h"

using namespace dlakit;

namespace {
std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}
}  // namespace

TEST(Gemm, MatchesNaiveOnRandomShapesAndStrides) {
  const int64_t sizes[][3] = {
      {1, 1, 1},       {5, 7, 3},     {6, 32, 256}, {7, 33, 257}, {64, 300, 147},
      {97, 1000, 513}, {24, 25, 864}, {1, 77, 300}, {1, 129, 5}};  // M = 1: the matrix-vector path
  uint32_t seed = 1;
  for (auto& s : sizes) {
    const int64_t M = s[0], N = s[1], K = s[2];
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (int acc = 0; acc < 2; ++acc) {
          auto A = random_vec(size_t(M * K), seed++), B = random_vec(size_t(K * N), seed++);
          auto C0 = random_vec(size_t(M * N), seed++);
          auto C1 = C0;
          auto bias = random_vec(size_t(M), seed++);
          GemmArgs g{M,
                     N,
                     K,
                     A.data(),
                     ta ? 1 : K,
                     ta ? M : 1,
                     B.data(),
                     tb ? 1 : N,
                     tb ? K : 1,
                     C0.data(),
                     N,
                     acc == 1,
                     (ta + tb) % 2 ? bias.data() : nullptr};
          // Every second case ends in an epilogue: a residual, then one of the activations.
          auto residual = random_vec(size_t(M * N), seed++);
          const int pick = int(seed % 4);
          if ((ta + tb + acc) % 2) {
            g.epilogue.act = pick == 0   ? GemmEpilogue::Act::kRelu
                             : pick == 1 ? GemmEpilogue::Act::kClip
                             : pick == 2 ? GemmEpilogue::Act::kLeakyRelu
                                         : GemmEpilogue::Act::kNone;
            g.epilogue.lo = -0.3f;
            g.epilogue.hi = 0.4f;
            g.epilogue.alpha = 0.2f;
            if (pick != 0) {
              g.epilogue.residual = residual.data();
              g.epilogue.ldr = N;
            }
          }
          sgemm(g);
          if (acc == 0) {  // the prepacked-A path must give the same result as packing on the fly
            auto packed = sgemm_pack_a(M, K, A.data(), g.a_rs, g.a_cs);
            std::vector<float> C2 = C1;
            GemmArgs gp = g;
            gp.C = C2.data();
            gp.packed_a = packed.get();
            sgemm(gp);
            for (int64_t i = 0; i < M * N; ++i)
              ASSERT_EQ(C2[size_t(i)], C0[size_t(i)]) << "packed A differs at " << i;
          }
          g.C = C1.data();
          sgemm_naive(g);
          for (int64_t i = 0; i < M * N; ++i)
            ASSERT_NEAR(C0[size_t(i)], C1[size_t(i)], 1e-4 * std::sqrt(double(K)) + 1e-5)
                << "M=" << M << " N=" << N << " K=" << K << " transA=" << ta << " transB=" << tb
                << " acc=" << acc << " act=" << int(g.epilogue.act) << " isa=" << sgemm_isa() << " at " << i;
        }
  }
}

// The micro-kernel of every ISA this CPU runs (sgemm uses only the widest) on tiles cut by M, N and K:
// partial tiles (masked loads and stores), last column panels computed with fewer vectors (partial, and whole
// vectors: 48 columns are a panel and a half of AVX-512's; 40 and 37 a panel and two vectors, whole or not,
// of AVX2's), two k-blocks, old C added, a bias, the epilogue with a residual, B read by rows (partial panels
// packed with masked loads) and by columns. AVX2 and AVX-512 sum each value as the same chain of FMAs per
// k-block, so they agree bit for bit; all three with the naive loop within rounding.
TEST(Gemm, EveryIsaOnThisCpuAgrees) {
  const auto isas = test_isa::usable(gemm_isa::sgemm_generic, gemm_isa::sgemm_avx2, gemm_isa::sgemm_avx512);
  const int64_t sizes[][3] = {{13, 49, 300}, {9, 17, 31},  {40, 196, 70}, {3, 5, 2},
                              {11, 48, 20},  {10, 40, 30}, {7, 37, 9}};
  uint32_t seed = 900;
  for (auto& s : sizes)
    for (int tb = 0; tb < 2; ++tb)
      for (int acc = 0; acc < 2; ++acc) {
        const int64_t M = s[0], N = s[1], K = s[2];
        const auto A = random_vec(size_t(M * K), seed++), B = random_vec(size_t(K * N), seed++),
                   C0 = random_vec(size_t(M * N), seed++), bias = random_vec(size_t(M), seed++),
                   residual = random_vec(size_t(M * N), seed++);
        GemmArgs g{M,          N,          K,       A.data(), K,        1,          B.data(),
                   tb ? 1 : N, tb ? K : 1, nullptr, N,        acc == 1, bias.data()};
        if (acc == 0)
          g.epilogue.act = GemmEpilogue::Act::kRelu, g.epilogue.residual = residual.data(),
          g.epilogue.ldr = N;
        std::vector<float> want = C0;
        g.C = want.data();
        sgemm_naive(g);
        std::vector<std::vector<float>> got;
        for (const auto& isa : isas) {
          std::vector<float> c = C0;
          g.C = c.data();
          isa.fn(g);
          for (int64_t i = 0; i < M * N; ++i)
            ASSERT_NEAR(c[size_t(i)], want[size_t(i)], 1e-4 * std::sqrt(double(K)) + 1e-5)
                << isa.name << " M=" << M << " N=" << N << " K=" << K << " transB=" << tb << " acc=" << acc
                << " at " << i;
          if (isa.fma) got.push_back(c);
        }
        if (got.size() == 2) {
          EXPECT_EQ(got[0], got[1]) << "AVX2 and AVX-512 differ, M=" << M << " N=" << N;
        }
      }
}

// The vectorised epilogue (gemm_epilogue: whole vectors, then a short run through one vector) against
// gemm_epilogue_scalar, the separate nodes' arithmetic, bit for bit: every activation, with and without a
// residual, on runs of every length up to three vectors, over NaN, infinities, signed zeros, values at and
// around each activation's bounds, and random values.
TEST(Gemm, VectorEpilogueMatchesTheScalarFormulaBitForBit) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> values = {nan,  -nan, inf,   -inf,   0.f,   -0.f,   -0.5f, 0.75f, -2.5f, 2.5f,
                               -3.f, 3.f,  1e-8f, -1e-8f, 5e37f, -5e37f, 0.1f,  -0.1f, 1.f,   -1.f};
  const auto random = random_vec(200, 7);
  for (float r : random) values.push_back(r * 4.f);
  GemmEpilogue act[5];
  act[1].act = GemmEpilogue::Act::kRelu;
  act[2].act = GemmEpilogue::Act::kClip;
  act[2].lo = -0.5f;
  act[2].hi = 0.75f;
  act[3].act = GemmEpilogue::Act::kLeakyRelu;
  act[3].alpha = 0.1f;
  act[4].act = GemmEpilogue::Act::kHardSigmoidMul;
  act[4].alpha = 0.2f;
  act[4].beta = 0.5f;
  const auto residual = random_vec(values.size(), 8);
  for (GemmEpilogue e : act)
    for (int with_residual = 0; with_residual < 2; ++with_residual) {
      e.residual = with_residual ? residual.data() : nullptr;
      for (size_t n = 1; n <= 48; ++n)
        for (size_t start = 0; start + n <= values.size(); start += 37) {
          std::vector<float> got(values.begin() + long(start), values.begin() + long(start + n));
          GemmEpilogue at = e;
          if (at.residual) at.residual += start;
          gemm_epilogue(at, got.data(), int64_t(n));
          for (size_t i = 0; i < n; ++i) {
            const float want = gemm_epilogue_scalar(e, values[start + i], residual[start + i]);
            ASSERT_EQ(std::memcmp(&got[i], &want, sizeof(float)), 0)
                << "act " << int(e.act) << " residual " << with_residual << " run of " << n << ": "
                << values[start + i] << " -> " << got[i] << ", want " << want << " (isa " << sgemm_isa()
                << ")";
          }
        }
    }
}

TEST(Gemm, ZeroDepthClearsOrKeepsC) {
  std::vector<float> C{1, 2, 3, 4};
  sgemm({2, 2, 0, nullptr, 0, 0, nullptr, 0, 0, C.data(), 2, true});
  EXPECT_EQ(C[3], 4.f);
  sgemm({2, 2, 0, nullptr, 0, 0, nullptr, 0, 0, C.data(), 2, false});
  EXPECT_EQ(C[3], 0.f);
}

TEST(ThreadPool, ParallelForCoversEveryIndexOnce) {
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    std::vector<std::atomic<int>> hits(1000);
    parallel_for(
        1000,
        [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
        },
        7);
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
  set_num_threads(2);
}

TEST(ThreadPool, HomeTasksGiveEachThreadItsOwnBlockFirstThenTheOthers) {
  HomeTasks tasks(10, 3);  // blocks [0, 3), [3, 6), [6, 10)
  std::vector<int64_t> order;
  for (int64_t t; (t = tasks.next(1)) >= 0;) order.push_back(t);
  EXPECT_EQ(order, (std::vector<int64_t>{3, 4, 5, 6, 7, 8, 9, 0, 1, 2}));
  EXPECT_EQ(HomeTasks(0, 2).next(0), -1);
  HomeTasks more_threads_than_tasks(2, 4);  // blocks [0, 0), [0, 1), [1, 1), [1, 2)
  EXPECT_EQ(more_threads_than_tasks.next(3), 1);
  EXPECT_EQ(more_threads_than_tasks.next(3), 0);
  EXPECT_EQ(more_threads_than_tasks.next(0), -1);
}

TEST(ThreadPool, HomeTasksClaimEveryTaskOnceAcrossThePool) {
  for (int threads : {2, 3}) {
    set_num_threads(threads);
    for (int64_t n : {1, 7, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      HomeTasks tasks(n, threads);
      parallel_for(threads, [&](int64_t, int64_t) {
        const int me = thread_index();
        ASSERT_LT(me, threads);
        for (int64_t t; (t = tasks.next(me)) >= 0;) hits[size_t(t)]++;
      });
      for (auto& h : hits) ASSERT_EQ(h.load(), 1) << threads << " threads, " << n << " tasks";
    }
  }
  set_num_threads(2);
}

TEST(ThreadPool, ExceptionsPropagateAndPoolKeepsWorking) {
  EXPECT_THROW(parallel_for(100,
                            [](int64_t b, int64_t) {
                              if (b > 10) throw std::runtime_error("x");
                            }),
               std::runtime_error);
  std::atomic<int64_t> sum{0};
  parallel_for(100, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) sum += i;
  });
  EXPECT_EQ(sum.load(), 4950);
}
