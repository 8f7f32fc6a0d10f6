// Single-precision GEMM: C(m,n) = sum_k A(m,k) * B(k,n), plus C when `accumulate`.
// A(m,k) = A[m*a_rs + k*a_cs] and B(k,n) = B[k*b_rs + n*b_cs] (any strides, so transposes are free);
// C is row-major with leading dimension ldc; an optional per-row bias is added as C is stored. Blocked and
// packed, with a vectorised micro-kernel chosen for the CPU at run time (AVX-512, AVX2+FMA, or portable).
// Threads over output tiles: column blocks, and row blocks when the columns alone cannot keep every thread
// busy. B may come from a packer instead of memory (a convolution's implicit im2col), and the stored tile
// may go through an epilogue (a residual added, then an activation) while it is still in cache.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace dlakit {

// A matrix packed once into the micro-kernel's panel layout (for weights reused across calls).
struct PackedA {
  int64_t M = 0, K = 0;
  std::vector<float> data;
};

// Writes rows [k0, k0+kc) x columns [j0, j0+nc) of B as panels of `panel` columns: panel p holds columns
// j0 + p*panel ..., k-major inside the panel (dst[p*kc*panel + k*panel + j]), zero padded past nc.
using PackB = std::function<void(int64_t k0, int64_t kc, int64_t j0, int64_t nc, int64_t panel, float* dst)>;

// What happens to C's values after the full sum (and bias): + residual(m,n), then the activation, in
// that order and with the arithmetic of the separate Add / Relu / Clip / LeakyRelu nodes, or of
// HardSigmoid then Mul(v, HardSigmoid(v)) (the hard swish of PP-LCNet as Paddle exports it).
struct GemmEpilogue {
  enum class Act { kNone, kRelu, kClip, kLeakyRelu, kHardSigmoidMul } act = Act::kNone;
  float lo = 0, hi = 0;             // Clip bounds
  float alpha = 0, beta = 0;        // LeakyRelu slope; HardSigmoid's alpha and beta
  const float* residual = nullptr;  // optional, row-major with leading dimension ldr
  int64_t ldr = 0;
  bool active() const { return act != Act::kNone || residual; }
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
  const PackB* pack_b = nullptr;      // optional: B comes from this packer (B and its strides unused)
  GemmEpilogue epilogue = {};
};

// Packs A (M x K, any strides) for sgemm on this CPU.
std::shared_ptr<const PackedA> sgemm_pack_a(int64_t M, int64_t K, const float* A, int64_t a_rs, int64_t a_cs);

void sgemm(const GemmArgs& g);
// The obviously-right triple loop (double accumulation, then the epilogue); the oracle sgemm is tested
// against. Reads B from memory only (no pack_b).
void sgemm_naive(const GemmArgs& g);
// Which micro-kernel sgemm uses on this CPU: "avx512", "avx2", or "generic".
const char* sgemm_isa();
// One value through the epilogue, as the separate nodes compute it (the oracle for the vector epilogue).
float gemm_epilogue_scalar(const GemmEpilogue& e, float v, float residual);
// The epilogue over n consecutive values of c (residual, if any, at e.residual[0..n)), vectorised.
void gemm_epilogue(const GemmEpilogue& e, float* c, int64_t n);

namespace gemm_isa {
void sgemm_avx512(const GemmArgs& g);
void sgemm_avx2(const GemmArgs& g);
void sgemm_generic(const GemmArgs& g);
void pack_a_avx512(PackedA& p, const float* A, int64_t a_rs, int64_t a_cs);
void epilogue_avx512(const GemmEpilogue& e, float* c, int64_t n);
void pack_a_avx2(PackedA& p, const float* A, int64_t a_rs, int64_t a_cs);
void epilogue_avx2(const GemmEpilogue& e, float* c, int64_t n);
void pack_a_generic(PackedA& p, const float* A, int64_t a_rs, int64_t a_cs);
void epilogue_generic(const GemmEpilogue& e, float* c, int64_t n);
}  // namespace gemm_isa

}  // namespace dlakit
