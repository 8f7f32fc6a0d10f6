// CUDA kernels of the emulated DLA on the GPU. Plain-data parameters only, so host code compiled by g++
// includes this without CUDA's compiler. Every kernel mirrors one reference kernel's arithmetic; the ones
// marked "exact" reproduce it bit for bit (same operations in the same order, no FMA contraction: the file
// is compiled with -fmad=false), which INT8 layers rely on for CPU/GPU bit-exactness.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/int8_atoms.h"  // Int8Atoms, PoolWindow: plain data

typedef struct CUstream_st* cudaStream_t;

namespace dlakit::gpu::k {

constexpr int kMaxRank = 6;

// Unary ops; the codes are ours (not OpKind) to keep this header free of the IR.
enum class Unary : int {
  kCopy,
  kRelu,
  kLeakyRelu,
  kClip,
  kHardSigmoid,
  kHardSwish,
  kNeg,
  kAbs,
  kSqrt,
  kReciprocal,
  kFloor,
  kCeil,
  kSigmoid,
  kTanh,
  kElu,
  kSoftplus,
  kExp,
  kLog,
  kErf
};
struct UnaryParams {
  Unary op = Unary::kCopy;
  float alpha = 0, beta = 0, lo = 0, hi = 0;
};

enum class Binary : int { kAdd, kSub, kMul, kDiv, kMax, kMin, kPow, kPRelu };
struct BroadcastShape {
  int rank = 0;
  int64_t out[kMaxRank] = {};
  int64_t a_stride[kMaxRank] = {}, b_stride[kMaxRank] = {};  // element strides, 0 where broadcast
};

// Precision emulation on a buffer, in place or not (exact).
void round_to_half(const float* x, float* y, int64_t n, cudaStream_t s);
// rounding: 0 half away from zero (DLA), 1 half to even (GPU INT8). dequant: q * scale, else the level.
void quantize(const float* x, float* y, int64_t n, float scale, int rounding, bool dequant, cudaStream_t s);
void quantize_i8(const float* x, int8_t* y, int64_t n, float scale, int rounding, cudaStream_t s);

// How a layer stores its result (numerics::OutputRule, with compute_fp16 first), applied in place by
// apply_store or inside a kernel's epilogue (device_math.cuh: stored), exactly as numerics::run_step.
struct StoreRule {
  enum class Kind : int { kKeep, kFp16, kInt8 };
  bool half_first = false;  // compute_fp16: rounded to fp16 before the store
  Kind kind = Kind::kKeep;
  float scale = 0;   // kInt8: quantized to this scale and back
  int rounding = 0;  // as quantize()'s
  bool changes() const { return half_first || kind != Kind::kKeep; }
  // Whether every value it stores is an fp16 value (a later rounding to fp16 changes nothing).
  bool leaves_half() const { return kind == Kind::kFp16 || (half_first && kind == Kind::kKeep); }
};
void apply_store(const StoreRule& r, float* y, int64_t n, cudaStream_t s);

// Element-wise ops with the layer's store rule applied to each result as it is written (apply_store's
// arithmetic). unary: exact for kCopy..kCeil; the transcendental ones follow the reference's formula within
// an ulp or so. binary: exact except kPow.
void unary(const UnaryParams& p, const StoreRule& store, const float* x, float* y, int64_t n, cudaStream_t s);
// y = store(x * a[c] + b[c]) per channel c of [N][C][vol] (BatchNormalization: ref::batch_norm_affine).
void channel_affine(const float* a, const float* b, int64_t C, int64_t vol, const StoreRule& store,
                    const float* x, float* y, int64_t n, cudaStream_t s);
// y = store(table[x's fp16 bits]): x holds fp16 values, table the 65536 results of a unary op (exact wherever
// the table is).
void unary_table(const float* table, const StoreRule& store, const float* x, float* y, int64_t n,
                 cudaStream_t s);
void binary(Binary op, const BroadcastShape& sh, const StoreRule& store, const float* a, const float* b,
            float* y, cudaStream_t s);

// 2-D convolution (N, C, H, W) * (M, C/G, KH, KW), ONNX semantics.
struct ConvGeom {
  int64_t N = 1, C = 1, H = 1, W = 1, M = 1, OH = 1, OW = 1, KH = 1, KW = 1;
  int64_t SH = 1, SW = 1, DH = 1, DW = 1, PT = 0, PL = 0, G = 1;
};
enum class Act : int { kNone, kRelu, kClip, kLeakyRelu };
struct ActParams {
  Act act = Act::kNone;
  float a = 0, b = 0;
};
// float conv with bias and the fused activation (FP32/FP16 layers; the sum order differs from the CPU's)
void conv_f32(const ConvGeom& g, const float* x, const float* w, const float* bias, ActParams act, float* y,
              cudaStream_t s);
// INT8 conv, exact: integer sums of levels in int64, then y = mult[m] > 0 ? float(acc + bq[m]) * mult[m] :
// bias[m], then the fused activation.
void conv_int8(const ConvGeom& g, const int8_t* xq, const int8_t* wq, const float* mult, const double* bq,
               const float* bias, ActParams act, float* y, cudaStream_t s);

// ConvTranspose over ConvGeom read as the ConvTranspose's own geometry (H, W: its input; OH, OW: its output;
// PT, PL: the pads cropped from the full result), weights [C][M/G][KH][KW]: float sums plus bias (FP32/FP16
// layers; the sum order differs from the CPU's), or INT8 exact like conv_int8 (sums of levels in int64,
// requantized, activated).
void conv_transpose_f32(const ConvGeom& g, const float* x, const float* w, const float* bias, float* y,
                        cudaStream_t s);
void conv_transpose_int8(const ConvGeom& g, const int8_t* xq, const int8_t* wq, const float* mult,
                         const double* bq, const float* bias, ActParams act, float* y, cudaStream_t s);

// The same INT8 convolution as an implicit GEMM on tensor cores (WMMA int8 x int8 -> int32), bit for bit
// conv_int8's result: int32 sums are exact while K = C/G*KH*KW stays within conv_int8_mma_fits. A group's
// rows are its N*OH*OW output pixels, its columns its M/G filters, its K padded to kMmaK.
constexpr int kMmaK = 32;
bool conv_int8_mma_fits(const ConvGeom& g);  // also false where it would not gain (depthwise)
struct MmaConvOperands {
  int64_t k_padded = 0;
  std::vector<int8_t> weights;  // [M][k_padded] levels, zeros past K
  std::vector<int32_t> taps;    // per k: {c*H*W + kh*DH*W + kw*DW, kh*DH, kw*DW}; past K, never inside
};
MmaConvOperands conv_int8_mma_operands(const ConvGeom& g, const int8_t* wq);  // wq: [M][C/G][KH][KW]
// Where the output has few tiles (small images, batch 1), K is cut into slices summed by separate blocks:
// the slice count for g (1: none); with more than one, `partial` holds N*M*OH*OW int32 values.
int conv_int8_mma_splits(const ConvGeom& g, int64_t k_padded);
void conv_int8_mma(const ConvGeom& g, int64_t k_padded, int splits, const int8_t* xq, const int8_t* wq_padded,
                   const int32_t* taps, const float* mult, const double* bq, const float* bias, ActParams act,
                   float* y, int32_t* partial, cudaStream_t s);

// The in-place INT8 surface operations (runtime/atom_ops.h) on device surfaces, exactly as
// kernels/int8_atoms.h computes them on the CPU (padding channels zeroed, line tails untouched).
// keep_levels as for the CPU's max_pool_int8_atoms.
void add_int8_atoms(int64_t N, int64_t C, int64_t H, int64_t W, const Int8Atoms& a, const Int8Atoms& b,
                    bool relu, const Int8Atoms& y, cudaStream_t s);
void max_pool_int8_atoms(int64_t N, int64_t C, int64_t H, int64_t W, const PoolWindow& p, const Int8Atoms& x,
                         bool keep_levels, const Int8Atoms& y, cudaStream_t s);

// 2-D pooling over (N*C) planes with the reference's window rules; exact (the average sums in double in
// the reference's order), for geometries pool2d_fits.
struct PoolGeom {
  int64_t NC = 1, H = 1, W = 1, OH = 1, OW = 1, KH = 1, KW = 1, SH = 1, SW = 1, DH = 1, DW = 1;
  int64_t PT = 0, PL = 0, PB = 0, PR = 0;
  bool is_max = true, include_pad = false;
};
// The kernel's indices are 32-bit: input and output below 2^31 values, and each padded side (H + PT + PB,
// W + PL + PR) at most 2^30, which bounds a window's start and its reach (a ceil-mode window may run past
// the padding by less than a side).
bool pool2d_fits(const PoolGeom& g);
void pool2d(const PoolGeom& g, const float* x, float* y, cudaStream_t s);
// Softmax over [outer, axis, inner] (ref/softmax.h), the store rule on its results (exact).
void softmax(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner, const StoreRule& store,
             cudaStream_t s);
void global_pool(const float* x, float* y, int64_t planes, int64_t vol, bool is_max, cudaStream_t s);

// Resize of the last two axes (ref::ResizeLastTwo, its tables in device memory): each output row blended
// from two input rows, then each value from two of that row's, in the reference's float operations.
struct ResizeGeom {
  int64_t planes = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  const int64_t *row0 = nullptr, *row1 = nullptr, *col0 = nullptr, *col1 = nullptr;
  const float *row_w = nullptr, *col_w = nullptr;
};
void resize2d(const ResizeGeom& g, const float* x, float* y, cudaStream_t s);

// y[i] = x[base + sum over d of index_d(i) * in_stride[d]] for y of shape `out` (exact): a Transpose (the
// strides of the permuted axes) or a Slice (first element at base, strides times steps, negative ones too).
struct StridedCopy {
  int rank = 0;
  int64_t out[kMaxRank] = {}, in_stride[kMaxRank] = {};
  int64_t base = 0;
};
void strided_copy(const StridedCopy& t, const float* x, float* y, cudaStream_t s);

// Y[M,N] = alpha * op(A)[M,K] op(B)[K,N] + beta * C (C broadcast through c_stride_m / c_stride_n; may be
// null). Float sums: not exact.
struct GemmGeom {
  int64_t M = 1, N = 1, K = 1;
  bool trans_a = false, trans_b = false;
  float alpha = 1, beta = 1;
  int64_t c_stride_m = 0, c_stride_n = 0;
};
void gemm(const GemmGeom& g, const float* a, const float* b, const float* c, float* y, cudaStream_t s);

// A surface in memory (rt::TensorDesc's layout): format 0 dla_linear, 1 chw16, 2 chw32, 3 dla_hwc4;
// strides in bytes (element, line, surface, image); int8 elements are q * scale.
struct SurfaceGeom {
  int format = 1;
  bool int8 = false;
  float scale = 0;
  int64_t n = 1, c = 1, h = 1, w = 1;
  int64_t stride[4] = {};
};
// Surface -> float32 NCHW (exact: fp16 widened, int8 times its scale as the CPU computes it).
void unpack_surface(const SurfaceGeom& g, const uint8_t* base, float* out, cudaStream_t s);
// float32 NCHW -> surface: fp16 rounded to nearest even, int8 quantized (ties away from zero, saturated);
// chw formats also write the padding channels of their atoms as zeros (exact).
void pack_surface(const SurfaceGeom& g, const float* in, uint8_t* base, cudaStream_t s);

}  // namespace dlakit::gpu::k
