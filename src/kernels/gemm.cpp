#include "kernels/gemm.h"

#include "base/threadpool.h"
#include "kernels/conv_direct.h"
#include "kernels/ref/float_ops.h"

#include <algorithm>
#include <cstring>

namespace dlakit {
namespace {

using Fn = void (*)(const GemmArgs&);
using PackFn = void (*)(PackedA&, const float*, int64_t, int64_t);

struct Choice {
  Fn fn;
  PackFn pack;
  void (*epilogue)(const GemmEpilogue&, float*, int64_t);
  const char* name;
  void (*conv)(const ConvDirectArgs&);
  void (*conv_pack)(PackedA&, const float*);
  void (*depthwise)(const DepthwiseArgs&);
  int64_t tile_cols;
};

Choice choose() {
#if defined(__x86_64__) && defined(DLAKIT_HAVE_X86_KERNELS)
  __builtin_cpu_init();
  using namespace gemm_isa;
  if (__builtin_cpu_supports("avx512f"))
    return {sgemm_avx512,       pack_a_avx512,    epilogue_avx512,  "avx512",
            conv_direct_avx512, conv_pack_avx512, depthwise_avx512, 32};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {sgemm_avx2,       pack_a_avx2,    epilogue_avx2,  "avx2",
            conv_direct_avx2, conv_pack_avx2, depthwise_avx2, 16};
#endif
  return {gemm_isa::sgemm_generic,       gemm_isa::pack_a_generic,    gemm_isa::epilogue_generic,  "generic",
          gemm_isa::conv_direct_generic, gemm_isa::conv_pack_generic, gemm_isa::depthwise_generic, 8};
}

const Choice& choice() {
  static const Choice c = choose();
  return c;
}

}  // namespace

void sgemm(const GemmArgs& g) { choice().fn(g); }

std::shared_ptr<const PackedA> sgemm_pack_a(int64_t M, int64_t K, const float* A, int64_t a_rs,
                                            int64_t a_cs) {
  auto p = std::make_shared<PackedA>();
  p->M = M;
  p->K = K;
  choice().pack(*p, A, a_rs, a_cs);
  return p;
}
const char* sgemm_isa() { return choice().name; }
void gemm_epilogue(const GemmEpilogue& e, float* c, int64_t n) { choice().epilogue(e, c, n); }

void conv_direct(const ConvDirectArgs& a) { choice().conv(a); }
void conv_depthwise_direct(const DepthwiseArgs& a) { choice().depthwise(a); }
int64_t conv_direct_tile_cols() { return choice().tile_cols; }

std::shared_ptr<const PackedA> conv_direct_pack_weights(int64_t M, int64_t K, const float* w) {
  auto p = std::make_shared<PackedA>();
  p->M = M;
  p->K = K;
  choice().conv_pack(*p, w);
  return p;
}

int64_t conv_direct_layout(int64_t Wp, int64_t S) { return (Wp + S - 1) / S; }

// The slack lets a tile's last vector loads run past the final row without leaving the buffer: a tap reaches
// at most one padded row (S * Wq floats) further, a tile at most 64 floats.
static int64_t conv_direct_slack(int64_t S, int64_t Wq) { return S * Wq + 256; }

int64_t conv_direct_buffer_size(int64_t C, int64_t Hp, int64_t S, int64_t Wq) {
  return C * Hp * S * Wq + conv_direct_slack(S, Wq);
}

// One channel [H][W] -> [Hp][S][Wq], zeros included.
static void pad_plane(const float* x, int64_t H, int64_t W, int64_t pt, int64_t pl, int64_t Hp, int64_t S,
                      int64_t Wq, float* xp) {
  for (int64_t r = 0; r < Hp; ++r) {
    float* dst = xp + r * S * Wq;
    const int64_t ih = r - pt;
    if (ih < 0 || ih >= H) {
      std::memset(dst, 0, sizeof(float) * size_t(S * Wq));
      continue;
    }
    const float* src = x + ih * W;
    if (S == 1) {  // [pl zeros][the row, clipped to the padded width][zeros]
      const int64_t lead = std::min(pl, Wq), len = std::clamp<int64_t>(Wq - pl, 0, W);
      std::memset(dst, 0, sizeof(float) * size_t(lead));
      std::memcpy(dst + lead, src, sizeof(float) * size_t(len));
      std::memset(dst + lead + len, 0, sizeof(float) * size_t(Wq - lead - len));
      continue;
    }
    for (int64_t phase = 0; phase < S; ++phase) {
      float* out = dst + phase * Wq;
      const auto [lo, hi] = conv_direct_phase_span(W, pl, S, Wq, phase);
      const float* in = src + phase - pl;
      for (int64_t q = 0; q < lo; ++q) out[q] = 0.f;
      for (int64_t q = lo; q < hi; ++q) out[q] = in[q * S];
      for (int64_t q = hi; q < Wq; ++q) out[q] = 0.f;
    }
  }
}

void conv_direct_pad_input(const float* x, int64_t C, int64_t H, int64_t W, int64_t pt, int64_t pl,
                           int64_t Hp, int64_t S, int64_t Wq, float* xp) {
  parallel_for(
      C,
      [&](int64_t s, int64_t e) {
        for (int64_t c = s; c < e; ++c)
          pad_plane(x + c * H * W, H, W, pt, pl, Hp, S, Wq, xp + c * Hp * S * Wq);
      },
      4);
  std::memset(xp + C * Hp * S * Wq, 0, sizeof(float) * size_t(conv_direct_slack(S, Wq)));
}

float gemm_epilogue_scalar(const GemmEpilogue& e, float v, float residual) {
  if (e.residual) v = v + residual;
  switch (e.act) {
    case GemmEpilogue::Act::kRelu:
      return ref::f32::relu(v);
    case GemmEpilogue::Act::kClip:
      return ref::f32::clip(v, e.lo, e.hi);
    case GemmEpilogue::Act::kLeakyRelu:
      return ref::f32::leaky_relu(v, e.alpha);
    case GemmEpilogue::Act::kHardSigmoidMul:
      return v * ref::f32::hard_sigmoid(v, e.alpha, e.beta);
    case GemmEpilogue::Act::kNone:
      break;
  }
  return v;
}

void sgemm_naive(const GemmArgs& g) {
  const GemmEpilogue& e = g.epilogue;
  for (int64_t i = 0; i < g.M; ++i)
    for (int64_t j = 0; j < g.N; ++j) {
      double s = (g.accumulate ? g.C[i * g.ldc + j] : 0.0) + (g.row_bias ? g.row_bias[i] : 0.f);
      for (int64_t k = 0; k < g.K; ++k)
        s += double(g.A[i * g.a_rs + k * g.a_cs]) * g.B[k * g.b_rs + j * g.b_cs];
      g.C[i * g.ldc + j] = gemm_epilogue_scalar(e, float(s), e.residual ? e.residual[i * e.ldr + j] : 0.f);
    }
}

}  // namespace dlakit
