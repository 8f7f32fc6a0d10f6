// The in-place INT8 surface operations (runtime/atom_ops.h) on CUDA: the residual Add (+ ReLU) and MaxPool
// on int8 chw32 surfaces, a block per line they write, with kernels/int8_atoms.cpp's
// arithmetic in its order (compiled with -fmad=false, as the CPU file is with -ffp-contract=off).
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

// Words: the four channels of a 4-byte word a thread, maxed as signed bytes in one instruction (__vmaxs4),
// where every line of x and y starts 4-byte aligned (max_pool_int8_atoms checks).
template <bool Words>
__global__ void max_pool_atoms_kernel(int64_t C, int64_t H, int64_t W, int64_t groups, PoolWindow p,
                                      Int8Atoms x, bool same_scale, Int8Atoms y, int64_t lines) {
  constexpr int kBytes = Words ? 4 : 1;
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
        int8_t bytes[4];
        uint32_t word;
      } m;
      m.word = 0x80808080u;  // -128 in every byte: an empty window's maximum
      for (int64_t kh = kh0; kh < kh1; ++kh)
        for (int64_t kw = kw0; kw < kw1; ++kw) {
          const int8_t* at = in + (ih + kh) * x.line + (iw + kw) * 32 + k;
          if constexpr (Words) {
            m.word = __vmaxs4(m.word, *reinterpret_cast<const uint32_t*>(at));
          } else {
            m.bytes[0] = *at > m.bytes[0] ? *at : m.bytes[0];
          }
        }
      for (int i = 0; i < kBytes; ++i) {
        const int8_t v = m.bytes[i];
        m.bytes[i] = g * 32 + k + i >= C ? int8_t(0)
                     : same_scale        ? v
                                         : int8_t(level(float(v) * x.scale, y.scale, 0));
      }
      if constexpr (Words)
        *reinterpret_cast<uint32_t*>(out + e) = m.word;
      else
        out[e] = m.bytes[0];
    }
  }
}

// Whether every line of the surface starts 4-byte aligned.
bool words_aligned(const Int8Atoms& t) {
  return (reinterpret_cast<uintptr_t>(t.data) | uintptr_t(t.batch) | uintptr_t(t.group) | uintptr_t(t.line)) %
             4 ==
         0;
}

}  // namespace

void add_int8_atoms(int64_t N, int64_t C, int64_t H, int64_t W, const Int8Atoms& a, const Int8Atoms& b,
                    bool relu, const Int8Atoms& y, cudaStream_t s) {
  const int64_t groups = (C + 31) / 32, lines = N * groups * H;
  if (!lines || !W) return;
  if (words_aligned(a) && words_aligned(b) && words_aligned(y))
    add_atoms_kernel<true><<<grid_blocks(lines), kThreads, 0, s>>>(C, H, W, groups, a, b, relu, y, lines);
  else
    add_atoms_kernel<false><<<grid_blocks(lines), kThreads, 0, s>>>(C, H, W, groups, a, b, relu, y, lines);
}

void max_pool_int8_atoms(int64_t N, int64_t C, int64_t H, int64_t W, const PoolWindow& p, const Int8Atoms& x,
                         bool same_scale, const Int8Atoms& y, cudaStream_t s) {
  const int64_t groups = (C + 31) / 32, lines = N * groups * p.OH;
  if (!lines || !p.OW) return;
  if (words_aligned(x) && words_aligned(y))
    max_pool_atoms_kernel<true>
        <<<grid_blocks(lines), kThreads, 0, s>>>(C, H, W, groups, p, x, same_scale, y, lines);
  else
    max_pool_atoms_kernel<false>
        <<<grid_blocks(lines), kThreads, 0, s>>>(C, H, W, groups, p, x, same_scale, y, lines);
}

}  // namespace dlakit::gpu::k
