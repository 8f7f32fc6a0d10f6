#define GEMM_VL 16
#define GEMM_MR 6
#define GEMM_NAME sgemm_avx512
#define GEMM_PACK_NAME pack_a_avx512
#include "kernels/gemm_kernel.inc"
