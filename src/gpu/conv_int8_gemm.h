// The INT8 convolution as one int8 GEMM on cuBLASLt's tensor-core kernels, bit for bit conv_int8's result:
//   1. the float input is quantized (quantize_i8's level) once into a copy bordered with the convolution's
//      zero padding (PaddedLevels), from which the im2col matrix [pixels][K] is gathered,
//   2. cuBLASLt multiplies it by the weight levels into int32 sums [pixels][filters] (int8 x int8 summed in
//      int32 is exact while conv_int8_mma_fits holds),
//   3. an epilogue kernel writes the float NCHW output through int8_conv_output, as every INT8 kernel does,
//      and the layer's store rule (device_math.cuh: stored), as apply_store would after it.
// cuBLASLt is opened at run time (libcublasLt.so.13), so neither libcudla.so.1 nor the package needs it: a
// machine without it, a convolution with groups, or a shape cuBLASLt has no int8 algorithm for keeps
// conv_int8_mma. Host code of the CUDA backend only.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "gpu/kernels.h"
#include "gpu/lt_matmul.h"

namespace dlakit::gpu {

// A residual Add after an INT8 convolution between int8 chw32 surfaces: y = the atom Add of the
// convolution's output and `other` (+ ReLU).
struct AtomAdd {
  Int8Atoms other, y;
  bool relu = false;
};

// run()'s and run_to_atoms()'s copy of the input's levels with the convolution's padding around each plane
// as zeros, what their im2col reads: planes of Hp x Wp (Wp a multiple of 4), the values from row rows_before
// and column cols_before.
struct PaddedLevels {
  int Hp = 0, Wp = 0, rows_before = 0, cols_before = 0;
  static PaddedLevels of(const k::ConvGeom& g);
  int64_t bytes(const k::ConvGeom& g) const { return g.N * g.C * int64_t(Hp) * Wp; }
};

class ConvInt8Gemm {
 public:
  // Null when cuBLASLt cannot take g (see above). k_padded: the GEMM's depth, depth(g) for run(),
  // atom_depth(g) for run_on_atoms().
  static std::shared_ptr<const ConvInt8Gemm> plan(const k::ConvGeom& g, int64_t k_padded);
  static int64_t depth(const k::ConvGeom& g);  // K = C * KH * KW rounded up to k::kMmaK
  ~ConvInt8Gemm();
  ConvInt8Gemm(const ConvInt8Gemm&) = delete;
  ConvInt8Gemm& operator=(const ConvInt8Gemm&) = delete;

  // Rows of the weight matrix run() reads: M rounded up to 4 (cuBLASLt's int8 kernels want leading
  // dimensions in multiples of 4); the rows past M are zeros.
  int64_t filters_padded() const { return m_padded_; }
  // Scratch the runs need: the im2col matrix, the int32 sums and cuBLASLt's workspace.
  // run() and run_to_atoms() put the input's levels (PaddedLevels) where the sums go: the im2col reads them
  // before the product writes the sums. Each buffer 16-byte aligned (cudaMalloc's are).
  size_t cols_bytes() const { return size_t(pixels_ * k_padded_); }
  size_t sums_bytes() const { return std::max(size_t(pixels_ * m_padded_) * 4, size_t(pad_.bytes(g_))); }
  size_t workspace_bytes() const { return lt_->workspace_bytes(); }

  // run()'s weight matrix, [filters_padded][depth] from wq [M][C][KH][KW], zeros past M and K.
  std::vector<int8_t> weights(const k::ConvGeom& g, const int8_t* wq) const;
  // x: float NCHW (quantized with s_in, rounding 0 half away from zero, 1 half to even); w: weights();
  // y: float NCHW, as `store` leaves it.
  void run(const float* x, float s_in, int rounding, const int8_t* w, const float* mult, const double* bq,
           const float* bias, k::ActParams act, const k::StoreRule& store, float* y, void* cols, void* sums,
           void* workspace, cudaStream_t s) const;

  // The same INT8 convolution from an int8 chw32 surface to another (the DLA's INT8 feature layout), with no
  // float tensor between them. K runs over (kh, kw, channel) in whole atoms, so that each tap's row of
  // the im2col matrix is a copy of the input's atom. levels[q + 128] is input level q at the layer's input
  // scale (the unpack and quantize_i8 of run()'s path, as a table; identity: it is q). The output bytes
  // are what run() then pack_surface would write, padding channels zero.
  static int64_t atom_depth(const k::ConvGeom& g);  // KH * KW * C rounded up to 32
  // Whether the surfaces suit the kernels (16-byte aligned atoms and strides, 32-bit counts) and whole atoms
  // do not more than double K (inputs of few channels).
  static bool atoms_fit(const k::ConvGeom& g, const Int8Atoms& in, const Int8Atoms& out);
  // Whether a surface's atoms and strides are 16-byte aligned (what the kernels' vector accesses need).
  static bool atoms_aligned(const Int8Atoms& s);
  // [filters_padded][atom_depth] from wq [M][C][KH][KW].
  std::vector<int8_t> atom_weights(const k::ConvGeom& g, const int8_t* wq) const;
  // add: null, or a residual Add (runtime/atom_ops.h) that reads this output and `add->other` and writes
  // `add->y`; it is computed in the same pass, and `out` is not written (out.scale still names the output's
  // levels, which the Add reads).
  void run_on_atoms(const Int8Atoms& in, const int8_t* levels, bool identity, const int8_t* w,
                    const float* mult, const double* bq, const float* bias, k::ActParams act,
                    const k::StoreRule& store, const Int8Atoms& out, const AtomAdd* add, void* cols,
                    void* sums, void* workspace, cudaStream_t s) const;
  // run()'s convolution (its weights(), its float input), with the output written as an int8 chw32 surface
  // (16-byte aligned: atoms_aligned) as run_on_atoms writes it: no float output and pack after it.
  void run_to_atoms(const float* x, float s_in, int rounding, const int8_t* w, const float* mult,
                    const double* bq, const float* bias, k::ActParams act, const k::StoreRule& store,
                    const Int8Atoms& out, void* cols, void* sums, void* workspace, cudaStream_t s) const;
  // Whether the store rule's level is already the byte of a surface at surface_scale: it quantizes to that
  // scale, which is normal and small enough that level * scale / scale rounds back to the level.
  static bool quantize_once(const k::StoreRule& store, float surface_scale);

 private:
  void matmul(const int8_t* w, const void* cols, void* sums, void* workspace, cudaStream_t s) const;
  // From float x: its levels (into `levels`, the sums' scratch), then the im2col matrix from them.
  void im2col_levels(const float* x, float s_in, int rounding, void* levels, void* cols,
                     cudaStream_t s) const;
  // The epilogue from the int32 sums to an int8 chw32 surface (or through a fused Add to its result).
  void write_atoms(const void* sums, const float* mult, const double* bq, const float* bias, k::ActParams act,
                   const k::StoreRule& store, const Int8Atoms& out, const AtomAdd* add, cudaStream_t s) const;
  ConvInt8Gemm(const k::ConvGeom& g, const PaddedLevels& pad, int64_t k_padded);
  k::ConvGeom g_;
  PaddedLevels pad_;
  int64_t k_padded_ = 0, m_padded_ = 0, pixels_ = 0;
  std::unique_ptr<LtMatmul> lt_;
};

}  // namespace dlakit::gpu
