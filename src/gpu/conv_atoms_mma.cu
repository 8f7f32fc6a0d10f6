// conv_atoms_mma (conv_atoms_mma.h): a block computes a tile of output pixels x filters with warps of
// 64 x 32 (4 x 4 mma.m16n8k32 each), over K in stages of 64 bytes (two 32-channel chunks) kept three deep
// in shared memory by cp.async, then writes its levels through shared memory as whole 16-byte pieces of
// the output atoms. Compiled with -fmad=false like the other exact kernels.
#include <type_traits>
#include <utility>

#include "gpu/atom_epilogue.cuh"
#include "gpu/conv_atoms_mma.h"
#include "gpu/gpu_check.h"

namespace dlakit::gpu {
namespace {

constexpr int kStages = 3;
constexpr int kRowBytes = 64;  // a stage's K bytes per tile row
constexpr int kWarpRows = 64, kWarpCols = 32;
constexpr int kOutside = -(1 << 29);  // the window row of a pixel past the last: every tap outside the image

struct MmaConvArgs {
  k::ConvGeom g;
  Int8Atoms in, out;
  AtomAdd add;
  bool has_add;
  const int8_t* w;
  int64_t k_bytes;
  int chunks;               // K / 32: (tap, input atom) pairs
  FastDivide atoms_in, kw;  // input atoms a tap; the window's width
  unsigned pixels;
  const float* mult;
  const double* bq;
  const float* bias;
  k::ActParams act;
  AtomEpilogue e;
};

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

// c += a (16 x 32, rows) * b (32 x 8, columns), int8 products summed exactly in int32.
__device__ inline void mma_s8(int (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Byte offset of 16-byte unit u of tile row r. The units are XOR-swizzled so that the 8 rows one ldmatrix
// phase reads fall in 8 different bank groups (plain 64-byte rows would put 2 rows in each of 4).
__device__ inline int swizzled(int r, int u) { return r * kRowBytes + ((u ^ ((r >> 1) & 3)) << 4); }

// The epilogue on a warp's accumulators into the block's output tile (int8 levels, kPitch bytes a row): lane
// holds rows lane / 4 and lane / 4 + 8 of each 16-row piece, columns 2 (lane % 4) and the next of each
// 8-filter piece. Filters past M get filter 0's numbers; the tile's writer masks them.
template <k::Act kAct, bool kDirect, int kPitch>
__device__ void levels_for(const int (&acc)[4][4][4], const MmaConvArgs& a, int8_t* tile, int m0, int row0,
                           int col0, int lane) {
#pragma unroll
  for (int ni = 0; ni < 4; ++ni) {
    const int col = col0 + ni * 8 + (lane & 3) * 2;
    float mult_m[2], bias_m[2];
    double bq_m[2];
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int m = m0 + col + e < a.g.M ? m0 + col + e : 0;
      mult_m[e] = a.mult[m], bq_m[e] = a.bq[m], bias_m[e] = a.bias ? a.bias[m] : 0.f;
    }
#pragma unroll
    for (int mi = 0; mi < 4; ++mi)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = row0 + mi * 16 + (lane >> 2) + h * 8;
        int8_t q[2];
#pragma unroll
        for (int e = 0; e < 2; ++e)
          q[e] = numerics::level_byte(conv_atom_level<kAct, kDirect>(
              acc[mi][ni][h * 2 + e], mult_m[e], bq_m[e], bias_m[e], a.act, a.e, a.out.scale));
        *reinterpret_cast<char2*>(tile + r * kPitch + col) = make_char2(q[0], q[1]);
      }
  }
}

// levels_for with the activation and the direct store chosen once per thread.
template <int kPitch>
__device__ void levels_to_tile(const int (&acc)[4][4][4], const MmaConvArgs& a, int8_t* tile, int m0,
                               int warp_m, int warp_n, int lane) {
  const int row0 = warp_m * kWarpRows, col0 = warp_n * kWarpCols;
  auto with = [&](auto act, auto direct) {
    levels_for<decltype(act)::value, decltype(direct)::value, kPitch>(acc, a, tile, m0, row0, col0, lane);
  };
  using Relu = std::integral_constant<k::Act, k::Act::kRelu>;
  using Clip = std::integral_constant<k::Act, k::Act::kClip>;
  using Leaky = std::integral_constant<k::Act, k::Act::kLeakyRelu>;
  using None = std::integral_constant<k::Act, k::Act::kNone>;
  auto for_act = [&](auto direct) {
    switch (a.act.act) {
      case k::Act::kRelu:
        return with(Relu{}, direct);
      case k::Act::kClip:
        return with(Clip{}, direct);
      case k::Act::kLeakyRelu:
        return with(Leaky{}, direct);
      default:
        return with(None{}, direct);
    }
  };
  if (a.e.direct) {
    for_act(std::true_type{});
  } else {
    for_act(std::false_type{});
  }
}

template <int kWarpsM, int kWarpsN>
__global__ void __launch_bounds__(32 * kWarpsM * kWarpsN) conv_atoms_mma_kernel(const MmaConvArgs a) {
  constexpr int kBlockThreads = 32 * kWarpsM * kWarpsN;
  constexpr int kRows = kWarpRows * kWarpsM, kCols = kWarpCols * kWarpsN;
  constexpr int kLoadRows = kBlockThreads / 4;  // tile rows one pass of the loaders covers (4 units a row)
  constexpr int kRowsPerThread = kRows / kLoadRows, kColsPerThread = kCols / kLoadRows;
  constexpr int kStageBytes = (kRows + kCols) * kRowBytes;
  constexpr int kOutPitch = kCols + 16;  // the output tile's rows: 16 bytes apart in banks, whole units
  constexpr int kSharedBytes =
      kStages * kStageBytes > kRows * kOutPitch ? kStages * kStageBytes : kRows * kOutPitch;
  __shared__ __align__(128) int8_t shared[kSharedBytes];

  const k::ConvGeom& g = a.g;
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
  const unsigned p0 = blockIdx.x * unsigned(kRows);
  const int m0 = int(blockIdx.y) * kCols;
  const int unit = t & 3, load_row = t >> 2;

  // The loader's pixels: where their windows start in the input (coordinates fit int: atoms_fit, plan).
  int64_t row_base[kRowsPerThread];
  int row_ih[kRowsPerThread], row_iw[kRowsPerThread];
#pragma unroll
  for (int i = 0; i < kRowsPerThread; ++i) {
    const unsigned p = p0 + unsigned(load_row + i * kLoadRows);
    row_ih[i] = kOutside, row_iw[i] = 0, row_base[i] = 0;
    if (p < a.pixels) {
      int n, oh, ow;
      a.e.pixel.split(p, n, oh, ow);
      row_ih[i] = oh * int(g.SH) - int(g.PT), row_iw[i] = ow * int(g.SW) - int(g.PL);
      row_base[i] = int64_t(n) * a.in.batch + int64_t(row_ih[i]) * a.in.line + int64_t(row_iw[i]) * 32;
    }
  }
  const int H = int(g.H), W = int(g.W);
  auto load_stage = [&](int stage, int kb) {
    int8_t* tile_a = shared + stage * kStageBytes;
    int8_t* tile_b = tile_a + kRows * kRowBytes;
    const int chunk = kb * 2 + (unit >> 1);
    const bool real = chunk < a.chunks;
    const int tap = int(a.atoms_in.quotient(unsigned(chunk))), atom = chunk - tap * int(a.atoms_in.divisor);
    const int kh = int(a.kw.quotient(unsigned(tap))), kw = tap - kh * int(a.kw.divisor);
    const int dh = kh * int(g.DH), dw = kw * int(g.DW);
    const int64_t offset = int64_t(atom) * a.in.group + int64_t(dh) * a.in.line + dw * 32 + (unit & 1) * 16;
#pragma unroll
    for (int i = 0; i < kRowsPerThread; ++i) {
      const int r = load_row + i * kLoadRows, ih = row_ih[i] + dh, iw = row_iw[i] + dw;
      const bool inside = real && unsigned(ih) < unsigned(H) && unsigned(iw) < unsigned(W);
      copy16(shared_address(tile_a + swizzled(r, unit)),
             inside ? a.in.data + (row_base[i] + offset) : a.in.data, inside);
    }
    const int64_t k_at = int64_t(kb) * kRowBytes + unit * 16;
#pragma unroll
    for (int i = 0; i < kColsPerThread; ++i) {
      const int r = load_row + i * kLoadRows, m = m0 + r;
      const bool inside = real && m < g.M;
      copy16(shared_address(tile_b + swizzled(r, unit)), inside ? a.w + m * a.k_bytes + k_at : a.w, inside);
    }
  };

  int acc[4][4][4] = {};
  const int stages_k = (a.chunks + 1) / 2;
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < stages_k) load_stage(s, s);
    commit_copies();  // empty groups too: the wait below counts groups
  }
  // ldmatrix's lanes: A's four 8 x 16-byte matrices are rows 0-7 and 8-15 of the first 16 K bytes, then of
  // the next 16 (mma's a0..a3); B's are filters 0-7 of both K halves (b0, b1), then filters 8-15.
  const int a_row = lane & 15, a_unit = lane >> 4;
  const int b_row = (lane & 7) + (lane >> 4) * 8, b_unit = (lane >> 3) & 1;
  for (int kb = 0; kb < stages_k; ++kb) {
    wait_copies<kStages - 2>();
    __syncthreads();  // stage kb is in; every warp is done with the stage the next load overwrites
    if (kb + kStages - 1 < stages_k) load_stage((kb + kStages - 1) % kStages, kb + kStages - 1);
    commit_copies();
    const int8_t* tile_a = shared + (kb % kStages) * kStageBytes;
    const int8_t* tile_b = tile_a + kRows * kRowBytes;
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
          mma_s8(acc[mi][ni], af[mi], bf[ni / 2][(ni % 2) * 2], bf[ni / 2][(ni % 2) * 2 + 1]);
    }
  }
  wait_copies<0>();
  __syncthreads();  // the stages' memory becomes the output tile

  int8_t* tile = shared;  // [kRows][kOutPitch]
  levels_to_tile<kOutPitch>(acc, a, tile, m0, warp_m, warp_n, lane);
  __syncthreads();
  // Out as 16-byte pieces of atoms (half an atom of one pixel each), padding channels zero; with a fused Add,
  // its result instead (the convolution's own surface is not written).
  const int atoms_out = int((g.M + 31) / 32);
  constexpr int kPiecesPerRow = kCols / 16;
  for (int i = t; i < kRows * kPiecesPerRow; i += kBlockThreads) {
    const int r = i / kPiecesPerRow, piece = i % kPiecesPerRow, c0 = m0 + piece * 16;
    const unsigned p = p0 + unsigned(r);
    if (p >= a.pixels || c0 >= atoms_out * 32) continue;
    int n, oh, ow;
    a.e.pixel.split(p, n, oh, ow);
    union Piece {
      int4 word;
      int8_t bytes[16];
    } v, other;
    v.word = *reinterpret_cast<const int4*>(tile + r * kOutPitch + piece * 16);
    const Int8Atoms& dst = a.has_add ? a.add.y : a.out;
    auto offset = [&](const Int8Atoms& sf) {
      return int64_t(n) * sf.batch + int64_t(c0 / 32) * sf.group + int64_t(oh) * sf.line + int64_t(ow) * 32 +
             (c0 % 32);
    };
    if (a.has_add) {
      other.word = *reinterpret_cast<const int4*>(a.add.other.data + offset(a.add.other));
#pragma unroll
      for (int b = 0; b < 16; ++b)
        v.bytes[b] = k::atom_add_byte(v.bytes[b], other.bytes[b], a.out.scale, a.add.other.scale,
                                      a.add.y.scale, a.e.inv_y, a.add.relu, c0 + b >= g.M);
    } else {
#pragma unroll
      for (int b = 0; b < 16; ++b) v.bytes[b] = c0 + b < g.M ? v.bytes[b] : int8_t(0);
    }
    *reinterpret_cast<int4*>(dst.data + offset(dst)) = v.word;
  }
}

template <int kWarpsM, int kWarpsN>
void launch(const MmaConvArgs& a, cudaStream_t s) {
  const dim3 grid((a.pixels + kWarpRows * kWarpsM - 1) / (kWarpRows * kWarpsM),
                  unsigned((a.g.M + kWarpCols * kWarpsN - 1) / (kWarpCols * kWarpsN)));
  conv_atoms_mma_kernel<kWarpsM, kWarpsN><<<grid, 32 * kWarpsM * kWarpsN, 0, s>>>(a);
  DLAKIT_CUDA(cudaGetLastError());
}

// The bytes [begin, end) a surface of N x C x H x W spans.
std::pair<uintptr_t, uintptr_t> span(const Int8Atoms& s, int64_t N, int64_t C, int64_t H, int64_t W) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(s.data);
  return {begin,
          begin + uintptr_t((N - 1) * s.batch + ((C + 31) / 32 - 1) * s.group + (H - 1) * s.line + W * 32)};
}
}  // namespace

bool conv_atoms_mma_aliases(const k::ConvGeom& g, const Int8Atoms& in, const Int8Atoms& written) {
  const auto [in_begin, in_end] = span(in, g.N, g.C, g.H, g.W);
  const auto [out_begin, out_end] = span(written, g.N, g.M, g.OH, g.OW);
  return in_begin < out_end && out_begin < in_end;
}

bool conv_atoms_mma_tile(const k::ConvGeom& g, int sms, MmaTile& tile) {
  const int64_t pixels = g.N * g.OH * g.OW;
  if (g.G != 1 || pixels < 1 || pixels > INT32_MAX - 256) return false;
  auto blocks = [&](int64_t rows, int64_t cols) {
    return (pixels + rows - 1) / rows * ((g.M + cols - 1) / cols);
  };
  if (g.M > 64 && blocks(128, 128) >= sms) {
    tile = MmaTile::k128x128;
  } else if (blocks(128, 64) >= sms) {
    tile = MmaTile::k128x64;
  } else if (blocks(64, 64) >= sms) {
    tile = MmaTile::k64x64;
  } else {
    return false;
  }
  return (g.M + 63) / 64 <= 65535;
}

void conv_atoms_mma(const k::ConvGeom& g, MmaTile tile, const Int8Atoms& in, const int8_t* w, int64_t k_bytes,
                    const float* mult, const double* bq, const float* bias, k::ActParams act,
                    const k::StoreRule& store, const Int8Atoms& out, const AtomAdd* add, cudaStream_t s) {
  MmaConvArgs a;
  a.g = g, a.in = in, a.out = out, a.add = add ? *add : AtomAdd{}, a.has_add = add != nullptr;
  a.w = w, a.k_bytes = k_bytes, a.chunks = int(k_bytes / 32);
  a.atoms_in = FastDivide(uint32_t((g.C + 31) / 32)), a.kw = FastDivide(uint32_t(g.KW));
  a.pixels = unsigned(g.N * g.OH * g.OW);
  a.mult = mult, a.bq = bq, a.bias = bias, a.act = act;
  a.e = atom_epilogue(g, store, out, add);
  switch (tile) {
    case MmaTile::k128x128:
      return launch<2, 4>(a, s);
    case MmaTile::k128x64:
      return launch<2, 2>(a, s);
    case MmaTile::k64x64:
      return launch<1, 2>(a, s);
  }
}

}  // namespace dlakit::gpu
