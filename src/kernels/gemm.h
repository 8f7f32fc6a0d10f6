// Single-precision GEMM: C(m,n) = sum_k A(m,k) * B(k,n), plus C when `accumulate`.
// A(m,k) = A[m*a_rs + k*a_cs] and B(k,n) = B[k*b_rs + n*b_cs] (any strides, so transposes are free);
// C is row-major with leading dimension ldc; an optional per-row bias is added as C is stored. Blocked and
// packed, with a vectorised micro-kernel chosen for the CPU at run time (AVX-512, AVX2+FMA, or portable).
// Threads over output tiles.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

namespace dlakit {

// A matrix packed once into the micro-kernel's panel layout (for weights reused across calls).
struct PackedA {
  int64_t M = 0, K = 0;
  std::vector<float> data;
};

struct GemmArgs {
  int64_t M, N, K;
  const float* A;
  int64_t a_rs, a_cs;
  const float* B;
  int64_t b_rs, b_cs;
  float* C;
  int64_t ldc;
  bool accumulate;
  const float* row_bias = nullptr;    // optional: C(m,n) += row_bias[m], applied in the store epilogue
  const PackedA* packed_a = nullptr;  // optional: A already packed by sgemm_pack_a (A and its strides unused)
};

// Packs A (M x K, any strides) for sgemm on this CPU.
std::shared_ptr<const PackedA> sgemm_pack_a(int64_t M, int64_t K, const float* A, int64_t a_rs, int64_t a_cs);

void sgemm(const GemmArgs& g);
// The obviously-right triple loop (double accumulation); the oracle sgemm is tested against.
void sgemm_naive(const GemmArgs& g);
// Which micro-kernel sgemm uses on this CPU: "avx512", "avx2", or "generic".
const char* sgemm_isa();

namespace gemm_isa {
void sgemm_avx512(const GemmArgs& g);
void sgemm_avx2(const GemmArgs& g);
void sgemm_generic(const GemmArgs& g);
void pack_a_avx512(PackedA& p, const float* A, int64_t a_rs, int64_t a_cs);
void pack_a_avx2(PackedA& p, const float* A, int64_t a_rs, int64_t a_cs);
void pack_a_generic(PackedA& p, const float* A, int64_t a_rs, int64_t a_cs);
}  // namespace gemm_isa

}  // namespace dlakit
