#define GEMM_VL 4
#define GEMM_MR 6
#define GEMM_NV 2
#define GEMM_NAME sgemm_generic
#define GEMM_PACK_NAME pack_a_generic
#define GEMM_EPILOGUE_NAME epilogue_generic
#include "kernels/gemm_kernel.inc"
#define CONV_DIRECT_MR 6
#define CONV_DIRECT_NV 2
#define CONV_DIRECT_NAME conv_direct_generic
#define CONV_PACK_NAME conv_pack_generic
#define DEPTHWISE_NAME depthwise_generic
#define CONV_CHANNELS_P 6
#define CONV_CHANNELS_NAME conv_channels_generic
#define CONV_CHANNELS_PACK_NAME conv_channels_pack_generic
#define TILE_SHAPES_NAME tile_shapes_generic
#include "kernels/conv_direct_kernel.inc"
