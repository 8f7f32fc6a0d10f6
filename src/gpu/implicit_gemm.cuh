// The implicit GEMM's main loop on tensor cores, written once for the two convolutions that use it: INT8
// between int8 chw32 surfaces (mma.m16n8k32.s8, exact int32 sums; conv_atoms_mma.cu) and FP16 from fp16
// chw16 surfaces (mma.m16n8k16.f16, fp32 sums; conv_half_mma.cu). Both surfaces keep 32 bytes a pixel in a
// channel atom (32 levels or 16 halves), so K runs over (tap, input atom) in chunks of 32 bytes, a tap's
// slice of an output pixel's row is one atom's 32 bytes, copied to shared memory as they are (padding taps
// zero-filled), and the two instructions' fragments lie on the same bytes (ldmatrix moves 16-bit pairs of
// either). A block computes a tile of output pixels x filters with warps of 64 x 32 (4 x 4 mma each), over K
// in stages of 64 bytes (two chunks) kept three deep in shared memory by cp.async. CUDA code: the kernels'
// device functions and their launch helpers.
#pragma once
#include <cstdint>
#include <type_traits>

#include "gpu/fast_divide.h"
#include "gpu/gpu_check.h"
#include "gpu/implicit_gemm.h"
#include "gpu/kernels.h"

namespace dlakit::gpu::igemm {

constexpr int kStages = 3;
constexpr int kRowBytes = 64;  // a stage's K bytes per tile row
constexpr int kWarpRows = kWarpTileRows, kWarpCols = kWarpTileCols;
constexpr int kOutside = -(1 << 29);  // the window row of a pixel past the last: every tap outside the image

// What the main loop reads: the input surface (32 bytes a pixel in an atom, strides in bytes) and the
// weights [M][k_bytes], K ordered (tap, input atom, the atom's 32 bytes).
struct Operands {
  k::ConvGeom g;
  const int8_t* in = nullptr;
  int64_t batch = 0, group = 0, line = 0;
  const int8_t* w = nullptr;
  int64_t k_bytes = 0;
  int chunks = 0;           // k_bytes / 32: (tap, input atom) pairs
  FastDivide atoms_in, kw;  // input atoms a tap; the window's width
  PixelSplit pixel;
  unsigned pixels = 0;
};

inline Operands operands(const k::ConvGeom& g, const int8_t* in, int64_t batch, int64_t group, int64_t line,
                         int64_t atoms_in, const int8_t* w, int64_t k_bytes) {
  Operands a;
  a.g = g, a.in = in, a.batch = batch, a.group = group, a.line = line;
  a.w = w, a.k_bytes = k_bytes, a.chunks = int(k_bytes / 32);
  a.atoms_in = FastDivide(uint32_t(atoms_in)), a.kw = FastDivide(uint32_t(g.KW));
  a.pixel = PixelSplit(g.OW, g.OH);
  a.pixels = unsigned(g.N * g.OH * g.OW);
  return a;
}

// K's stages of 64 bytes (two 32-byte chunks), the last one perhaps half, for a filter's k_bytes.
__host__ __device__ constexpr int64_t k_stages(int64_t k_bytes) { return (k_bytes / 32 + 1) / 2; }
__host__ __device__ inline int stages(const Operands& a) { return int(k_stages(a.k_bytes)); }

// A block of kWarpsM x kWarpsN warps: its tile and the shared memory its stages take.
template <int kWarpsM, int kWarpsN>
struct Block {
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kRows = kWarpRows * kWarpsM, kCols = kWarpCols * kWarpsN;
  static constexpr int kStageBytes = (kRows + kCols) * kRowBytes;
  static constexpr int kStagesBytes = kStages * kStageBytes;
};

// Calls launch(warps_m, warps_n) with the tile's warps as std::integral_constant values (host code: each
// kernel's launch is a template over them), then checks the launch.
template <MmaTile kTile, class Launch>
void launch_as(Launch& launch) {
  constexpr TileWarps w = tile_warps(kTile);
  launch(std::integral_constant<int, w.m>{}, std::integral_constant<int, w.n>{});
}
template <class Launch>
void launch_tile(MmaTile tile, Launch&& launch) {
  switch (tile) {
    case MmaTile::k128x128:
      launch_as<MmaTile::k128x128>(launch);
      break;
    case MmaTile::k128x64:
      launch_as<MmaTile::k128x64>(launch);
      break;
    case MmaTile::k64x64:
      launch_as<MmaTile::k64x64>(launch);
      break;
  }
  DLAKIT_CUDA(cudaGetLastError());
}

// The grid of Block<kWarpsM, kWarpsN> over the output pixels x filters (x the parts of a split K).
template <int kWarpsM, int kWarpsN>
dim3 grid_of(const Operands& a, int splits = 1) {
  using B = Block<kWarpsM, kWarpsN>;
  return dim3((a.pixels + B::kRows - 1) / B::kRows, unsigned((a.g.M + B::kCols - 1) / B::kCols),
              unsigned(splits));
}

__device__ inline uint32_t shared_address(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }

// 16 bytes global -> shared without registers; zeros where !real (nothing is read then).
__device__ inline void copy16(uint32_t dst, const void* src, bool real) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(real ? 16 : 0));
}
__device__ inline void commit_copies() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ inline void wait_copies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

__device__ inline void load_matrices(uint32_t (&r)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// c += a (16 rows x 32 bytes) * b (32 bytes x 8 columns) on the same bytes: int8 products summed exactly in
// int32, or fp16 products (exact in fp32) summed in fp32.
__device__ inline void mma(int (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ inline void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Byte offset of 16-byte unit u of tile row r. The units are XOR-swizzled so that the 8 rows one ldmatrix
// phase reads fall in 8 different bank groups (plain 64-byte rows would put 2 rows in each of 4).
__device__ inline int swizzled(int r, int u) { return r * kRowBytes + ((u ^ ((r >> 1) & 3)) << 4); }

// The block's sums for output pixels [p0, p0 + kRows) x filters [m0, m0 + kCols) over K's stages [first,
// end) (64 bytes each; stages(a) in all): warp (warp_m, warp_n) holds rows warp_m * 64 + mi * 16 + lane / 4
// (+ 8 for the second half) and columns warp_n * 32 + ni * 8 + 2 (lane % 4) (and the next) in acc[mi][ni].
// `shared` holds Block::kStagesBytes; it is free again on return.
template <int kWarpsM, int kWarpsN, class Acc>
__device__ __forceinline__ void accumulate(const Operands& a, int8_t* shared, unsigned p0, int m0, int first,
                                           int end, Acc (&acc)[4][4][4]) {
  using B = Block<kWarpsM, kWarpsN>;
  constexpr int kLoadRows = B::kThreads / 4;  // tile rows one pass of the loaders covers (4 units a row)
  constexpr int kRowsPerThread = B::kRows / kLoadRows, kColsPerThread = B::kCols / kLoadRows;
  const k::ConvGeom& g = a.g;
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
  const int unit = t & 3, load_row = t >> 2;

  // The loader's pixels: where their windows start in the input (coordinates fit int: the planners' limits).
  int64_t row_base[kRowsPerThread];
  int row_ih[kRowsPerThread], row_iw[kRowsPerThread];
#pragma unroll
  for (int i = 0; i < kRowsPerThread; ++i) {
    const unsigned p = p0 + unsigned(load_row + i * kLoadRows);
    row_ih[i] = kOutside, row_iw[i] = 0, row_base[i] = 0;
    if (p < a.pixels) {
      int n, oh, ow;
      a.pixel.split(p, n, oh, ow);
      row_ih[i] = oh * int(g.SH) - int(g.PT), row_iw[i] = ow * int(g.SW) - int(g.PL);
      row_base[i] = int64_t(n) * a.batch + int64_t(row_ih[i]) * a.line + int64_t(row_iw[i]) * 32;
    }
  }
  const int H = int(g.H), W = int(g.W);
  auto load_stage = [&](int stage, int kb) {
    int8_t* tile_a = shared + stage * B::kStageBytes;
    int8_t* tile_b = tile_a + B::kRows * kRowBytes;
    const int chunk = kb * 2 + (unit >> 1);
    const bool real = chunk < a.chunks;
    const int tap = int(a.atoms_in.quotient(unsigned(chunk))), atom = chunk - tap * int(a.atoms_in.divisor);
    const int kh = int(a.kw.quotient(unsigned(tap))), kw = tap - kh * int(a.kw.divisor);
    const int dh = kh * int(g.DH), dw = kw * int(g.DW);
    const int64_t offset = int64_t(atom) * a.group + int64_t(dh) * a.line + dw * 32 + (unit & 1) * 16;
#pragma unroll
    for (int i = 0; i < kRowsPerThread; ++i) {
      const int r = load_row + i * kLoadRows, ih = row_ih[i] + dh, iw = row_iw[i] + dw;
      const bool inside = real && unsigned(ih) < unsigned(H) && unsigned(iw) < unsigned(W);
      copy16(shared_address(tile_a + swizzled(r, unit)), inside ? a.in + (row_base[i] + offset) : a.in,
             inside);
    }
    const int64_t k_at = int64_t(kb) * kRowBytes + unit * 16;
#pragma unroll
    for (int i = 0; i < kColsPerThread; ++i) {
      const int r = load_row + i * kLoadRows, m = m0 + r;
      const bool inside = real && m < g.M;
      copy16(shared_address(tile_b + swizzled(r, unit)), inside ? a.w + m * a.k_bytes + k_at : a.w, inside);
    }
  };

  const int count = end - first;
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < count) load_stage(s, first + s);
    commit_copies();  // empty groups too: the wait below counts groups
  }
  // ldmatrix's lanes: A's four 8 x 16-byte matrices are rows 0-7 and 8-15 of the first 16 K bytes, then of
  // the next 16 (mma's a0..a3); B's are filters 0-7 of both K halves (b0, b1), then filters 8-15.
  const int a_row = lane & 15, a_unit = lane >> 4;
  const int b_row = (lane & 7) + (lane >> 4) * 8, b_unit = (lane >> 3) & 1;
  for (int i = 0; i < count; ++i) {
    wait_copies<kStages - 2>();
    __syncthreads();  // stage i is in; every warp is done with the stage the next load overwrites
    if (i + kStages - 1 < count) load_stage((i + kStages - 1) % kStages, first + i + kStages - 1);
    commit_copies();
    const int8_t* tile_a = shared + (i % kStages) * B::kStageBytes;
    const int8_t* tile_b = tile_a + B::kRows * kRowBytes;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      uint32_t af[4][4], bf[2][4];
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) {
        const int r = warp_m * kWarpRows + mi * 16 + a_row;
        load_matrices(af[mi], shared_address(tile_a + swizzled(r, half * 2 + a_unit)));
      }
#pragma unroll
      for (int nj = 0; nj < 2; ++nj) {
        const int r = warp_n * kWarpCols + nj * 16 + b_row;
        load_matrices(bf[nj], shared_address(tile_b + swizzled(r, half * 2 + b_unit)));
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni)
          mma(acc[mi][ni], af[mi], bf[ni / 2][(ni % 2) * 2], bf[ni / 2][(ni % 2) * 2 + 1]);
    }
  }
  wait_copies<0>();
  __syncthreads();  // the stages' memory is free for the caller's output tile
}

// Block blockIdx.z's stages [first, end) of K split over gridDim.z blocks (all of them where it is 1).
__device__ inline void split_stages(const Operands& a, int& first, int& end) {
  const int64_t n = stages(a), parts = gridDim.z, z = blockIdx.z;
  first = int(n * z / parts), end = int(n * (z + 1) / parts);
}

// After accumulate over split_stages where gridDim.z > 1: each block writes its sums; the last of a tile's
// blocks to arrive adds all of them in split order (the same fp32 result whichever block that is), sets the
// tile's count back to zero for the next run and returns true with the total in acc. The others return
// false: they are done.
template <int kThreads>
__device__ bool gather_split(const SplitScratch& s, float (&acc)[4][4][4]) {
  const unsigned parts = gridDim.z, tile = blockIdx.y * gridDim.x + blockIdx.x;
  // [tile][part][mi * 4 + ni][thread]: each store and load a warp's 512 consecutive bytes
  float4* sums = static_cast<float4*>(s.sums) + int64_t(tile) * parts * 16 * kThreads + threadIdx.x;
  float4* mine = sums + int64_t(blockIdx.z) * 16 * kThreads;
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni) {
      const float* v = acc[mi][ni];
      __stcg(mine + (mi * 4 + ni) * kThreads, make_float4(v[0], v[1], v[2], v[3]));
    }
  __threadfence();  // the sums reach memory before the count says so
  __syncthreads();
  const bool last = __syncthreads_or(threadIdx.x == 0 && atomicAdd(s.arrivals + tile, 1u) == parts - 1);
  if (!last) return false;
  __threadfence();  // and are read after it
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni) {
      float4 total = __ldcg(sums + (mi * 4 + ni) * kThreads);
      for (unsigned part = 1; part < parts; ++part) {
        const float4 v = __ldcg(sums + (int64_t(part) * 16 + mi * 4 + ni) * kThreads);
        total.x += v.x, total.y += v.y, total.z += v.z, total.w += v.w;
      }
      acc[mi][ni][0] = total.x, acc[mi][ni][1] = total.y, acc[mi][ni][2] = total.z, acc[mi][ni][3] = total.w;
    }
  if (threadIdx.x == 0) s.arrivals[tile] = 0;
  return true;
}

}  // namespace dlakit::gpu::igemm
