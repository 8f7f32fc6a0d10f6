#include "targets/dla/engines.h"

namespace dlakit::dla {

EngineChoice engine_of(OpKind op) {
  using prog::Engine;
  switch (op) {
    case OpKind::Conv:
    case OpKind::Gemm:
    case OpKind::MatMul:
      return {Engine::kConv,
              "NVDLA v1: the convolution pipeline runs direct convolution and fully connected"};
    case OpKind::ConvTranspose:
      return {Engine::kConv, "NVDLA v1: deconvolution is a convolution followed by a RUBIK contract"};
    case OpKind::MaxPool:
    case OpKind::AveragePool:
    case OpKind::GlobalAveragePool:
    case OpKind::GlobalMaxPool:
      return {Engine::kPdp, "NVDLA v1: PDP pools max/min/avg within planes"};
    case OpKind::ReduceMean:
    case OpKind::ReduceMax:
    case OpKind::ReduceSum:
      return {Engine::kPdp,
              "[U] a reduction over H/W is a pooling; DLA 2.0's Reduce layer is not documented"};
    case OpKind::LRN:
      return {Engine::kCdp, "NVDLA v1: CDP computes cross-channel LRN"};
    case OpKind::Softmax:
      return {Engine::kSdp,
              "[U] DLA 2.0's SoftMax engine is not documented; dlakit counts it as SDP LUT work"};
    case OpKind::Transpose:
    case OpKind::Reshape:
    case OpKind::Flatten:
    case OpKind::Squeeze:
    case OpKind::Unsqueeze:
      return {Engine::kRubik,
              "NVDLA v1: RUBIK contracts, splits and merges planes; general shuffles are [U]"};
    case OpKind::Resize:
    case OpKind::Upsample:
      return {Engine::kRubik, "[U] DLA 2.0's Resize engine is not documented; dlakit counts it as RUBIK"};
    case OpKind::Concat:
    case OpKind::Slice:
    case OpKind::Split:
    case OpKind::Identity:
    case OpKind::Dropout:
      return {Engine::kBdma, "NVDLA v1: BDMA copies lines and surfaces (used where aliasing cannot)"};
    default:
      return {Engine::kSdp,
              "NVDLA v1: SDP runs bias, batch norm, element-wise, PReLU, ReLU and LUT functions"};
  }
}

}  // namespace dlakit::dla
