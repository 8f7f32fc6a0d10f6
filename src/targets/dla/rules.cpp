// The DLA rules, one function per DLA layer kind. Each records every violation it finds with the field,
// the value, the limit and a fix; the caller (placement) decides what to do with them.
#include "targets/dla/rules.h"

#include "targets/dla/precision.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace dlakit::dla {
namespace {

std::string S(long long v) { return std::to_string(v); }
std::string S(const Shape& s) { return "[" + shape_str(s) + "]"; }
std::string F(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

struct Ctx {
  const Graph& g;
  const Node& n;
  const DlaLimits& lim;
  Precision p;
  Capability& cap;
  const Value& in(int i) const { return g.value(n.inputs[size_t(i)]); }
  const Shape& shape(int i) const { return in(i).type.shape; }
  bool has(int i) const { return int(n.inputs.size()) > i && n.inputs[size_t(i)] >= 0; }
  bool is_const(int i) const { return has(i) && in(i).constant.has_value(); }
  const Shape& out_shape(int i = 0) const { return g.value(n.outputs[size_t(i)]).type.shape; }
  void add(Rule rule, ReasonCode c, std::string field, std::string actual, std::string limit,
           std::string fix) const {
    cap.add(rule, c, std::move(field), std::move(actual), std::move(limit), std::move(fix));
  }
  // The layer passes, but by a rule dlakit assumed.
  void admitted_by(Rule rule) const {
    if (rule_info(rule).confidence == Confidence::kAssumed) cap.unconfirmed.push_back(rule);
  }
};

void check_range(const Ctx& c, Rule rule, const std::string& field, long v, const Range& r,
                 const std::string& fix) {
  if (!r.contains(v)) c.add(rule, ReasonCode::AttrOutOfRange, field, S(v), r.str(), fix);
}

// ---- rules every DLA layer shares: tensor types, rank, batch and dimension limits
void check_tensors(const Ctx& c) {
  auto check = [&](const Value& v, const std::string& what) {
    const DType t = v.type.dtype;
    if (t != DType::kF32 && t != DType::kF16 && t != DType::kI8 && t != DType::kU8)
      c.add(Rule::TensorDtype, ReasonCode::DTypeNotSupported, what + ".dtype", dtype_name(t),
            "f32/f16 (run as fp16) or int8",
            "DLA tensors are fp16 or int8; keep integer/bool logic (shapes, indices, masks) out of the DLA "
            "graph");
    const Shape& s = v.type.shape;
    if (s.size() > 4)
      c.add(Rule::TensorRank, ReasonCode::ShapeOutOfRange, what + ".rank", S(long(s.size())) + " " + S(s),
            "<= 4 (N,C,H,W)", "reshape to 4-D (fold extra dims into N or C) before this layer");
    long long batch = 1;
    for (size_t i = 0; i + 3 < s.size(); ++i) batch *= s[i];
    if (batch > c.lim.max_batch)
      c.add(Rule::TensorBatch, ReasonCode::ShapeOutOfRange, what + ".batch", S(batch),
            "<= " + S(c.lim.max_batch), "run a smaller batch");
    for (size_t i = s.size() > 3 ? s.size() - 3 : 0; i < s.size(); ++i)
      if (s[i] > c.lim.max_dim)
        c.add(Rule::TensorDim, ReasonCode::ShapeOutOfRange, what + ".shape[" + S(long(i)) + "]", S(s[i]),
              "<= " + S(c.lim.max_dim), "tile the tensor: DLA dimensions are at most " + S(c.lim.max_dim));
  };
  for (size_t i = 0; i < c.n.inputs.size(); ++i)
    if (c.n.inputs[i] >= 0 && !c.g.value(c.n.inputs[i]).constant)
      check(c.g.value(c.n.inputs[i]), "input[" + S(long(i)) + "]");
  for (size_t i = 0; i < c.n.outputs.size(); ++i) {
    if (c.n.outputs[i] < 0) continue;
    if (c.n.op == OpKind::Equal) continue;  // a comparison's mask goes straight to its Cast (rule_comparison)
    check(c.g.value(c.n.outputs[i]), "output[" + S(long(i)) + "]");
  }
}

bool is_4d(const Ctx& c, int i, const char* layer) {
  if (c.shape(i).size() == 4) return true;
  const Rule rule = Rule::Spatial2d;
  c.add(rule, ReasonCode::ShapeOutOfRange, "input[" + S(i) + "].rank",
        S(long(c.shape(i).size())) + " " + S(c.shape(i)), "4 (2 spatial dims)",
        std::string(layer) + " on the DLA is 2-D only: reshape 1-D/3-D data to 4-D");
  return false;
}

// ---- Convolution and FullyConnected
void rule_conv(const Ctx& c) {
  if (!is_4d(c, 0, "Convolution")) return;
  const Node& n = c.n;
  if (!c.is_const(1))
    c.add(Rule::ConvWeights, ReasonCode::NotConstant, "input[1] (weights)", "computed at run time",
          "build-time constant", "export the weights as initializers");
  const Shape& w = c.shape(1);
  const long kh = long(w[2]), kw = long(w[3]);
  const auto strides = n.attr_ints("strides", {1, 1}), dil = n.attr_ints("dilations", {1, 1});
  const auto pads = n.attr_ints("pads", {0, 0, 0, 0});
  const long group = long(n.attr_int("group", 1));
  const std::string fix_k = "split the kernel into smaller convolutions, or run this layer on the GPU";
  check_range(c, Rule::ConvKernel, "kernel_shape[0]", kh, c.lim.conv_kernel, fix_k);
  check_range(c, Rule::ConvKernel, "kernel_shape[1]", kw, c.lim.conv_kernel, fix_k);
  for (int i = 0; i < 2; ++i) {
    check_range(c, Rule::ConvStride, "strides[" + S(i) + "]", long(strides[size_t(i)]), c.lim.conv_stride,
                "use stride <= 8 (follow with pooling)");
    check_range(c, Rule::ConvDilation, "dilations[" + S(i) + "]", long(dil[size_t(i)]), c.lim.conv_dilation,
                "use dilation <= 32");
  }
  const char* names[] = {"pads[0] (top)", "pads[1] (left)", "pads[2] (bottom)", "pads[3] (right)"};
  for (int i = 0; i < 4; ++i) {
    const long pad = long(pads[size_t(i)]), k = i % 2 == 0 ? kh : kw;
    check_range(c, Rule::ConvPad, names[i], pad, c.lim.conv_pad,
                "pad the input with a separate layer, or use a smaller padding");
    if (pad >= k)
      c.add(Rule::ConvPad, ReasonCode::AttrOutOfRange, names[i], S(pad), "< kernel size " + S(k),
            "DLA padding must be smaller than the kernel: pad the input explicitly instead");
  }
  check_range(c, Rule::ConvOutChannels, "output channels", long(w[0]), c.lim.conv_out_channels,
              "split the output channels over several convolutions");
  check_range(c, Rule::ConvGroups, "group", group, c.lim.conv_groups, "split the grouped convolution");
  if (c.p == Precision::kINT8 && group > 1 && group != c.shape(0)[1] &&
      ((c.shape(0)[1] / group) % 4 || (w[0] / group) % 4))
    c.add(Rule::ConvInt8Groups, ReasonCode::ModeNotSupported, "channels per group",
          S(c.shape(0)[1] / group) + " in, " + S(w[0] / group) + " out", "multiples of 4 in INT8",
          "use FP16 for this layer (--layerPrecisions) or pad the channels");
  // CBUF admission (DLA_constraints §1.2): weight banks for one kernel + data banks for one slice <= 16.
  const long bpe = c.p == Precision::kINT8 ? 1 : 2;
  const long cin_k = long(w[1]), cin = long(c.shape(0)[1]), win = long(c.shape(0)[3]);
  const long wt_bytes = (cin_k * kh * kw * bpe + 127) / 128 * 128;
  const long wt_banks = (wt_bytes + c.lim.cbuf_bank_bytes - 1) / c.lim.cbuf_bank_bytes;
  const long entries = ((cin * bpe + 31) / 32 * win + 3) / 4;
  const long dkh = (kh - 1) * long(dil[0]) + 1;
  const long data_banks = (entries * dkh + c.lim.cbuf_bank_entries - 1) / c.lim.cbuf_bank_entries;
  if (wt_banks + data_banks > c.lim.cbuf_banks)
    c.add(Rule::ConvBuffer, ReasonCode::BufferExceeded, "CBUF banks (weights + data)",
          S(wt_banks) + " + " + S(data_banks) + " = " + S(wt_banks + data_banks), "<= " + S(c.lim.cbuf_banks),
          "reduce the input width (" + S(win) + ") or input channels (" + S(cin) +
              "), e.g. tile the image, or use INT8");
}

void rule_fc(const Ctx& c) {
  const Node& n = c.n;
  if (!c.is_const(1))
    c.add(Rule::FcWeights, ReasonCode::NotConstant, "input[1] (weights)", "computed at run time",
          "build-time constant",
          "the DLA multiplies activations by constant weights only; run activation x activation products on "
          "the GPU");
  if (n.op == OpKind::Gemm && n.attr_int("transA", 0))
    c.add(Rule::FcTransA, ReasonCode::ModeNotSupported, "transA", "1", "0",
          "transpose the input with a separate layer");
  const Shape& out = c.out_shape();
  if (!out.empty())
    check_range(c, Rule::FcOutChannels, "output channels", long(out.back()), c.lim.conv_out_channels,
                "split the layer's outputs");
}

// ---- Deconvolution
void rule_deconv(const Ctx& c) {
  if (!is_4d(c, 0, "Deconvolution")) return;
  const Node& n = c.n;
  const Shape& w = c.shape(1);
  if (!c.is_const(1))
    c.add(Rule::ConvWeights, ReasonCode::NotConstant, "input[1] (weights)", "computed at run time",
          "build-time constant", "export the weights as initializers");
  auto kernel_ok = [&](long a, long b) {
    auto longk = [&](long v) {
      return std::count(c.lim.deconv_long_kernels.begin(), c.lim.deconv_long_kernels.end(), v) > 0;
    };
    return (c.lim.deconv_kernel.contains(a) && c.lim.deconv_kernel.contains(b)) || (a == 1 && longk(b)) ||
           (b == 1 && longk(a));
  };
  const long kh = long(w[2]), kw = long(w[3]);
  if (!kernel_ok(kh, kw))
    c.add(Rule::DeconvLimits, ReasonCode::AttrOutOfRange, "kernel_shape", S(kh) + "x" + S(kw),
          "1..32 each, or 1x{64,96,128} / {64,96,128}x1", "use a smaller kernel");
  const auto st = n.attr_ints("strides", {1, 1});
  if (!kernel_ok(long(st[0]), long(st[1])))
    c.add(Rule::DeconvLimits, ReasonCode::AttrOutOfRange, "strides", S(st[0]) + "x" + S(st[1]),
          "1..32 each, or 1x{64,96,128} / {64,96,128}x1", "use a smaller stride");
  for (long p : n.attr_ints("pads", {0, 0, 0, 0}))
    if (p != 0) {
      c.add(Rule::DeconvLimits, ReasonCode::AttrOutOfRange, "pads", S(p), "0",
            "crop the output with a Slice after the deconvolution");
      break;
    }
  for (long p : n.attr_ints("output_padding", {0, 0}))
    if (p != 0) {
      c.add(Rule::DeconvOutputPadding, ReasonCode::AttrOutOfRange, "output_padding", S(p), "0",
            "pad the output with a separate layer");
      break;
    }
  if (n.attr_int("group", 1) != 1)
    c.add(Rule::DeconvLimits, ReasonCode::AttrOutOfRange, "group", S(n.attr_int("group", 1)), "1",
          "split the grouped deconvolution");
  for (long d : n.attr_ints("dilations", {1, 1}))
    if (d != 1) {
      c.add(Rule::DeconvLimits, ReasonCode::AttrOutOfRange, "dilations", S(d), "1",
            "run this layer on the GPU");
      break;
    }
  check_range(c, Rule::DeconvLimits, "input channels", long(w[0]), c.lim.deconv_channels, "split the layer");
  check_range(c, Rule::DeconvLimits, "output channels", long(c.out_shape()[1]), c.lim.deconv_channels,
              "split the layer");
}

// ---- Pooling
void check_window(const Ctx& c, Rule rule, long kh, long kw, const std::string& what,
                  const std::string& fix) {
  check_range(c, rule, what + "[0]", kh, c.lim.pool_window, fix);
  check_range(c, rule, what + "[1]", kw, c.lim.pool_window, fix);
}

void rule_pool(const Ctx& c) {
  if (!is_4d(c, 0, "Pooling")) return;
  const Node& n = c.n;
  const auto k = n.attr_ints("kernel_shape");
  if (k.size() == 2)
    check_window(c, Rule::PoolWindow, long(k[0]), long(k[1]), "kernel_shape",
                 "pool in stages: two windows whose product covers this one");
  for (size_t i = 0; i < 2 && i < n.attr_ints("strides", {1, 1}).size(); ++i)
    check_range(c, Rule::PoolStride, "strides[" + S(long(i)) + "]", long(n.attr_ints("strides", {1, 1})[i]),
                c.lim.pool_stride, "use a smaller stride");
  const auto pads = n.attr_ints("pads", {0, 0, 0, 0});
  for (size_t i = 0; i < pads.size(); ++i)
    check_range(c, Rule::PoolPad, "pads[" + S(long(i)) + "]", long(pads[i]), c.lim.pool_pad,
                "pad the input with a separate layer");
  for (long d : n.attr_ints("dilations", {1, 1}))
    if (d != 1) {
      c.add(Rule::PoolOnnxOnly, ReasonCode::ModeNotSupported, "dilations", S(d), "1",
            "run this pooling on the GPU");
      break;
    }
  if (n.outputs.size() > 1 && n.outputs[1] >= 0)
    c.add(Rule::PoolOnnxOnly, ReasonCode::ModeNotSupported, "outputs[1] (Indices)", "requested",
          "not produced by DLA pooling", "drop the Indices output");
  bool padded = false;
  for (long p : pads) padded = padded || p > 0;
  if (n.op == OpKind::AveragePool && padded && !c.lim.avgpool_exclusive_padding &&
      !n.attr_int("count_include_pad", 0))
    c.add(Rule::PoolXavierPadding, ReasonCode::ModeNotSupported, "count_include_pad", "0",
          "1 on " + c.lim.chip, "set count_include_pad=1 or run on Orin");
  if (c.p == Precision::kINT8)
    c.cap.notes.push_back("INT8 pooling needs equal input and output dynamic ranges");
}

void rule_global_pool(const Ctx& c) {
  if (!is_4d(c, 0, "Pooling")) return;
  const Shape& s = c.shape(0);
  check_window(c, Rule::PoolGlobal, long(s[2]), long(s[3]), "window (input H,W)",
               "pool in stages (pools with kernel = stride <= 8; the adjust-for-dla pass does it unless "
               "disabled), or run on the GPU");
  c.admitted_by(Rule::PoolGlobal);
}

// ---- Activations
void rule_activation(const Ctx& c) {
  const Node& n = c.n;
  if (n.op == OpKind::Clip) {
    const auto bounds = clip_bounds(c.g, n);
    if (!bounds) {
      c.add(Rule::ActivationClip, ReasonCode::NotConstant, "min/max", "computed at run time", "constant",
            "make the clip bounds constants");
      return;
    }
    const double lo = bounds->first, hi = bounds->second;
    if (lo != 0.0)
      c.add(Rule::ActivationClip, ReasonCode::ModeNotSupported, "min", F(lo), "0 (clipped ReLU)",
            "the DLA clips as ReLU(x) capped at max: use min = 0");
    if (!(hi >= double(c.lim.clip_max.lo) && hi <= double(c.lim.clip_max.hi)))
      c.add(Rule::ActivationClip, ReasonCode::AttrOutOfRange, "max", F(hi), c.lim.clip_max.str(),
            "use a clip maximum between 1 and 127");
  }
}

void rule_prelu(const Ctx& c) {
  if (!c.is_const(1))
    c.add(Rule::PreluSlope, ReasonCode::NotConstant, "input[1] (slope)", "computed at run time",
          "build-time constant", "make the slope a constant");
  else if (c.shape(1).size() != c.shape(0).size())
    c.add(Rule::PreluSlope, ReasonCode::ShapeOutOfRange, "slope rank",
          S(long(c.shape(1).size())) + " " + S(c.shape(1)), S(long(c.shape(0).size())) + " (same as input)",
          "reshape the slope to the input's rank, e.g. [1,C,1,1]");
}

// ---- ElementWise (and Scale when one operand is a constant)
enum class Bcast { kSame, kChannel, kScalar, kOther };
Bcast broadcast_kind(const Shape& small, const Shape& big) {
  if (small == big) return Bcast::kSame;
  if (numel(small) == 1) return Bcast::kScalar;
  if (big.size() == 4) {
    Shape s = small;
    while (s.size() < 4) s.insert(s.begin(), 1);
    if (s[0] == big[0] || s[0] == 1)
      if (s[1] == big[1] && s[2] == 1 && s[3] == 1) return Bcast::kChannel;
  }
  return Bcast::kOther;
}

void rule_eltwise(const Ctx& c) {
  const Node& n = c.n;
  const std::string op = n.op == OpKind::Sum ? "Add" : op_name(n.op);
  if (n.inputs.size() != 2) {
    c.add(Rule::EltwiseInputs, ReasonCode::ModeNotSupported, "inputs", S(long(n.inputs.size())), "2",
          "chain two-input Add layers");
    return;
  }
  if (std::find(c.lim.eltwise_ops.begin(), c.lim.eltwise_ops.end(), op) == c.lim.eltwise_ops.end()) {
    c.add(
        Rule::EltwiseOps, ReasonCode::ChipNotSupported, "op", op,
        "ElementWise on " + c.lim.chip + ": " +
            [&] {
              std::string s;
              for (auto& o : c.lim.eltwise_ops) s += (s.empty() ? "" : " ") + o;
              return s;
            }(),
        "rewrite (e.g. Div by a constant as Mul by its reciprocal) or target orin");
    return;
  }
  const Shape& out = c.out_shape();
  const bool c0 = c.is_const(0), c1 = c.is_const(1);
  if (c0 ||
      c1) {  // a constant operand: Scale (per-tensor, per-channel or element-wise) or a constant ElementWise
    const Shape& k = c.shape(c1 ? 1 : 0);
    if (broadcast_kind(k, out) == Bcast::kOther)
      c.add(Rule::EltwiseBroadcast, ReasonCode::BroadcastNotSupported, "constant operand shape",
            S(k) + " vs " + S(out), "scalar, [C,1,1] or the full shape",
            "reshape the constant to per-channel [1,C,1,1] or expand it to the full shape");
    if (c.p == Precision::kINT8 && (op == "Max" || op == "Min"))
      c.cap.notes.push_back("INT8 ElementWise needs equal input dynamic ranges (dlakit uses the larger)");
    return;
  }
  const Shape &a = c.shape(0), &b = c.shape(1);
  const Bcast k = numel(a) <= numel(b) ? broadcast_kind(a, b) : broadcast_kind(b, a);
  // [U] decision: the DLA supports same-shape operands and a channel-wise [N,C,1,1] operand (SE blocks).
  if (k == Bcast::kChannel) c.admitted_by(Rule::EltwiseBroadcast);
  if (k != Bcast::kSame && k != Bcast::kChannel)
    c.add(Rule::EltwiseBroadcast, ReasonCode::BroadcastNotSupported, "operand shapes", S(a) + " and " + S(b),
          "equal, or one of them [N,C,1,1]",
          "expand the smaller operand to the full shape before this layer");
  if (c.p == Precision::kINT8)
    c.cap.notes.push_back("INT8 ElementWise needs equal input dynamic ranges (dlakit uses the larger)");
}

// ---- Scale (BatchNormalization that was not folded)
void rule_scale(const Ctx& c) {
  if (!is_4d(c, 0, "Scale")) return;
  for (int i = 1; i < 5; ++i)
    if (!c.is_const(i)) {
      c.add(Rule::ScaleConstant, ReasonCode::NotConstant, "input[" + S(i) + "]", "computed at run time",
            "constant", "export BN parameters as initializers");
      break;
    }
}

void rule_lrn(const Ctx& c) {
  const long size = long(c.n.attr_int("size", 0));
  if (std::find(c.lim.lrn_windows.begin(), c.lim.lrn_windows.end(), size) == c.lim.lrn_windows.end())
    c.add(Rule::LrnWindow, ReasonCode::AttrOutOfRange, "size", S(size), "3, 5, 7 or 9",
          "use an LRN window of 3, 5, 7 or 9");
}

void rule_concat(const Ctx& c) {
  const Shape& s = c.shape(0);
  const long rank = long(s.size());
  long axis = long(c.n.attr_int("axis", 1));
  if (axis < 0) axis += rank;
  if (rank < 3 || axis != rank - 3)
    c.add(Rule::ConcatChannels, ReasonCode::AxisNotSupported, "axis", S(axis) + " of rank " + S(rank),
          "the channel axis (" + S(std::max(rank - 3, 0L)) + ")",
          "DLA concatenates channels only: transpose so the axis is C, or run on the GPU");
  if (c.n.inputs.size() < 2)
    c.add(Rule::ConcatChannels, ReasonCode::ModeNotSupported, "inputs", "1", ">= 2",
          "replace a 1-input Concat by Identity");
  if (c.p == Precision::kINT8)
    c.cap.notes.push_back("INT8 Concatenation needs equal dynamic ranges on every input and the output");
}

void rule_resize(const Ctx& c) {
  const Node& n = c.n;
  if (!is_4d(c, 0, "Resize")) return;
  const Shape &in = c.shape(0), &out = c.out_shape();
  const std::string mode = n.attr_str("mode", "nearest");
  const bool legacy = n.op == OpKind::Upsample || n.opset < 11;
  const std::string coord =
      legacy ? "asymmetric" : n.attr_str("coordinate_transformation_mode", "half_pixel");
  const std::string nearest = legacy ? "floor" : n.attr_str("nearest_mode", "round_prefer_floor");
  if (in[0] != out[0] || in[1] != out[1])
    c.add(Rule::ResizeLimits, ReasonCode::ModeNotSupported, "scales[0..1]",
          F(double(out[0]) / double(in[0])) + ", " + F(double(out[1]) / double(in[1])), "1, 1",
          "resize only H and W");
  const bool linear = mode == "linear" || mode == "bilinear";
  for (int i = 2; i < 4; ++i) {
    const double s = double(out[size_t(i)]) / double(in[size_t(i)]);
    const Range& r = linear ? c.lim.resize_linear_scale : c.lim.resize_nearest_scale;
    if (s != std::floor(s) || !r.contains(long(s)))
      c.add(Rule::ResizeLimits, ReasonCode::AttrOutOfRange, "scale[" + S(i) + "]", F(s),
            "an integer in " + r.str() + (linear ? " (bilinear)" : " (nearest)"),
            "upsample by an integer factor; downsample with pooling instead");
  }
  if (mode == "nearest") {
    const bool ok = (coord == "asymmetric" && nearest == "floor") ||
                    ((coord == "half_pixel" || coord == "pytorch_half_pixel") &&
                     (nearest == "round_prefer_floor" || nearest == "round_prefer_ceil"));
    if (!ok)
      c.add(Rule::ResizeLimits, ReasonCode::ModeNotSupported, "coordinate_transformation_mode/nearest_mode",
            coord + "/" + nearest,
            "asymmetric/floor, half_pixel/round_prefer_floor or half_pixel/round_prefer_ceil",
            "export with one of the supported combinations (e.g. PyTorch mode='nearest' gives "
            "asymmetric/floor)");
  } else if (linear) {
    if (coord != "half_pixel" && coord != "pytorch_half_pixel")
      c.add(Rule::ResizeLimits, ReasonCode::ModeNotSupported, "coordinate_transformation_mode", coord,
            "half_pixel", "export bilinear resize with align_corners=False (half_pixel)");
  } else {
    c.add(Rule::ResizeLimits, ReasonCode::ModeNotSupported, "mode", mode, "nearest or linear",
          "use nearest or bilinear resize");
  }
}

void rule_slice(const Ctx& c, bool is_split) {
  const Shape& s = c.shape(0);
  if (s.size() != 4)
    c.add(Rule::SliceLimits, ReasonCode::ShapeOutOfRange, "input[0].rank", S(long(s.size())) + " " + S(s),
          "4", "the DLA slices 4-D tensors only: reshape to 4-D first");
  const Shape& out = c.out_shape();
  if (!s.empty() && !out.empty() && out[0] != s[0])
    c.add(Rule::SliceLimits, ReasonCode::AxisNotSupported, "axes", "slices the batch dimension",
          "C, H or W only", "slice after the DLA graph");
  if (!is_split) {
    if (c.n.opset >= 10) {
      for (int i = 1; i < int(c.n.inputs.size()); ++i)
        if (c.has(i) && !c.is_const(i))
          c.add(Rule::SliceLimits, ReasonCode::NotConstant, "input[" + S(i) + "]", "computed at run time",
                "constant starts/ends/axes/steps", "pin input shapes so the slice bounds fold to constants");
      if (c.is_const(4))
        for (int64_t st : c.in(4).constant->to_i64())
          if (st != 1) {
            c.add(Rule::SliceLimits, ReasonCode::AttrOutOfRange, "steps", S(st), "1",
                  "use stride-1 slices (subsample with a strided 1x1 conv)");
            break;
          }
    }
  }
}

void rule_softmax(const Ctx& c) {
  if (!c.lim.has_softmax) {
    c.add(Rule::SoftmaxChip, ReasonCode::ChipNotSupported, "op", "Softmax",
          "SoftMax exists on DLA 2.0 (Orin) only", "run Softmax on the GPU or target orin");
    return;
  }
  const Shape& s = c.shape(0);
  const long rank = long(s.size());
  long axis = long(c.n.attr_int("axis", c.n.opset < 13 ? 1 : -1));
  if (axis < 0) axis += rank;
  long len = 1, others = 1;
  if (c.n.opset < 13) {
    for (long i = axis; i < rank; ++i) len *= long(s[size_t(i)]);
    for (long i = axis + 1; i < rank; ++i) others *= long(s[size_t(i)]);
    if (others > 1)
      c.add(Rule::SoftmaxAxis, ReasonCode::AxisNotSupported, "axis (opset < 13: flattened from axis)",
            S(axis), "a single axis",
            "export with opset >= 13 or reshape so the softmax axis is last with size 1 elsewhere");
  } else {
    len = long(s[size_t(axis)]);
    for (long i = std::max(0L, rank - 3); i < rank; ++i)
      if (i != axis) others *= long(s[size_t(i)]);
  }
  if (rank - axis > 3 || axis == 0)
    c.add(Rule::SoftmaxAxis, ReasonCode::AxisNotSupported, "axis", S(axis), "C or a spatial axis",
          "move the softmax axis to C, H or W");
  if (others == 1) {
    if (len > c.lim.softmax_accurate_axis)
      c.add(Rule::SoftmaxAxis, ReasonCode::ShapeOutOfRange, "axis length", S(len),
            "<= " + S(c.lim.softmax_accurate_axis), "split the axis");
  } else if (len > c.lim.softmax_approx_axis) {
    c.add(Rule::SoftmaxAxis, ReasonCode::ShapeOutOfRange, "axis length", S(len),
          "<= " + S(c.lim.softmax_approx_axis) + " (approximate mode)",
          "make the other non-batch dims 1 (accurate mode allows 8192) or split the axis");
  } else {
    c.cap.notes.push_back(
        "SoftMax runs in approximate mode (other non-batch dims are not 1): error grows with axis length");
  }
}

void rule_shuffle(const Ctx& c) {
  const Shape &in = c.shape(0), &out = c.out_shape();
  if (in.size() != 4)
    c.add(Rule::ShuffleLimits, ReasonCode::ShapeOutOfRange, "input[0].rank", S(long(in.size())) + " " + S(in),
          "4", "the DLA shuffles 4-D tensors only: keep tensors 4-D ([N,C,H,W]) through reshapes");
  if (c.n.op == OpKind::Transpose) {
    auto perm = c.n.attr_ints("perm", {});
    if (!perm.empty() && perm[0] != 0)
      c.add(Rule::ShuffleLimits, ReasonCode::AxisNotSupported, "perm[0]", S(perm[0]),
            "0 (the batch dim stays first)", "transpose after the DLA graph");
  } else if (!in.empty() && !out.empty() && in[0] != out[0]) {
    c.add(Rule::ShuffleLimits, ReasonCode::AxisNotSupported, "output[0].shape[0]",
          S(out[0]) + " (input " + S(in[0]) + ")", "unchanged batch dim",
          "keep the batch dimension out of the reshape");
  }
  if (c.n.op == OpKind::Reshape || c.n.op == OpKind::Flatten) {
    auto adjacent = [&](OpKind k) {
      const int prod = c.in(0).producer;
      if (prod >= 0 && c.g.nodes[size_t(prod)].op == k) return true;
      for (const Node& m : c.g.nodes)
        for (int i : m.inputs)
          if (i == c.n.outputs[0] && m.op == k) return true;
      return false;
    };
    if (adjacent(OpKind::Slice) || adjacent(OpKind::Concat))
      c.add(Rule::ShuffleNeighbours, ReasonCode::ModeNotSupported, "neighbours",
            "a Reshape directly connected to a Slice or Concat",
            "not supported by the DLA (observed TensorRT error)",
            "put another layer between them or move the reshape");
  }
}

void rule_reduce(const Ctx& c) {
  // [U] dlakit's decision: Reduce over C/H/W of a 4-D tensor with keepdims=1.
  c.admitted_by(Rule::ReduceLimits);
  const Shape& s = c.shape(0);
  if (s.size() != 4) {
    c.add(Rule::ReduceLimits, ReasonCode::ShapeOutOfRange, "input[0].rank", S(long(s.size())), "4",
          "reduce 4-D tensors");
    return;
  }
  auto axes = c.n.attr_ints("axes", {});
  if (c.n.op == OpKind::ReduceSum && c.n.opset >= 13 && c.is_const(1)) axes = c.in(1).constant->to_i64();
  for (int64_t a : axes)
    if (a == 0 || a == -4)
      c.add(Rule::ReduceLimits, ReasonCode::AxisNotSupported, "axes", "0 (batch)", "1..3",
            "do not reduce over the batch on the DLA");
  if (axes.empty())
    c.add(Rule::ReduceLimits, ReasonCode::AxisNotSupported, "axes", "all (default)", "1..3",
          "list the axes explicitly (not the batch)");
  if (!c.n.attr_int("keepdims", 1))
    c.add(Rule::ReduceLimits, ReasonCode::ModeNotSupported, "keepdims", "0", "1",
          "reshape after the reduction");
}

void rule_comparison(const Ctx& c) {
  bool ok = true;
  for (const Node& m : c.g.nodes)
    for (int i : m.inputs)
      if (i == c.n.outputs[0] && m.op != OpKind::Cast && m.op != OpKind::Identity) ok = false;
  for (int o : c.g.outputs) ok = ok && o != c.n.outputs[0];
  if (!ok)
    c.add(Rule::ComparisonInt8, ReasonCode::ModeNotSupported, "consumers", "not only a Cast",
          "one Cast to FP16/INT8 immediately after",
          "cast the comparison result right away, and do not make it a network output");
  else  // the bool result would leave the DLA graph: a DLA program stores fp16/int8 feature data only
    c.add(Rule::ComparisonCast, ReasonCode::OpNotSupported, "consumers",
          "a Cast, which has no DLA layer in dlakit",
          "a Cast on the DLA (TensorRT 8.6+ runs Comparison + Cast there; dlakit does not emulate Cast)",
          "run the comparison and its Cast on the GPU");
}

void rule_unsupported(const Ctx& c) {
  std::string fix;
  switch (c.n.op) {
    case OpKind::Pad:
      fix = "fold the padding into the next Conv (the pad-folding pass does this when pads < kernel)";
      break;
    case OpKind::Neg:
      fix = "multiply by -1 (a Scale layer)";
      break;
    case OpKind::HardSigmoid:
    case OpKind::HardSwish:
      fix = "run the decomposition pass (default): it maps to Scale + clipped ReLU";
      break;
    case OpKind::Gather:
      fix = "rewrite as Slice (contiguous indices) or a 1x1 conv with one-hot weights";
      break;
    case OpKind::Cast:
    case OpKind::Shape:
    case OpKind::ConstantOfShape:
      fix = "keep shape logic out of the network: pin input shapes so it folds";
      break;
    case OpKind::Sqrt:
    case OpKind::Exp:
    case OpKind::Log:
    case OpKind::Erf:
    case OpKind::Reciprocal:
      fix = "run this math on the GPU, or replace it (e.g. GELU's Erf by a Sigmoid approximation)";
      break;
    case OpKind::QuantizeLinear:
    case OpKind::DequantizeLinear:
      fix = "convert Q/DQ scales to a calibration cache (dlakit qdq-to-cache)";
      break;
    default:
      fix = "run this layer on the GPU";
  }
  c.add(Rule::OpLayer, ReasonCode::OpNotSupported, "op", op_name(c.n.op), "a DLA layer", fix);
}

}  // namespace

const char* precision_name(Precision p) { return p == Precision::kINT8 ? "int8" : "fp16"; }

namespace {

// Each op that has a DLA layer, once: the layer it maps to and the rule that checks it (nullptr: only the
// rules every layer shares). Ops missing here have no DLA layer.
struct LayerRule {
  const char* layer;
  void (*rule)(const Ctx&);
};

const std::map<OpKind, LayerRule>& layer_table() {
  static const std::map<OpKind, LayerRule> t = {
      {OpKind::Conv, {"Convolution", rule_conv}},
      {OpKind::Gemm, {"FullyConnected", rule_fc}},
      {OpKind::MatMul, {"FullyConnected", rule_fc}},
      {OpKind::ConvTranspose, {"Deconvolution", rule_deconv}},
      {OpKind::MaxPool, {"Pooling", rule_pool}},
      {OpKind::AveragePool, {"Pooling", rule_pool}},
      {OpKind::GlobalAveragePool, {"Pooling", rule_global_pool}},
      {OpKind::GlobalMaxPool, {"Pooling", rule_global_pool}},
      {OpKind::Relu, {"Activation", rule_activation}},
      {OpKind::Sigmoid, {"Activation", rule_activation}},
      {OpKind::Tanh, {"Activation", rule_activation}},
      {OpKind::Clip, {"Activation", rule_activation}},
      {OpKind::LeakyRelu, {"Activation", rule_activation}},
      {OpKind::PRelu, {"ParametricReLU", rule_prelu}},
      {OpKind::Add, {"ElementWise", rule_eltwise}},
      {OpKind::Sub, {"ElementWise", rule_eltwise}},
      {OpKind::Mul, {"ElementWise", rule_eltwise}},
      {OpKind::Div, {"ElementWise", rule_eltwise}},
      {OpKind::Max, {"ElementWise", rule_eltwise}},
      {OpKind::Min, {"ElementWise", rule_eltwise}},
      {OpKind::Pow, {"ElementWise", rule_eltwise}},
      {OpKind::Sum, {"ElementWise", rule_eltwise}},
      {OpKind::BatchNormalization, {"Scale", rule_scale}},
      {OpKind::LRN, {"LRN", rule_lrn}},
      {OpKind::Concat, {"Concatenation", rule_concat}},
      {OpKind::Resize, {"Resize", rule_resize}},
      {OpKind::Upsample, {"Resize", rule_resize}},
      {OpKind::Abs, {"Unary", nullptr}},
      {OpKind::Slice, {"Slice", [](const Ctx& c) { rule_slice(c, false); }}},
      {OpKind::Split, {"Slice", [](const Ctx& c) { rule_slice(c, true); }}},
      {OpKind::Softmax, {"SoftMax", rule_softmax}},
      {OpKind::Transpose, {"Shuffle", rule_shuffle}},
      {OpKind::Reshape, {"Shuffle", rule_shuffle}},
      {OpKind::Flatten, {"Shuffle", rule_shuffle}},
      {OpKind::Squeeze, {"Shuffle", rule_shuffle}},
      {OpKind::Unsqueeze, {"Shuffle", rule_shuffle}},
      {OpKind::ReduceMean, {"Reduce", rule_reduce}},
      {OpKind::ReduceMax, {"Reduce", rule_reduce}},
      {OpKind::ReduceSum, {"Reduce", rule_reduce}},
      {OpKind::Equal, {"Comparison", rule_comparison}},
      {OpKind::Identity, {"(no-op)", nullptr}},
      {OpKind::Dropout, {"(no-op)", nullptr}},
  };
  return t;
}

}  // namespace

const char* dla_layer_of(OpKind op) {
  auto it = layer_table().find(op);
  return it == layer_table().end() ? "" : it->second.layer;
}

Capability check_node(const Graph& g, const Node& n, const DlaLimits& lim, Precision p) {
  Capability cap;
  Ctx c{g, n, lim, p, cap};
  auto it = layer_table().find(n.op);
  if (it == layer_table().end()) {
    rule_unsupported(c);
    return cap;
  }
  cap.dla_layer = it->second.layer;
  check_tensors(c);
  if (it->second.rule) it->second.rule(c);
  // Precision, from the one INT8 table.
  if (int8_mode(n.op) == Int8Mode::kInt8Only && p != Precision::kINT8)
    c.add(Rule::ComparisonInt8, ReasonCode::PrecisionNotSupported, "precision", "fp16",
          "int8 (" + std::string(it->second.layer) + " is INT8-only)",
          "build with --int8 and set this layer and the Cast after it to DLA/int8");
  if (p == Precision::kINT8 && !int8_note(n.op).empty()) cap.notes.push_back(int8_note(n.op));
  if (!cap.ok()) cap.unconfirmed.clear();  // only a layer the rules let on rests on its assumptions
  return cap;
}

}  // namespace dlakit::dla
