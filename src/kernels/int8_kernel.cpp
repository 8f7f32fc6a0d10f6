#include "kernels/int8_kernel.h"

#include <algorithm>
#include <atomic>

#include "base/cpu.h"
#include "base/error.h"
#include "kernels/int8_simd.h"

namespace dlakit {

namespace {
Int8Kernel fastest() {
#if defined(__x86_64__)
  if (cpu::avx512_vnni()) return Int8Kernel::kAvx512Vnni;
  if (cpu::avx2_fma()) return Int8Kernel::kAvx2;
#endif
  return Int8Kernel::kGeneric;
}
const Int8Kernel kFastest = fastest();
std::atomic<Int8Kernel> g_kernel{kFastest};
}  // namespace

const char* int8_kernel_name(Int8Kernel k) {
  switch (k) {
    case Int8Kernel::kAvx512Vnni:
      return "avx512-vnni";
    case Int8Kernel::kAvx2:
      return "avx2";
    case Int8Kernel::kGeneric:
      break;
  }
  return "generic";
}

std::vector<Int8Kernel> int8_kernels() {
  std::vector<Int8Kernel> v;
  if (kFastest == Int8Kernel::kAvx512Vnni) v.push_back(Int8Kernel::kAvx512Vnni);
  if (kFastest != Int8Kernel::kGeneric) v.push_back(Int8Kernel::kAvx2);  // AVX-512 CPUs have AVX2
  v.push_back(Int8Kernel::kGeneric);
  return v;
}

Int8Kernel int8_kernel() { return g_kernel.load(std::memory_order_relaxed); }

Int8Kernel int8_kernel_use(Int8Kernel k) {
  const auto runs = int8_kernels();
  if (std::find(runs.begin(), runs.end(), k) == runs.end())
    fail(Status::kInvalidArgument, "int8_kernel_use: this CPU does not run the ", int8_kernel_name(k),
         " kernel");
  return g_kernel.exchange(k);
}

}  // namespace dlakit
