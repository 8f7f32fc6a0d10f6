// ConvInt8Gemm (conv_int8_gemm.h): the im2col and epilogue kernels around cuBLASLt's product (LtMatmul).
// Compiled with -fmad=false like the other exact kernels.
#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "gpu/atom_epilogue.cuh"
#include "gpu/conv_atoms_mma.h"
#include "gpu/conv_int8_gemm.h"
#include "gpu/gpu_check.h"
#include "gpu/implicit_gemm.h"

namespace dlakit::gpu {
namespace {

using k::ActParams;
using k::ConvGeom;

// run()'s epilogue moves a 32 x 32 tile through shared memory with 32 x 8 threads, so that global reads and
// writes run along the contiguous axis on each side (pixels in NCHW, filters in the sums); the im2col takes
// 32 pixels a block too.
constexpr int kTile = 32, kRowsPerPass = 8;

// The input's levels in a zero-bordered copy, [N][C][Hp][Wp] (rows_before rows and cols_before columns of
// zeros before each plane's values, zeros after them up to Hp and Wp): the im2col then reads every tap
// without a bounds test. Padding is level 0, as the convolution pads. Four bytes a thread: Wp is a multiple
// of 4, and ConvInt8Gemm::plan keeps the copy below 2^31 bytes.
__global__ void padded_levels_kernel(ConvGeom g, PaddedLevels pad, FastDivide row_quads, FastDivide rows,
                                     unsigned quads, const float* x, float s_in, int rounding,
                                     int8_t* levels) {
  const float inv_in = numerics::usable_inverse(s_in);
  const int H = int(g.H), W = int(g.W);
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < quads; i += gridDim.x * blockDim.x) {
    const unsigned row = row_quads.quotient(i), plane = rows.quotient(row);  // plane: n * C + c
    const int ih = int(row - plane * rows.divisor) - pad.rows_before;
    const int iw0 = int(i - row * row_quads.divisor) * 4 - pad.cols_before;
    uint32_t word = 0;
    if (ih >= 0 && ih < H && s_in > 0)
      for (int b = 0; b < 4; ++b) {
        const int iw = iw0 + b;
        if (iw < 0 || iw >= W) continue;
        const float v = x[(int64_t(plane) * H + ih) * W + iw];
        word |= uint32_t(uint8_t(numerics::level_byte(numerics::fast_level(v, s_in, inv_in, rounding))))
                << (8 * b);
      }
    reinterpret_cast<uint32_t*>(levels)[i] = word;
  }
}

// cols[p][k] = the level of input tap k of output pixel p (zero in the padding and past K), from the
// zero-bordered levels. A block walks tiles of 32 pixels (grid.x) for one group of up to 512 taps (grid.y),
// whose offsets from a pixel's first tap (c * Hp * Wp + kh * DH * Wp + kw * DW) it works out once into
// shared memory. A thread gathers 16 taps of one pixel into the tile in shared memory, a warp's lanes 32
// consecutive pixels, so that each byte load reads along an input row; then the block writes the tile's rows
// (contiguous in cols) 16 bytes a thread: stored straight from the gather, a warp's 32 pieces would fall in
// 32 rows of cols.
constexpr int kChunk = 16, kGroupTaps = 512;  // block: kTile pixels x kRowsPerPass chunks a pass
constexpr unsigned kIm2colBlocks = 2048;      // conv_int8_gemm_test's "_wide" case has more tiles than this
__global__ void im2col_padded_kernel(ConvGeom g, PaddedLevels pad, PixelSplit split, unsigned pixels,
                                     int k_padded, const int8_t* levels, int8_t* cols) {
  __shared__ __align__(16) int tap_offset[kGroupTaps];
  // A row's pitch of (taps + 16) bytes, an odd number of 16-byte pieces: the 8 lanes that store together
  // reach 8 different bank quads.
  __shared__ __align__(16) int8_t tile[kTile * (kGroupTaps + kChunk)];
  const int window = int(g.KH * g.KW), k_real = int(g.C * g.KH * g.KW), KW = int(g.KW);
  const int k_begin = blockIdx.y * kGroupTaps;
  const int taps = min(k_padded - k_begin, kGroupTaps), pitch = taps + kChunk, pieces = taps / kChunk;
  const int plane = pad.Hp * pad.Wp;
  const int tx = threadIdx.x, ty = threadIdx.y, t = ty * kTile + tx;
  for (int j = t; j < taps; j += kTile * kRowsPerPass) {
    const int kk = k_begin + j, c = kk / window, kh = (kk % window) / KW, kw = kk % KW;
    tap_offset[j] = kk < k_real ? c * plane + kh * int(g.DH) * pad.Wp + kw * int(g.DW) : 0;
  }
  __syncthreads();
  const int64_t image = int64_t(g.C) * plane;
  for (unsigned p0 = blockIdx.x * kTile; p0 < pixels; p0 += gridDim.x * kTile) {
    const unsigned p = p0 + tx;
    if (p < pixels) {
      int n, oh, ow;
      split.split(p, n, oh, ow);
      const int8_t* first = levels + n * image + oh * int(g.SH) * pad.Wp + ow * int(g.SW);
      for (int chunk = ty * kChunk; chunk < taps; chunk += kRowsPerPass * kChunk) {
        const int real = min(max(k_real - (k_begin + chunk), 0), kChunk);  // the same for every lane
        const int4* offsets = reinterpret_cast<const int4*>(tap_offset + chunk);
        uint32_t word[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int4 o = offsets[q];
          const int at[4] = {o.x, o.y, o.z, o.w};
          uint32_t bytes = 0;
#pragma unroll
          for (int b = 0; b < 4; ++b)
            if (q * 4 + b < real) bytes |= uint32_t(uint8_t(first[at[b]])) << (8 * b);
          word[q] = bytes;
        }
        *reinterpret_cast<int4*>(tile + tx * pitch + chunk) =
            make_int4(int(word[0]), int(word[1]), int(word[2]), int(word[3]));
      }
    }
    __syncthreads();
    const int rows = int(min(unsigned(kTile), pixels - p0));
    for (int i = t; i < rows * pieces; i += kTile * kRowsPerPass) {
      const int row = i / pieces, piece = i - row * pieces;
      *reinterpret_cast<int4*>(cols + int64_t(p0 + row) * k_padded + k_begin + piece * kChunk) =
          *reinterpret_cast<const int4*>(tile + row * pitch + piece * kChunk);
    }
    __syncthreads();  // the tile is written out before the next one fills it
  }
}

// y (NCHW) from sums[p][m]: int8_conv_output and the store rule, read along the filters, written along
// the pixels.
__global__ void sums_to_output_kernel(ConvGeom g, int64_t m_padded, const int32_t* sums, const float* mult,
                                      const double* bq, const float* bias, ActParams act, k::StoreRule store,
                                      float* y) {
  __shared__ int32_t tile[kTile][kTile + 1];                            // [pixel][filter]
  const int pixels = int(g.N * g.OH * g.OW), plane = int(g.OH * g.OW);  // below 2^31 (plan)
  const int p0 = blockIdx.x * kTile;
  const int64_t m0 = int64_t(blockIdx.y) * kTile;
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int j = ty; j < kTile; j += kRowsPerPass)
    if (p0 + j < pixels && m0 + tx < g.M) tile[j][tx] = sums[int64_t(p0 + j) * m_padded + m0 + tx];
  __syncthreads();
  const int p = p0 + tx;
  if (p >= pixels) return;
  const int64_t n = p / plane, at = p % plane;
  for (int j = ty; j < kTile; j += kRowsPerPass) {
    const int64_t m = m0 + j;
    if (m < g.M)
      y[(n * g.M + m) * plane + at] =
          k::stored(store, k::int8_conv_output(tile[tx][j], m, mult, bq, bias, act));
  }
}

// cols[p][(kh * KW + kw) * C32 + c] = levels[byte + 128] of the input atom at the tap, 16 bytes a thread,
// zero outside the image (C32: the input's channels in whole atoms, their padding bytes included: the
// weights are zero there). grid.x: the tap. identity: levels[q + 128] == q for every q (no lookup).
__global__ void im2col_atoms_kernel(ConvGeom g, Int8Atoms in, const int8_t* levels, bool identity,
                                    FastDivide chunks, PixelSplit pixel, unsigned total, int64_t depth,
                                    int8_t* cols) {
  __shared__ int8_t lut[256];
  for (int i = threadIdx.x; i < 256; i += blockDim.x) lut[i] = levels[i];
  __syncthreads();
  const int tap = blockIdx.x, kh = tap / int(g.KW), kw = tap % int(g.KW);
  const int64_t c32 = int64_t(chunks.divisor) * 16;
  for (unsigned i = blockIdx.y * blockDim.x + threadIdx.x; i < total; i += gridDim.y * blockDim.x) {
    const unsigned p = chunks.quotient(i), chunk = i - p * chunks.divisor;
    int n, oh, ow;
    pixel.split(p, n, oh, ow);
    const int64_t ih = oh * g.SH - g.PT + kh * g.DH, iw = ow * g.SW - g.PL + kw * g.DW;
    union {
      int4 word;
      int8_t bytes[16];
    } v;
    v.word = make_int4(0, 0, 0, 0);
    if (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W) {
      v.word = *reinterpret_cast<const int4*>(in.data + n * in.batch + (chunk / 2) * in.group + ih * in.line +
                                              iw * 32 + (chunk % 2) * 16);
      if (!identity)
        for (int b = 0; b < 16; ++b) v.bytes[b] = lut[int(v.bytes[b]) + 128];
    }
    *reinterpret_cast<int4*>(cols + int64_t(p) * depth + tap * c32 + chunk * 16) = v.word;
  }
}

// The output surface's bytes from sums[p][m]: int8_conv_output, the store rule, then pack_surface's
// quantization to the surface's scale; padding channels of the last atom zero. A block writes one atom
// (32 channels) of 32 pixels at a time, a thread 4 channels of one pixel from one 16-byte load, so that a
// warp reads 4 pixels' 128-byte rows of sums and writes 128 contiguous bytes of the surface. kStore: the
// store rule then the surface's quantization, or the rule's own quantization where it is the surface's, so
// that its level is the byte (host: quantize_once). kAdd: a residual Add fused after it (AtomAdd): the level
// is added to the other surface's as the atom Add computes it, and only the sum is written. The per-value
// work bounds this kernel (ncu: issue-bound, DRAM a quarter busy), so the configuration is in template
// arguments or uniform, padding channels are masked instead of branched around, and a block walks many pixel
// tiles (write_atoms: one wave of blocks) so that its filters' numbers are loaded once for many values.
constexpr int kAtomThreads = 256;  // 32 pixels x 8 threads of 4 channels
static_assert(kAtomThreads == k::kThreads, "sums_to_atoms_kernel is launched with kThreads threads");
template <bool kAdd, AtomStore kStore, k::Act kAct>
__global__ void sums_to_atoms_kernel(ConvGeom g, int64_t m_padded, const int32_t* sums, const float* mult,
                                     const double* bq, const float* bias, ActParams act, AtomEpilogue e,
                                     Int8Atoms out, AtomAdd add, unsigned pixel_tiles) {
  const int quad = threadIdx.x & 7, lane_pixel = threadIdx.x >> 3;
  const int64_t m0 = int64_t(blockIdx.x) * 32 + quad * 4;
  float mult_m[4], bias_m[4];
  double bq_m[4];
  for (int b = 0; b < 4; ++b) {
    const int64_t m = m0 + b < g.M ? m0 + b : 0;
    mult_m[b] = mult[m], bq_m[b] = bq[m], bias_m[b] = bias ? bias[m] : 0.f;
  }
  // The real channels of the 4 (the rest are the last atom's padding).
  const int64_t real = g.M - m0;
  const uint32_t channel_mask = real >= 4 ? 0xffffffffu : real <= 0 ? 0u : (1u << (8 * real)) - 1u;
  const unsigned pixels = unsigned(g.N * g.OH * g.OW);  // below 2^31 (plan)
  // The 4 bytes' place in a surface: image n, this block's atom, row oh, column ow.
  auto word_at = [&](const Int8Atoms& sf, int n, int oh, int ow) {
    return reinterpret_cast<uint32_t*>(sf.data + int64_t(n) * sf.batch + int64_t(blockIdx.x) * sf.group +
                                       int64_t(oh) * sf.line + int64_t(ow) * 32 + quad * 4);
  };
  union Sums {
    int4 word;
    int32_t lane[4];
  };
  union Bytes {
    uint32_t word;
    int8_t bytes[4];
  };
  // The next pixel's loads are issued before this one's values are worked out (software pipelining): with
  // the per-value work cut down, the wait for the sums (DRAM latency) is what the warps stalled on.
  auto fetch = [&](unsigned tile, Sums& acc, Bytes& other) -> uint32_t* {
    const unsigned p = tile * 32 + unsigned(lane_pixel);
    acc.word = make_int4(0, 0, 0, 0);
    if (tile >= pixel_tiles || p >= pixels) return nullptr;
    int n, oh, ow;
    e.pixel.split(p, n, oh, ow);
    if (m0 < m_padded) acc.word = *reinterpret_cast<const int4*>(sums + int64_t(p) * m_padded + m0);
    if (kAdd) other.word = *word_at(add.other, n, oh, ow);
    return word_at(kAdd ? add.y : out, n, oh, ow);
  };
  Sums next_acc;
  Bytes next_other;
  uint32_t* next_dst = fetch(blockIdx.y, next_acc, next_other);
  for (unsigned tile = blockIdx.y; tile < pixel_tiles; tile += gridDim.y) {
    const Sums acc = next_acc;
    const Bytes other = next_other;
    uint32_t* const dst = next_dst;
    next_dst = fetch(tile + gridDim.y, next_acc, next_other);
    if (!dst) continue;
    Bytes q;
    for (int b = 0; b < 4; ++b) {
      float level =
          conv_atom_level<kAct, kStore>(acc.lane[b], mult_m[b], bq_m[b], bias_m[b], act, e, out.scale);
      if (kAdd)
        level = k::atom_add_level(level, numerics::byte_value(other.bytes[b]), out.scale, add.other.scale,
                                  add.y.scale, e.inv_y, add.relu);
      q.bytes[b] = numerics::level_byte(level);
    }
    *dst = q.word & channel_mask;
  }
}

// The instantiation of sums_to_atoms_kernel for an activation (every one has the same parameters).
template <bool kAdd, AtomStore kStore>
auto atoms_kernel(k::Act act) {
  switch (act) {
    case k::Act::kRelu:
      return sums_to_atoms_kernel<kAdd, kStore, k::Act::kRelu>;
    case k::Act::kClip:
      return sums_to_atoms_kernel<kAdd, kStore, k::Act::kClip>;
    case k::Act::kLeakyRelu:
      return sums_to_atoms_kernel<kAdd, kStore, k::Act::kLeakyRelu>;
    default:
      return sums_to_atoms_kernel<kAdd, kStore, k::Act::kNone>;
  }
}

}  // namespace

PaddedLevels PaddedLevels::of(const ConvGeom& g) {
  // Every row and column a tap reaches (the last output's last tap) and every input value.
  const int64_t rows = std::max(g.H + g.PT, (g.OH - 1) * g.SH + (g.KH - 1) * g.DH + 1);
  const int64_t cols = std::max(g.W + g.PL, (g.OW - 1) * g.SW + (g.KW - 1) * g.DW + 1);
  PaddedLevels p;
  if (rows > INT32_MAX || cols > INT32_MAX - 3) return p;  // plan() refuses a copy this large
  p.Hp = int(rows), p.Wp = int((cols + 3) / 4 * 4), p.rows_before = int(g.PT), p.cols_before = int(g.PL);
  return p;
}

ConvInt8Gemm::ConvInt8Gemm(const ConvGeom& g, const PaddedLevels& pad, int64_t k_padded)
    : g_(g), pad_(pad), k_padded_(k_padded), m_padded_((g.M + 3) / 4 * 4), pixels_(g.N * g.OH * g.OW) {}

ConvInt8Gemm::~ConvInt8Gemm() = default;

std::shared_ptr<const ConvInt8Gemm> ConvInt8Gemm::plan(const ConvGeom& g, int64_t k_padded) {
  const int64_t pixels = g.N * g.OH * g.OW;
  // Sums exact in int32 (conv_int8_mma_fits); the kernels' 32-bit pixel, K and level-copy coordinates (the
  // copy of the whole batch below 2^31 bytes: beyond about 13,000 images of 3 x 224 x 224, say, a layer keeps
  // conv_int8_mma; run_on_atoms's plans too, which do not use the copy); (M + 31) / 32 tiles: run()'s
  // epilogue's grid.y; K a multiple of 32 (depth() and atom_depth() give one): the im2col's 16-byte pieces
  // and its odd row pitch.
  const PaddedLevels pad = PaddedLevels::of(g);
  if (g.G != 1 || !k::conv_int8_mma_fits(g) || k_padded % kTile != 0 || pixels < 1 ||
      pixels > INT32_MAX - kTile || (g.M + kTile - 1) / kTile > 65535 || pad.Wp < 1 ||
      pad.bytes(g) > INT32_MAX - 4)
    return nullptr;
  std::shared_ptr<ConvInt8Gemm> c(new ConvInt8Gemm(g, pad, k_padded));
  // Column-major, as cuBLASLt counts: sums (M_padded x pixels) = weights^T (M_padded x K) * cols (K x
  // pixels), both operands with K contiguous: the "TN" form its int8 kernels take.
  c->lt_ = LtMatmul::plan(LtMatmul::Kind::kInt8, {k_padded, c->m_padded_, k_padded},
                          {k_padded, pixels, k_padded}, {c->m_padded_, pixels, c->m_padded_});
  if (!c->lt_) return nullptr;
  return c;
}

bool ConvInt8Gemm::atoms_aligned(const Int8Atoms& a) { return a.lines_aligned(16); }

bool ConvInt8Gemm::atoms_fit(const ConvGeom& g, const Int8Atoms& in, const Int8Atoms& out) {
  const int64_t pixels = g.N * g.OH * g.OW, atoms_in = (g.C + 31) / 32;
  // Whole atoms make K up to 32 / C times longer than run()'s: not where that would more than double it.
  return atoms_aligned(in) && atoms_aligned(out) && atom_depth(g) <= 2 * depth(g) && g.KH * g.KW <= 65535 &&
         pixels * atoms_in * 2 < INT32_MAX;
}

int64_t ConvInt8Gemm::depth(const ConvGeom& g) {
  return (g.C * g.KH * g.KW + k::kMmaK - 1) / k::kMmaK * k::kMmaK;
}

std::vector<int8_t> ConvInt8Gemm::weights(const ConvGeom& g, const int8_t* wq) const {
  const int64_t k = g.C * g.KH * g.KW;
  std::vector<int8_t> w(size_t(m_padded_ * k_padded_), 0);
  for (int64_t m = 0; m < g.M; ++m) std::copy_n(wq + m * k, k, w.begin() + m * k_padded_);
  return w;
}

int64_t ConvInt8Gemm::atom_depth(const ConvGeom& g) { return g.KH * g.KW * ((g.C + 31) / 32 * 32); }

std::vector<int8_t> ConvInt8Gemm::atom_weights(const ConvGeom& g, const int8_t* wq) const {
  const int64_t c32 = (g.C + 31) / 32 * 32, taps = g.KH * g.KW;
  std::vector<int8_t> w(size_t(m_padded_ * k_padded_), 0);
  for (int64_t m = 0; m < g.M; ++m)
    for (int64_t c = 0; c < g.C; ++c)
      for (int64_t t = 0; t < taps; ++t)
        w[size_t(m * k_padded_ + t * c32 + c)] = wq[(m * g.C + c) * taps + t];
  return w;
}

bool ConvInt8Gemm::quantize_once(const k::StoreRule& store, float surface_scale) {
  return store.kind == k::StoreRule::Kind::kInt8 && store.scale == surface_scale &&
         std::isnormal(store.scale) && store.scale > 0 &&
         store.scale < std::numeric_limits<float>::max() / 128;
}

void ConvInt8Gemm::run_on_atoms(const Int8Atoms& in, const int8_t* levels, bool identity, const int8_t* w,
                                const float* mult, const double* bq, const float* bias, ActParams act,
                                const k::StoreRule& store, const Int8Atoms& out, const AtomAdd* add,
                                void* cols, void* sums, void* workspace, cudaStream_t s) const {
  MmaTile tile;
  if (identity && implicit_gemm_enabled() && !conv_atoms_mma_aliases(g_, in, add ? add->y : out) &&
      implicit_gemm_tile(g_, multiprocessors(), tile)) {
    conv_atoms_mma(g_, tile, in, w, k_padded_, mult, bq, bias, act, store, out, add, s);
    return;
  }
  const unsigned chunks = unsigned((g_.C + 31) / 32 * 2), cols_total = unsigned(pixels_) * chunks;
  // Taps along grid.x: blocks that run together fill whole rows of cols (DRAM writes a row once, not in
  // as many sector-sized visits as there are taps).
  im2col_atoms_kernel<<<dim3(unsigned(g_.KH * g_.KW), std::min(k::blocks_for(cols_total), 65535u)),
                        k::kThreads, 0, s>>>(g_, in, levels, identity, FastDivide(chunks),
                                             PixelSplit(g_.OW, g_.OH), cols_total, k_padded_,
                                             static_cast<int8_t*>(cols));
  matmul(w, cols, sums, workspace, s);
  write_atoms(sums, mult, bq, bias, act, store, out, add, s);
}

void ConvInt8Gemm::run_to_atoms(const float* x, float s_in, int rounding, const int8_t* w, const float* mult,
                                const double* bq, const float* bias, ActParams act, const k::StoreRule& store,
                                const Int8Atoms& out, void* cols, void* sums, void* workspace,
                                cudaStream_t s) const {
  im2col_levels(x, s_in, rounding, sums, cols, s);
  matmul(w, cols, sums, workspace, s);
  write_atoms(sums, mult, bq, bias, act, store, out, nullptr, s);
}

void ConvInt8Gemm::write_atoms(const void* sums, const float* mult, const double* bq, const float* bias,
                               ActParams act, const k::StoreRule& store, const Int8Atoms& out,
                               const AtomAdd* add, cudaStream_t s) const {
  const unsigned pixel_tiles = unsigned((pixels_ + 31) / 32);  // 32 pixels a block and pass
  const AtomEpilogue e = atom_epilogue(g_, store, out, add);
  const auto kernel = with_atom_store(e, [&](auto store) {
    constexpr AtomStore kStore = decltype(store)::value;
    return add ? atoms_kernel<true, kStore>(act.act) : atoms_kernel<false, kStore>(act.act);
  });
  // One wave of blocks (as many as the GPU holds at once), each walking pixel tiles: more would load the
  // filters' numbers again per block, fewer would leave SMs idle. At least two tiles a block where there are
  // two, so that the next tile's loads always overlap this one's work (and every shape takes the pipelined
  // path the unit tests check). Filter tiles along grid.x: blocks that run together read whole rows of sums
  // (a row is one pixel's filters).
  int per_sm = 1;
  DLAKIT_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, k::kThreads, 0));
  const unsigned wave = unsigned(std::max(1, multiprocessors() * per_sm)),
                 filter_tiles = unsigned((g_.M + 31) / 32);
  const dim3 grid(filter_tiles,
                  std::clamp((wave + filter_tiles - 1) / filter_tiles, 1u, (pixel_tiles + 1) / 2));
  kernel<<<grid, k::kThreads, 0, s>>>(g_, m_padded_, static_cast<const int32_t*>(sums), mult, bq, bias, act,
                                      e, out, add ? *add : AtomAdd{}, pixel_tiles);
}

void ConvInt8Gemm::im2col_levels(const float* x, float s_in, int rounding, void* levels, void* cols,
                                 cudaStream_t s) const {
  if ((reinterpret_cast<uintptr_t>(levels) | reinterpret_cast<uintptr_t>(cols)) % 16 != 0)
    fail(Status::kInternal, "ConvInt8Gemm: scratch buffers must be 16-byte aligned");
  const unsigned quads = unsigned(pad_.bytes(g_) / 4);
  padded_levels_kernel<<<k::blocks_for(quads), k::kThreads, 0, s>>>(
      g_, pad_, FastDivide(unsigned(pad_.Wp / 4)), FastDivide(unsigned(pad_.Hp)), quads, x, s_in, rounding,
      static_cast<int8_t*>(levels));
  // At most kIm2colBlocks blocks (a few waves on an H100's 132 SMs), so that each works out its tap table
  // once for several pixel tiles where there are many.
  const unsigned pixel_tiles = unsigned((pixels_ + kTile - 1) / kTile);
  const unsigned blocks = std::min(pixel_tiles, kIm2colBlocks);
  const unsigned tap_groups = unsigned((k_padded_ + kGroupTaps - 1) / kGroupTaps);
  im2col_padded_kernel<<<dim3(blocks, tap_groups), dim3(kTile, kRowsPerPass), 0, s>>>(
      g_, pad_, PixelSplit(g_.OW, g_.OH), unsigned(pixels_), int(k_padded_),
      static_cast<const int8_t*>(levels), static_cast<int8_t*>(cols));
}

void ConvInt8Gemm::matmul(const int8_t* w, const void* cols, void* sums, void* workspace,
                          cudaStream_t s) const {
  lt_->run(w, cols, sums, workspace, s);
}

void ConvInt8Gemm::run(const float* x, float s_in, int rounding, const int8_t* w, const float* mult,
                       const double* bq, const float* bias, ActParams act, const k::StoreRule& store,
                       float* y, void* cols, void* sums, void* workspace, cudaStream_t s) const {
  im2col_levels(x, s_in, rounding, sums, cols, s);
  matmul(w, cols, sums, workspace, s);
  const dim3 threads(kTile, kRowsPerPass);
  const unsigned pixel_tiles = unsigned((pixels_ + kTile - 1) / kTile);
  sums_to_output_kernel<<<dim3(pixel_tiles, unsigned((g_.M + kTile - 1) / kTile)), threads, 0, s>>>(
      g_, m_padded_, static_cast<const int32_t*>(sums), mult, bq, bias, act, store, y);
}

}  // namespace dlakit::gpu
