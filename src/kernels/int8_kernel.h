// Which exact INT8 CPU kernels run (kernels/conv_int8, kernels/int8_atoms): one choice for both, the
// fastest this CPU has, unless a test forces another. Every kernel computes the same bits.
#pragma once
#include <vector>

namespace dlakit {

// kGeneric (the plain loops on the same layouts) first: a zero-initialized choice runs everywhere.
enum class Int8Kernel { kGeneric, kAvx2, kAvx512Vnni };
const char* int8_kernel_name(Int8Kernel k);  // "avx512-vnni", "avx2", "generic"
// The kernels this CPU runs, fastest first (kGeneric, last, everywhere).
std::vector<Int8Kernel> int8_kernels();
// The kernel in use.
Int8Kernel int8_kernel();
// Forces one of int8_kernels() (tests run each); returns the previous one. Convolution weights packed
// while the AVX2 kernel is not in use have no 16-bit copy and run on the plain loops under it.
Int8Kernel int8_kernel_use(Int8Kernel k);

}  // namespace dlakit
