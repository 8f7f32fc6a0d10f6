// pool-stages and reduce-as-pool: pooling the DLA takes. Its Pooling layer has windows of at most 8 (and
// strides of at most 16, pads of at most 7; dla-constraints.md §1.2 Pooling). A window that is too large
// is split into stages whose windows multiply to it (stride = window, so each stage pools disjoint
// blocks): the mean of equal blocks' means is the mean, the max of maxes is the max. A rest with no
// factor <= 8 (13, 11...) becomes, for averages, one depthwise convolution with constant 1/N weights
// (kernel <= 32, §1.2 Convolution); for a global max, a stage of 8 padded at the end (padding never wins a
// max). Global pools and Reduce over H,W become Pooling even when small: TensorRT imports
// GlobalAveragePool as a Reduce layer, whose DLA support is unconfirmed (§1.2 Reduce [U]).
#include <algorithm>

#include "passes/adjust_for_dla.h"

namespace dlakit::adjust {
namespace {

// Windows whose product is n (largest first) and the rest that has no factor <= max_window. With
// pad_to_cover (max pooling only), a rest becomes windows of max_window padded at the end instead.
struct DimPlan {
  std::vector<int64_t> windows, end_pads;
  int64_t rest = 1;
};

DimPlan plan_dim(int64_t n, int64_t max_window, bool pad_to_cover) {
  DimPlan p;
  while (n > 1) {
    int64_t f = std::min(n, max_window);
    while (f > 1 && n % f) --f;
    if (f > 1) {
      p.windows.push_back(f);
      p.end_pads.push_back(0);
      n /= f;
    } else if (pad_to_cover) {
      p.windows.push_back(max_window);
      p.end_pads.push_back(max_window - n % max_window);
      n = n / max_window + 1;
    } else {
      p.rest = n;
      break;
    }
  }
  return p;
}

std::string stage_str(int64_t kh, int64_t kw) { return window_str(kh, kw) + "/" + window_str(kh, kw); }

// Pools x ([N,C,H,W]) over all of H (over_h) and/or all of W (over_w) with DLA layers, writing `output`
// (-1: a new value). Returns a description of the stages and sets *result to the value written, or
// returns "" with *declined set when no exact staging fits the limits.
std::string build_pool_over(NodeBuilder& b, const Graph& g, bool is_max, int x, bool over_h, bool over_w,
                            int output, const Context& c, int* result, std::string* declined) {
  const Shape s = g.value(x).type.shape;  // a copy: adding values moves them
  const int64_t max_window = c.limits.pool_window.hi;
  const DimPlan h = plan_dim(over_h ? s[2] : 1, max_window, is_max);
  const DimPlan w = plan_dim(over_w ? s[3] : 1, max_window, is_max);
  if (h.rest > c.limits.conv_kernel.hi || w.rest > c.limits.conv_kernel.hi) {
    *declined = "no exact staging: " + window_str(s[2], s[3]) + " leaves " + window_str(h.rest, w.rest) +
                " with no factor <= " + std::to_string(max_window) +
                ", more than a depthwise convolution's kernel limit " + c.limits.conv_kernel.str();
    return "";
  }
  const bool conv_rest = h.rest > 1 || w.rest > 1;
  // A 1x1 input still gets one (1x1) stage, so the layer is a documented Pooling layer.
  const size_t stages = std::max({h.windows.size(), w.windows.size(), size_t(conv_rest ? 0 : 1)});
  std::string what;
  int v = x;
  for (size_t i = 0; i < stages; ++i) {
    const int64_t kh = i < h.windows.size() ? h.windows[i] : 1, kw = i < w.windows.size() ? w.windows[i] : 1;
    const int64_t ph = i < h.end_pads.size() ? h.end_pads[i] : 0;
    const int64_t pw = i < w.end_pads.size() ? w.end_pads[i] : 0;
    const bool last = i + 1 == stages && !conv_rest;
    v = b.add(is_max ? OpKind::MaxPool : OpKind::AveragePool, "stage" + std::to_string(i + 1), {v},
              {{"kernel_shape", std::vector<int64_t>{kh, kw}},
               {"strides", std::vector<int64_t>{kh, kw}},
               {"pads", std::vector<int64_t>{0, 0, ph, pw}}},
              last ? output : -1);
    what += (what.empty() ? "" : ", ") + std::string(is_max ? "MaxPool " : "AveragePool ") +
            stage_str(kh, kw) + (ph || pw ? " padded " + window_str(ph, pw) + " at the end" : "");
  }
  if (conv_rest) {
    const int64_t C = s[1];
    Tensor wt(DType::kF32, {C, 1, h.rest, w.rest});
    std::fill_n(wt.data<float>(), wt.numel(), 1.f / float(h.rest * w.rest));
    v = b.add(OpKind::Conv, "rest", {v, b.constant("rest_weights", wt)},
              {{"group", C}, {"kernel_shape", std::vector<int64_t>{h.rest, w.rest}}}, output);
    what += (what.empty() ? "" : ", ") + std::string("depthwise Conv ") + window_str(h.rest, w.rest) +
            " with weights 1/" + std::to_string(h.rest * w.rest);
  }
  *result = v;
  return what;
}

// The documented limits a staged pool satisfies (with_conv: its rest is a depthwise convolution).
std::string pooling_rule(const std::string& stages) {
  return std::string("satisfies the documented Pooling window limit 1..8 (dla-constraints.md §1.2 Pooling)") +
         (stages.find("Conv") != std::string::npos ? " and Convolution kernel limit 1..32 (§1.2 Convolution)"
                                                   : "");
}

std::string exact_because(bool is_max) {
  return is_max ? "the max of block maxes is the max" : "the mean of equal blocks' means is the mean";
}

Attempt global_pool(Graph& g, const Node& n, const Context& c) {
  const bool is_max = n.op == OpKind::GlobalMaxPool;
  const Shape s = g.value(n.inputs[0]).type.shape;
  if (s.size() != 4) return Attempt::none();
  NodeBuilder b(g, n);
  std::string declined;
  int pooled = -1;
  const std::string stages =
      build_pool_over(b, g, is_max, n.inputs[0], true, true, n.outputs[0], c, &pooled, &declined);
  if (stages.empty()) return Attempt::decline(declined);
  Proposal p;
  p.nodes = b.take();
  p.what = std::string(op_name(n.op)) + " over " + window_str(s[2], s[3]) + " -> " + stages;
  p.why =
      exact_because(is_max) + "; " + pooling_rule(stages) +
      "; a global pool itself is Pooling only by dlakit's unconfirmed rule (TensorRT imports it as Reduce)";
  return Attempt::propose(std::move(p));
}

// AveragePool/MaxPool whose window is over the limit: stages over disjoint blocks (stride = window),
// or for overlapping averages one depthwise convolution with 1/N weights.
Attempt windowed_pool(Graph& g, const Node& n, const Context& c) {
  const Shape s = g.value(n.inputs[0]).type.shape;
  const auto k = n.attr_ints("kernel_shape");
  if (s.size() != 4 || k.size() != 2) return Attempt::none();
  const int64_t max_window = c.limits.pool_window.hi;
  if (k[0] <= max_window && k[1] <= max_window) return Attempt::none();
  const bool is_max = n.op == OpKind::MaxPool;
  const auto st = n.attr_ints("strides", {1, 1}), pads = n.attr_ints("pads", {0, 0, 0, 0});
  const bool include_pad = n.attr_int("count_include_pad", 0) != 0;
  const std::string window = "window " + window_str(k[0], k[1]) + " stride " + window_str(st[0], st[1]);
  for (int64_t d : n.attr_ints("dilations", {1, 1}))
    if (d != 1) return Attempt::decline("not staged: dilated pooling");
  if (n.attr_str("auto_pad", "NOTSET") != "NOTSET") return Attempt::decline("not staged: auto_pad");
  if (n.outputs.size() > 1 && n.outputs[1] >= 0) return Attempt::decline("not staged: Indices are read");
  if (n.attr_int("ceil_mode", 0)) {
    for (int d = 0; d < 2; ++d) {
      const int64_t span = s[size_t(2 + d)] + pads[size_t(d)] + pads[size_t(d + 2)] - k[size_t(d)];
      if (span % st[size_t(d)]) return Attempt::decline("not staged: ceil_mode adds a partial window");
    }
  }
  std::vector<char> big(2);
  bool disjoint = true;
  for (int d = 0; d < 2; ++d) {
    big[size_t(d)] = k[size_t(d)] > max_window;
    disjoint = disjoint && (!big[size_t(d)] || st[size_t(d)] == k[size_t(d)]);
  }
  NodeBuilder b(g, n);
  Proposal p;
  if (!disjoint) {
    // Overlapping windows: only an average has an exact form, a depthwise conv (zero padding =
    // count_include_pad).
    bool padded = false;
    for (int64_t q : pads) padded = padded || q;
    if (is_max)
      return Attempt::decline("not staged: overlapping max windows over " + std::to_string(max_window));
    if (padded && !include_pad)
      return Attempt::decline(
          "not rewritten: padded windows with count_include_pad=0 divide by varying counts");
    const int64_t C = s[1];
    Tensor wt(DType::kF32, {C, 1, k[0], k[1]});
    std::fill_n(wt.data<float>(), wt.numel(), 1.f / float(k[0] * k[1]));
    b.add(OpKind::Conv, "as_conv", {n.inputs[0], b.constant("weights", wt)},
          {{"group", C}, {"kernel_shape", k}, {"strides", st}, {"pads", pads}}, n.outputs[0]);
    p.what = "AveragePool " + window + " -> depthwise Conv with weights 1/" + std::to_string(k[0] * k[1]);
    p.why =
        "a window's mean is its weighted sum with 1/N; satisfies Convolution kernel 1..32, stride 1..8 "
        "(dla-constraints.md §1.2 Convolution, documented)";
  } else {
    DimPlan plan[2];
    for (int d = 0; d < 2; ++d) {
      if (!big[size_t(d)]) continue;
      plan[d] = plan_dim(k[size_t(d)], max_window, false);
      if (plan[d].rest > 1)
        return Attempt::decline("not staged: window " + std::to_string(k[size_t(d)]) +
                                " has no factoring into "
                                "windows <= " +
                                std::to_string(max_window));
      if (!is_max && !include_pad && (pads[size_t(d)] || pads[size_t(d + 2)]))
        return Attempt::decline("not staged: padding on a staged axis with count_include_pad=0");
    }
    const size_t stages = std::max(plan[0].windows.size(), plan[1].windows.size());
    int v = n.inputs[0];
    for (size_t i = 0; i < stages; ++i) {
      std::vector<int64_t> kk(2), ss(2), pp{0, 0, 0, 0};
      for (int d = 0; d < 2; ++d) {
        if (big[size_t(d)]) {
          kk[size_t(d)] = ss[size_t(d)] = i < plan[d].windows.size() ? plan[d].windows[i] : 1;
        } else {  // a small axis is pooled as the original does, in the first stage
          kk[size_t(d)] = i == 0 ? k[size_t(d)] : 1;
          ss[size_t(d)] = i == 0 ? st[size_t(d)] : 1;
        }
        if (i == 0) pp = pads;
      }
      std::map<std::string, Attribute> attrs{{"kernel_shape", kk}, {"strides", ss}, {"pads", pp}};
      if (!is_max) attrs["count_include_pad"] = int64_t(include_pad);
      v = b.add(n.op, "stage" + std::to_string(i + 1), {v}, attrs, i + 1 == stages ? n.outputs[0] : -1);
      p.what += (p.what.empty() ? "" : ", ") + window_str(kk[0], kk[1]) + "/" + window_str(ss[0], ss[1]);
    }
    p.what = std::string(op_name(n.op)) + " " + window + " -> stages " + p.what;
    p.why = exact_because(is_max) + "; " + pooling_rule(p.what);
  }
  p.nodes = b.take();
  return Attempt::propose(std::move(p));
}

}  // namespace

Attempt rewrite_pool_stages(Graph& g, const Node& n, const Context& c) {
  switch (n.op) {
    case OpKind::GlobalAveragePool:
    case OpKind::GlobalMaxPool:
      return global_pool(g, n, c);
    case OpKind::AveragePool:
    case OpKind::MaxPool:
      return windowed_pool(g, n, c);
    default:
      return Attempt::none();
  }
}

Attempt rewrite_reduce_as_pool(Graph& g, const Node& n, const Context& c) {
  if (n.op != OpKind::ReduceMean && n.op != OpKind::ReduceMax) return Attempt::none();
  const Shape s = g.value(n.inputs[0]).type.shape;
  if (s.size() != 4 || n.inputs.size() > 1) return Attempt::none();
  std::vector<int64_t> axes = n.attr_ints("axes", {});
  for (int64_t& a : axes) a = a < 0 ? a + 4 : a;
  const bool over_h = std::count(axes.begin(), axes.end(), 2) > 0;
  const bool over_w = std::count(axes.begin(), axes.end(), 3) > 0;
  if (axes.empty() || int(axes.size()) != int(over_h) + int(over_w)) return Attempt::none();  // C or N too
  const bool is_max = n.op == OpKind::ReduceMax, keep = n.attr_int("keepdims", 1) != 0;
  NodeBuilder b(g, n);
  std::string declined;
  int pooled = -1;
  const std::string stages = build_pool_over(b, g, is_max, n.inputs[0], over_h, over_w,
                                             keep ? n.outputs[0] : -1, c, &pooled, &declined);
  if (stages.empty()) return Attempt::decline(declined);
  Proposal p;
  p.what = std::string(op_name(n.op)) + " over " +
           (over_h && over_w ? "H,W"
            : over_h         ? "H"
                             : "W") +
           " -> " + stages;
  if (!keep) {
    b.add(OpKind::Reshape, "drop_axes", {pooled, b.i64s("shape", g.value(n.outputs[0]).type.shape)}, {},
          n.outputs[0]);
    p.what += ", Reshape to " + shape_str(g.value(n.outputs[0]).type.shape) + " (keepdims=0)";
  }
  p.nodes = b.take();
  p.why = exact_because(is_max) + "; " + pooling_rule(stages) +
          "; the Reduce layer's DLA limits are unconfirmed (dla-constraints.md §1.2 Reduce [U])";
  return Attempt::propose(std::move(p));
}

}  // namespace dlakit::adjust
