#define GEMM_VL 8
#define GEMM_MR 4
#define GEMM_NV 3
#define GEMM_NAME sgemm_avx2
#define GEMM_PACK_NAME pack_a_avx2
#define GEMM_EPILOGUE_NAME epilogue_avx2
#include "kernels/gemm_kernel.inc"
#define CONV_DIRECT_MR 6
#define CONV_DIRECT_NV 2
#define CONV_DIRECT_NAME conv_direct_avx2
#define CONV_PACK_NAME conv_pack_avx2
#define DEPTHWISE_NAME depthwise_avx2
#define CONV_CHANNELS_P 6
#define CONV_CHANNELS_NAME conv_channels_avx2
#define CONV_CHANNELS_PACK_NAME conv_channels_pack_avx2
#define TILE_SHAPES_NAME tile_shapes_avx2
#include "kernels/conv_direct_kernel.inc"
