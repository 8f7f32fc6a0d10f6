#define GEMM_VL 16
#define GEMM_NAME sgemm_avx512
#include "kernels/gemm_kernel.inc"
