// conv_atoms_mma (conv_atoms_mma.h): the implicit GEMM's main loop (implicit_gemm.cuh) with int8 operands,
// then the block writes its levels through shared memory as whole 16-byte pieces of the output atoms.
// Compiled with -fmad=false like the other exact kernels.
#include <type_traits>
#include <utility>

#include "gpu/atom_epilogue.cuh"
#include "gpu/conv_atoms_mma.h"
#include "gpu/gpu_check.h"
#include "gpu/implicit_gemm.cuh"

namespace dlakit::gpu {
namespace {

using igemm::kWarpCols;
using igemm::kWarpRows;

struct MmaConvArgs {
  igemm::Operands op;
  Int8Atoms out;
  AtomAdd add;
  bool has_add;
  const float* mult;
  const double* bq;
  const float* bias;
  k::ActParams act;
  AtomEpilogue e;
};

// The epilogue on a warp's accumulators into the block's output tile (int8 levels, kPitch bytes a row): lane
// holds rows lane / 4 and lane / 4 + 8 of each 16-row piece, columns 2 (lane % 4) and the next of each
// 8-filter piece. Filters past M get filter 0's numbers; the tile's writer masks them.
template <k::Act kAct, AtomStore kStore, int kPitch>
__device__ void levels_for(const int (&acc)[4][4][4], const MmaConvArgs& a, int8_t* tile, int m0, int row0,
                           int col0, int lane) {
#pragma unroll
  for (int ni = 0; ni < 4; ++ni) {
    const int col = col0 + ni * 8 + (lane & 3) * 2;
    float mult_m[2], bias_m[2];
    double bq_m[2];
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int m = m0 + col + e < a.op.g.M ? m0 + col + e : 0;
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
          q[e] = numerics::level_byte(conv_atom_level<kAct, kStore>(
              acc[mi][ni][h * 2 + e], mult_m[e], bq_m[e], bias_m[e], a.act, a.e, a.out.scale));
        *reinterpret_cast<char2*>(tile + r * kPitch + col) = make_char2(q[0], q[1]);
      }
  }
}

// levels_for with the activation and the store chosen once per thread.
template <int kPitch>
__device__ void levels_to_tile(const int (&acc)[4][4][4], const MmaConvArgs& a, int8_t* tile, int m0,
                               int warp_m, int warp_n, int lane) {
  const int row0 = warp_m * kWarpRows, col0 = warp_n * kWarpCols;
  auto with = [&](auto act, auto store) {
    levels_for<decltype(act)::value, decltype(store)::value, kPitch>(acc, a, tile, m0, row0, col0, lane);
  };
  using Relu = std::integral_constant<k::Act, k::Act::kRelu>;
  using Clip = std::integral_constant<k::Act, k::Act::kClip>;
  using Leaky = std::integral_constant<k::Act, k::Act::kLeakyRelu>;
  using None = std::integral_constant<k::Act, k::Act::kNone>;
  auto for_act = [&](auto store) {
    switch (a.act.act) {
      case k::Act::kRelu:
        return with(Relu{}, store);
      case k::Act::kClip:
        return with(Clip{}, store);
      case k::Act::kLeakyRelu:
        return with(Leaky{}, store);
      default:
        return with(None{}, store);
    }
  };
  with_atom_store(a.e, for_act);
}

template <int kWarpsM, int kWarpsN>
__global__ void __launch_bounds__(32 * kWarpsM * kWarpsN) conv_atoms_mma_kernel(const MmaConvArgs a) {
  using B = igemm::Block<kWarpsM, kWarpsN>;
  constexpr int kBlockThreads = B::kThreads, kRows = B::kRows, kCols = B::kCols;
  constexpr int kOutPitch = kCols + 16;  // the output tile's rows: 16 bytes apart in banks, whole units
  constexpr int kSharedBytes = B::kStagesBytes > kRows * kOutPitch ? B::kStagesBytes : kRows * kOutPitch;
  __shared__ __align__(128) int8_t shared[kSharedBytes];

  const k::ConvGeom& g = a.op.g;
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
  const unsigned p0 = blockIdx.x * unsigned(kRows);
  const int m0 = int(blockIdx.y) * kCols;
  int acc[4][4][4] = {};
  igemm::accumulate<kWarpsM, kWarpsN>(a.op, shared, p0, m0, 0, igemm::stages(a.op), acc);

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
    if (p >= a.op.pixels || c0 >= atoms_out * 32) continue;
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
    // A piece whose 16 channels are all real (every piece short of the padding) takes no per-byte test.
    const bool whole = c0 + 16 <= g.M;
    if (a.has_add) {
      other.word = *reinterpret_cast<const int4*>(a.add.other.data + offset(a.add.other));
      auto add = [&](auto whole_piece) {
#pragma unroll
        for (int b = 0; b < 16; ++b)
          v.bytes[b] =
              k::atom_add_byte(v.bytes[b], other.bytes[b], a.out.scale, a.add.other.scale, a.add.y.scale,
                               a.e.inv_y, a.add.relu, !decltype(whole_piece)::value && c0 + b >= g.M);
      };
      if (whole) {
        add(std::true_type{});
      } else {
        add(std::false_type{});
      }
    } else if (!whole) {
#pragma unroll
      for (int b = 0; b < 16; ++b) v.bytes[b] = c0 + b < g.M ? v.bytes[b] : int8_t(0);
    }
    *reinterpret_cast<int4*>(dst.data + offset(dst)) = v.word;
  }
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

void conv_atoms_mma(const k::ConvGeom& g, MmaTile tile, const Int8Atoms& in, const int8_t* w, int64_t k_bytes,
                    const float* mult, const double* bq, const float* bias, k::ActParams act,
                    const k::StoreRule& store, const Int8Atoms& out, const AtomAdd* add, cudaStream_t s) {
  MmaConvArgs a;
  a.op = igemm::operands(g, in.data, in.batch, in.group, in.line, (g.C + 31) / 32, w, k_bytes);
  a.out = out, a.add = add ? *add : AtomAdd{}, a.has_add = add != nullptr;
  a.mult = mult, a.bq = bq, a.bias = bias, a.act = act;
  a.e = atom_epilogue(g, store, out, add);
  igemm::launch_tile(tile, [&](auto warps_m, auto warps_n) {
    constexpr int kWarpsM = decltype(warps_m)::value, kWarpsN = decltype(warps_n)::value;
    conv_atoms_mma_kernel<kWarpsM, kWarpsN>
        <<<igemm::grid_of<kWarpsM, kWarpsN>(a.op), 32 * kWarpsM * kWarpsN, 0, s>>>(a);
  });
}

}  // namespace dlakit::gpu
