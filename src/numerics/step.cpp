#include "numerics/step.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/fp16_array.h"
#include "base/threadpool.h"
#include "kernels/fused_activation.h"
#include "kernels/ref/conv_geom.h"
#include "kernels/registry.h"

namespace dlakit::numerics {

int fc_weight_axis(const Node& n) { return n.op == OpKind::Gemm && n.attr_int("transB", 0) != 0 ? 0 : 1; }

bool deconv_as_conv(const Node& n) { return n.op == OpKind::ConvTranspose && n.attr_int("group", 1) == 1; }

bool fc_as_conv(const Node& n, const Shape& input, const Shape& weight, const Shape* bias) {
  if (n.op != OpKind::Gemm && n.op != OpKind::MatMul) return false;
  if (input.size() != 2 || weight.size() != 2) return false;
  const int axis = fc_weight_axis(n);
  const int64_t M = weight[size_t(axis)], K = weight[size_t(1 - axis)];
  if (input[1] != K) return false;
  if (n.op == OpKind::MatMul) return true;
  if (n.attr_int("transA", 0) != 0 || n.attr_float("alpha", 1.f) != 1.f) return false;
  if (!bias) return true;
  const bool per_channel =
      (bias->size() == 1 && (*bias)[0] == M) || (bias->size() == 2 && (*bias)[0] == 1 && (*bias)[1] == M);
  return per_channel && n.attr_float("beta", 1.f) == 1.f;
}

namespace {

// A fully connected layer's weight as a 1x1 convolution's: [M, K, 1, 1] from [M, K] (Gemm with transB) or
// [K, M].
Tensor fc_weight_as_conv(const Node& fc, const Tensor& w) {
  if (fc_weight_axis(fc) == 0) return w.reshaped({w.dim(0), w.dim(1), 1, 1});
  const int64_t K = w.dim(0), M = w.dim(1);
  Tensor t = Tensor::uninitialized(DType::kF32, {M, K, 1, 1});
  for (int64_t k = 0; k < K; ++k)
    for (int64_t m = 0; m < M; ++m) t.data<float>()[m * K + k] = w.data<float>()[k * M + m];
  return t;
}

}  // namespace

Int8Conv prepare_int8_conv(const Node& layer, const Tensor& layer_w_levels, const std::vector<float>& w_scale,
                           std::vector<float> bias, float s_in, quant::Rounding r) {
  const bool fc = layer.op == OpKind::Gemm || layer.op == OpKind::MatMul;
  if (fc && layer_w_levels.rank() != 2)
    fail(Status::kInvalidArgument, layer.label(), ": a fully connected layer's weight must be 2-D");
  const Tensor w_levels = fc ? fc_weight_as_conv(layer, layer_w_levels) : layer_w_levels;
  Int8Conv c;
  if (fc) {
    c.node.op = OpKind::Conv;
    c.node.name = layer.name;
    c.node.opset = layer.opset;
    c.node.attrs["kernel_shape"] = std::vector<int64_t>{1, 1};
  } else {
    c.node = layer;
    c.node.attrs.erase("dlakit_activation");
    c.node.attrs.erase("dlakit_activation_params");
  }
  c.node.inputs.assign(layer.inputs.begin(), layer.inputs.begin() + std::min<size_t>(2, layer.inputs.size()));
  c.node.outputs = layer.outputs;
  const Node& conv = c.node;
  if (w_levels.rank() < 2 || w_levels.numel() == 0)
    fail(Status::kInvalidArgument, layer.label(), ": INT8 weights of shape ", shape_str(w_levels.shape()),
         " hold no output channel, input channel or tap");
  // A ConvTranspose's weight is [C, M, k...]: input channels first.
  const bool transposed = conv.op == OpKind::ConvTranspose;
  if (transposed && !deconv_as_conv(conv))
    fail(Status::kUnsupported, layer.label(), ": exact INT8 ConvTranspose with groups");
  const int64_t M = w_levels.dim(transposed ? 1 : 0), Cg = w_levels.dim(transposed ? 0 : 1),
                taps = w_levels.numel() / (M * Cg);
  auto weight_at = [&](int64_t m, int64_t ch) { return (transposed ? ch * M + m : m * Cg + ch) * taps; };
  if (int64_t(w_scale.size()) != M)
    fail(Status::kInvalidArgument, layer.label(), ": ", w_scale.size(), " weight scales for ", M,
         " output channels");
  if (!bias.empty() && int64_t(bias.size()) != M)
    fail(Status::kInvalidArgument, layer.label(), ": ", bias.size(), " bias values for ", M,
         " output channels");
  c.bias = std::move(bias);
  c.w_levels = w_levels;
  // Requantize: r = (acc + bias_q) * s_in * s_w[k], the bias quantized to int32 at the product's scale.
  for (int64_t m = 0; m < M; ++m) {
    const float mult = s_in * w_scale[size_t(m)];
    const float b = c.bias.empty() ? 0.f : c.bias[size_t(m)];
    double bq = 0;
    if (mult > 0) bq = std::clamp<double>(quant::round_with(b / mult, r), -2147483648.0, 2147483647.0);
    c.mult.push_back(mult);
    c.bias_q.push_back(bq);
  }
  // Chunks are ranges of each group's input channels (the same range in every group), so a grouped
  // convolution splits into grouped convolutions over fewer channels per group.
  std::vector<double> col(size_t(Cg), 0.0);  // per input channel: max over k of sum |w_q[k, c, :]|
  const float* q = w_levels.data<float>();
  for (int64_t k = 0; k < M; ++k)
    for (int64_t ch = 0; ch < Cg; ++ch) {
      double s = 0;
      for (int64_t t = 0; t < taps; ++t) s += std::fabs(q[weight_at(k, ch) + t]);
      col[size_t(ch)] = std::max(col[size_t(ch)], s);
    }
  const double limit = double(1 << 24) / 128.0;
  int64_t start = 0;
  double run = 0;
  for (int64_t ch = 0; ch < Cg; ++ch) {
    if (ch > start && run + col[size_t(ch)] > limit) {
      c.chunks.push_back({start, ch});
      start = ch;
      run = 0;
    }
    run += col[size_t(ch)];
  }
  c.chunks.push_back({start, Cg});
  if (!transposed && w_levels.rank() == 4 &&
      int8_conv_supported(M, Cg, conv.attr_int("group", 1), w_levels.dim(2), w_levels.dim(3)))
    c.packed = pack_int8_conv(M, Cg, conv.attr_int("group", 1), w_levels.dim(2), w_levels.dim(3), q);
  for (auto [c0, c1] : c.chunks) {
    if (c.chunks.size() == 1) {
      c.w_q.push_back(w_levels);
      break;
    }
    Shape s = w_levels.shape();
    s[transposed ? 0 : 1] = c1 - c0;
    Tensor part = Tensor::uninitialized(DType::kF32, s);
    if (transposed) {  // input channels c0..c1 are rows c0..c1
      std::memcpy(part.data<float>(), q + c0 * M * taps, size_t(part.numel()) * sizeof(float));
      c.w_q.push_back(part);
      continue;
    }
    for (int64_t k = 0; k < M; ++k)
      std::memcpy(part.data<float>() + k * (c1 - c0) * taps, q + (k * Cg + c0) * taps,
                  size_t((c1 - c0) * taps) * sizeof(float));
    c.w_q.push_back(part);
  }
  return c;
}

const char* precision_name(Precision p) {
  return p == Precision::kInt8 ? "int8" : p == Precision::kFp16 ? "fp16" : "fp32";
}

namespace {

// y = requantized sums with each channel's multiplier and integer bias; a zero multiplier leaves the bias
// (the formula of int8_requantize, on sums that may pass int32 when chunks add).
inline float requantize(const Int8Conv& c, int64_t m, double sum) {
  const float mult = c.mult[size_t(m)];
  return mult > 0 ? float(sum + c.bias_q[size_t(m)]) * mult : (c.bias.empty() ? 0.f : c.bias[size_t(m)]);
}

// The integer sums on the CPU's dot products (Int8Conv::packed), requantized and activated as they are
// stored.
void conv_int8_packed(const Node& layer, const Int8Conv& c, const InputLevels& x, const Int8Output& y) {
  const ref::WindowGeom wg = ref::window_geom(c.node, x.shape, {c.packed->KH, c.packed->KW}, false);
  Int8ConvGeometry g;
  g.C = x.shape[1], g.H = wg.in[1], g.W = wg.in[2], g.M = c.packed->M, g.groups = c.packed->groups;
  g.KH = wg.k[1], g.KW = wg.k[2], g.sh = wg.s[1], g.sw = wg.s[2], g.dh = wg.d[1], g.dw = wg.d[2];
  g.pt = wg.pb[1], g.pl = wg.pb[2], g.OH = wg.out[1], g.OW = wg.out[2];
  const Int8Requant rq{c.mult.data(), c.bias_q.data(), c.bias.empty() ? nullptr : c.bias.data(),
                       ref::fused_epilogue(layer)};
  conv_int8_exact(*c.packed, g, x.shape[0], x.levels, rq, y);
}

// Exact integer convolution of x's levels, requantized per output channel, then the fused activation.
Tensor conv_int8(const Node& layer, const Int8Conv& c, const Tensor* input, const InputLevels* levels,
                 const Int8Output* int8_output, float s_in, quant::Rounding r, const TensorType& out) {
  const Shape& ys = out.shape;
  if (ys.size() == 2) {  // a fully connected layer: [N, K] -> [N, M] as a 1x1 convolution
    if (!input || levels || int8_output || input->rank() != 2)
      fail(Status::kInternal, layer.label(), ": a fully connected INT8 layer reads and writes 2-D floats");
    const Tensor x = input->reshaped({input->dim(0), input->dim(1), 1, 1});
    TensorType out4 = out;
    out4.shape = {ys[0], ys[1], 1, 1};
    return conv_int8(layer, c, &x, nullptr, nullptr, s_in, r, out4).reshaped(ys);
  }
  const int64_t N = ys[0], M = ys[1];
  if (c.packed) {  // the activation is applied as the outputs are stored
    Tensor acc;
    Int8Output to;
    if (int8_output) {
      to = *int8_output;
    } else {
      acc = Tensor::uninitialized(DType::kF32, ys);
      to.y = acc.data<float>();
    }
    if (levels) {
      conv_int8_packed(layer, c, *levels, to);
      return acc;
    }
    std::vector<int8_t> q(size_t(input->numel()));
    parallel_for(
        input->numel(),
        [&](int64_t i0, int64_t i1) {
          quant::quantize_to_int8(input->data<float>() + i0, q.data() + i0, i1 - i0, s_in, r);
        },
        16384);
    const Shape& xs = input->shape();
    conv_int8_packed(layer, c, InputLevels{Int8Input::planar(q.data(), xs[1], xs[2], xs[3]), xs}, to);
    return acc;
  }
  Tensor acc = Tensor::uninitialized(DType::kF32, ys);
  if (!input)
    fail(Status::kInternal, layer.label(), ": the reference INT8 convolution needs its float input");
  const Tensor& x = *input;
  Tensor xq = Tensor::uninitialized(DType::kF32, x.shape());
  quant::quantize_to_levels(x.data<float>(), xq.data<float>(), x.numel(), s_in, r);
  const int64_t plane = acc.numel() / (N * M);
  const KernelFn conv = op_impl(c.node.op).run;  // Conv or ConvTranspose: sums of levels, exact per chunk
  std::vector<int64_t> sum;
  for (size_t k = 0; k < c.chunks.size(); ++k) {
    const Tensor* xin = &xq;
    Tensor part;
    if (c.chunks.size() > 1) {
      // Channels c0..c1 of every group: [N, G * Cg, ...] -> [N, G * (c1 - c0), ...].
      const auto [c0, c1] = c.chunks[k];
      const int64_t groups = c.node.attr_int("group", 1), width = c1 - c0;
      Shape s = x.shape();
      const int64_t C = s[1], Cg = C / groups, inner = x.numel() / (s[0] * C);
      s[1] = groups * width;
      part = Tensor::uninitialized(DType::kF32, s);
      for (int64_t b = 0; b < s[0]; ++b)
        for (int64_t g = 0; g < groups; ++g)
          std::memcpy(part.data<float>() + (b * groups + g) * width * inner,
                      xq.data<float>() + (b * C + g * Cg + c0) * inner,
                      size_t(width * inner) * sizeof(float));
      xin = &part;
    }
    conv(KernelContext(c.node, {xin, &c.w_q[k]}, {&acc}, {0, 1}));
    if (c.chunks.size() > 1) {
      if (sum.empty()) sum.assign(size_t(acc.numel()), 0);
      const float* a = acc.data<float>();
      for (int64_t i = 0; i < acc.numel(); ++i) sum[size_t(i)] += int64_t(a[i]);
    }
  }
  float* y = acc.data<float>();
  for (int64_t m = 0; m < M; ++m)
    for (int64_t b0 = 0; b0 < N; ++b0) {
      const int64_t base = (b0 * M + m) * plane;
      for (int64_t i = 0; i < plane; ++i)
        y[base + i] = requantize(c, m, sum.empty() ? double(y[base + i]) : double(sum[size_t(base + i)]));
    }
  ref::apply_fused_activation(layer, y, acc.numel());
  return acc;
}

void store(Tensor& t, const OutputRule& rule, quant::Rounding r) {
  if (t.empty() || t.dtype() != DType::kF32) return;
  if (rule.store == Store::kFp16)
    round_to_half_inplace(t.data<float>(), t.numel());
  else if (rule.store == Store::kInt8)
    quant::fake_quantize(t.data<float>(), t.numel(), rule.scale, r);
}

}  // namespace

std::vector<Tensor> run_step(const Node& layer, const StepRules& rules,
                             const std::vector<const Tensor*>& inputs, const std::vector<char>& constant,
                             const std::vector<TensorType>& out_types, const Int8Conv* conv,
                             const StepShortcuts* shortcuts) {
  const InputLevels* levels = shortcuts ? shortcuts->levels : nullptr;
  auto flag = [](const std::vector<char>* v, size_t i) { return v && i < v->size() && (*v)[i]; };
  std::vector<Tensor> outs;
  if (rules.exact_int8_conv) {
    if (!conv || inputs.empty() || !(inputs[0] || (levels && conv->packed)) || rules.inputs.empty())
      fail(Status::kInternal, layer.label(),
           ": exact INT8 convolution without its prepared weights or input");
    const Int8Output* direct = shortcuts && conv->packed ? shortcuts->int8_output : nullptr;
    outs.push_back(conv_int8(layer, *conv, inputs[0], conv->packed ? levels : nullptr, direct,
                             rules.inputs[0].quantize_scale, rules.rounding, out_types.at(0)));
  } else {
    std::vector<const Tensor*> ptrs = inputs;
    std::vector<Tensor> tmp;
    tmp.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size() && i < rules.inputs.size(); ++i) {
      const InputRule& in = rules.inputs[i];
      if (!inputs[i] || constant[i] || inputs[i]->dtype() != DType::kF32) continue;
      if (!(in.quantize_scale > 0) && !in.round_fp16) continue;
      if (!in.round_fp16 && flag(shortcuts ? &shortcuts->input_on_grid : nullptr, i)) continue;
      // Quantized (then rounded), or rounded, as it is copied.
      const Tensor& x = *inputs[i];
      tmp.push_back(Tensor::uninitialized(DType::kF32, x.shape()));
      Tensor& t = tmp.back();
      if (in.quantize_scale > 0) {
        quant::fake_quantize_to(x.data<float>(), t.data<float>(), x.numel(), in.quantize_scale,
                                rules.rounding);
        if (in.round_fp16) round_to_half_inplace(t.data<float>(), t.numel());
      } else {
        round_to_half_into(x.data<float>(), t.data<float>(), x.numel());
      }
      ptrs[i] = &t;
    }
    outs = run_kernel(layer, ptrs, out_types, constant);
    if (rules.compute_fp16)
      for (Tensor& t : outs)
        if (!t.empty() && t.dtype() == DType::kF32) round_to_half_inplace(t.data<float>(), t.numel());
  }
  for (size_t k = 0; k < outs.size() && k < rules.outputs.size(); ++k)
    if (!(rules.outputs[k].store == Store::kInt8 && rules.rounding == quant::Rounding::kHalfAwayFromZero &&
          flag(shortcuts ? &shortcuts->output_quantized_by_caller : nullptr, k)))
      store(outs[k], rules.outputs[k], rules.rounding);
  return outs;
}

}  // namespace dlakit::numerics
