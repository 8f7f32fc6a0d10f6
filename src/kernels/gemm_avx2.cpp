#define GEMM_VL 8
#define GEMM_MR 6
#define GEMM_NAME sgemm_avx2
#define GEMM_PACK_NAME pack_a_avx2
#include "kernels/gemm_kernel.inc"
