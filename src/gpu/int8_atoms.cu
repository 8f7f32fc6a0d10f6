// The in-place INT8 surface operations (runtime/atom_ops.h) on CUDA: the residual Add (+ ReLU) and MaxPool
// on int8 chw32 surfaces, a block per line they write, with kernels/int8_atoms.cpp's
// arithmetic in its order (compiled with -fmad=false, as the CPU file is with -ffp-contract=off).
#include <algorithm>
#include <type_traits>

#include "gpu/device_math.cuh"
#include "gpu/kernels.h"

namespace dlakit::gpu::k {
namespace {

// Both kernels take one line of the output surface (n, atom group, row: split_line) per block and walk its
// bytes (column w, channel k of the atom) with the block's threads: the coordinates come from the block
// and a shift, not from a division per byte.
__device__ inline int64_t line_offset(const Int8Atoms& s, int64_t n, int64_t g, int64_t h) {
  return n * s.batch + g * s.group + h * s.line;
}

// Words: 4 bytes a thread, where every line of a, b and y starts 4-byte aligned (add_int8_atoms checks).
template <bool Words>
__global__ void add_atoms_kernel(int64_t C, int64_t H, int64_t W, int64_t groups, Int8Atoms a, Int8Atoms b,
                                 bool relu, Int8Atoms y, int64_t lines) {
  constexpr int kBytes = Words ? 4 : 1;
  using Word = std::conditional_t<Words, uint32_t, uint8_t>;
  const float inv_y = numerics::usable_inverse(y.scale);
  for (int64_t line = blockIdx.x; line < lines; line += gridDim.x) {
    int64_t n, g, h;
    split_line(line, H, groups, n, g, h);
    const int8_t* pa = a.data + line_offset(a, n, g, h);
    const int8_t* pb = b.data + line_offset(b, n, g, h);
    int8_t* out = y.data + line_offset(y, n, g, h);
    for (int64_t e = threadIdx.x * kBytes; e < W * 32; e += blockDim.x * kBytes) {
      union {
        int8_t bytes[kBytes];
        Word word;
      } qa, qb, q;
      qa.word = *reinterpret_cast<const Word*>(pa + e);
      qb.word = *reinterpret_cast<const Word*>(pb + e);
      for (int i = 0; i < kBytes; ++i)
        q.bytes[i] = atom_add_byte(qa.bytes[i], qb.bytes[i], a.scale, b.scale, y.scale, inv_y, relu,
                                   g * 32 + ((e + i) & 31) >= C);
      *reinterpret_cast<Word*>(out + e) = q.word;
    }
  }
}

// kBytes channels a thread (1, 4 or 16), maxed as signed bytes (__vmaxs4 on each word; one compare for a
// byte), where every line of x and y starts kBytes-aligned (max_pool_int8_atoms checks); the block as wide
// as a line's pieces need, up to kThreads.
template <int kBytes>
__global__ void max_pool_atoms_kernel(int64_t C, int64_t H, int64_t W, int64_t groups, PoolWindow p,
                                      Int8Atoms x, bool same_scale, Int8Atoms y, int64_t lines) {
  constexpr int kWords = kBytes < 4 ? 1 : kBytes / 4;
  for (int64_t line = blockIdx.x; line < lines; line += gridDim.x) {
    int64_t n, g, oh;
    split_line(line, p.OH, groups, n, g, oh);
    const int64_t ih = oh * p.sh - p.pt, kh0 = ih < 0 ? -ih : 0, kh1 = p.KH < H - ih ? p.KH : H - ih;
    const int8_t* in = x.data + line_offset(x, n, g, 0);
    int8_t* out = y.data + line_offset(y, n, g, oh);
    for (int64_t e = threadIdx.x * kBytes; e < p.OW * 32; e += blockDim.x * kBytes) {
      const int64_t k = e & 31, ow = e >> 5;
      const int64_t iw = ow * p.sw - p.pl;
      const int64_t kw0 = iw < 0 ? -iw : 0, kw1 = p.KW < W - iw ? p.KW : W - iw;
      union {
        int8_t bytes[kWords * 4];
        uint32_t words[kWords];
        int4 quad;  // kBytes == 16
      } m;
      for (int i = 0; i < kWords; ++i) m.words[i] = 0x80808080u;  // -128: an empty window's maximum
      for (int64_t kh = kh0; kh < kh1; ++kh)
        for (int64_t kw = kw0; kw < kw1; ++kw) {
          const int8_t* at = in + (ih + kh) * x.line + (iw + kw) * 32 + k;
          if constexpr (kBytes == 16) {
            const int4 quad = *reinterpret_cast<const int4*>(at);
            const uint32_t words[4] = {uint32_t(quad.x), uint32_t(quad.y), uint32_t(quad.z),
                                       uint32_t(quad.w)};
            for (int i = 0; i < 4; ++i) m.words[i] = __vmaxs4(m.words[i], words[i]);
          } else if constexpr (kBytes == 4) {
            m.words[0] = __vmaxs4(m.words[0], *reinterpret_cast<const uint32_t*>(at));
          } else {
            m.bytes[0] = *at > m.bytes[0] ? *at : m.bytes[0];
          }
        }
      for (int i = 0; i < kBytes; ++i) {
        const int8_t top = m.bytes[i];
        m.bytes[i] = g * 32 + k + i >= C ? int8_t(0)
                     : same_scale        ? top
                                         : int8_t(level(float(top) * x.scale, y.scale, 0));
      }
      if constexpr (kBytes == 16)
        *reinterpret_cast<int4*>(out + e) = m.quad;
      else if constexpr (kBytes == 4)
        *reinterpret_cast<uint32_t*>(out + e) = m.words[0];
      else
        out[e] = m.bytes[0];
    }
  }
}

}  // namespace

void add_int8_atoms(int64_t N, int64_t C, int64_t H, int64_t W, const Int8Atoms& a, const Int8Atoms& b,
                    bool relu, const Int8Atoms& y, cudaStream_t s) {
  const int64_t groups = (C + 31) / 32, lines = N * groups * H;
  if (!lines || !W) return;
  if (a.lines_aligned(4) && b.lines_aligned(4) && y.lines_aligned(4))
    add_atoms_kernel<true><<<grid_blocks(lines), kThreads, 0, s>>>(C, H, W, groups, a, b, relu, y, lines);
  else
    add_atoms_kernel<false><<<grid_blocks(lines), kThreads, 0, s>>>(C, H, W, groups, a, b, relu, y, lines);
}

void max_pool_int8_atoms(int64_t N, int64_t C, int64_t H, int64_t W, const PoolWindow& p, const Int8Atoms& x,
                         bool same_scale, const Int8Atoms& y, cudaStream_t s) {
  const int64_t groups = (C + 31) / 32, lines = N * groups * p.OH;
  if (!lines || !p.OW) return;
  // A line's pieces in one pass where they fit a block (ResNet's stem pool: 56 x 32 bytes, 112 pieces of 16,
  // 128 threads), whole warps; several blocks an SM then run together.
  const auto launch = [&](auto kernel, int64_t bytes) {
    const int64_t pieces = p.OW * 32 / bytes, threads = std::min<int64_t>(kThreads, (pieces + 31) / 32 * 32);
    kernel<<<grid_blocks(lines), unsigned(threads), 0, s>>>(C, H, W, groups, p, x, same_scale, y, lines);
  };
  if (x.lines_aligned(16) && y.lines_aligned(16))
    launch(max_pool_atoms_kernel<16>, 16);
  else if (x.lines_aligned(4) && y.lines_aligned(4))
    launch(max_pool_atoms_kernel<4>, 4);
  else
    launch(max_pool_atoms_kernel<1>, 1);
}

}  // namespace dlakit::gpu::k
