// The ISAs of dlakit's float kernels (src/kernels/gemm_*.cpp) that this CPU runs. The engine calls only the
// widest, so the tests that cover every variant call each one directly. AVX2 and AVX-512 compute each value
// as the same chain of FMAs (the same bits); the generic kernels have no FMA.
#pragma once
#include <vector>

#include "base/cpu.h"

namespace test_isa {

template <typename Fn>
struct Isa {
  const char* name;
  Fn fn;
  bool fma;
};

// generic always; avx2 and avx512 where this CPU has them.
template <typename Fn>
std::vector<Isa<Fn>> usable(Fn generic, Fn avx2, Fn avx512) {
  std::vector<Isa<Fn>> isas{{"generic", generic, false}};
  if (dlakit::cpu::avx2_fma()) isas.push_back({"avx2", avx2, true});
  if (dlakit::cpu::avx512()) isas.push_back({"avx512", avx512, true});
  return isas;
}

}  // namespace test_isa
