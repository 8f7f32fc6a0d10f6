#define GEMM_VL 16
#define GEMM_MR 8
#define GEMM_NV 2
#define GEMM_NAME sgemm_avx512
#define GEMM_PACK_NAME pack_a_avx512
#define GEMM_EPILOGUE_NAME epilogue_avx512
#include "kernels/gemm_kernel.inc"
#define CONV_DIRECT_MR 8
#define CONV_DIRECT_NV 2
#define CONV_DIRECT_NAME conv_direct_avx512
#define CONV_PACK_NAME conv_pack_avx512
#define DEPTHWISE_NAME depthwise_avx512
#define CONV_CHANNELS_P 8
#define CONV_CHANNELS_NAME conv_channels_avx512
#define CONV_CHANNELS_PACK_NAME conv_channels_pack_avx512
#define TILE_SHAPES_NAME tile_shapes_avx512
#include "kernels/conv_direct_kernel.inc"
#define DEPTHWISE_LANES_NAME depthwise_lanes_avx512
#include "kernels/depthwise_lanes_kernel.inc"
#include "kernels/expand_depthwise_kernel.inc"
