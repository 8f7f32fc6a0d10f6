#include "kernels/gemm.h"

#include "base/cpu.h"
#include "base/error.h"
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
  void (*depthwise_lanes)(const DepthwiseArgs&);         // channels in lanes (AVX-512 only), else null
  void (*expand_depthwise)(const ExpandDepthwiseArgs&);  // the same, its input expanded in place (AVX-512)
  void (*conv_channels)(const ConvDirectArgs&);
  void (*conv_channels_pack)(PackedA&, const float*);
  const gemm_isa::TileShapes* shapes;
};

// Every kernel of one ISA (gemm_<isa>.cpp), named after it.
#define DLAKIT_ISA_KERNELS(isa)                                                                    \
  Choice {                                                                                         \
    .fn = sgemm_##isa, .pack = pack_a_##isa, .epilogue = epilogue_##isa, .name = #isa,             \
    .conv = conv_direct_##isa, .conv_pack = conv_pack_##isa, .depthwise = depthwise_##isa,         \
    .depthwise_lanes = nullptr, .expand_depthwise = nullptr, .conv_channels = conv_channels_##isa, \
    .conv_channels_pack = conv_channels_pack_##isa, .shapes = &tile_shapes_##isa                   \
  }

Choice choose() {
  using namespace gemm_isa;
#if defined(__x86_64__) && defined(DLAKIT_HAVE_X86_KERNELS)
  if (cpu::avx512()) {
    Choice c = DLAKIT_ISA_KERNELS(avx512);
    c.depthwise_lanes = depthwise_lanes_avx512;
    c.expand_depthwise = expand_depthwise_avx512;
    return c;
  }
  if (cpu::avx2_fma()) return DLAKIT_ISA_KERNELS(avx2);
#endif
  return DLAKIT_ISA_KERNELS(generic);
}
#undef DLAKIT_ISA_KERNELS

// Weights [M x K] in the layout of one of the direct kernels' packers.
std::shared_ptr<const PackedA> packed_by(void (*pack)(PackedA&, const float*), int64_t M, int64_t K,
                                         const float* w) {
  auto p = std::make_shared<PackedA>();
  p->M = M;
  p->K = K;
  pack(*p, w);
  return p;
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
void conv_depthwise_direct(const DepthwiseArgs& a) {
  if (choice().depthwise_lanes && depthwise_lanes_suit(a)) return choice().depthwise_lanes(a);
  choice().depthwise(a);
}
void conv_direct_channels(const ConvDirectArgs& a) { choice().conv_channels(a); }

bool conv_expand_depthwise_suits(const ExpandDepthwiseArgs& a) {
  // Past one k-block, the expansion on the GEMM would add block sums: not the channel tile's chain.
  return choice().expand_depthwise && depthwise_lanes_suit(a.dw) && a.C <= choice().shapes->gemm_kc;
}

void conv_expand_depthwise(const ExpandDepthwiseArgs& a) {
  if (!conv_expand_depthwise_suits(a))
    fail(Status::kInternal, "the fused expansion and depthwise kernel called where it does not suit");
  choice().expand_depthwise(a);
}

std::shared_ptr<const PackedA> conv_channels_pack_weights(int64_t M, int64_t K, const float* w) {
  return packed_by(choice().conv_channels_pack, M, K, w);
}

ConvKernel conv_choose_kernel(const ConvShape2d& s) { return conv_choose_kernel(s, *choice().shapes); }

// conv_choose_kernel's cost model for one shape, its epilogue included.
static ConvKernel cheapest_kernel(const ConvShape2d& s, const gemm_isa::TileShapes& c) {
  auto round_up = [](int64_t v, int64_t to) { return double((v + to - 1) / to * to); };
  // Costs in multiply-adds computed per step of K, wasted lanes included (docs/design.md). Measured with
  // bench/bench_kernels.cpp: with every lane useful the two direct tilings run within 3 % of each other
  // (BM_ConvTiles); a channel tile's transposed store costs about 16 steps of K, which BM_ConvPointwise
  // bears out against the GEMM on 1x1 layers. Not measured: the 1.3 charged to the GEMM for its im2col
  // (an estimate).
  const int64_t ohw = s.OH * s.OW;
  const double positions =
      round_up(s.M, c.direct_mr) *
      double(conv_direct_position_tiling(s.OH, s.OW, s.Wq, s.S == 1 && s.sh == 1, c.direct_nr, c.vl).lanes);
  // The GEMM is charged whole column panels, although its last panel computes only the vectors it needs:
  // charging that (whole vectors) moved 14x14 shapes from the channel tiles to the GEMM (four in ResNet-50
  // and MobileNetV2; GoogLeNet's recorded outputs changed too), changed recorded FP16 outputs and gained
  // nothing measurable in ResNet-50 or MobileNetV2 (docs/benchmarks.md, twenty-seventh session).
  const double gemm = round_up(s.M, c.gemm_mr) * round_up(ohw, c.gemm_nr) * (s.in_place ? 1.0 : 1.3);
  // Channel tiles of fewer than 4 positions have too few independent FMA chains to hide their latency.
  const ConvChannelTiles rt = conv_channel_tiles(s.OW, c.channel_p);
  const int64_t last = s.OW - (rt.per_row - 1) * rt.width;
  const double per_row =
      double((rt.per_row - 1) * std::max<int64_t>(rt.width, 4) + std::max<int64_t>(last, 4));
  // A residual read into a channel tile's layout, value by value, costs about 70 steps of K more (one
  // thread, BM_ConvPointwise with and without it: 256 -> 1024 at 14x14 0.559 -> 0.706 ms, 512 -> 2048 at 7x7
  // 0.584 -> 0.658; the GEMM adds it in registers: +1 % and +4 %).
  const double store_steps = s.residual ? 86.0 : 16.0;
  const double channels = round_up(s.M, c.channel_nr) * double(s.OH) * per_row * 1.03 *
                          (1.0 + store_steps / double(std::max<int64_t>(s.K, 1)));
  // The channel tiles and the GEMM read a 1x1 convolution's input in place; the position tiles would need a
  // padded copy with slack.
  if (s.in_place) return channels < gemm ? ConvKernel::kDirectChannels : ConvKernel::kGemm;
  if (channels < std::min(positions, gemm)) return ConvKernel::kDirectChannels;
  return positions <= gemm ? ConvKernel::kDirectPositions : ConvKernel::kGemm;
}

ConvKernel conv_choose_kernel(const ConvShape2d& s, const gemm_isa::TileShapes& c) {
  if (s.K == 0) return ConvKernel::kGemm;  // no input channels: only the GEMM writes the bias alone
  ConvShape2d alone = s;
  alone.residual = false;
  const ConvKernel plain = cheapest_kernel(alone, c);
  if (!s.residual) return plain;
  // A fused residual Add may change the kernel only to one whose sums have the same bits, so that fusing
  // it changes no result (tests/unit/fusion_test.cpp): the direct tilings always, the GEMM where K fits in
  // one of its k-blocks (beyond, it adds each block's sum to the last).
  const ConvKernel fused = cheapest_kernel(s, c);
  const bool same_bits = (fused != ConvKernel::kGemm && plain != ConvKernel::kGemm) || s.K <= c.gemm_kc;
  return same_bits ? fused : plain;
}

bool depthwise_lanes_suit(const DepthwiseArgs& a) {
  // Measured (bench_kernels BM_Conv on MobileNetV2's depthwise shapes, one and two threads;
  // docs/benchmarks.md): channels in lanes win at every shape up to 56 outputs a row, at stride 1 and 2
  // (two threads: 960 @ 7x7 0.049 -> 0.020 ms, 576 @ 14x14 0.055 -> 0.032 ms, 144 @ 56x56 0.13 -> 0.105 ms),
  // and lose at 112 (32 channels at 112x112: 0.10 -> 0.12 ms). Its buffer holds 16 channels (64 bytes a
  // cell, 16 times the planar kernel's plane) and stays with the thread: at most 1 MB of cells (MobileNetV2's
  // largest, 96 @ 112x112 stride 2, takes 0.8 MB), so a tall map goes to the planar kernel.
  return a.S <= 2 && a.OW <= 56 && a.Hp * depthwise_lanes_width(a) <= (int64_t(1) << 14);
}

std::shared_ptr<const PackedA> conv_direct_pack_weights(int64_t M, int64_t K, const float* w) {
  return packed_by(choice().conv_pack, M, K, w);
}

int64_t conv_direct_layout(int64_t Wp, int64_t S) { return (Wp + S - 1) / S; }

// The slack lets a tile's last vector loads run past the final row without leaving the buffer: a tap reaches
// at most one padded row (S * Wq floats) further, a tile at most 64 floats.
static int64_t conv_direct_slack(int64_t S, int64_t Wq) { return S * Wq + 256; }

int64_t conv_direct_buffer_size(int64_t C, int64_t Hp, int64_t S, int64_t Wq) {
  return C * Hp * S * Wq + conv_direct_slack(S, Wq);
}

// Padded row r of one channel [H][W] -> [S][Wq] at dst, zeros included.
static void pad_row(const float* x, int64_t r, int64_t H, int64_t W, int64_t pt, int64_t pl, int64_t S,
                    int64_t Wq, const PhaseSpan* spans, float* dst) {
  const int64_t ih = r - pt;
  if (ih < 0 || ih >= H) {
    std::memset(dst, 0, sizeof(float) * size_t(S * Wq));
    return;
  }
  const float* src = x + ih * W;
  if (S == 1) {  // [pl zeros][the row, clipped to the padded width][zeros]
    const int64_t lead = std::min(pl, Wq), len = std::clamp<int64_t>(Wq - pl, 0, W);
    std::memset(dst, 0, sizeof(float) * size_t(lead));
    std::memcpy(dst + lead, src, sizeof(float) * size_t(len));
    std::memset(dst + lead + len, 0, sizeof(float) * size_t(Wq - lead - len));
    return;
  }
  for (int64_t phase = 0; phase < S; ++phase) {
    float* out = dst + phase * Wq;
    const PhaseSpan span = spans[phase];
    for (int64_t q = 0; q < span.lo; ++q) out[q] = 0.f;
    conv_direct_copy_phase(src + phase - pl, out, span, S);
    for (int64_t q = span.hi; q < Wq; ++q) out[q] = 0.f;
  }
}

void conv_direct_pad_input(const float* x, int64_t C, int64_t H, int64_t W, int64_t pt, int64_t pl,
                           int64_t Hp, int64_t S, int64_t Wq, float* xp) {
  const std::vector<PhaseSpan> spans = conv_direct_phase_spans(W, pl, S, Wq);
  // Row by row, so that an input of few channels (a network's first layer: 3) is shared by the threads too.
  parallel_for(
      C * Hp,
      [&](int64_t s, int64_t e) {
        for (int64_t cr = s; cr < e; ++cr)
          pad_row(x + (cr / Hp) * H * W, cr % Hp, H, W, pt, pl, S, Wq, spans.data(), xp + cr * S * Wq);
      },
      std::max<int64_t>(1, 4096 / (S * Wq)));
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
