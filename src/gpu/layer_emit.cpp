#include "gpu/layer_emit.h"

#include <bit>
#include <cmath>
#include <limits>

#include "base/fp16.h"
#include "gpu/conv_f16_gemm.h"
#include "gpu/conv_int8_gemm.h"
#include "gpu/gpu_check.h"
#include "gpu/kernels.h"
#include "kernels/fused_activation.h"
#include "kernels/ref/batch_norm.h"
#include "kernels/ref/common.h"
#include "kernels/ref/conv_geom.h"
#include "kernels/ref/resize_plan.h"
#include "kernels/ref/slice_plan.h"
#include "kernels/ref/softmax.h"

namespace dlakit::gpu {

int rounding_code(quant::Rounding r) { return r == quant::Rounding::kHalfAwayFromZero ? 0 : 1; }

void set_input0(LayerCall& c, OpKind op, const numerics::StepRules& rules, bool stored_half) {
  const bool rounds_half = !rules.inputs.empty() && rules.inputs[0].round_fp16;
  c.in0_unrounded =
      op == OpKind::Conv && !c.int8 && rounds_half && rounds_to_half_only(rules.inputs[0]) && !stored_half;
  c.in0_half = rounds_half && !c.in0_unrounded;
}

namespace {

// The INT8-exact unary ops (kernels.h); the transcendental ones may differ from glibc by an ulp.
bool exact(k::Unary u) { return int(u) <= int(k::Unary::kCeil); }

// A unary node's results for every fp16 value, by fp16 bits, from the reference kernel.
std::vector<float> half_table(const Node& node) {
  Tensor in(DType::kF32, {65536});
  for (uint32_t h = 0; h < 65536; ++h) in.data<float>()[h] = half_to_float(uint16_t(h));
  std::vector<const Tensor*> inputs(node.inputs.size(), nullptr);
  inputs.at(0) = &in;
  const Tensor out =
      run_kernel(node, inputs, {{DType::kF32, {65536}}}, std::vector<char>(inputs.size(), 0))[0];
  return std::vector<float>(out.data<float>(), out.data<float>() + 65536);
}

bool unary_code(OpKind op, k::Unary& u) {
  switch (op) {
    case OpKind::Relu:
      u = k::Unary::kRelu;
      return true;
    case OpKind::LeakyRelu:
      u = k::Unary::kLeakyRelu;
      return true;
    case OpKind::Clip:
      u = k::Unary::kClip;
      return true;
    case OpKind::HardSigmoid:
      u = k::Unary::kHardSigmoid;
      return true;
    case OpKind::HardSwish:
      u = k::Unary::kHardSwish;
      return true;
    case OpKind::Neg:
      u = k::Unary::kNeg;
      return true;
    case OpKind::Abs:
      u = k::Unary::kAbs;
      return true;
    case OpKind::Sqrt:
      u = k::Unary::kSqrt;
      return true;
    case OpKind::Reciprocal:
      u = k::Unary::kReciprocal;
      return true;
    case OpKind::Floor:
      u = k::Unary::kFloor;
      return true;
    case OpKind::Ceil:
      u = k::Unary::kCeil;
      return true;
    case OpKind::Sigmoid:
      u = k::Unary::kSigmoid;
      return true;
    case OpKind::Tanh:
      u = k::Unary::kTanh;
      return true;
    case OpKind::Elu:
      u = k::Unary::kElu;
      return true;
    case OpKind::Softplus:
      u = k::Unary::kSoftplus;
      return true;
    case OpKind::Exp:
      u = k::Unary::kExp;
      return true;
    case OpKind::Log:
      u = k::Unary::kLog;
      return true;
    case OpKind::Erf:
      u = k::Unary::kErf;
      return true;
    case OpKind::Reshape:
    case OpKind::Flatten:
    case OpKind::Squeeze:
    case OpKind::Unsqueeze:
    case OpKind::Identity:
    case OpKind::Dropout:
      u = k::Unary::kCopy;
      return true;
    default:
      return false;
  }
}

bool binary_code(OpKind op, k::Binary& b) {
  switch (op) {
    case OpKind::Add:
    case OpKind::Sum:
      b = k::Binary::kAdd;
      return true;
    case OpKind::Sub:
      b = k::Binary::kSub;
      return true;
    case OpKind::Mul:
      b = k::Binary::kMul;
      return true;
    case OpKind::Div:
      b = k::Binary::kDiv;
      return true;
    case OpKind::Max:
      b = k::Binary::kMax;
      return true;
    case OpKind::Min:
      b = k::Binary::kMin;
      return true;
    case OpKind::Pow:
      b = k::Binary::kPow;
      return true;
    case OpKind::PRelu:
      b = k::Binary::kPRelu;
      return true;
    default:
      return false;
  }
}

}  // namespace

k::ActParams fused_act(const Node& n) {
  const GemmEpilogue e = ref::fused_epilogue(n);
  switch (e.act) {
    case GemmEpilogue::Act::kRelu:
      return {k::Act::kRelu, 0, 0};
    case GemmEpilogue::Act::kClip:
      return {k::Act::kClip, e.lo, e.hi};
    case GemmEpilogue::Act::kLeakyRelu:
      return {k::Act::kLeakyRelu, e.alpha, 0};
    case GemmEpilogue::Act::kHardSigmoidMul:
      fail(Status::kUnsupported, n.label(),
           ": HardSigmoidMul is the FP32 reference engine's fusion, not an activation of a DLA program");
    case GemmEpilogue::Act::kNone:
      break;
  }
  return {};
}

const void* DeviceArena::upload(const void* host, size_t bytes) {
  void* d = alloc(bytes);
  DLAKIT_CUDA(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
  return d;
}

void* DeviceArena::zeroed(size_t bytes) {
  void* d = alloc(bytes);
  DLAKIT_CUDA(cudaMemset(d, 0, bytes));
  return d;
}

// A copy from pageable memory may return before its bytes reach the device, and a memset is asynchronous.
void DeviceArena::settle() { DLAKIT_CUDA(cudaStreamSynchronize(nullptr)); }

void* DeviceArena::scratch(size_t slot, size_t bytes) {
  if (scratch_.size() <= slot) scratch_.resize(slot + 1, {0, nullptr});
  if (bytes > scratch_[slot].first) {
    const size_t size = std::bit_ceil(bytes);
    void* buffer = alloc(size);  // may throw: the slot then keeps its old, smaller buffer and size
    scratch_[slot] = {size, buffer};
  }
  return scratch_[slot].second;
}

std::vector<double> time_launch_groups(const std::vector<std::vector<Launch>>& groups, cudaStream_t s) {
  std::vector<cudaEvent_t> ev(groups.size() + 1);
  for (auto& e : ev) DLAKIT_CUDA(cudaEventCreate(&e));
  DLAKIT_CUDA(cudaEventRecord(ev[0], s));
  for (size_t i = 0; i < groups.size(); ++i) {
    for (const Launch& l : groups[i]) l(s);
    DLAKIT_CUDA(cudaEventRecord(ev[i + 1], s));
  }
  DLAKIT_CUDA(cudaEventSynchronize(ev.back()));
  std::vector<double> ms(groups.size());
  for (size_t i = 0; i < ms.size(); ++i) {
    float t = 0;
    DLAKIT_CUDA(cudaEventElapsedTime(&t, ev[i], ev[i + 1]));
    ms[i] = t;
  }
  for (auto& e : ev) cudaEventDestroy(e);
  return ms;
}

const float* apply_input_rule(const float* x, int64_t count, const numerics::InputRule& rule,
                              quant::Rounding rounding, DeviceArena& arena, std::vector<Launch>& launches) {
  const bool quantize = rule.quantize_scale > 0, half = rule.round_fp16;
  if (!quantize && !half) return x;
  float* t = static_cast<float*>(arena.alloc(size_t(count) * 4));
  const float scale = rule.quantize_scale;
  const int r = rounding_code(rounding);
  launches.push_back([=](cudaStream_t s) {
    const float* from = x;
    if (quantize) k::quantize(from, t, count, scale, r, true, s), from = t;
    if (half) k::round_to_half(from, t, count, s);
  });
  return t;
}

k::ConvGeom conv_geom(const Node& node, const Shape& xs, const Shape& ws, const Shape& ys) {
  const ref::WindowGeom wg = ref::window_geom(node, xs, {ws[2], ws[3]}, false);
  k::ConvGeom cg;
  cg.N = xs[0], cg.C = xs[1], cg.H = xs[2], cg.W = xs[3], cg.M = ws[0], cg.OH = ys[2], cg.OW = ys[3];
  cg.KH = ws[2], cg.KW = ws[3], cg.SH = wg.s[1], cg.SW = wg.s[2], cg.DH = wg.d[1], cg.DW = wg.d[2];
  cg.PT = wg.pb[1], cg.PL = wg.pb[2], cg.G = node.attr_int("group", 1);
  return cg;
}

k::StoreRule store_rule(const numerics::StepRules& rules) {
  k::StoreRule r;
  r.half_first = rules.compute_fp16 && !rules.exact_int8_conv;
  const numerics::OutputRule& out = rules.outputs.at(0);
  if (out.store == numerics::Store::kFp16) r.kind = k::StoreRule::Kind::kFp16;
  if (out.store == numerics::Store::kInt8) r.kind = k::StoreRule::Kind::kInt8;
  r.scale = out.scale;
  r.rounding = rounding_code(rules.rounding);
  return r;
}

std::vector<int8_t> weight_levels(const numerics::Int8Conv& cv) {
  std::vector<int8_t> wq(size_t(cv.w_levels.numel()));
  for (size_t i = 0; i < wq.size(); ++i) wq[i] = int8_t(cv.w_levels.data<float>()[i]);
  return wq;
}

DeviceRequant upload_requant(const numerics::Int8Conv& cv, DeviceArena& arena) {
  DeviceRequant d;
  d.mult = static_cast<const float*>(arena.upload(cv.mult.data(), cv.mult.size() * 4));
  d.bias_q = static_cast<const double*>(arena.upload(cv.bias_q.data(), cv.bias_q.size() * 8));
  if (!cv.bias.empty()) d.bias = static_cast<const float*>(arena.upload(cv.bias.data(), cv.bias.size() * 4));
  return d;
}

namespace {

// The launches of an exact INT8 convolution (c.conv, of geometry `cg`; a fully connected layer as a 1x1
// convolution): integer sums, requantized and activated. True when they apply the store rule too (the
// cuBLASLt path's epilogue); otherwise the caller appends it.
bool emit_int8_conv(const LayerCall& c, const k::ConvGeom& cg, DeviceArena& arena,
                    std::vector<Launch>& launches) {
  const numerics::Int8Conv& cv = *c.conv;
  const std::vector<int8_t> wq = weight_levels(cv);
  const DeviceRequant rq = upload_requant(cv, arena);
  const float *md = rq.mult, *bd = rq.bias;
  const double* bqd = rq.bias_q;
  const k::ActParams act = fused_act(*c.node);
  const float* x = c.in.at(0).dev;
  float* y = c.out;
  const float s_in = c.s_in;
  const int r = c.rounding;
  if (const std::shared_ptr<const ConvInt8Gemm> gemm = ConvInt8Gemm::plan(cg, ConvInt8Gemm::depth(cg))) {
    const std::vector<int8_t> w = gemm->weights(cg, wq.data());
    const auto* wd = static_cast<const int8_t*>(arena.upload(w.data(), w.size()));
    void* cols = arena.scratch(0, gemm->cols_bytes());
    void* sums = arena.scratch(1, gemm->sums_bytes());
    void* work = arena.scratch(2, gemm->workspace_bytes());
    const k::StoreRule store = c.store;
    launches.push_back(
        [=](cudaStream_t s) { gemm->run(x, s_in, r, wd, md, bqd, bd, act, store, y, cols, sums, work, s); });
    return true;
  }
  const bool mma = k::conv_int8_mma_fits(cg);
  const k::MmaConvOperands mo = mma ? k::conv_int8_mma_operands(cg, wq.data()) : k::MmaConvOperands{};
  const auto* wd = static_cast<const int8_t*>(mma ? arena.upload(mo.weights.data(), mo.weights.size())
                                                  : arena.upload(wq.data(), wq.size()));
  const auto* taps =
      mma ? static_cast<const int32_t*>(arena.upload(mo.taps.data(), mo.taps.size() * 4)) : nullptr;
  const int64_t k_padded = mo.k_padded;
  const int splits = mma ? k::conv_int8_mma_splits(cg, k_padded) : 1;
  const int64_t count = cg.N * cg.M * cg.OH * cg.OW, xn = cg.N * cg.C * cg.H * cg.W;
  auto* partial = splits > 1 ? static_cast<int32_t*>(arena.alloc(size_t(count) * 4)) : nullptr;
  auto* xq = static_cast<int8_t*>(arena.alloc(size_t(xn)));
  launches.push_back([=](cudaStream_t s) {
    k::quantize_i8(x, xq, xn, s_in, r, s);
    if (mma) {
      k::conv_int8_mma(cg, k_padded, splits, xq, wd, taps, md, bqd, bd, act, y, partial, s);
    } else {
      k::conv_int8(cg, xq, wd, md, bqd, bd, act, y, s);
    }
  });
  return false;
}

// ConvF16Gemm for a convolution with these weights (as its FP16 layer reads them), or null where it does not
// apply: the product is exact only for weights on the fp16 grid.
std::shared_ptr<const ConvF16Gemm> half_conv_gemm(const k::ConvGeom& cg, const Tensor& w) {
  if (w.dtype() != DType::kF32 || !ConvF16Gemm::half_values(w.data<float>(), size_t(w.numel())))
    return nullptr;
  return ConvF16Gemm::plan(cg);
}

// A float convolution of fp16 inputs and weights (an FP16 layer) on the fp16 tensor cores (ConvF16Gemm: the
// implicit GEMM or im2col + cuBLASLt), its store rule (and a fused residual's rules) in the epilogue; false
// (nothing appended) where ConvF16Gemm does not apply, or a residual or a surface is asked for off the
// implicit GEMM.
bool emit_half_conv(const LayerCall& c, const k::ConvGeom& cg, DeviceArena& arena,
                    std::vector<Launch>& launches) {
  const Tensor* w_host = c.in.at(1).constant;
  if (!(c.in0_half || c.in0_unrounded) || !w_host) return false;
  const std::shared_ptr<const ConvF16Gemm> gemm = half_conv_gemm(cg, *w_host);
  if (!gemm || ((c.residual || c.in0_atoms || c.out_atoms) && !gemm->implicit())) return false;
  const std::vector<uint16_t> w = gemm->weights(w_host->data<float>());
  const auto* wd = static_cast<const uint16_t*>(arena.upload(w.data(), w.size() * 2));
  HalfInput x;
  if (c.in0_atoms) {
    x.atoms = c.in0_atoms;
  } else {
    x.nchw = c.in[0].dev;
  }
  HalfOutput y;
  if (c.out_atoms) {
    y.atoms = c.out_atoms;
  } else {
    y.nchw = c.out;
  }
  const float* bias = c.in.size() > 2 ? c.in[2].dev : nullptr;
  void* cols = arena.scratch(0, gemm->cols_bytes());
  void* sums = arena.scratch(1, gemm->sums_bytes());
  void* work = arena.scratch(2, gemm->workspace_bytes());
  const int64_t counts = gemm->arrival_counts();
  auto* arrivals = counts ? static_cast<unsigned*>(arena.zeroed(size_t(counts) * 4)) : nullptr;
  const k::ActParams act = fused_act(*c.node);
  const k::StoreRule store = c.store;
  const std::optional<HalfResidual> residual = c.residual;
  launches.push_back([=](cudaStream_t s) {
    gemm->run(x, wd, bias, act, store, residual ? &*residual : nullptr, y, cols, sums, work, arrivals, s);
  });
  return true;
}

}  // namespace

bool half_conv_implicit(const Node& node, const Shape& xs, const Tensor& w, const Shape& ys) {
  if (xs.size() != 4 || w.shape().size() != 4 || ys.size() != 4) return false;
  const std::shared_ptr<const ConvF16Gemm> gemm = half_conv_gemm(conv_geom(node, xs, w.shape(), ys), w);
  return gemm && gemm->implicit();
}

bool emit_layer(const LayerCall& c, DeviceArena& arena, std::vector<Launch>& launches, std::string& why) {
  const Node& node = *c.node;
  const bool int8 = c.int8;
  k::Unary u;
  k::Binary b;
  // Integer constants that only place or shape the data (Resize's sizes, Slice's bounds, Reshape's shape,
  // Squeeze's axes): read here or already in the output shape.
  const bool resize = node.op == OpKind::Resize || node.op == OpKind::Upsample;
  const bool places = resize || node.op == OpKind::Slice || (unary_code(node.op, u) && u == k::Unary::kCopy);
  for (const LayerOperand& o : c.in)
    if (o.constant && o.constant->dtype() != DType::kF32 && node.op != OpKind::Clip && !places)
      return why = "a non-float32 constant input", false;
  if (!c.out && !c.out_atoms) return why = "no single float32 output", false;
  float* y = c.out;
  const Shape& ys = c.out_shape;
  const int64_t count = numel(ys);
  const size_t mark = launches.size();
  auto give_up = [&](const char* reason) {
    launches.resize(mark);
    why = reason;
    return false;
  };
  auto input = [&](size_t k) { return c.in.at(k).dev; };
  auto present = [&](size_t k) { return k < c.in.size() && (c.in[k].dev || c.in[k].constant); };

  if (unary_code(node.op, u)) {
    if (!exact(u) && c.in0_half) {
      // A function of fp16 values is a table of 65536: the reference kernel computes it once, so the GPU
      // gives the CPU's bits where its own formula (expf, tanhf) would differ by an ulp.
      const float* table = static_cast<const float*>(arena.upload(half_table(node).data(), 65536 * 4));
      const float* x = input(0);
      const k::StoreRule store = c.store;
      launches.push_back([=](cudaStream_t s) { k::unary_table(table, store, x, y, count, s); });
      return true;
    }
    if (int8 && !exact(u)) return give_up("INT8: its GPU formula may differ from the CPU's by an ulp");
    k::UnaryParams p;
    p.op = u;
    if (node.op == OpKind::LeakyRelu) p.alpha = node.attr_float("alpha", 0.01f);
    if (node.op == OpKind::HardSigmoid)
      p.alpha = node.attr_float("alpha", 0.2f), p.beta = node.attr_float("beta", 0.5f);
    if (node.op == OpKind::Elu) p.alpha = node.attr_float("alpha", 1.0f);
    if (node.op == OpKind::Clip) {
      p.lo = -INFINITY, p.hi = INFINITY;
      if (node.opset < 11) {
        p.lo = node.attr_float("min", -std::numeric_limits<float>::max());
        p.hi = node.attr_float("max", std::numeric_limits<float>::max());
      } else {
        for (size_t k = 1; k < c.in.size(); ++k) {
          if (!present(k)) continue;
          if (!c.in[k].constant) return give_up("Clip bounds computed at run time");
          (k == 1 ? p.lo : p.hi) = float(c.in[k].constant->at_f64(0));
        }
      }
    }
    const float* x = input(0);
    const k::StoreRule store = c.store;
    launches.push_back([=](cudaStream_t s) { k::unary(p, store, x, y, count, s); });
    return true;  // the store rule applied as the results are written
  } else if (binary_code(node.op, b)) {
    if (c.in.size() != 2 || node.opset < 7) return give_up("legacy broadcasting or more than two inputs");
    if (int8 && b == k::Binary::kPow) return give_up("INT8: powf may differ from the CPU's by an ulp");
    const Shape& as = c.in[0].shape;
    const Shape& bs = c.in[1].shape;
    if (ys.size() > size_t(k::kMaxRank)) return give_up("rank above 6");
    k::BroadcastShape sh;
    sh.rank = int(ys.size());
    const auto sa = ref::broadcast_strides(as, ys), sb = ref::broadcast_strides(bs, ys);
    for (size_t d = 0; d < ys.size(); ++d) sh.out[d] = ys[d], sh.a_stride[d] = sa[d], sh.b_stride[d] = sb[d];
    const float* pa = input(0);
    const float* pb = input(1);
    const k::StoreRule store = c.store;
    launches.push_back([=](cudaStream_t s) { k::binary(b, sh, store, pa, pb, y, s); });
    return true;  // the store rule applied as the results are written
  } else if (node.op == OpKind::Conv) {
    const Shape& xs = c.in.at(0).shape;
    if (xs.size() != 4 || c.in.size() < 2 || !c.in[1].constant)
      return give_up("not a 2-D convolution with constant weights");
    const Shape& ws = c.in[1].shape;
    const bool has_bias = present(2);
    if (has_bias && !c.in[2].constant) return give_up("a bias computed at run time");
    const k::ConvGeom cg = conv_geom(node, xs, ws, ys);
    const k::ActParams act = fused_act(node);
    if (c.residual || c.in0_atoms || c.out_atoms) {
      if (!int8 && emit_half_conv(c, cg, arena, launches)) return true;
      return give_up("a fused residual Add or an fp16 surface needs the FP16 implicit GEMM");
    }
    if (int8) {
      if (!c.conv) return give_up("INT8 without the integer convolution path");
      if (emit_int8_conv(c, cg, arena, launches)) return true;  // the store rule applied in the epilogue
    } else {
      if (emit_half_conv(c, cg, arena, launches)) return true;  // the store rule applied in the epilogue
      const float* x = input(0);
      if (c.in0_unrounded) {
        float* rounded = static_cast<float*>(arena.alloc(size_t(numel(xs)) * 4));
        const float* raw = x;
        const int64_t n = numel(xs);
        launches.push_back([=](cudaStream_t s) { k::round_to_half(raw, rounded, n, s); });
        x = rounded;
      }
      const float* w = input(1);
      const float* bias = has_bias ? input(2) : nullptr;
      launches.push_back([=](cudaStream_t s) { k::conv_f32(cg, x, w, bias, act, y, s); });
    }
  } else if (node.op == OpKind::ConvTranspose) {
    const Shape& xs = c.in.at(0).shape;
    if (xs.size() != 4 || c.in.size() < 2 || !c.in[1].constant)
      return give_up("not a 2-D ConvTranspose with constant weights");
    const bool has_bias = present(2);
    if (has_bias && !c.in[2].constant) return give_up("a bias computed at run time");
    if (int8 && !c.conv) return give_up("INT8 with groups: float sums in a different order than the CPU's");
    const ref::ConvTransposeGeom t = ref::conv_transpose_geom(node, xs, c.in[1].shape);
    k::ConvGeom cg;
    cg.N = xs[0], cg.C = xs[1], cg.H = xs[2], cg.W = xs[3], cg.M = t.M, cg.G = t.G;
    cg.OH = t.g.out[1], cg.OW = t.g.out[2], cg.KH = t.g.k[1], cg.KW = t.g.k[2];
    cg.SH = t.g.s[1], cg.SW = t.g.s[2], cg.DH = t.g.d[1], cg.DW = t.g.d[2], cg.PT = t.g.pb[1],
    cg.PL = t.g.pb[2];
    if (!(ys == Shape{cg.N, cg.M, cg.OH, cg.OW})) return give_up("its geometry gives another output shape");
    if (int8) {  // exact integer sums: the CPU's result in any order
      const numerics::Int8Conv& cv = *c.conv;
      const std::vector<int8_t> wq = weight_levels(cv);
      const auto* wd = static_cast<const int8_t*>(arena.upload(wq.data(), wq.size()));
      const DeviceRequant rq = upload_requant(cv, arena);
      const k::ActParams act = fused_act(node);
      const float* x = input(0);
      const float s_in = c.s_in;
      const int r = c.rounding;
      const int64_t xn = numel(xs);
      auto* xq = static_cast<int8_t*>(arena.alloc(size_t(xn)));
      launches.push_back([=](cudaStream_t s) {
        k::quantize_i8(x, xq, xn, s_in, r, s);
        k::conv_transpose_int8(cg, xq, wd, rq.mult, rq.bias_q, rq.bias, act, y, s);
      });
    } else {
      const float* x = input(0);
      const float* w = input(1);
      const float* bias = has_bias ? input(2) : nullptr;
      launches.push_back([=](cudaStream_t s) { k::conv_transpose_f32(cg, x, w, bias, y, s); });
    }
  } else if (node.op == OpKind::MaxPool || node.op == OpKind::AveragePool) {
    const Shape& xs = c.in.at(0).shape;
    if (xs.size() != 4) return give_up("not a 2-D pool");
    const ref::WindowGeom wg =
        ref::window_geom(node, xs, node.attr_ints("kernel_shape"), node.attr_int("ceil_mode", 0) != 0);
    k::PoolGeom pg;
    pg.NC = xs[0] * xs[1], pg.H = xs[2], pg.W = xs[3], pg.OH = ys[2], pg.OW = ys[3];
    pg.KH = wg.k[1], pg.KW = wg.k[2], pg.SH = wg.s[1], pg.SW = wg.s[2], pg.DH = wg.d[1], pg.DW = wg.d[2];
    pg.PT = wg.pb[1], pg.PL = wg.pb[2], pg.PB = wg.pe[1], pg.PR = wg.pe[2];
    pg.is_max = node.op == OpKind::MaxPool;
    pg.include_pad = node.attr_int("count_include_pad", 0) != 0;
    if (!k::pool2d_fits(pg)) return give_up("a pool of 2^31 values or more, or of padded sides above 2^30");
    const float* x = input(0);
    launches.push_back([=](cudaStream_t s) { k::pool2d(pg, x, y, s); });
  } else if (node.op == OpKind::GlobalAveragePool || node.op == OpKind::GlobalMaxPool) {
    const Shape& xs = c.in.at(0).shape;
    const int64_t planes = xs[0] * xs[1], vol = numel(xs) / std::max<int64_t>(planes, 1);
    const bool is_max = node.op == OpKind::GlobalMaxPool;
    const float* x = input(0);
    launches.push_back([=](cudaStream_t s) { k::global_pool(x, y, planes, vol, is_max, s); });
  } else if (node.op == OpKind::Softmax) {
    const ref::AxisSplit sp = ref::softmax_split(node, c.in.at(0).shape);
    const float* x = input(0);
    const k::StoreRule store = c.store;
    launches.push_back([=](cudaStream_t s) { k::softmax(x, y, sp.outer, sp.axis, sp.inner, store, s); });
    return true;  // the store rule applied as the results are written
  } else if (node.op == OpKind::Concat) {
    const int64_t axis = ref::normalize_axis(node, node.attr_int("axis", 0), int64_t(ys.size()));
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= ys[size_t(d)];
    for (size_t d = size_t(axis) + 1; d < ys.size(); ++d) inner *= ys[d];
    int64_t offset = 0;
    for (size_t k = 0; k < c.in.size(); ++k) {
      const int64_t len = c.in[k].shape[size_t(axis)];
      const float* x = input(k);
      float* dst = y + offset * inner;
      const size_t width = size_t(len * inner) * 4, dpitch = size_t(ys[size_t(axis)] * inner) * 4;
      if (width && outer)
        launches.push_back([=](cudaStream_t s) {
          DLAKIT_CUDA(
              cudaMemcpy2DAsync(dst, dpitch, x, width, width, size_t(outer), cudaMemcpyDeviceToDevice, s));
        });
      offset += len;
    }
  } else if (node.op == OpKind::BatchNormalization) {
    const Shape& xs = c.in.at(0).shape;
    for (size_t k = 1; k < 5; ++k)
      if (!(k < c.in.size() && c.in[k].constant))
        return give_up("batch-norm parameters computed at run time");
    if (xs.size() < 2) return give_up("an input without channels");
    const ref::BatchNormAffine f = ref::batch_norm_affine(node, *c.in[1].constant, *c.in[2].constant,
                                                          *c.in[3].constant, *c.in[4].constant);
    const auto* a = static_cast<const float*>(arena.upload(f.a.data(), f.a.size() * 4));
    const auto* b = static_cast<const float*>(arena.upload(f.b.data(), f.b.size() * 4));
    const int64_t C = xs[1], vol = numel(xs) / std::max<int64_t>(xs[0] * C, 1);
    const float* x = input(0);
    const k::StoreRule store = c.store;
    launches.push_back([=](cudaStream_t s) { k::channel_affine(a, b, C, vol, store, x, y, count, s); });
    return true;  // the store rule applied as the results are written
  } else if (resize) {
    const Shape& xs = c.in.at(0).shape;
    const ref::ResizeInputs at = ref::resize_inputs(node);
    auto constant_at = [&](int k) {
      return k >= 0 && size_t(k) < c.in.size() ? c.in[size_t(k)].constant : nullptr;
    };
    for (size_t k = 1; k < c.in.size(); ++k)
      if (present(k) && !c.in[k].constant) return give_up("Resize scales or sizes computed at run time");
    const std::optional<ref::ResizeLastTwo> plan = ref::resize_last_two_plan(
        node, xs, constant_at(at.roi), constant_at(at.scales), constant_at(at.sizes));
    if (!plan) return give_up("a resize of other axes than the last two, or a crop");
    if (ys.size() < 2 || plan->out_h != ys[ys.size() - 2] || plan->out_w != ys.back() ||
        plan->planes * plan->out_h * plan->out_w != count)
      return give_up("its scales or sizes give another output size than its output's");
    k::ResizeGeom rg;
    rg.planes = plan->planes, rg.in_h = plan->in_h, rg.in_w = plan->in_w;
    rg.out_h = plan->out_h, rg.out_w = plan->out_w;
    auto ints = [&](const std::vector<int64_t>& v) {
      return static_cast<const int64_t*>(arena.upload(v.data(), v.size() * 8));
    };
    auto floats = [&](const std::vector<float>& v) {
      return static_cast<const float*>(arena.upload(v.data(), v.size() * 4));
    };
    rg.row0 = ints(plan->row0), rg.row1 = ints(plan->row1), rg.col0 = ints(plan->col0),
    rg.col1 = ints(plan->col1);
    rg.row_w = floats(plan->row_w), rg.col_w = floats(plan->col_w);
    const float* x = input(0);
    launches.push_back([=](cudaStream_t s) { k::resize2d(rg, x, y, s); });
  } else if (node.op == OpKind::Transpose) {
    const Shape& xs = c.in.at(0).shape;
    if (xs.size() > size_t(k::kMaxRank)) return give_up("rank above 6");
    std::vector<int64_t> perm = node.attr_ints("perm", {});
    if (perm.empty())
      for (int64_t d = int64_t(xs.size()) - 1; d >= 0; --d) perm.push_back(d);
    const std::vector<int64_t> stride = ref::row_strides(xs);
    k::StridedCopy t;
    t.rank = int(ys.size());
    for (size_t d = 0; d < ys.size(); ++d) t.out[d] = ys[d], t.in_stride[d] = stride[size_t(perm[d])];
    const float* x = input(0);
    launches.push_back([=](cudaStream_t s) { k::strided_copy(t, x, y, s); });
  } else if (node.op == OpKind::Slice) {
    const Shape& xs = c.in.at(0).shape;
    if (xs.size() > size_t(k::kMaxRank)) return give_up("rank above 6");
    for (size_t k = 1; k < c.in.size(); ++k)
      if (present(k) && !c.in[k].constant) return give_up("Slice bounds computed at run time");
    auto constant_at = [&](size_t k) { return k < c.in.size() ? c.in[k].constant : nullptr; };
    const ref::SliceSpec sp =
        ref::slice_of(node, xs, constant_at(1), constant_at(2), constant_at(3), constant_at(4));
    if (!(sp.count == ys)) return give_up("its bounds give another output shape than its output's");
    const std::vector<int64_t> stride = ref::row_strides(xs);
    k::StridedCopy t;
    t.rank = int(ys.size());
    for (size_t d = 0; d < ys.size(); ++d) {
      t.out[d] = ys[d], t.in_stride[d] = stride[d] * sp.step[d];
      t.base += sp.start[d] * stride[d];
    }
    const float* x = input(0);
    launches.push_back([=](cudaStream_t s) { k::strided_copy(t, x, y, s); });
  } else if ((node.op == OpKind::Gemm || node.op == OpKind::MatMul) && int8) {
    // exact integer sums, as a 1x1 convolution over [N, K, 1, 1] (numerics::fc_as_conv)
    if (!c.conv) return give_up("INT8: float sums in a different order than the CPU's");
    const Shape& as = c.in.at(0).shape;
    const Shape& ws = c.conv->w_levels.shape();
    if (as.size() != 2 || ys.size() != 2) return give_up("not a 2-D matrix product");
    const k::ConvGeom cg = conv_geom(c.conv->node, {as[0], as[1], 1, 1}, ws, {ys[0], ys[1], 1, 1});
    if (emit_int8_conv(c, cg, arena, launches)) return true;
  } else if (node.op == OpKind::Gemm || node.op == OpKind::MatMul) {
    const Shape& as = c.in.at(0).shape;
    const Shape& bs = c.in.at(1).shape;
    if (as.size() != 2 || bs.size() != 2) return give_up("not a 2-D matrix product");
    k::GemmGeom gg;
    const bool gemm = node.op == OpKind::Gemm;
    gg.trans_a = gemm && node.attr_int("transA", 0) != 0;
    gg.trans_b = gemm && node.attr_int("transB", 0) != 0;
    gg.alpha = gemm ? node.attr_float("alpha", 1.f) : 1.f;
    gg.beta = gemm ? node.attr_float("beta", 1.f) : 1.f;
    gg.M = ys[0], gg.N = ys[1], gg.K = gg.trans_a ? as[0] : as[1];
    // A float fully connected layer of fp16 values (an FP16 layer) as a 1x1 convolution over [M, K, 1, 1] on
    // the fp16 tensor cores, where the DLA's rule maps it to one (numerics::fc_as_conv) and its weight is
    // already the convolution's ([N][K]: transB).
    const Shape* bias_shape = present(2) ? &c.in[2].shape : nullptr;
    if (gemm && gg.trans_b && c.in[1].constant && (!bias_shape || c.in[2].constant) &&
        numerics::fc_as_conv(node, as, bs, bias_shape)) {
      k::ConvGeom fc;
      fc.N = gg.M, fc.C = gg.K, fc.M = gg.N;
      if (emit_half_conv(c, fc, arena, launches)) return true;  // the store rule applied in the epilogue
    }
    const float* pa = input(0);
    const float* pb = input(1);
    const float* pc = nullptr;
    if (gemm && present(2)) {
      const auto st = ref::broadcast_strides(c.in[2].shape, ys);
      gg.c_stride_m = st[0], gg.c_stride_n = st[1];
      pc = input(2);
    }
    launches.push_back([=](cudaStream_t s) { k::gemm(gg, pa, pb, pc, y, s); });
  } else {
    return give_up("no CUDA kernel for this op yet");
  }
  if (c.store.changes()) {
    const k::StoreRule store = c.store;
    launches.push_back([=](cudaStream_t s) { k::apply_store(store, y, count, s); });
  }
  return true;
}

}  // namespace dlakit::gpu
