// The FP16 convolution (FP16 layers of a DLA program, the gpu-fp16 configuration) as one fp16 GEMM on
// cuBLASLt's tensor cores, summed in fp32:
//   1. the input is rounded to fp16 (the layer's input rule) into an im2col matrix of halves [K][pixels],
//   2. cuBLASLt multiplies it by the weights' fp16 values into fp32 sums [filters][pixels]: an fp16 x fp16
//      product is exact in fp32, so the result differs from conv_f32's only in the sums (their order and
//      the tensor cores' accumulation),
//   3. an epilogue kernel adds the bias, applies the fused activation and the store rule, and writes NCHW,
//      as conv_f32 and apply_store do.
// Host code of the CUDA backend only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "gpu/kernels.h"
#include "gpu/lt_matmul.h"

namespace dlakit::gpu {

class ConvF16Gemm {
 public:
  // Null where cuBLASLt cannot take g (no library or algorithm; groups: depthwise stays on conv_f32) or
  // the kernels' coordinates would pass 32 bits.
  static std::shared_ptr<const ConvF16Gemm> plan(const k::ConvGeom& g);
  // Whether every one of the n values is an fp16 value (weights must be: the product is exact only then).
  static bool half_values(const float* w, size_t n);
  ~ConvF16Gemm();
  ConvF16Gemm(const ConvF16Gemm&) = delete;
  ConvF16Gemm& operator=(const ConvF16Gemm&) = delete;

  // Scratch the runs need: the im2col matrix, the fp32 sums and cuBLASLt's workspace.
  size_t cols_bytes() const { return size_t(k_padded_ * pixels_padded_) * 2; }
  size_t sums_bytes() const { return size_t(g_.M * pixels_padded_) * 4; }
  size_t workspace_bytes() const { return lt_->workspace_bytes(); }
  // run()'s weight matrix: [M][K rounded up to 8] fp16 bits from w [M][C][KH][KW] (fp16 values), zeros past
  // K.
  std::vector<uint16_t> weights(const float* w) const;
  // x: float NCHW, each value rounded to fp16 (to nearest even) as it is read; w: weights() on the device;
  // bias: M values or null; y: float NCHW, as `store` leaves it.
  void run(const float* x, const uint16_t* w, const float* bias, k::ActParams act, const k::StoreRule& store,
           float* y, void* cols, void* sums, void* workspace, cudaStream_t s) const;

 private:
  explicit ConvF16Gemm(const k::ConvGeom& g);
  k::ConvGeom g_;
  int64_t k_padded_ = 0, pixels_ = 0, pixels_padded_ = 0;  // padded to 8: 16-byte rows of halves
  std::unique_ptr<LtMatmul> lt_;
};

}  // namespace dlakit::gpu
