// The FP16 convolution (FP16 layers of a DLA program, the gpu-fp16 configuration) as one fp16 GEMM on
// tensor cores, summed in fp32, by one of two routes:
// - im2col + cuBLASLt:
//   1. the input is rounded to fp16 (the layer's input rule) into an im2col matrix of halves [K][pixels],
//   2. cuBLASLt multiplies it by the weights' fp16 values into fp32 sums [filters][pixels],
//   3. an epilogue kernel adds the bias, applies the fused activation and the store rule, and writes NCHW,
//      as conv_f32 and apply_store do;
// - the implicit GEMM (conv_half_mma.h): the input rounded into an fp16 chw16 surface (or one given), then
//   one kernel that sums on tensor cores and applies the same epilogue to its registers.
// An fp16 x fp16 product is exact in fp32, so either result differs from conv_f32's only in the sums (their
// order and the tensor cores' accumulation). Host code of the CUDA backend only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "gpu/conv_half_mma.h"
#include "gpu/implicit_gemm.h"
#include "gpu/kernels.h"
#include "gpu/lt_matmul.h"

namespace dlakit::gpu {

class ConvF16Gemm {
 public:
  // kChoose: the implicit GEMM where it is on (implicit_gemm_enabled), its tile fills the GPU and padding
  // the channels to whole atoms adds at most a quarter to K (not a first layer's 3 channels); otherwise, and
  // with kIm2col, im2col + cuBLASLt.
  enum class Route { kChoose, kIm2col };
  // Null where the route cannot take g (cuBLASLt: no library or algorithm; groups: depthwise stays on
  // conv_f32) or the kernels' coordinates would pass 32 bits.
  static std::shared_ptr<const ConvF16Gemm> plan(const k::ConvGeom& g, Route route = Route::kChoose);
  // Whether every one of the n values is an fp16 value (weights must be: the product is exact only then).
  static bool half_values(const float* w, size_t n);
  ~ConvF16Gemm();
  ConvF16Gemm(const ConvF16Gemm&) = delete;
  ConvF16Gemm& operator=(const ConvF16Gemm&) = delete;

  bool implicit() const { return !lt_; }
  // Scratch the runs need: the input as halves (the im2col matrix or the chw16 surface), the fp32 sums
  // (cuBLASLt's, or the implicit GEMM's parts of a split K) and cuBLASLt's workspace.
  size_t cols_bytes() const;
  size_t sums_bytes() const { return lt_ ? size_t(g_.M * pixels_padded_) * 4 : split_sums_bytes(g_, shape_); }
  size_t workspace_bytes() const { return lt_ ? lt_->workspace_bytes() : 0; }
  // The counts a split K needs (split_arrivals; 0: none), zero before the first run: memory of the
  // caller's that only this convolution uses (the runs leave it zero).
  int64_t arrival_counts() const { return lt_ ? 0 : split_arrivals(g_, shape_); }
  // The implicit GEMM's tile and split (unused on im2col + cuBLASLt).
  MmaShape shape() const { return shape_; }
  // run()'s weight matrix as fp16 bits from w [M][C][KH][KW] (fp16 values): [M][K rounded up to 8], zeros
  // past K, or half_atoms_weights.
  std::vector<uint16_t> weights(const float* w) const;
  // x: float NCHW, each value rounded to fp16 (to nearest even) as it is read, or, only where implicit(), an
  // fp16 chw16 surface; w: weights() on the device; bias: M values or null; residual: a fused Add, only where
  // implicit(); y: float NCHW, as `store` (or the residual's rules) leave it, or, only where implicit() and
  // those rules store fp16, a surface; cols, sums, workspace: cols_bytes(), sums_bytes(), workspace_bytes()
  // of scratch; arrivals: arrival_counts() zeroed counts (null where that is 0).
  void run(HalfInput x, const uint16_t* w, const float* bias, k::ActParams act, const k::StoreRule& store,
           const HalfResidual* residual, HalfOutput y, void* cols, void* sums, void* workspace,
           unsigned* arrivals, cudaStream_t s) const;

 private:
  explicit ConvF16Gemm(const k::ConvGeom& g);
  k::ConvGeom g_;
  int64_t k_padded_ = 0, pixels_ = 0, pixels_padded_ = 0;  // padded to 8: 16-byte rows of halves
  std::unique_ptr<LtMatmul> lt_;                           // null: the implicit GEMM
  MmaShape shape_;
};

}  // namespace dlakit::gpu
