// The INT8 convolution as one int8 GEMM on cuBLASLt's tensor-core kernels, bit for bit conv_int8's result:
//   1. the float input is quantized (quantize_i8's level) straight into an im2col matrix [pixels][K],
//   2. cuBLASLt multiplies it by the weight levels into int32 sums [pixels][filters] (int8 x int8 summed in
//      int32 is exact while conv_int8_mma_fits holds),
//   3. an epilogue kernel writes the float NCHW output through int8_conv_output, as every INT8 kernel does,
//      and the layer's store rule (device_math.cuh: stored), as apply_store would after it.
// cuBLASLt is opened at run time (libcublasLt.so.13), so neither libcudla.so.1 nor the package needs it: a
// machine without it, a convolution with groups, or a shape cuBLASLt has no int8 algorithm for keeps
// conv_int8_mma. Host code of the CUDA backend only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "gpu/kernels.h"

namespace dlakit::gpu {

class ConvInt8Gemm {
 public:
  // Null when cuBLASLt cannot take g (see above). k_padded: K rounded up to k::kMmaK.
  static std::shared_ptr<const ConvInt8Gemm> plan(const k::ConvGeom& g, int64_t k_padded);
  ~ConvInt8Gemm();
  ConvInt8Gemm(const ConvInt8Gemm&) = delete;
  ConvInt8Gemm& operator=(const ConvInt8Gemm&) = delete;

  // Rows of the weight matrix run() reads: M rounded up to 4 (cuBLASLt's int8 kernels want leading
  // dimensions in multiples of 4); the rows past M are zeros.
  int64_t filters_padded() const { return m_padded_; }
  // Scratch run() needs: the im2col matrix, the int32 sums and cuBLASLt's workspace.
  size_t cols_bytes() const { return size_t(pixels_ * k_padded_); }
  size_t sums_bytes() const { return size_t(pixels_ * m_padded_) * 4; }
  size_t workspace_bytes() const { return workspace_; }

  // x: float NCHW (quantized with s_in, rounding 0 half away from zero, 1 half to even); w: levels
  // [filters_padded][k_padded], zeros past M and K; y: float NCHW, as `store` leaves it.
  void run(const float* x, float s_in, int rounding, const int8_t* w, const float* mult, const double* bq,
           const float* bias, k::ActParams act, const k::StoreRule& store, float* y, void* cols, void* sums,
           void* workspace, cudaStream_t s) const;

  struct Descriptors;  // cuBLASLt's, kept out of this header

 private:
  ConvInt8Gemm(const k::ConvGeom& g, int64_t k_padded);
  k::ConvGeom g_;
  int64_t k_padded_ = 0, m_padded_ = 0, pixels_ = 0;
  size_t workspace_ = 0;
  std::unique_ptr<Descriptors> lt_;
};

}  // namespace dlakit::gpu
