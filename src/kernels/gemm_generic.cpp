#define GEMM_VL 4
#define GEMM_NAME sgemm_generic
#include "kernels/gemm_kernel.inc"
