#include "kernels/gemm.h"

#include <cstring>

namespace dlakit {
namespace {

using Fn = void (*)(const GemmArgs&);
using PackFn = void (*)(PackedA&, const float*, int64_t, int64_t);

struct Choice {
  Fn fn;
  PackFn pack;
  const char* name;
};

Choice choose() {
#if defined(__x86_64__) && defined(DLAKIT_HAVE_X86_KERNELS)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {gemm_isa::sgemm_avx512, gemm_isa::pack_a_avx512, "avx512"};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {gemm_isa::sgemm_avx2, gemm_isa::pack_a_avx2, "avx2"};
#endif
  return {gemm_isa::sgemm_generic, gemm_isa::pack_a_generic, "generic"};
}

const Choice& choice() {
  static const Choice c = choose();
  return c;
}

}  // namespace

void sgemm(const GemmArgs& g) { choice().fn(g); }

std::shared_ptr<const PackedA> sgemm_pack_a(int64_t M, int64_t K, const float* A, int64_t a_rs,
                                            int64_t a_cs) {
  auto p = std::make_shared<PackedA>();
  p->M = M;
  p->K = K;
  choice().pack(*p, A, a_rs, a_cs);
  return p;
}
const char* sgemm_isa() { return choice().name; }

void sgemm_naive(const GemmArgs& g) {
  for (int64_t i = 0; i < g.M; ++i)
    for (int64_t j = 0; j < g.N; ++j) {
      double s = (g.accumulate ? g.C[i * g.ldc + j] : 0.0) + (g.row_bias ? g.row_bias[i] : 0.f);
      for (int64_t k = 0; k < g.K; ++k)
        s += double(g.A[i * g.a_rs + k * g.a_cs]) * g.B[k * g.b_rs + j * g.b_cs];
      g.C[i * g.ldc + j] = float(s);
    }
}

}  // namespace dlakit
