#define GEMM_VL 4
#define GEMM_MR 6
#define GEMM_NAME sgemm_generic
#define GEMM_PACK_NAME pack_a_generic
#include "kernels/gemm_kernel.inc"
