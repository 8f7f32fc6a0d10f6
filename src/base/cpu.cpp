#include "base/cpu.h"

#if defined(__x86_64__)
namespace dlakit::cpu {
namespace {
// __builtin_cpu_init first: a check may run from another file's static initialiser, before libgcc has read
// cpuid.
template <typename Check>
bool once(Check check) {
  __builtin_cpu_init();
  return check();
}
}  // namespace

bool avx2() {
  static const bool yes = once([] { return __builtin_cpu_supports("avx2"); });
  return yes;
}
bool avx2_fma() {
  static const bool yes =
      once([] { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); });
  return yes;
}
bool f16c() {
  // Every AVX2 CPU has F16C; "avx2" is a feature name both GCC and clang accept ("f16c" is not in clang 14).
  return avx2();
}
bool avx512() {
  static const bool yes = once([] { return __builtin_cpu_supports("avx512f"); });
  return yes;
}
bool avx512_vnni() {
  static const bool yes = once([] {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512vnni");
  });
  return yes;
}
}  // namespace dlakit::cpu
#endif
