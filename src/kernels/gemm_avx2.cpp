#define GEMM_VL 8
#define GEMM_NAME sgemm_avx2
#include "kernels/gemm_kernel.inc"
